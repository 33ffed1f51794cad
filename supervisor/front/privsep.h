/* SPDX-License-Identifier: Apache-2.0 */
/* The line between the front and sbx-privd, drawn at start: a daemon
 * started as root with "user" set starts the helper with what it needs
 * from the configuration (root's file, read as root: nothing a tenant sends
 * has been read yet), gives its state directory to the user, and becomes
 * that user for good: no capability left in any set, no_new_privs, and a
 * seccomp filter of its own. Everything after that, the socket included,
 * is done as the user. */
#pragma once

#include "error.h"
#include "privc.h"

struct config;

/* cgroup_dir: the cgroup2 directory the helper makes job cgroups below. */
int privsep_start(const struct config *cfg, const char *cgroup_dir, struct privc *ret, struct sbx_error *err);
/* With helper_socket: the daemon, started as its user (not root),
 * connects to a running sbx-privd there, then takes no_new_privs and its
 * seccomp filter as above; it starts no helper and changes no owner. */
int privsep_connect(const struct config *cfg, struct privc *ret, struct sbx_error *err);
struct netpriv;
/* The network's and the audit's requests to the helper behind c, for
 * the network code (net/netremote.h), which stands below c's folder. */
void privsep_netpriv(struct privc *c, struct netpriv *ret);
