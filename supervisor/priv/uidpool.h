/* SPDX-License-Identifier: Apache-2.0 */
/* Job uids: each job runs as a uid (and gid of the same number) of its own,
 * taken from a configured range and not given to another job while any
 * process of it may live (the daemon returns it only once the job's cgroup
 * is empty, or every process of the uid was killed). So no job reaches
 * another's processes, files or signals, and RLIMIT_NPROC bounds one job.
 * Numbers are handed out round-robin, so a uid just returned is the last
 * to be reused. Pure, unit-tested. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define UIDPOOL_MAX_SIZE (1u << 20)

struct uidpool {
        uid_t first;
        uint32_t size;        /* 0: no pool */
        uint64_t *used;       /* one bit per uid */
        uint32_t next;        /* where the next search starts */
        uint32_t n_used;
};

/* A pool of size uids from first (size 0: none). -EINVAL when the range
 * is empty, too large, wraps, or contains 0 or the overflow uid. */
int uidpool_init(struct uidpool *p, uid_t first, uint32_t size);
void uidpool_done(struct uidpool *p);
/* A free uid, marked used; -EAGAIN when all are in use. */
int uidpool_take(struct uidpool *p, uid_t *ret);
/* Mark uid used (recovery: a job of before the restart still holds it);
 * false when it is outside the pool. */
bool uidpool_claim(struct uidpool *p, uid_t uid);
void uidpool_release(struct uidpool *p, uid_t uid);
bool uidpool_contains(const struct uidpool *p, uid_t uid);
/* Is uid in the pool and taken? */
bool uidpool_in_use(const struct uidpool *p, uid_t uid);
