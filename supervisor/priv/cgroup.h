/* SPDX-License-Identifier: Apache-2.0 */
/* Per-job cgroups on cgroup2. The daemon owns a subtree (configured, or
 * found: systemd's delegation of our own cgroup, or a directory under the
 * cgroup2 root when we sit at the root, as on hybrid hosts). Each job gets
 * job-ID below it: the launcher's child enters it before it execs
 * (spawn.c), cgroup.kill ends every process of the job at once,
 * and cpu.stat gives its cpu time. memory.max / pids.max / cpu.max are set
 * only where those controllers are enabled; otherwise the limits go to the
 * launcher as rlimits and the result says so. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "util.h"
#include "policy.h"

struct cgroup_ctx {
        bool enabled;
        char *root;      /* absolute path of the daemon's subtree */
        int root_fd;
        bool memory, pids, cpu; /* controllers enabled for job cgroups */
        bool kill;       /* cgroup.kill exists (Linux >= 5.14) */
        const char *how; /* "configured", "delegated", "created", or why disabled */
        struct list releasing; /* job cgroups waiting for their last process to go */
        unsigned n_releasing;
};

/* cfg: "auto", "none" or a directory. Fills c; never fails for "auto"
 * (falls back to disabled with c->how saying why). */
int cgroup_setup(const char *cfg, struct cgroup_ctx *c, struct sbx_error *err);
void cgroup_teardown(struct cgroup_ctx *c);


/* Create job-ID, apply what the controllers allow; returns an O_DIRECTORY
 * fd of it (spawn_params.cgroup_fd) and the CG_LIMIT_* bits it enforces. */
int cgroup_job_create(struct cgroup_ctx *c, const char *id, const struct policy_decision *d, int *ret_fd, unsigned *ret_limits);
/* job-ID as it is (after a restart: a session's box kept it). */
int cgroup_job_open(struct cgroup_ctx *c, const char *id, int *ret_fd);
/* Kill every process in the job's cgroup. */
int cgroup_job_kill(struct cgroup_ctx *c, int fd);
/* cpu.stat usage_usec. */
int cgroup_job_cpu_usec(int fd, uint64_t *ret);
/* memory.events oom_kill count (0 when unknown). */
uint64_t cgroup_job_oom_kills(int fd);
/* memory.events as an object of its counters ("max", "oom", "oom_kill",
 * ...), or NULL when there is none to read. */
json_t *cgroup_job_memory_events(int fd);
/* Remove job-ID; -EBUSY while processes remain. */
int cgroup_job_remove(struct cgroup_ctx *c, const char *id);
/* Remove job-ID now, or as soon as its last process has gone (the kernel
 * tells through cgroup.events, watched on the event loop): a job killed
 * after its grace period, or whose launcher was killed from outside, still
 * leaves no cgroup behind. gone(arg) is called (it may be NULL) once no
 * process of the job is left: at once, or when the cgroup is removed. If
 * that cannot be watched, it is never called. */
void cgroup_job_release(struct cgroup_ctx *c, const char *id, void (*gone)(void *arg), void *arg);
/* After a restart: kill and remove every leftover job-* cgroup but those
 * keep(ID, arg) keeps (sessions' boxes to be adopted; keep may be NULL);
 * returns how many were killed. */
int cgroup_reap_orphans(struct cgroup_ctx *c, bool (*keep)(const char *id, void *arg), void *arg);
