/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jobs.h"
#include "launchspec.h"
#include "log.h"
#include "privjob.h"
#include "workspace.h"

int privjob_uid(struct privc *c, struct rjob *rj) {
        uid_t uid;
        int r = privc_uid_take(c, &uid);
        if (r < 0)
                return r;
        rj->j.job_uid = uid;
        rj->j.job_gid = (gid_t) uid;
        rj->own_uid = true;
        return 0;
}

static void take_limits(struct rjob *rj, unsigned limits) {
        rj->ws_noswap = (limits & PRIVD_WS_NOSWAP) != 0;
        rj->cg_limits = ((limits & PRIVD_LIMIT_MEMORY) ? CG_LIMIT_MEMORY : 0) | ((limits & PRIVD_LIMIT_PIDS) ? CG_LIMIT_PIDS : 0) |
                        ((limits & PRIVD_LIMIT_CPU) ? CG_LIMIT_CPU : 0);
}

int privjob_adopt(struct privc *c, struct rjob *rj, int *ret_pidfd) {
        unsigned limits = 0;
        int fds[3];
        int r = privc_job_adopt(c, rj->j.job_uid, rj->pid, &rj->ph, &limits, fds);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        rj->ph_open = true;
        rj->own_uid = true;
        *ret_pidfd = fds[0];
        rj->cgroup_fd = fds[1];
        rj->ws_fd = fds[2];
        rj->ws_mounted = true;
        take_limits(rj, limits);
        return 0;
}

static uint64_t or_zero(uint64_t v) {
        return v == PROTO_UNSET ? 0 : v;
}

int privjob_open(struct privc *c, struct rjob *rj, struct sbx_error *err) {
        const struct policy_decision *pol = &rj->j.pol;
        struct privd_job_open m = {
                .uid = (uint32_t) rj->j.job_uid,
                .memory_max = or_zero(pol->memory),
                .pids_max = or_zero(pol->processes),
                .cpu_milli = or_zero(pol->cpu_milli),
                .workspace_bytes = pol->disk,
        };
        unsigned limits = 0;
        int cg = -1, ws = -1;
        int r = privc_job_open(c, &m, &rj->ph, &limits, &cg, &ws);
        if (r < 0)
                return sbx_error_set(err, r, "sbx-privd: JOB_OPEN");
        rj->ph_open = true;
        rj->cgroup_fd = cg;
        rj->ws_fd = ws;
        rj->ws_mounted = true;
        take_limits(rj, limits);
        /* The workspace is the front's until it is handed over: the
         * uploads go in as the front's files, then become the job's. */
        r = workspace_write_uploads(ws, &rj->j.req.run, err);
        if (r < 0)
                return r;
        r = privc_ws_handover(c, rj->ph);
        return r < 0 ? sbx_error_set(err, r, "sbx-privd: WS_HANDOVER (its log says which entry it refused)") : 0;
}

int privjob_reclaim(struct privc *c, struct rjob *rj) {
        return rj->ph_open ? privc_ws_reclaim(c, rj->ph) : -ESRCH;
}

void privjob_workspace(const struct rjob *rj, const char *dir, char *buf, size_t len) {
        /* The helper's name for it (privd-abi.h). */
        snprintf(buf, len, "%s/job-p%u-%u", dir, rj->ph.slot, rj->ph.gen);
}

/* The launcher's options and command, NUL-separated, in a sealed memfd. */
static int argv_file(const struct launchspec *ls, int *ret_fd) {
        _cleanup_close_ int fd = memfd_create("sbx-job-argv", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return -errno;
        /* argv[0] is the launcher, which the helper names itself; so are
         * the status descriptor and the handshake's. */
        for (size_t i = 1; ls->argv[i]; i++) {
                const char *a = ls->argv[i];
                if (streq(a, "--json-status-fd") || streq(a, "--info-fd") || streq(a, "--block-fd")) {
                        i++;
                        continue;
                }
                int r = write_all(fd, a, strlen(a) + 1);
                if (r < 0)
                        return r;
        }
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0 || lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int privjob_spawn(struct privc *c, struct rjob *rj, const struct launchspec *ls, const int fds[SPAWN_FDS], int *ret_pidfd) {
        int all[PRIVD_FD_COUNT];
        _cleanup_close_ int argv_fd = -1;
        int r = argv_file(ls, &argv_fd);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < PRIVD_FD_COUNT; i++)
                all[i] = i < SPAWN_FDS ? fds[i] : -1;
        all[PRIVD_FD_ARGV] = argv_fd;
        pid_t pid = 0;
        /* A session's box outlives the front: the helper parks it. */
        r = privc_spawn(c, rj->ph, all, rj->session_box ? PRIVD_SPAWN_OUTLIVE : 0, &pid, ret_pidfd);
        if (r == 0)
                rj->pid = pid;
        return r;
}

int privjob_term(struct privc *c, struct rjob *rj) {
        return rj->ph_open ? privc_job_term(c, rj->ph) : -ESRCH;
}

int privjob_kill(struct privc *c, struct rjob *rj) {
        return rj->ph_open ? privc_job_kill(c, rj->ph) : -ESRCH;
}

int privjob_wait(struct privc *c, struct rjob *rj, int *ret_status) {
        return rj->ph_open ? privc_job_wait(c, rj->ph, ret_status) : -ESRCH;
}

void privjob_close(struct privc *c, struct rjob *rj) {
        if (rj->ws_fd >= 0) {
                close(rj->ws_fd);
                rj->ws_fd = -1;
        }
        if (rj->ph_open) {
                int r = privc_job_close(c, rj->ph);
                /* The helper keeps the uid out of its pool then. */
                if (r < 0)
                        log_error(JOB_LOG ": sbx-privd could not remove all of it (%s); its uid is not reused",
                                  JOB_LOG_ARGS(&rj->j), strerror(-r));
                rj->ph_open = false;
        } else if (rj->own_uid) {
                int r = privc_uid_release(c, rj->j.job_uid);
                if (r < 0)
                        log_error(JOB_LOG ": sbx-privd: uid %u not released (%s)", JOB_LOG_ARGS(&rj->j), (unsigned) rj->j.job_uid,
                                  strerror(-r));
        }
        rj->own_uid = false;
}
