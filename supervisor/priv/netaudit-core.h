/* SPDX-License-Identifier: Apache-2.0 */
/* The network audit's privileged steps, without an event loop or a log:
 * load the programs of bpf/netaudit.bpf.c (a libbpf skeleton), give a
 * cgroup its entry in the jobs map and attach every program to it, put
 * entries in the allow and deny maps, read a job's counters and take it
 * all down again. The daemon in root mode (netaudit.c, which also reads
 * the ring buffer on its loop) and sbx-privd (privd/audit.c, which hands
 * the ring buffer to the front) are both built on it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "netaudit.h"

struct netaudit_bpf;
struct bpf_link;

#define NACORE_PROGS 5

/* One cgroup's part: its programs' links and its map entries. */
struct nacore_att {
        uint64_t cgroup_id;
        struct bpf_link *links[NACORE_PROGS];
        size_t n_keys, cap_keys; /* its allow map entries */
        struct netaudit_key *keys;
        bool mapped;             /* its jobs map entry is in */
};

/* Load the programs with a ring buffer of ring_bytes (a power of two, a
 * page at least). Fails (-errno, err saying why) where the kernel or our
 * privileges do not allow BPF. */
int nacore_load(uint64_t ring_bytes, struct netaudit_bpf **ret, struct sbx_error *err);
void nacore_unload(struct netaudit_bpf *s);
/* The ring buffer map's descriptor (owned by s). */
int nacore_ring_fd(struct netaudit_bpf *s);

/* a for cgroup_fd's cgroup, nothing in the maps yet. */
int nacore_init(struct nacore_att *a, int cgroup_fd);
/* The jobs map entry val, then every program attached to cgroup_fd. On
 * failure nothing of it is left (allow entries made before stay, for
 * nacore_drop). */
int nacore_attach(struct netaudit_bpf *s, struct nacore_att *a, int cgroup_fd, const struct netaudit_job *val,
                  struct sbx_error *err);
/* Add rules to a's allow entry for addr/prefix (prefix of the 128 bits,
 * addr masked by the caller), made if new: -EDQUOT past
 * NETAUDIT_JOB_ALLOW entries, -E2BIG past NETAUDIT_MAX_RULES rules in
 * one entry (nothing changed then), or the map's -errno. */
int nacore_allow(struct netaudit_bpf *s, struct nacore_att *a, const uint8_t addr[16], unsigned prefix,
                 const struct netaudit_rule *rules, size_t n);
/* Detach every program, read the job's counters (0 without an entry),
 * remove its map entries and free what a holds. */
void nacore_drop(struct netaudit_bpf *s, struct nacore_att *a, uint64_t *ret_lost, uint64_t *ret_dropped);
/* The deny map, shared by every job: one prefix in (with its reason,
 * enum netdeny_reason) or out. */
int nacore_deny_put(struct netaudit_bpf *s, const uint8_t addr[16], unsigned prefix, uint8_t reason);
int nacore_deny_del(struct netaudit_bpf *s, const uint8_t addr[16], unsigned prefix);
