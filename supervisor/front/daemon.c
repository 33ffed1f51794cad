/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>
#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "audit.h"
#include "bundle.h"
#include "cluster-ops.h"
#include "daemon.h"
#include "privsep.h"
#include "http-api.h"
#include "metrics-http.h"
#include "service.h"
#include "dnsproxy.h"
#include "netjob.h"
#include "netveth.h"
#include "deps-ops.h"
#include "dispatch.h"
#include "jobevents.h"
#include "log.h"
#include "recover.h"
#include "policy-ops.h"
#include "reload.h"
#include "session.h"
#include "warm.h"
#include "results-rest.h"
#include "secretproxy.h"
#include "runner.h"
#include "subscribe.h"
#include "worker.h"

/* The journal only needs the jobs still in memory: compacted when it grows
 * past this many lines. */
#define JOURNAL_COMPACT_LINES 10000
#define HOUSEKEEPING_MS 1000

void daemon_notify_status(struct daemon *d) {
#ifdef HAVE_SYSTEMD
        sd_notifyf(0, "STATUS=%u running, %u queued, %u clients%s", d->sched.all.running, d->sched.all.queued, d->conns.n,
                   d->stopping ? ", stopping" : "");
#else
        (void) d;
#endif
}

void daemon_job_gone(struct daemon *d) {
        daemon_notify_status(d);
        /* Jobs whose records cannot be written stay in the journal, with
         * their outcomes, for the next start; they do not hold the daemon.
         * An outcome the journal could not take does. */
        if (d->stopping && commit_may_stop(d))
                loop_quit();
}

int daemon_compact_journal(struct daemon *d) {
        size_t n = 0, cap = 3 * d->jobs.n;
        json_t **recs = cap ? calloc(cap, sizeof(*recs)) : NULL;
        struct list *pos, *tmp;
        int r = 0;
        if (cap && !recs)
                return -ENOMEM;
        list_for_each_safe(pos, tmp, &d->jobs.all) {
                struct rjob *rj = list_entry(pos, struct rjob, link);
                if (!(recs[n++] = accept_record(rj))) {
                        r = -ENOMEM;
                        break;
                }
                if (rj->j.started_ms && !(recs[n++] = runner_start_record(rj))) {
                        r = -ENOMEM;
                        break;
                }
                /* A pending record's outcome (commit.c). */
                if (rj->end_gen && !(recs[n++] = commit_end_line(rj))) {
                        r = -ENOMEM;
                        break;
                }
        }
        if (r == 0)
                r = journal_rewrite(&d->journal, recs, n);
        for (size_t i = 0; i < n; i++)
                json_decref(recs[i]);
        free(recs);
        return r;
}

static void begin_stop(struct daemon *d, const char *why) {
        struct list *pos, *tmp;
        if (d->stopping)
                return;
        d->stopping = true;
        log_notice("%s: stopping; %u running and %u queued jobs are ended", why, d->sched.all.running, d->sched.all.queued);
#ifdef HAVE_SYSTEMD
        sd_notify(0, "STOPPING=1");
#endif
        listener_stop(d);
        http_api_stopping(d);
        bundles_stop(d->bundles);
        list_for_each_safe(pos, tmp, &d->jobs.all) {
                struct rjob *rj = list_entry(pos, struct rjob, link);
                if (rj->j.state == JOB_QUEUED || rj->j.state == JOB_FETCHING) {
                        sched_remove_queued(&d->sched, &rj->j);
                        job_transition(&rj->j, JEV_SHUTDOWN, NULL);
                        runner_end(rj);
                } else
                        runner_stop(rj, JEV_SHUTDOWN);
        }
        daemon_job_gone(d);
}

static void on_signal(struct source *s, uint32_t events) {
        struct daemon *d = container_of(s, struct daemon, signal_src);
        struct signalfd_siginfo si;
        while (read(s->fd, &si, sizeof(si)) == sizeof(si)) {
                switch (si.ssi_signo) {
                case SIGTERM:
                case SIGINT:
                        begin_stop(d, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
                        break;
                case SIGHUP: {
                        /* logrotate moved the audit log: write a new one;
                         * and the tenants and tokens are read again. */
                        int r = audit_reopen();
                        if (r < 0)
                                log_error("SIGHUP: cannot reopen the audit log: %s; writing on to the old one", strerror(-r));
                        else
                                log_notice("SIGHUP: audit log reopened");
                        struct sbx_error err = { 0 };
                        if (!d->stopping)
                                (void) daemon_reload(d, "SIGHUP", NULL, &err);
                        break;
                }
                default:
                        break;
                }
        }
}

static void on_housekeeping(struct source *s, uint32_t events) {
        struct daemon *d = container_of(s, struct daemon, sweep_src);
        uint64_t n;
        if (read(s->fd, &n, sizeof(n)) < 0)
                return;
        uint64_t now = now_mono_ms();
        if (now >= d->next_retention_ms && !results_incomplete(d)) {
                unsigned removed = result_sweep(&d->done, d->dirs.results_fd, d->cfg->retention_ms, now_real_ms());
                if (removed)
                        log_info("retention: removed %u old results", removed);
                uint64_t every = d->cfg->retention_ms / 10;
                d->next_retention_ms = now + (every < 1000 ? 1000 : every > 3600000 ? 3600000 : every);
        }
        metrics_http_tick(d);
        /* Not while a sync of the journal's descriptor is pending. */
        if (d->journal.lines > JOURNAL_COMPACT_LINES && !d->commit.syncing && !d->commit.next.journal) {
                int r = daemon_compact_journal(d);
                if (r < 0)
                        log_error("journal compaction failed: %s", strerror(-r));
        }
        conns_expire_partial(&d->conns, now, d->cfg->request_timeout_ms);
        commit_retry(d, now);
        bundles_housekeeping(d->bundles);
        dnsproxy_tick(d);
        netjob_tick(d);
        reload_sweep(d, false);
}

#define CPU_CHECK_MS 250

static void on_cpu_check(struct source *s, uint32_t events) {
        struct daemon *d = container_of(s, struct daemon, cpu_src);
        uint64_t n;
        if (read(s->fd, &n, sizeof(n)) < 0)
                return;
        runner_check_cpu(d);
}

void daemon_cpu_watch(struct daemon *d, int delta) {
        bool was = d->cpu_watched > 0;
        d->cpu_watched += delta;
        bool now = d->cpu_watched > 0;
        if (was == now || d->cpu_src.fd < 0)
                return;
        struct itimerspec its = { 0 };
        if (now) {
                its.it_value.tv_nsec = CPU_CHECK_MS * 1000000L;
                its.it_interval = its.it_value;
        }
        timerfd_settime(d->cpu_src.fd, 0, &its, NULL);
}

static void on_worker(struct source *s, uint32_t events) {
        worker_complete();
}

/* After every batch of events: syncs to the syncer, then starts (so the
 * accept syncs run while launchers start), then the syncs of jobs that
 * failed to start. */
static void on_idle(void *arg) {
        struct daemon *d = arg;
        commit_submit(d);
        if (d->warm_wanted)
                warm_fill(d);
        cluster_idle(d);
        if (d->schedule_wanted) {
                runner_start_ready(d);
                commit_submit(d);
        }
        listener_maybe_resume(d);
}

static void caps_setup(struct daemon *d) {
        const struct cgroup_ctx *cg = &d->cg;
        d->caps.cpu_bandwidth = cg->enabled && cg->cpu;
        d->caps.no_cpu_why = cg->enabled ? "the cgroup cpu controller is not available to it" : "it has no job cgroups";
        /* A front that connected to a running sbx-privd: the job cgroups
         * are the helper's, and its HELLO says what they offer. */
        if (!cg->enabled && privc_on(&d->privc)) {
                unsigned l = d->privc.limits;
                d->caps.cpu_bandwidth = l & PRIVD_LIMIT_CPU;
                d->caps.no_cpu_why = "sbx-privd's cgroup root does not offer the cpu controller";
                log_info("job cgroups: sbx-privd's; controllers: memory %s, pids %s, cpu %s", l & PRIVD_LIMIT_MEMORY ? "yes" : "no (rlimit)",
                         l & PRIVD_LIMIT_PIDS ? "yes" : "no (rlimit)", l & PRIVD_LIMIT_CPU ? "yes" : "no");
        } else if (cg->enabled)
                log_info("job cgroups under %s (%s); controllers: memory %s, pids %s, cpu %s", cg->root, cg->how,
                         cg->memory ? "yes" : "no (rlimit)", cg->pids ? "yes" : "no (rlimit)", cg->cpu ? "yes" : "no");
        else
                log_info("no job cgroups: %s; limits are rlimits and kills go to the launcher's process group", cg->how);
        if (d->caps.cpu_bandwidth)
                return;
        for (size_t i = 0; i < d->cfg->n_tenants; i++) {
                const struct tenant *t = &d->cfg->tenants[i];
                if (t->max_cpu_milli != CONFIG_UNSET)
                        log_warning("%s: [tenant.%s] max_cpus is not enforced: CPU bandwidth needs the cgroup cpu controller, "
                                    "which this daemon does not have; results record it as \"by\": \"none\"",
                                    t->origin, t->name);
        }
}

/* Root can give each job a uid and a file system of its own; a daemon
 * that is not root cannot, and says what that costs. */
static int isolation_setup(struct daemon *d, struct sbx_error *err) {
        const struct config *cfg = d->cfg;
        if (privc_on(&d->privc)) {
                d->own_mounts = true;
                log_info("jobs run as uids %u-%u of sbx-privd, one each, in cgroups and workspaces it makes", d->privc.uid_first,
                         d->privc.uid_first + d->privc.uid_count - 1);
                return 0;
        }
        if (geteuid() != 0) {
                log_warning("not running as root: jobs run as this daemon's own uid, share it with each other and with the "
                            "daemon (they can reach each other's processes and files), RLIMIT_NPROC counts them all "
                            "together, and workspaces are plain directories without a size quota or nosuid");
                return 0;
        }
        d->own_mounts = true;
        if (cfg->job_uid_count == 0) {
                log_warning("job_uids = none: each tenant's jobs share its job user (they can reach each other's processes "
                            "and files, and RLIMIT_NPROC counts them together)");
                return 0;
        }
        int r = uidpool_init(&d->uids, cfg->job_uid_first, cfg->job_uid_count);
        if (r < 0)
                return sbx_error_set(err, r, "job_uids");
        log_info("jobs run as uids %u-%u, one each", (unsigned) cfg->job_uid_first,
                 (unsigned) (cfg->job_uid_first + cfg->job_uid_count - 1));
        return 0;
}

/* Signals arrive on a signalfd; the threads started after this inherit
 * the blocked mask, so they all reach it. */
static int signals_setup(struct daemon *d, struct sbx_error *err) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        sigdelset(&mask, SIGCHLD);
        int fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (fd < 0)
                return sbx_error_set(err, errno, "signalfd");
        int r = loop_add(&d->signal_src, fd, EPOLLIN, on_signal);
        return r < 0 ? sbx_error_set(err, r, "signalfd") : 0;
}

static int timers_setup(struct daemon *d, struct sbx_error *err) {
        int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (fd < 0)
                return sbx_error_set(err, errno, "timerfd");
        /* Housekeeping once a second: request timeouts, journal
         * compaction, record retries, and (at its own pace) retention. */
        struct itimerspec its = { .it_value = { 1, 0 }, .it_interval = { HOUSEKEEPING_MS / 1000, 0 } };
        timerfd_settime(fd, 0, &its, NULL);
        int r = loop_add(&d->sweep_src, fd, EPOLLIN, on_housekeeping);
        if (r < 0)
                return sbx_error_set(err, r, "timerfd");
        /* The CPU time check: disarmed until a job needs it. */
        fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (fd < 0)
                return sbx_error_set(err, errno, "timerfd");
        r = loop_add(&d->cpu_src, fd, EPOLLIN, on_cpu_check);
        return r < 0 ? sbx_error_set(err, r, "timerfd") : 0;
}

/* State before the socket, the socket before recovery (finding another
 * live daemon on it must stop us before we touch job cgroups; clients that
 * connect meanwhile wait in the backlog), recovery before serving. */
static int open_state(struct daemon *d, struct sbx_error *err) {
        struct config *cfg = d->cfg;
        int r;
        /* The HTTP API's TLS key is root's file: read before the line. */
        if ((r = http_api_prepare(d, err)) < 0)
                return r;
        /* So are the CAs of secret_proxy_ca, if root's */
        if ((r = secretproxy_setup(cfg->secret_proxy_ca, err)) < 0)
                return r;
        /* The line is drawn before anything else is opened. */
        if (cfg->user && cfg->helper_socket) {
                r = privsep_connect(cfg, &d->privc, err);
                if (r < 0)
                        return r;
                privsep_netpriv(&d->privc, &d->netpriv_ops);
                d->netpriv = &d->netpriv_ops;
        } else if (cfg->user) {
                if (geteuid() != 0)
                        return sbx_error_set(err, EPERM, "user %s: set, but the daemon was not started as root, which starts sbx-privd",
                                             cfg->user);
                r = cgroup_setup(cfg->cgroup_root, &d->cg, err);
                if (r < 0)
                        return r;
                r = privsep_start(cfg, d->cg.enabled ? d->cg.root : NULL, &d->privc, err);
                if (r < 0)
                        return r;
                privsep_netpriv(&d->privc, &d->netpriv_ops);
                d->netpriv = &d->netpriv_ops;
        }
        r = statedir_open(&d->dirs, cfg, err);
        if (r < 0)
                return r;
        r = listener_open(&d->listener, cfg, err);
        if (r < 0)
                return r;
        if (!cfg->user && (r = cgroup_setup(cfg->cgroup_root, &d->cg, err)) < 0)
                return r;
        caps_setup(d);
        r = isolation_setup(d, err);
        if (r < 0)
                return r;
        r = audit_open(cfg->audit_log, cfg->audit_fsync);
        if (r < 0)
                return sbx_error_set(err, r, "audit_log %s", cfg->audit_log);
        r = journal_open(&d->journal, d->dirs.state_fd);
        if (r < 0)
                return sbx_error_set(err, r, "journal in %s", cfg->state_dir);
        r = sessions_init(&d->sessions, d, &d->jobs, &d->journal, &d->sched, cfg, d->dirs.state_fd, err);
        if (r < 0)
                return r;
        r = policy_open(d, err);
        if (r < 0)
                return r;
        r = results_open(d);
        if (r < 0)
                return sbx_error_set(err, r, "results in %s", cfg->state_dir);
        /* With records still to read, after them (results-rest.c). */
        unsigned removed = results_incomplete(d) ? 0 : result_sweep(&d->done, d->dirs.results_fd, cfg->retention_ms, now_real_ms());
        if (removed)
                log_info("retention: removed %u old results", removed);
        return 0;
}

int daemon_init(struct daemon *d, struct config *cfg, struct sbx_error *err) {
        int r;
        memset(d, 0, sizeof(*d));
        /* First: daemon_done() walks it whatever failed after. */
        list_init(&d->results_waiters);
        d->cfg = cfg;
        d->dirs.state_fd = d->dirs.results_fd = d->dirs.work_fd = -1;
        d->listener.fd = -1;
        d->sessions.dir_fd = -1;
        list_init(&d->sessions.live);
        list_init(&d->sessions.gone);
        d->journal.fd = -1;
        d->cpu_src.fd = -1;
        d->privc.fd = -1;
        /* Output past its cap is moved there by the kernel (splice). */
        d->null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        jobs_init(&d->jobs);
        /* What jobs tell (jobevents.h): the metrics count an end before
         * its waiters hear of it. */
        if (job_listen(&metrics_listener) < 0 || job_listen(&session_listener) < 0 || job_listen(&subscribe_listener) < 0 ||
            job_listen(&service_listener) < 0)
                return sbx_error_msg(err, ENOSPC, "too many job listeners");
        if (conns_init(&d->conns, cfg) < 0)
                return sbx_error_msg(err, ENOMEM, "out of memory");
        list_init(&d->cg.releasing);
        list_init(&d->dns_paused);
        list_init(&d->dns_tcp);
        if (sched_init(&d->sched, cfg) < 0)
                return sbx_error_msg(err, ENOMEM, "out of memory");
        if (sodium_init() < 0)
                return sbx_error_msg(err, EIO, "libsodium initialisation failed");
        /* Thousands of idle clients are fine; they need file descriptors. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (access(cfg->launcher, X_OK) < 0)
                return sbx_error_set(err, errno, "launcher %s", cfg->launcher);
        r = open_state(d, err);
        if (r < 0)
                return r;
        r = loop_init();
        if (r < 0)
                return sbx_error_set(err, r, "epoll");
        loop_set_idle(on_idle, d);
        if ((r = signals_setup(d, err)) < 0 || (r = commit_init(d, err)) < 0 || (r = timers_setup(d, err)) < 0)
                return r;
        int wfd = worker_start();
        if (wfd < 0)
                return sbx_error_set(err, wfd, "worker threads");
        if ((r = loop_add(&d->worker_src, wfd, EPOLLIN, on_worker)) < 0)
                return sbx_error_set(err, r, "worker threads");
        results_rest_start(d);
        /* Before recovery: the records it writes may have deliveries. */
        if ((r = callbacks_init(&d->cb, d->cfg, d->dirs.state_fd, err)) < 0)
                return r;
        /* Before recovery: jobs it queues again may be audited. */
        d->net_room = runner_schedule;
        netveth_restore(d);
        netjob_setup(d);
        /* Before recovery: jobs it queues again may fetch their bundles,
         * or install their packages. */
        if ((r = bundles_init(&d->bundles, d->cfg, d->dirs.state_fd, err)) < 0)
                return r;
        if ((r = deps_init(d, err)) < 0)
                return r;
        r = recover_run(d, err);
        if (r < 0)
                return r;
        /* After recovery: the outcomes it keeps are this node's to write,
         * the rest of what it claimed before is given back. */
        if ((r = cluster_init(d, err)) < 0)
                return r;
        sessions_adopt(&d->sessions);
        /* After the adoption: warm sandboxes from before are ended. */
        if (warm_init(d) < 0)
                return sbx_error_set(err, ENOMEM, "warm pools");
        if ((r = metrics_http_start(d, err)) < 0)
                return r;
        if ((r = service_start(d, err)) < 0)
                return r;
        if ((r = http_api_start(d, err)) < 0)
                return r;
        listener_start(d);
        if (cfg->allow_unauthenticated)
                log_warning("allow_unauthenticated is ON: callers in no tenant run jobs as tenant 'anonymous' (job uid %u). "
                            "Never use this in production.",
                            (unsigned) cfg->anonymous->job_uid);
        log_notice("ready on %s: %zu tenants, max_jobs %" PRIu64 ", max_queue %" PRIu64 ", launcher %s", cfg->socket_path,
                   cfg->n_tenants, cfg->max_jobs, cfg->max_queue, cfg->launcher);
        return 0;
}

int daemon_run(struct daemon *d) {
#ifdef HAVE_SYSTEMD
        sd_notify(0, "READY=1");
#endif
        daemon_notify_status(d);
        return loop_run();
}

void daemon_done(struct daemon *d) {
        struct list *pos, *tmp;
        listener_close(&d->listener, d->cfg);
        metrics_http_stop(d);
        service_stop(d);
        /* Clients first: work still in flight for them then ends as for a
         * client that went away. */
        conns_close_all(&d->conns);
        http_api_stop(d);
        results_rest_abandon(d);
        worker_stop();
        results_rest_done(d);
        cluster_done(d);
        bundles_done(d->bundles);
        d->bundles = NULL;
        deps_done(d);
        commit_done(d);
        callbacks_done(&d->cb);
        /* Jobs still here have no durable record: the journal keeps them
         * for the next start. */
        list_for_each_safe(pos, tmp, &d->jobs.all) {
                struct rjob *rj = list_entry(pos, struct rjob, link);
                jobs_remove(&d->jobs, rj);
                rjob_free(rj);
        }
        netjob_teardown(d);
        journal_close(&d->journal);
        audit_close();
        result_index_free(&d->done);
        cgroup_teardown(&d->cg);
        uidpool_done(&d->uids);
        if (d->privc.fd >= 0)
                privc_close(&d->privc);
        conns_done(&d->conns);
        sched_done(&d->sched);
        warm_done(d);
        sessions_done(&d->sessions);
        statedir_close(&d->dirs);
        while (d->ghosts) {
                struct ghost_tenant *g = d->ghosts;
                d->ghosts = g->next;
                tenant_free(&g->t);
                free(g);
        }
        reload_sweep(d, true);
        json_decref(d->policy);
        if (d->null_fd >= 0)
                close(d->null_fd);
        metrics_done(&d->metrics);
        loop_done();
}
