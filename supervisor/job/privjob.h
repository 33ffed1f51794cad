/* SPDX-License-Identifier: Apache-2.0 */
/* A job's privileged steps done by sbx-privd, for a front that runs
 * without privilege (the daemon's "user" key): its uid, its cgroup and
 * workspace, the launcher's start, its signals and its end. The helper
 * names and holds all of these; the job keeps a handle and descriptors. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "privc.h"
#include "spawn.h"

struct launchspec;
struct rjob;

/* A uid of the helper's range (on the loop). */
int privjob_uid(struct privc *c, struct rjob *rj);
/* The cgroup and the workspace, with the request's uploads written in
 * (on a worker). */
int privjob_open(struct privc *c, struct rjob *rj, struct sbx_error *err);
/* Where the launcher finds the workspace: in dir, the helper's --workspace. */
void privjob_workspace(const struct rjob *rj, const char *dir, char *buf, size_t len);
/* The launcher, as the job's uid in its cgroup; fds as spawn_params'. */
int privjob_spawn(struct privc *c, struct rjob *rj, const struct launchspec *ls, const int fds[SPAWN_FDS], int *ret_pidfd);
/* A session's box that a front before this one started (recovery:
 * rj->j.job_uid and rj->pid from the journal), parked by the helper: taken
 * back, with its cgroup and workspace; its launcher's pidfd in *ret_pidfd.
 * -ESRCH when the helper holds no such job. */
int privjob_adopt(struct privc *c, struct rjob *rj, int *ret_pidfd);
/* The workspace's files the job made become the front's (its end: the
 * artifacts), once no process of the job is left. */
int privjob_reclaim(struct privc *c, struct rjob *rj);
int privjob_term(struct privc *c, struct rjob *rj);
int privjob_kill(struct privc *c, struct rjob *rj);
/* How the launcher ended, once its pidfd said it did: -EAGAIN before. */
int privjob_wait(struct privc *c, struct rjob *rj, int *ret_status);
/* Everything of the job gone, its uid back in the helper's pool (blocking:
 * the helper waits for the cgroup to empty; on a worker). */
void privjob_close(struct privc *c, struct rjob *rj);
