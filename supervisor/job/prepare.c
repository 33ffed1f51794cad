/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "daemon.h"
#include "log.h"
#include "netjob.h"
#include "prepare.h"
#include "privjob.h"
#include "runner.h"
#include "spawn.h"
#include "workspace.h"

/* Its own uid, or its tenant's job user (a tenant that names one, or a
 * daemon without a pool: every job of the tenant shares it). */
static int assign_ids(struct rjob *rj) {
        struct daemon *d = rj->d;
        const struct tenant *t = rj->j.tenant;
        uid_t uid;
        if (privc_on(&d->privc))
                return privjob_uid(&rj->d->privc, rj);
        /* A daemon that is not root can run jobs as nobody else (it says
         * so at start), whatever the tenant's job_user. */
        if (geteuid() != 0) {
                rj->j.job_uid = geteuid();
                rj->j.job_gid = getegid();
                return 0;
        }
        if (d->uids.size && !t->job_user_set) {
                int r = uidpool_take(&d->uids, &uid);
                if (r < 0)
                        return r;
                rj->j.job_uid = uid;
                rj->j.job_gid = (gid_t) uid;
                rj->own_uid = true;
                return 0;
        }
        rj->j.job_uid = t->job_uid;
        rj->j.job_gid = t->job_gid;
        return 0;
}

static void prepare_run(struct work *w) {
        struct rjob *rj = container_of(w, struct rjob, work);
        struct daemon *d = rj->d;
        struct sbx_error err;
        sbx_error_clear(&err);
        if (privc_on(&d->privc)) {
                if (privjob_open(&d->privc, rj, &err) < 0)
                        rj->prep_error = strdup(err.msg[0] ? err.msg : "out of memory");
                return;
        }
        struct workspace_spec ws = {
                .work_dirfd = d->dirs.work_fd,
                .work_path = d->dirs.work_path,
                .id = rj->j.id,
                .run = &rj->j.req.run,
                .uid = rj->j.job_uid,
                .gid = rj->j.job_gid,
                .own_mount = d->own_mounts,
                .size_bytes = rj->j.pol.disk,
        };
        struct workspace_made made;
        int r = workspace_prepare(&ws, &made, &err);
        rj->ws_mounted = made.mounted;
        rj->ws_noswap = made.noswap;
        rj->ws_encrypted = made.encrypted;
        if (r < 0) {
                rj->prep_error = strdup(err.msg);
                if (!rj->prep_error)
                        rj->prep_error = strdup("out of memory");
        }
}

static void prepare_done(struct work *w) {
        struct rjob *rj = container_of(w, struct rjob, work);
        struct job *j = &rj->j;
        if (rj->prep_error) {
                char msg[SBX_ERROR_MAX + 64];
                snprintf(msg, sizeof(msg), "cannot prepare the workspace: %s", rj->prep_error);
                log_error(JOB_LOG ": %s", JOB_LOG_ARGS(j), msg);
                job_transition(j, JEV_SPAWN_FAIL, msg);
                runner_end(rj);
                return;
        }
        /* Cancelled, or the daemon is stopping: it never runs. */
        if (j->abandon) {
                job_transition(j, JEV_ABANDON, NULL);
                runner_end(rj);
                return;
        }
        /* sbx-privd attaches the audit to the cgroup JOB_OPEN just made,
         * before SPAWN, as it must. */
        char msg[SBX_ERROR_MAX + 64];
        if (privc_on(&rj->d->privc) && netjob_start(rj, msg, sizeof(msg)) < 0) {
                metrics_net_setup_failed(&rj->d->metrics, MNET_AUDIT);
                log_error("job %s: %s", rj->j.id, msg);
                job_transition(j, JEV_SPAWN_FAIL, msg);
                runner_end(rj);
                return;
        }
        runner_launch(rj);
}

void prepare_begin(struct rjob *rj) {
        struct daemon *d = rj->d;
        job_transition(&rj->j, JEV_PREPARE, NULL);
        rj->slot = true;
        int r = assign_ids(rj);
        if (r < 0) {
                log_error(JOB_LOG ": no free job uid (job_uids: all %u in use)", JOB_LOG_ARGS(&rj->j), d->uids.size);
                job_transition(&rj->j, JEV_SPAWN_FAIL, "no free job uid: every uid of job_uids is in use");
                runner_end(rj);
                return;
        }
        if (d->cg.enabled && !privc_on(&d->privc)) {
                r = cgroup_job_create(&d->cg, rj->j.id, &rj->j.pol, &rj->cgroup_fd, &rj->cg_limits);
                if (r < 0) {
                        log_warning(JOB_LOG ": no cgroup (%s); limits go to rlimits", JOB_LOG_ARGS(&rj->j), strerror(-r));
                        rj->cgroup_fd = -1;
                        rj->cg_limits = 0;
                }
        }
        /* Before the launcher is cloned into the cgroup: the job's first
         * connection is audited like its last. */
        char msg[SBX_ERROR_MAX + 64];
        if (!privc_on(&d->privc) && (r = netjob_start(rj, msg, sizeof(msg))) < 0) {
                metrics_net_setup_failed(&d->metrics, MNET_AUDIT);
                log_error("job %s: %s", rj->j.id, msg);
                job_transition(&rj->j, JEV_SPAWN_FAIL, msg);
                runner_end(rj);
                return;
        }
        rj->work.run = prepare_run;
        rj->work.done = prepare_done;
        worker_submit(&rj->work);
}

/* Gives a uid back to the pool when no process of it can be left. */
struct uid_return {
        struct work work;
        struct daemon *d;
        uid_t uid;
        gid_t gid;
        int err;
};

static void uid_gone(void *arg) {
        struct uid_return *u = arg;
        uidpool_release(&u->d->uids, u->uid);
        free(u);
}

static void kill_uid_run(struct work *w) {
        struct uid_return *u = container_of(w, struct uid_return, work);
        u->err = spawn_kill_uid(u->uid, u->gid);
}

static void kill_uid_done(struct work *w) {
        struct uid_return *u = container_of(w, struct uid_return, work);
        if (u->err < 0) {
                /* Not given back: a uid held for good is better than one
                 * shared with a process of the last job. */
                log_error("job uid %u: cannot make sure no process of it is left (%s); it is not reused",
                          (unsigned) u->uid, strerror(-u->err));
                free(u);
                return;
        }
        uid_gone(u);
}

void prepare_release(struct rjob *rj) {
        struct daemon *d = rj->d;
        struct uid_return *u = NULL;
        if (privc_on(&d->privc)) {
                /* The rest is the helper's, closed once the artifacts
                 * are out (runner_end). */
                if (rj->cgroup_fd >= 0) {
                        close(rj->cgroup_fd);
                        rj->cgroup_fd = -1;
                }
                return;
        }
        if (rj->own_uid) {
                u = calloc(1, sizeof(*u));
                if (u) {
                        u->d = d;
                        u->uid = rj->j.job_uid;
                        u->gid = rj->j.job_gid;
                } else
                        log_error(JOB_LOG ": out of memory: its uid %u is not reused", JOB_LOG_ARGS(&rj->j), (unsigned) rj->j.job_uid);
                rj->own_uid = false;
        }
        if (rj->cgroup_fd >= 0) {
                close(rj->cgroup_fd);
                rj->cgroup_fd = -1;
                /* Gone now, or as soon as its last process is (a job killed
                 * after the grace period may still be dying): then the uid
                 * is free. */
                cgroup_job_release(&d->cg, rj->j.id, u ? uid_gone : NULL, u);
                return;
        }
        if (!u)
                return;
        if (rj->pid <= 0) {
                uid_gone(u); /* nothing ever ran as it */
                return;
        }
        u->work.run = kill_uid_run;
        u->work.done = kill_uid_done;
        worker_submit(&u->work);
}

void prepare_reap_uid(struct daemon *d, uid_t uid) {
        if (!uidpool_contains(&d->uids, uid))
                return;
        int r = spawn_kill_uid(uid, (gid_t) uid);
        if (r < 0)
                log_warning("recovery: job uid %u: %s", (unsigned) uid, strerror(-r));
}

