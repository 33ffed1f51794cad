/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bundle.h"
#include "cgroup.h"
#include "commit.h"
#include "job-secrets.h"
#include "jobevents.h"
#include "record.h"
#include "daemon.h"
#include "launch-abi.h"
#include "launchspec.h"
#include "log.h"
#include "netjob.h"
#include "netveth.h"
#include "prepare.h"
#include "privjob.h"
#include "runner.h"
#include "secretproxy.h"
#include "sched.h"
#include "spawn.h"
#include "workspace.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

void runner_schedule(struct daemon *d) {
        d->schedule_wanted = true;
}

static int arm_timer(struct rjob *rj, uint64_t ms) {
        struct itimerspec its = { 0 };
        if (ms == 0)
                ms = 1;
        its.it_value.tv_sec = (time_t) (ms / 1000);
        its.it_value.tv_nsec = (long) (ms % 1000) * 1000000;
        return timerfd_settime(rj->timer_fd, 0, &its, NULL) < 0 ? -errno : 0;
}

/* Every process of the job, now: the cgroup when there is one, else the
 * launcher's process group (the launcher's pid 1 takes the namespace with
 * it when the launcher dies). */
static void hard_kill(struct rjob *rj) {
        if (rj->session_signal) {
                rj->session_signal(rj, SIGKILL);
                return;
        }
        if (privc_on(&rj->d->privc)) {
                int r = privjob_kill(&rj->d->privc, rj);
                if (r < 0)
                        log_error(JOB_LOG ": sbx-privd: JOB_KILL: %s", JOB_LOG_ARGS(&rj->j), strerror(-r));
                return;
        }
        if (rj->cgroup_fd >= 0 && cgroup_job_kill(&rj->d->cg, rj->cgroup_fd) == 0)
                return;
        if (rj->pid > 0 && !rj->cap.exited) {
                kill(-rj->pid, SIGKILL);
                kill(rj->pid, SIGKILL);
        }
}

void runner_stop(struct rjob *rj, enum job_event why) {
        enum job_state before = rj->j.state;
        if (job_transition(&rj->j, why, NULL) < 0)
                return;
        if (before == JOB_RUNNING && rj->j.state == JOB_STOPPING) {
                uint64_t grace_ms = rj->d->cfg->kill_grace_ms;
                /* SIGTERM first: the launcher forwards it to the command,
                 * which gets the grace period to clean up. */
                if (rj->session_signal)
                        rj->session_signal(rj, SIGTERM);
                else if (rj->pid > 0 && !rj->cap.exited) {
                        if (!privc_on(&rj->d->privc))
                                kill(rj->pid, SIGTERM);
                        else if (privjob_term(&rj->d->privc, rj) < 0)
                                log_warning(JOB_LOG ": sbx-privd: JOB_TERM refused: the grace period passes without it",
                                            JOB_LOG_ARGS(&rj->j));
                }
                int r = arm_timer(rj, grace_ms);
                if (r < 0) {
                        /* No timer to end the grace period: no grace. */
                        log_error(JOB_LOG ": cannot arm the grace period (%s): killing every process now",
                                  JOB_LOG_ARGS(&rj->j), strerror(-r));
                        hard_kill(rj);
                        return;
                }
                log_info(JOB_LOG ": %s, SIGTERM sent, kill in %" PRIu64 " ms", JOB_LOG_ARGS(&rj->j),
                         why == JEV_TIMEOUT ? "timed out" : why == JEV_CANCEL ? "cancelled" : "daemon stopping", grace_ms);
        }
}

static void on_timer(struct source *s, uint32_t events) {
        struct rjob *rj = container_of(s, struct rjob, timer_src);
        uint64_t n;
        if (read(s->fd, &n, sizeof(n)) < 0)
                return;
        if (rj->j.state == JOB_RUNNING)
                runner_stop(rj, JEV_TIMEOUT);
        else if (rj->j.state == JOB_STOPPING) {
                log_info(JOB_LOG ": grace period over, killing every process", JOB_LOG_ARGS(&rj->j));
                hard_kill(rj);
        }
}

/* The job's wall clock, armed before its launcher exists: a job whose
 * timeout cannot be enforced does not start (fail closed). */
static int timer_start(struct rjob *rj, struct sbx_error *err) {
        rj->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (rj->timer_fd < 0)
                return sbx_error_set(err, errno, "cannot arm the job's timeout: timerfd_create");
        int r = loop_add(&rj->timer_src, rj->timer_fd, EPOLLIN, on_timer);
        if (r < 0) {
                close(rj->timer_fd);
                rj->timer_fd = -1;
                return sbx_error_set(err, r, "cannot arm the job's timeout: epoll");
        }
        r = arm_timer(rj, rj->j.pol.timeout_ms);
        return r < 0 ? sbx_error_set(err, r, "cannot arm the job's timeout: timerfd_settime") : 0;
}

/* An in-memory file holding data, read from its start; sealed: nothing can
 * change it any more. */
static int memfd_of(const char *name, const void *data, size_t len, bool sealed, int *ret_fd) {
        _cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC | (sealed ? MFD_ALLOW_SEALING : 0));
        if (fd < 0)
                return -errno;
        int r = write_all(fd, data, len);
        if (r < 0)
                return r;
        if (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
                return -errno;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

struct pipes {
        int out[2], err[2], status[2], report[2];
        int info[2], block[2]; /* a restricted job's handshake, or -1 */
};

#define OUTPUT_PIPE_BYTES (1 << 20)

static void pipes_close(struct pipes *p) {
        int *all = &p->out[0];
        for (size_t i = 0; i < sizeof(*p) / sizeof(int); i++)
                if (all[i] >= 0) {
                        close(all[i]);
                        all[i] = -1;
                }
}

static int pipes_open(struct pipes *p, bool handshake) {
        memset(p, -1, sizeof(*p));
        if (pipe2(p->out, O_CLOEXEC) < 0 || pipe2(p->err, O_CLOEXEC) < 0 || pipe2(p->status, O_CLOEXEC) < 0 ||
            pipe2(p->report, O_CLOEXEC) < 0 ||
            (handshake && (pipe2(p->info, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(p->block, O_CLOEXEC) < 0))) {
                int r = -errno;
                pipes_close(p);
                return r;
        }
        /* Output pipes of OUTPUT_PIPE_BYTES: a job writing as fast as it
         * can wakes the daemon once per pipeful, so a bigger pipe costs
         * the daemon fewer wakeups and splices per byte. Best effort: the
         * kernel may refuse (pipe-max-size, a user's pipe budget). */
        (void) fcntl(p->out[0], F_SETPIPE_SZ, OUTPUT_PIPE_BYTES);
        (void) fcntl(p->err[0], F_SETPIPE_SZ, OUTPUT_PIPE_BYTES);
        return 0;
}

static void no_cgroup(struct rjob *rj) {
        close(rj->cgroup_fd);
        rj->cgroup_fd = -1;
        rj->cg_limits = 0;
        cgroup_job_remove(&rj->d->cg, rj->j.id);
}

/* Clone the launcher as the job uid, into the job's cgroup when it has
 * one. The caller closes the child's ends of the pipes. */
static int spawn(struct rjob *rj, const struct launchspec *ls, int profile_fd, int stdin_fd, int bundle_fd, struct pipes *p,
                 int *ret_pidfd) {
        struct daemon *d = rj->d;
        struct spawn_params sp = {
                .path = d->cfg->launcher,
                .argv = ls->argv,
                .envp = (char **) ls->envp,
                .fds = { stdin_fd, p->out[1], p->err[1], p->status[1], profile_fd, p->info[1], p->block[0], bundle_fd,
                         rj->session_fd },
                .uid = rj->j.job_uid,
                .gid = rj->j.job_gid,
                .cgroup_fd = rj->cgroup_fd,
                .err_fd = p->report[1],
                .outlive = rj->session_box,
        };
        if (privc_on(&d->privc))
                return privjob_spawn(&d->privc, rj, ls, sp.fds, ret_pidfd);
        int r = spawn_launcher(&sp, &rj->pid, ret_pidfd);
        /* An audited job runs in its cgroup or not at all: out of it, no
         * program would see its connections. */
        if (r < 0 && rj->cgroup_fd >= 0 && !rj->net_att) {
                /* Entering the cgroup can fail where starting works (e.g. a
                 * threaded cgroup); run without the cgroup rather than not at all. */
                log_warning(JOB_LOG ": start in its cgroup failed (%s), starting without it", JOB_LOG_ARGS(&rj->j), strerror(-r));
                no_cgroup(rj);
                sp.cgroup_fd = -1;
                r = spawn_launcher(&sp, &rj->pid, ret_pidfd);
        }
        return r;
}

json_t *runner_start_record(const struct rjob *rj) {
        json_t *o = json_pack("{s:s, s:s, s:i, s:I, s:o, s:i, s:b, s:i, s:I, s:I, s:b, s:b, s:b}", "ev", "start", "job", rj->j.id, "pid",
                              (int) rj->pid, "starttime", (json_int_t) rj->starttime, "started", proto_time(rj->j.started_ms),
                              "cg_limits", (int) rj->cg_limits, "cgroup", rj->had_cgroup, "attempt", (int) rj->j.attempt,
                              "job_uid", (json_int_t) rj->j.job_uid, "job_gid", (json_int_t) rj->j.job_gid, "disk_quota",
                              rj->ws_mounted, "ws_noswap", rj->ws_noswap, "ws_encrypted", rj->ws_encrypted);
        /* A session's TTL, extended or not, counts from the start. */
        if (o && rj->session_box)
                json_object_set_new(o, "timeout_ms", json_integer((json_int_t) rj->j.pol.timeout_ms));
        /* Its services: exposed again after a restart, with the same token. */
        if (o && rj->session_box && rj->session_service)
                json_object_set(o, "service", rj->session_service);
        /* A session's packages' layer: held again after a restart. */
        if (o && rj->session_box && rj->deps_info && json_is_string(json_object_get(rj->deps_info, "layer")))
                json_object_set(o, "deps_layer", json_object_get(rj->deps_info, "layer"));
        /* An exec's handle in its agent: after a restart, it is stopped. */
        if (o && rj->session_exec && rj->session_handle)
                json_object_set_new(o, "handle", json_integer(rj->session_handle));
        /* A bundle job's resolution and grant are known only now: a record
         * written after a restart needs them. */
        if (o && rj->j.bundle.set) {
                json_object_set_new(o, "bundle", record_bundle(&rj->j.bundle));
                json_object_set_new(o, "policy", policy_to_json(&rj->j.pol));
        }
        return o;
}

/* The journal's start line: the launcher's pid (to kill orphans when
 * there is no cgroup) and what a record written at recovery needs. */
static void journal_start(struct rjob *rj) {
        unsigned long long st = 0;
        proc_starttime(rj->pid, &st);
        rj->starttime = st;
        json_t *jr = runner_start_record(rj);
        int r = jr ? journal_append(&rj->d->journal, jr, false) : -ENOMEM;
        json_decref(jr);
        /* Not fatal: the accept line alone still gets the job a record. */
        if (r < 0)
                log_warning(JOB_LOG ": journal: %s", JOB_LOG_ARGS(&rj->j), strerror(-r));
}

static int prepare(struct rjob *rj, struct launchspec *ls, int *profile_fd, int *stdin_fd, int *bundle_fd,
                   struct sbx_error *err) {
        struct daemon *d = rj->d;
        const struct run_request *run = &rj->j.req.run;
        char ws[4200];
        if (privc_on(&d->privc))
                privjob_workspace(rj, d->dirs.work_path, ws, sizeof(ws));
        else
                snprintf(ws, sizeof(ws), "%s/%s", d->dirs.work_path, rj->j.id);
        /* The cache is root's alone: a bundle's tree reaches its job as a
         * mount. A daemon that may not mount runs its jobs as its own
         * user, who reaches the tree by its path. */
        if (rj->j.bundle.set) {
                int r = bundle_job_tree_mount(rj);
                if (r < 0 && (r != -EPERM || geteuid() == 0))
                        return sbx_error_set(err, r, "the bundle's tree");
                *bundle_fd = r;
        }
        /* the values of its secrets, read now (a removed one fails it) */
        int r = job_secrets_open(rj, d->dirs.state_fd, d->cfg->secret_proxy_ca, err);
        if (r < 0)
                return r;
        struct launchspec_input in = {
                .launcher = d->cfg->launcher,
                .profile_file = rj->profile_path,
                .search_path = d->cfg->profile_path,
                .workspace = ws,
                .j = &rj->j,
                .cg_limits = rj->cg_limits,
                .handshake = netveth_handshake(rj),
                .bundle_fd = *bundle_fd >= 0,
                .session_init = rj->session_box ? d->cfg->init : NULL,
                .secrets = rj->secrets ? rj->secrets->s : NULL,
                .n_secrets = rj->secrets ? rj->secrets->n : 0,
                .proxy_ca_pem = rj->sproxy ? secretproxy_ca_pem(rj->sproxy) : NULL,
                .proxy_ca_name = rj->sproxy ? secretproxy_ca_hashname(rj->sproxy) : NULL,
                .deps_layer = rj->deps_layer,
        };
        r = launchspec_build(&in, ls, err);
        if (r < 0)
                return r;
        r = memfd_of("sbx-job-profile", ls->profile, ls->profile_len, true, profile_fd);
        if (r == 0 && run->stdin_data)
                r = memfd_of("sbx-job-stdin", run->stdin_data, run->stdin_len, false, stdin_fd);
        return r < 0 ? sbx_error_set(err, r, "cannot prepare the job") : 0;
}

void runner_launch(struct rjob *rj) {
        struct daemon *d = rj->d;
        struct sbx_error err;
        struct launchspec ls = { 0 };
        struct pipes p;
        _cleanup_close_ int profile_fd = -1, stdin_fd = -1, bundle_fd = -1;
        int pidfd = -1, r;
        bool captured = false;
        sbx_error_clear(&err);
        memset(&p, -1, sizeof(p));

        r = prepare(rj, &ls, &profile_fd, &stdin_fd, &bundle_fd, &err);
        if (r == 0)
                r = timer_start(rj, &err);
        if (r == 0 && (r = pipes_open(&p, netveth_handshake(rj))) < 0)
                sbx_error_set(&err, r, "pipe");
        if (r == 0) {
                r = spawn(rj, &ls, profile_fd, stdin_fd, bundle_fd, &p, &pidfd);
                if (r < 0)
                        sbx_error_set(&err, r, "cannot start %s", d->cfg->launcher);
                /* The child's ends are the child's (and the agent's
                 * listening socket is the agent's: the daemon connects by
                 * its path). */
                int *child_ends[] = { &p.out[1], &p.err[1], &p.status[1], &p.report[1], &p.info[1], &p.block[0], &rj->session_fd };
                for (size_t i = 0; i < ARRAY_SIZE(child_ends); i++) {
                        close(*child_ends[i]);
                        *child_ends[i] = -1;
                }
        }
        launchspec_free(&ls);
        if (r == 0) {
                /* From here the read ends and the pidfd are the capture's. */
                captured = true;
                r = capture_start(rj, p.out[0], p.err[0], p.status[0], p.report[0], pidfd);
                p.out[0] = p.err[0] = p.status[0] = p.report[0] = -1;
                if (r < 0)
                        sbx_error_set(&err, r, "cannot watch the launcher");
                /* A restricted job waits at --block-fd until its veth is up. */
                if (r == 0 && p.info[0] >= 0) {
                        r = netveth_launched(rj, p.info[0], p.block[1], &err);
                        p.info[0] = p.block[1] = -1;
                }
                if (r < 0) {
                        /* Nothing watches the launcher: it must not run unwatched. */
                        if (privc_on(&d->privc))
                                hard_kill(rj); /* the helper reaps it */
                        else {
                                kill(-rj->pid, SIGKILL);
                                kill(rj->pid, SIGKILL);
                                siginfo_t si;
                                waitid((idtype_t) P_PIDFD, (id_t) pidfd, &si, WEXITED);
                        }
                }
        }
        if (r < 0) {
                if (captured)
                        capture_stop(&rj->cap);
                pipes_close(&p);
                log_error(JOB_LOG ": %s", JOB_LOG_ARGS(&rj->j), err.msg);
                job_transition(&rj->j, JEV_SPAWN_FAIL, err.msg);
                runner_end(rj);
                return;
        }
        /* The timeout counts from here, as it always has (a restricted
         * job's network set-up is not the job's time). Should the re-arm
         * fail, the deadline armed before the spawn still holds. */
        r = arm_timer(rj, rj->j.pol.timeout_ms);
        if (r < 0)
                log_warning(JOB_LOG ": timeout not re-armed (%s): it counts from before the launcher started",
                            JOB_LOG_ARGS(&rj->j), strerror(-r));
        job_transition(&rj->j, JEV_START, NULL);
        metrics_net_started(&d->metrics, rj->j.pol.net, rj->j.pol.net_audit);
        rj->had_cgroup = rj->cgroup_fd >= 0;
        if (rj->had_cgroup && rj->j.pol.cpu_s != PROTO_UNSET) {
                rj->cpu_watched = true;
                daemon_cpu_watch(d, 1);
        }
        rj->j.started_ms = now_real_ms();
        rj->t_us[T_STARTED] = now_mono_us();
        journal_start(rj);
        log_debug(JOB_LOG ": started pid %d", JOB_LOG_ARGS(&rj->j), (int) rj->pid);
        job_tell_event(rj, proto_ev_started(rj->j.id), 0, 0);
}

int runner_exec_start(struct rjob *rj, int out_fd, int err_fd, struct sbx_error *err) {
        job_transition(&rj->j, JEV_PREPARE, NULL);
        int r = timer_start(rj, err);
        if (r == 0 && (r = capture_start_exec(rj, out_fd, err_fd)) < 0)
                sbx_error_set(err, r, "cannot watch the command's output");
        if (r < 0) {
                capture_stop(&rj->cap);
                return r;
        }
        job_transition(&rj->j, JEV_START, NULL);
        rj->j.started_ms = now_real_ms();
        rj->t_us[T_STARTED] = now_mono_us();
        journal_start(rj);
        job_tell_event(rj, proto_ev_started(rj->j.id), 0, 0);
        return 0;
}

int runner_journal_start(struct rjob *rj) {
        json_t *jr = runner_start_record(rj);
        int r = jr ? journal_append(&rj->d->journal, jr, true) : -ENOMEM;
        json_decref(jr);
        return r;
}

int runner_extend(struct rjob *rj, uint64_t timeout_ms) {
        if (rj->j.state != JOB_RUNNING || rj->timer_fd < 0)
                return -EAGAIN;
        uint64_t now = now_real_ms(), end = rj->j.started_ms + timeout_ms;
        uint64_t before = rj->j.pol.timeout_ms;
        rj->j.pol.timeout_ms = timeout_ms;
        /* Durable before it is told: a restart keeps the new deadline. */
        int r = runner_journal_start(rj);
        if (r == 0)
                r = arm_timer(rj, end > now ? end - now : 0);
        if (r < 0)
                rj->j.pol.timeout_ms = before;
        return r;
}

/* The launcher of a box the last daemon started, if it is still that
 * process: a pidfd of it, its cgroup open again. */
static int find_launcher(struct rjob *rj, int *ret_pidfd) {
        struct daemon *d = rj->d;
        unsigned long long st;
        /* sbx-privd parked it, and knows it is its child. */
        if (privc_on(&d->privc))
                return privjob_adopt(&d->privc, rj, ret_pidfd);
        int pidfd = (int) syscall(SYS_pidfd_open, rj->pid, 0);
        if (pidfd < 0)
                return errno == ESRCH ? -ESRCH : -errno;
        /* The pid names the launcher if the process has its start time;
         * the pidfd, taken before, is of that process if it still runs
         * after the look. */
        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
        if (proc_starttime(rj->pid, &st) < 0 || st != rj->starttime || poll(&pfd, 1, 0) != 0) {
                close(pidfd);
                return -ESRCH;
        }
        *ret_pidfd = pidfd;
        int r = 0;
        if (rj->had_cgroup && (r = cgroup_job_open(&d->cg, rj->j.id, &rj->cgroup_fd)) < 0)
                log_warning(JOB_LOG ": its cgroup cannot be opened again (%s): it is ended through its launcher",
                            JOB_LOG_ARGS(&rj->j), strerror(-r));
        return 0;
}

int runner_adopt(struct rjob *rj) {
        struct daemon *d = rj->d;
        struct sbx_error err;
        int pidfd = -1;
        int r = find_launcher(rj, &pidfd);
        if (r < 0)
                return r;
        r = timer_start(rj, &err);
        if (r == 0) {
                uint64_t now = now_real_ms(), end = rj->j.started_ms + rj->j.pol.timeout_ms;
                r = arm_timer(rj, end > now ? end - now : 0);
        }
        if (r == 0)
                r = capture_adopt(rj, pidfd);
        else
                close(pidfd);
        if (r < 0)
                return r;
        rj->slot = true;
        sched_adopt(&d->sched, &rj->j);
        if (rj->cgroup_fd >= 0 && rj->j.pol.cpu_s != PROTO_UNSET) {
                rj->cpu_watched = true;
                daemon_cpu_watch(d, 1);
        }
        return 0;
}

void runner_exec_failed(struct rjob *rj, const char *why) {
        if (rj->j.state == JOB_QUEUED)
                job_transition(&rj->j, JEV_PREPARE, NULL);
        job_transition(&rj->j, JEV_SPAWN_FAIL, why);
        runner_end(rj);
}

/* Jobs start at the end of the loop turn, after its syncs went to the
 * syncer thread: the accept syncs then run while the launchers start, not
 * after. */
void runner_start_ready(struct daemon *d) {
        struct job *j;
        /* A job that fails to start ends, which asks for scheduling again. */
        if (d->starting || d->stopping || !d->schedule_wanted)
                return;
        d->starting = true;
        d->schedule_wanted = false;
        while ((j = sched_next(&d->sched)))
                prepare_begin(rjob_of(j));
        d->starting = false;
}

/* The record's "limit_hit": which limit stopped the job, with the
 * evidence for it, when job_exited() found one did. */
static void limit_hit(struct rjob *rj, const struct job_exit *x) {
        const struct job *j = &rj->j;
        json_t *o = NULL;
        if (!j->error_code)
                return;
        if (streq(j->error_code, E_MEMORY))
                o = json_pack("{s:s, s:s, s:I, s:I, s:s}", "limit", "memory", "by", "rlimit", "value", (json_int_t) j->pol.memory,
                              "peak_address_space", (json_int_t) (x->peak_vm_kb * 1024), "evidence",
                              "the largest peak address space (VmPeak) the launcher saw among the job's processes, sampled "
                              "while they ran: a lower bound");
        else if (streq(j->error_code, E_OOM))
                o = json_pack("{s:s, s:s, s:I, s:o}", "limit", "memory", "by", "cgroup", "value", (json_int_t) j->pol.memory,
                              "memory_events", rj->cgroup_fd >= 0 ? cgroup_job_memory_events(rj->cgroup_fd) ?: json_null() : json_null());
        json_decref(rj->limit_hit);
        rj->limit_hit = o;
}

void runner_exited(struct rjob *rj) {
        struct capture *cap = &rj->cap;
        json_t *end = cap->status_end, *err = end ? json_object_get(end, SBX_STATUS_ERROR) : NULL;
        json_t *ec = end ? json_object_get(end, SBX_STATUS_EXIT_CODE) : NULL, *sg = end ? json_object_get(end, SBX_STATUS_SIGNAL) : NULL;
        json_t *vm = end ? json_object_get(end, SBX_STATUS_PEAK_VM_KB) : NULL;
        struct job_exit x = {
                .status = cap->exit_status,
                .signal = cap->exit_signal,
                .have_end = json_is_integer(ec),
                .end_exit_code = json_is_integer(ec) ? (int) json_integer_value(ec) : -1,
                .end_signal = json_is_integer(sg) ? (int) json_integer_value(sg) : 0,
                .setup_step = json_is_object(err) ? json_string_value(json_object_get(err, SBX_STATUS_ERROR_STEP)) ?: "setup" : NULL,
                .setup_message = json_is_object(err) ? json_string_value(json_object_get(err, SBX_STATUS_ERROR_MESSAGE)) : NULL,
                .spawn_error = cap->spawn_error,
                .oom_killed = (rj->cg_limits & CG_LIMIT_MEMORY) && rj->cgroup_fd >= 0 && cgroup_job_oom_kills(rj->cgroup_fd) > 0,
                .memory_rlimit = !(rj->cg_limits & CG_LIMIT_MEMORY),
                .peak_vm_kb = json_is_integer(vm) && json_integer_value(vm) > 0 ? (uint64_t) json_integer_value(vm) : 0,
        };
        if (x.setup_step)
                snprintf(rj->setup_step, sizeof(rj->setup_step), "%s", x.setup_step);
        /* The launcher failed at block-fd because its network could not be
         * made: the record says why. */
        if (netveth_failure(rj) && x.setup_step) {
                x.setup_step = "network";
                x.setup_message = netveth_failure(rj);
        }
        job_exited(&rj->j, &x);
        limit_hit(rj, &x);
        runner_end(rj);
}

static void collect(struct rjob *rj) {
        struct sbx_error e;
        const struct run_request *run = &rj->j.req.run;
        sbx_error_clear(&e);
        int dir = rj->cap.result_dir_fd;
        if (mkdirat(dir, "artifacts", 0700) < 0 && errno != EEXIST) {
                sbx_error_set(&e, errno, "artifacts");
        } else {
                _cleanup_close_ int adir = openat(dir, "artifacts", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (adir < 0)
                        sbx_error_set(&e, errno, "artifacts");
                /* One syncfs for every copy instead of an fsync each: a job
                 * with many small artifacts costs one flush, not thousands. */
                else if (workspace_collect(rj->ws_fd >= 0 ? rj->ws_fd : rj->d->dirs.work_fd, rj->ws_fd >= 0 ? "." : rj->j.id, run->artifacts, run->n_artifacts, rj->j.pol.artifacts,
                                           adir, &rj->artifacts, &rj->artifacts_truncated, &e) == 0) {
                        int r = job_secrets_artifacts(rj, adir);
                        if (r < 0) {
                                /* an artifact that may show a secret is not kept */
                                sbx_error_set(&e, -r, "artifacts: redacting secrets");
                                json_decref(TAKE_PTR(rj->artifacts));
                        } else if (syncfs(adir) < 0)
                                sbx_error_set(&e, errno, "artifacts: syncfs");
                }
        }
        if (e.msg[0])
                rj->artifacts_error = strdup(e.msg);
}

/* The value of $SBX_RESULT, when the job wrote one. */
static void read_value(struct rjob *rj) {
        int r = workspace_read_value(rj->ws_fd >= 0 ? rj->ws_fd : rj->d->dirs.work_fd, rj->ws_fd >= 0 ? "." : rj->j.id,
                                     JOB_RESULT_FILE, rj->d->cfg->max_result_value, &rj->value, &rj->value_error);
        if (r == -EINVAL && !rj->value_error)
                rj->value_error = strdup(JOB_RESULT_FILE ": out of memory");
        else if (r < 0 && r != -EINVAL && !rj->value_error && asprintf(&rj->value_error, "the workspace: %s", strerror(-r)) < 0)
                rj->value_error = NULL;
}

/* Did the job leave a result file? Where the daemon cannot look (a front
 * without privilege, before sbx-privd gives the workspace back) it may
 * have. */
static bool value_present(struct rjob *rj) {
        char path[64];
        struct stat st;
        if (privc_on(&rj->d->privc))
                return true;
        snprintf(path, sizeof(path), "%s/" JOB_RESULT_FILE, rj->ws_fd >= 0 ? "." : rj->j.id);
        return fstatat(rj->ws_fd >= 0 ? rj->ws_fd : rj->d->dirs.work_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* The artifacts and the value out, then (a front without privilege) the
 * job's uid, cgroup and workspace given back to sbx-privd. */
static void artifacts_run(struct work *w) {
        struct rjob *rj = container_of(w, struct rjob, work);
        if (privc_on(&rj->d->privc) && (rj->collect || rj->want_value) && privjob_reclaim(&rj->d->privc, rj) < 0) {
                if (rj->collect)
                        rj->artifacts_error = strdup("artifacts: sbx-privd could not give the workspace back (its log says why)");
                if (rj->want_value)
                        rj->value_error = strdup(JOB_RESULT_FILE ": sbx-privd could not give the workspace back (its log says why)");
        } else {
                if (rj->collect)
                        collect(rj);
                if (rj->want_value)
                        read_value(rj);
        }
        if (privc_on(&rj->d->privc))
                privjob_close(&rj->d->privc, rj);
}

static void artifacts_done(struct work *w) {
        struct rjob *rj = container_of(w, struct rjob, work);
        if (rj->artifacts_error)
                log_warning(JOB_LOG ": %s", JOB_LOG_ARGS(&rj->j), rj->artifacts_error);
        job_secrets_value(rj);
        commit_job(rj->d, rj);
}

void runner_check_cpu(struct daemon *d) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &d->jobs.all) {
                struct rjob *rj = list_entry(pos, struct rjob, link);
                uint64_t usec;
                if (!rj->cpu_watched || rj->cgroup_fd < 0 || cgroup_job_cpu_usec(rj->cgroup_fd, &usec) < 0)
                        continue;
                if (usec <= rj->j.pol.cpu_s * 1000000)
                        continue;
                char msg[128];
                snprintf(msg, sizeof(msg), "its processes used %.1f s of CPU time; its limit is %" PRIu64 " s",
                         (double) usec / 1e6, rj->j.pol.cpu_s);
                log_info(JOB_LOG ": %s, killing every process", JOB_LOG_ARGS(&rj->j), msg);
                job_transition(&rj->j, JEV_CPU_TIME, msg);
                /* Like the kernel's own CPU time limit: no grace. */
                hard_kill(rj);
                rj->cpu_watched = false;
                daemon_cpu_watch(d, -1);
        }
}

void runner_end(struct rjob *rj) {
        struct daemon *d = rj->d;
        if (rj->cpu_watched) {
                rj->cpu_watched = false;
                daemon_cpu_watch(d, -1);
        }
        bool was_running = rj->j.started_ms != 0;
        callbacks_progress_end(&d->cb, &rj->cb_prog);
        if (rj->j.bundle.set)
                bundle_job_release(rj);
        if ((rj->deps_wait || rj->deps_layer) && d->deps_release)
                d->deps_release(rj);
        rj->j.ended_ms = now_real_ms();
        capture_stop(&rj->cap);
        netjob_end(rj);
        if (rj->slot) {
                sched_finished(&d->sched, &rj->j);
                rj->slot = false;
        }
        if (rj->timer_fd >= 0) {
                loop_del(&rj->timer_src);
                close(rj->timer_fd);
                rj->timer_fd = -1;
        }
        if (rj->cgroup_fd >= 0) {
                uint64_t usec;
                if (cgroup_job_cpu_usec(rj->cgroup_fd, &usec) == 0)
                        rj->cgroup_cpu_us = (int64_t) usec;
        }
        prepare_release(rj);
        runner_schedule(d);
        /* Copying artifacts may take long, and so may the helper's
         * removal of a job: off the loop. */
        rj->collect = rj->j.req.run.n_artifacts > 0 && was_running && capture_result_dir(rj) >= 0;
        rj->want_value = was_running && !rj->session_id[0] && value_present(rj);
        if (rj->collect || rj->want_value || privc_on(&d->privc)) {
                rj->work.run = artifacts_run;
                rj->work.done = artifacts_done;
                worker_submit(&rj->work);
                return;
        }
        job_secrets_value(rj);
        commit_job(d, rj);
}
