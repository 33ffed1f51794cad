/* SPDX-License-Identifier: Apache-2.0 */
/* The network audit of a front without privilege: sbx-privd loads the
 * programs and does every map update and attachment (lib/privd-abi.h:
 * NET_RING, NET_AUDIT, NET_ALLOW, NET_DENY, NET_UNAUDIT); this side maps
 * the ring buffer it handed over (auditring.c, no bpf()) and gives each
 * event to its job, as netaudit.c does for a daemon that runs as root. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "netaudit.h"
#include "netdeny.h"
#include "netpolicy.h"
#include "privd-abi.h"

/* The helper's requests, registered at start by the process that holds
 * the helper's socket (front/privsep.c over job/privc.c): this folder
 * stands below the socket's and does not call it. Each returns 0 or a
 * negative errno; arg is the registrant's. */
struct netpriv {
        void *arg;
        int (*net_open)(void *arg, struct privd_handle job, pid_t pid, uint64_t netns_ino, bool v6, struct privd_net_reply *ret,
                        int *ret_dns_fd, int *ret_dns_tcp_fd, int *ret_proxy_fd);
        int (*ring)(void *arg, int *ret_fd, uint32_t *ret_bytes);
        int (*audit)(void *arg, struct privd_net_audit *m);
        int (*allow)(void *arg, struct privd_net_allow *m);
        int (*deny)(void *arg, struct privd_net_deny *m);
        int (*unaudit)(void *arg, struct privd_handle job, uint64_t *ret_lost, uint64_t *ret_dropped);
        /* The host's addresses, one by one (index 0 reads them afresh):
         * a front under its unit has no netlink socket to list them. */
        int (*host_addr)(void *arg, uint32_t index, uint8_t ret_addr[16], uint32_t *ret_count);
        uint32_t net_slots;       /* the helper's blocks; 0: it has no network */
};

struct netremote;
struct netremote_att;

/* NET_RING and the ring mapped and watched on the event loop. */
int netremote_open(const struct netpriv *ops, struct netremote **ret, struct sbx_error *err);
void netremote_close(struct netremote *nr);
/* As netaudit_attach(), for the helper's job (cgroup_fd: the cgroup
 * directory JOB_OPEN handed over, whose inode the events carry). */
int netremote_attach(struct netremote *nr, struct privd_handle job, int cgroup_fd, const struct netpolicy *pol, uint64_t budget,
                     void (*on_event)(void *arg, const struct netaudit_event *e), void *arg, struct netremote_att **ret,
                     struct sbx_error *err);
void netremote_detach(struct netremote *nr, struct netremote_att *att, uint64_t *ret_lost, uint64_t *ret_dropped);
int netremote_allow_addr(struct netremote *nr, struct netremote_att *att, const uint8_t addr[16], const struct np_rule *rules,
                         size_t n);
/* What the front adds to the helper's own set (which it cannot take
 * out): nd's prefixes the helper does not hold yet, then those it added
 * before and nd no longer has taken out. */
int netremote_deny_set(struct netremote *nr, const struct netdeny *nd);
uint64_t netremote_strays(const struct netremote *nr);
