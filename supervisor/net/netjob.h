/* SPDX-License-Identifier: Apache-2.0 */
/* A job's network audit: attached to its cgroup before its launcher is
 * cloned into it, its events kept (netevents.c) and sent live to its
 * followers, detached when it ends with the count of what was lost. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct daemon;
struct daemon_caps;
struct policy_decision;
struct rjob;

/* At start: load the audit programs where the daemon can (root, job
 * cgroups, a kernel with BPF); otherwise audits are refused, and
 * d->caps says why. Never fails the daemon. */
void netjob_setup(struct daemon *d);
void netjob_teardown(struct daemon *d);
/* Housekeeping: now and then, the host's addresses read again into what
 * restricted jobs never reach. */
void netjob_tick(struct daemon *d);

/* Attach the audit to rj's cgroup if its policy asks for one: 0, or
 * -errno with msg (of len bytes) saying why the job cannot run. */
int netjob_start(struct rjob *rj, char *msg, size_t len);
/* What the job's named profile (the file at path) asks of its network:
 * [net] audit = yes adds the audit to pol, or is refused (-EOPNOTSUPP)
 * where there is none; a restricted job's profile may not keep
 * capabilities that send around the programs (-EPERM), and must be
 * readable here (-EINVAL). msg (len bytes) says why. A profile that is not
 * readable is otherwise let be: the launcher, reading the same file,
 * refuses an audit it cannot do. */
int netjob_profile_policy(const struct daemon_caps *caps, const char *profile_name, const char *path, struct policy_decision *pol,
                          char *msg, size_t len);

/* An address the DNS proxy resolved for the job, admitted with rules
 * (the audit's allow map, or sbx-privd's NET_ALLOW): 0, -EDQUOT past the
 * job's prefixes, or another -errno. */
struct np_rule;
int netjob_allow_addr(struct rjob *rj, const uint8_t addr[16], const struct np_rule *rules, size_t n);

/* Detach (the ring's last events of the job delivered first), and let a
 * restricted job's veth and DNS proxy go. */
void netjob_end(struct rjob *rj);
