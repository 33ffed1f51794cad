/* SPDX-License-Identifier: Apache-2.0 */
/* The network audit on the daemon's side (root mode): the eBPF programs
 * loaded once and attached to the cgroup of each job under audit
 * (netaudit-core.h), and the ring buffer read on the event loop
 * (ring_buffer__epoll_fd): each event goes to the job it belongs to. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "netaudit-core.h"
#include "netaudit.h"
#include "netdeny.h"
#include "netpolicy.h"
#include "util.h"

struct netaudit;

/* A job's attachment: its programs' links and its map entry. */
struct netaudit_att {
        struct list link;      /* in the netaudit's attachments */
        struct list bucket_link; /* in its bucket (by cgroup id) */
        void (*on_event)(void *arg, const struct netaudit_event *e);
        void *arg;
        struct nacore_att core;
};

/* Load the programs with a ring buffer of ring_bytes (a power of two, a
 * page at least) and watch it on the event loop. Fails (-errno, err
 * saying why) where the kernel or our privileges do not allow BPF. */
int netaudit_open(uint64_t ring_bytes, struct netaudit **ret, struct sbx_error *err);
void netaudit_close(struct netaudit *na);

/* Put cgroup_fd's job in the maps — audit only (pol NULL), or enforcing
 * pol (its deny-ports and the allow map entries of netpolicy_lpm()), its
 * events past budget only counted by the programs — and
 * attach every program to the cgroup; on_event(arg, e) gets each of its
 * events from then on. */
int netaudit_attach(struct netaudit *na, int cgroup_fd, const struct netpolicy *pol, uint64_t budget,
                    void (*on_event)(void *arg, const struct netaudit_event *e), void *arg, struct netaudit_att **ret,
                    struct sbx_error *err);
/* Deliver what the ring buffer still holds, detach, and remove the map
 * entry; *ret_lost: the job's events the ring had no room for,
 * *ret_dropped: those past its budget. Frees att. */
void netaudit_detach(struct netaudit *na, struct netaudit_att *att, uint64_t *ret_lost, uint64_t *ret_dropped);
/* An address the DNS proxy resolved for the job: admitted with rules
 * (added to what an entry of exactly that address already admits). */
int netaudit_allow_addr(struct netaudit *na, struct netaudit_att *att, const uint8_t addr[16], const struct np_rule *rules,
                        size_t n);
/* The deny map (every job's) made to hold what nd holds: 0, or the first
 * -errno (the map then holds at least what it held and what could be
 * added; the caller says what failed). */
int netaudit_deny_set(struct netaudit *na, const struct netdeny *nd);
/* Events for no attached job since the start (a job already detached). */
uint64_t netaudit_strays(const struct netaudit *na);
