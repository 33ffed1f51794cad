/* SPDX-License-Identifier: Apache-2.0 */
/* A job before it starts and after it ends: its identity (a uid and gid of
 * its own from the daemon's pool, or its tenant's job user), its cgroup,
 * and its workspace (a tmpfs of its own when the daemon runs as root, made
 * with the uploads off the event loop); at the end, its cgroup is removed
 * once its last process is gone and only then is its uid given back (or,
 * without a cgroup, once every process of the uid was killed). */
#pragma once

struct daemon;
struct rjob;

/* Slot granted: make the job ready, then runner_launch() it (or end it,
 * when that failed or it was cancelled meanwhile). */
void prepare_begin(struct rjob *rj);
/* The job ended: let go of its cgroup and uid when it is safe. */
void prepare_release(struct rjob *rj);
/* At start, after a crash without cgroups: kill what processes a job uid
 * of before the restart may have left. */
void prepare_reap_uid(struct daemon *d, uid_t uid);
