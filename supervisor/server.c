/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "audit.h"
#include "cgroup.h"
#include "job.h"
#include "journal.h"
#include "log.h"
#include "loop.h"
#include "profile.h"
#include "proto.h"
#include "result.h"
#include "server.h"
#include "spawn.h"
#include "syncer.h"
#include "tenant.h"
#include "util.h"
#include "workspace.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

#define READ_CHUNK 65536
#define MAX_PEER_GROUPS 256

struct conn {
        struct source src;
        struct ucred cred;
        struct tenant *tenant;
        bool anonymous;
        char *in;
        size_t in_len, in_cap;
        bool discarding;     /* skipping the rest of an oversized line */
        bool read_eof;
        char *out;
        size_t out_len, out_off;
        uint32_t events;
        struct list watches; /* struct job_watch.conn_link */
        struct list link;    /* in S.conns */
        unsigned n_watches;
        bool held;           /* replies wait for the journal sync (in a batch) */
        bool free_on_release; /* closed while held: freed when its batch is done */
        uint64_t partial_since_ms; /* a request line started and not ended */
        bool closed;
};

enum watch_kind {
        W_WAIT,   /* one response with the result when the job ends */
        W_FOLLOW, /* output events, then an end event */
};

struct job_watch {
        struct list job_link, conn_link;
        struct conn *c;
        struct rjob *j;
        enum watch_kind kind;
        unsigned streams;
        json_t *tag;
        uint64_t skipped[2]; /* output not sent: the client lagged behind */
};

/* A job with the event sources the loop needs. */
struct rjob {
        struct job j;
        struct source pid_src, out_src[2], status_src, timer_src;
        unsigned cg_limits;
        bool slot;           /* counted as running by the scheduler */
        unsigned long long starttime; /* the launcher's, for the journal */
        /* Monotonic microseconds of each step, for the debug log: accepted,
         * launcher started, launcher gone, record handed to the group
         * commit, clients told. */
        uint64_t t_us[5];
        int result_dir_fd;   /* STATE/results/ID, created on first need */
        struct list finishing_link; /* in a batch: record written, not yet synced and renamed */
        json_t *rec;         /* its record, until the clients are told */
        char *rec_text;      /* its record as stored, until synced */
        size_t rec_len;
        char rec_name[RESULT_NAME_MAX], rec_tmp[RESULT_NAME_MAX];
        int rec_err;         /* the group commit's verdict on the record */
        char *profile_path;
};

static struct {
        struct config *cfg;
        struct cgroup_ctx cg;
        struct journal journal;
        struct scheduler sched;
        struct result_index done;
        int state_fd, work_fd, results_fd;
        char *work_path;             /* workspace_dir, or STATE/work */
        struct source listen_src, signal_src, sweep_src;
        struct list jobs;            /* struct job.all_link: queued and running */
        unsigned n_conns;
        bool stopping;
        bool listen_paused;
        bool socket_activated;
        uint64_t next_retention_ms;
        struct list conns;           /* struct conn.link */
        /* Group commit: the batch being filled in this loop turn, and the
         * one whose syncs the syncer thread is running. */
        struct batch {
                bool journal;        /* accepts appended, not yet synced */
                struct conn **held;  /* clients whose replies wait for that sync */
                size_t n_held, cap_held;
                struct list finishing; /* struct rjob.finishing_link: records written, not synced */
        } next, inflight;
        struct sync_request sreq;    /* the inflight batch's, read by the syncer thread */
        size_t cap_sfiles;
        bool syncing;
        struct source sync_src;
} S;

static void conn_close(struct conn *c);
static void conn_send(struct conn *c, json_t *msg);
static void schedule(void);
static void finish_job(struct rjob *rj);

/* ---------------------------------------------------------------- helpers */

static struct rjob *rjob_of(struct job *j) {
        return container_of(j, struct rjob, j);
}

enum { T_ACCEPTED, T_STARTED, T_EXITED, T_COMMIT, T_TOLD };

static double step_ms(const struct rjob *rj, int from, int to) {
        return rj->t_us[from] && rj->t_us[to] ? (double) (rj->t_us[to] - rj->t_us[from]) / 1000.0 : -1;
}

static const char *stream_name(int i) {
        return i == 0 ? "stdout" : "stderr";
}

static json_t *time_or_null(uint64_t ms) {
        char ts[64];
        return ms ? json_string(format_rfc3339(ms, ts, sizeof(ts))) : json_null();
}

static void new_job_id(char *buf, size_t len) {
        unsigned char rnd[10];
        char hex[21];
        if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
                uint64_t t = now_real_ms() ^ ((uint64_t) getpid() << 40);
                memcpy(rnd, &t, 8);
                rnd[8] = rnd[9] = 0;
        }
        hex_encode(rnd, sizeof(rnd), hex);
        snprintf(buf, len, "j%s", hex);
}

static struct rjob *find_active(const char *id) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &S.jobs) {
                struct job *j = list_entry(pos, struct job, all_link);
                if (streq(j->id, id))
                        return rjob_of(j);
        }
        return NULL;
}

static void notify_status(void) {
#ifdef HAVE_SYSTEMD
        sd_notifyf(0, "STATUS=%u running, %u queued, %u clients%s", S.sched.n_running, S.sched.n_queued, S.n_conns,
                   S.stopping ? ", stopping" : "");
#endif
}

/* ---------------------------------------------------------------- clients */

static void conn_update_events(struct conn *c) {
        uint32_t ev = EPOLLRDHUP;
        bool backlog = c->out_len - c->out_off > S.cfg->client_buffer / 2;
        if (!c->read_eof && !backlog)
                ev |= EPOLLIN;
        if (c->out_len > c->out_off && !c->held)
                ev |= EPOLLOUT;
        if (ev != c->events) {
                c->events = ev;
                loop_mod(&c->src, ev);
        }
}

static void conn_flush(struct conn *c) {
        if (c->held) {
                conn_update_events(c);
                return;
        }
        while (c->out_off < c->out_len) {
                ssize_t n = send(c->src.fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        conn_close(c);
                        return;
                }
                c->out_off += (size_t) n;
        }
        if (c->out_off == c->out_len) {
                free(c->out);
                c->out = NULL;
                c->out_len = c->out_off = 0;
                /* The client finished sending and has everything it waits
                 * for: the conversation is over. */
                if (c->read_eof && list_empty(&c->watches)) {
                        conn_close(c);
                        return;
                }
        }
        conn_update_events(c);
}

static void conn_send(struct conn *c, json_t *msg) {
        if (!msg || c->closed) {
                json_decref(msg);
                return;
        }
        char *s = json_dumps(msg, JSON_COMPACT);
        json_decref(msg);
        if (!s)
                return;
        size_t n = strlen(s);
        if (c->out_len - c->out_off + n + 1 > S.cfg->client_buffer) {
                /* A client that does not read its messages would make us
                 * hold unbounded output; it is dropped, the jobs go on. */
                log_warning("client uid %u: more than %" PRIu64 " bytes unread, disconnecting", (unsigned) c->cred.uid,
                            S.cfg->client_buffer);
                free(s);
                conn_close(c);
                return;
        }
        if (c->out_off > 0 && c->out_off == c->out_len) {
                c->out_len = c->out_off = 0;
        }
        char *nb = realloc(c->out, c->out_len + n + 1);
        if (!nb) {
                free(s);
                conn_close(c);
                return;
        }
        c->out = nb;
        memcpy(c->out + c->out_len, s, n);
        c->out[c->out_len + n] = '\n';
        c->out_len += n + 1;
        free(s);
        conn_flush(c);
}

static void watch_free(struct job_watch *w) {
        list_del(&w->job_link);
        list_del(&w->conn_link);
        w->c->n_watches--;
        json_decref(w->tag);
        free(w);
}

static void conn_free(void *p) {
        struct conn *c = p;
        free(c->in);
        free(c->out);
        free(c);
}

static void conn_close(struct conn *c) {
        struct list *pos, *tmp;
        if (c->closed)
                return;
        c->closed = true;
        list_for_each_safe(pos, tmp, &c->watches)
                watch_free(list_entry(pos, struct job_watch, conn_link));
        loop_del(&c->src);
        close(c->src.fd);
        list_del(&c->link);
        S.n_conns--;
        if (S.listen_paused && S.n_conns < S.cfg->max_connections) {
                S.listen_paused = false;
                loop_mod(&S.listen_src, EPOLLIN);
        }
        /* A batch in flight still points at it. */
        if (c->held)
                c->free_on_release = true;
        else
                loop_defer_free(conn_free, c);
}

#define MAX_WATCHES_PER_CONN 1024

static struct job_watch *watch_add(struct conn *c, struct rjob *rj, enum watch_kind kind, unsigned streams, json_t *tag) {
        /* Bounded like everything a client controls. */
        if (c->n_watches >= MAX_WATCHES_PER_CONN) {
                conn_send(c, proto_error(tag, E_LIMIT, "more than %d waits and follows on one connection", MAX_WATCHES_PER_CONN));
                return NULL;
        }
        struct job_watch *w = calloc(1, sizeof(*w));
        if (!w)
                return NULL;
        c->n_watches++;
        w->c = c;
        w->j = rj;
        w->kind = kind;
        w->streams = streams;
        w->tag = tag ? json_incref(tag) : NULL;
        list_add_tail(&rj->j.watches, &w->job_link);
        list_add_tail(&c->watches, &w->conn_link);
        return w;
}

/* ---------------------------------------------------------------- records */

static json_t *job_summary(const struct job *j) {
        return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "job", j->id, "tenant", j->tenant->name, "state",
                         job_state_name(j->state), "created", time_or_null(j->created_ms), "started",
                         time_or_null(j->started_ms), "command", json_pack("[s]", j->req.run.argv[0]));
}

static json_t *done_summary(const struct done_entry *d) {
        return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "job", d->id, "tenant", d->tenant, "state", d->state, "created",
                         time_or_null(d->created_ms), "ended", time_or_null(d->ended_ms), "exit_code",
                         d->exit_code >= 0 ? json_integer(d->exit_code) : json_null());
}

static json_t *argv_json(const struct run_request *run) {
        json_t *a = json_array();
        for (size_t i = 0; i < run->argc; i++)
                json_array_append_new(a, json_string(run->argv[i]) ?: json_string("?"));
        return a;
}

static json_t *limit_json(uint64_t value, const char *by) {
        if (value == PROTO_UNSET)
                return json_pack("{s:n, s:n}", "value", "by");
        return json_pack("{s:I, s:s}", "value", (json_int_t) value, "by", by);
}

/* CPU bandwidth has no rlimit: without the cgroup cpu controller it is
 * recorded as not enforced. */
static json_t *cpus_json(uint64_t milli, bool enforced) {
        if (milli == PROTO_UNSET)
                return json_pack("{s:n, s:n}", "value", "by");
        return json_pack("{s:f, s:s}", "value", (double) milli / 1000.0, "by", enforced ? "cgroup" : "none");
}

static json_t *build_result(struct rjob *rj, json_t *artifacts, bool artifacts_truncated) {
        struct job *j = &rj->j;
        json_t *end = j->status_end;
        json_t *rec = json_pack("{s:i, s:s, s:s, s:I, s:I, s:I, s:o, s:s, s:s}", "v", PROTO_VERSION, "job", j->id, "tenant",
                                j->tenant->name, "uid", (json_int_t) j->caller_uid, "job_uid", (json_int_t) j->tenant->job_uid,
                                "job_gid", (json_int_t) j->tenant->job_gid, "command", argv_json(&j->req.run), "profile",
                                j->pol.profile, "state", job_outcome_name(j->outcome));
        if (!rec)
                return NULL;
        json_object_set_new(rec, "exit_code", j->exit_code >= 0 ? json_integer(j->exit_code) : json_null());
        json_object_set_new(rec, "signal", j->term_signal > 0 ? json_integer(j->term_signal) : json_null());
        json_object_set_new(rec, "timed_out", json_boolean(j->timed_out));
        json_object_set_new(rec, "cancelled", json_boolean(j->cancelled));
        if (j->error_code)
                json_object_set_new(rec, "error", json_pack("{s:s, s:s}", "code", j->error_code, "message",
                                                            j->error_message ? j->error_message : ""));
        else
                json_object_set_new(rec, "error", json_null());
        json_object_set_new(rec, "created", time_or_null(j->created_ms));
        json_object_set_new(rec, "started", time_or_null(j->started_ms));
        json_object_set_new(rec, "ended", time_or_null(j->ended_ms));
        uint64_t wall = j->started_ms && j->ended_ms >= j->started_ms ? j->ended_ms - j->started_ms : 0;
        json_object_set_new(rec, "wall_ms", json_integer((json_int_t) wall));
        json_t *cpu = end ? json_object_get(end, "cpu-ms") : NULL;
        uint64_t usec;
        if (rj->j.cgroup_fd >= 0 && cgroup_job_cpu_usec(rj->j.cgroup_fd, &usec) == 0)
                json_object_set_new(rec, "cpu_ms", json_integer((json_int_t) (usec / 1000)));
        else
                json_object_set_new(rec, "cpu_ms", cpu ? json_incref(cpu) : json_null());
        json_t *rss = end ? json_object_get(end, "peak-rss-kb") : NULL;
        json_object_set_new(rec, "peak_rss_kb", rss ? json_incref(rss) : json_null());
        for (int i = 0; i < 2; i++) {
                char path[4200];
                snprintf(path, sizeof(path), "%s/results/%s/%s", S.cfg->state_dir, j->id, stream_name(i));
                json_object_set_new(rec, stream_name(i),
                                    json_pack("{s:I, s:I, s:b, s:s}", "size", (json_int_t) j->kept_bytes[i], "produced",
                                              (json_int_t) j->out_bytes[i], "truncated", j->truncated[i], "path", path));
        }
        json_object_set_new(rec, "artifacts", artifacts ? artifacts : json_array());
        json_object_set_new(rec, "artifacts_truncated", json_boolean(artifacts_truncated));
        /* Which mechanism enforced each limit: the daemon's own timer for
         * the wall clock, the job cgroup where its controller is enabled,
         * otherwise the launcher's rlimits. */
        const char *rl = "rlimit";
        json_object_set_new(
                rec, "limits",
                json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "timeout_ms", limit_json(j->pol.timeout_ms, "supervisor"), "memory",
                          limit_json(j->pol.memory, rj->cg_limits & CG_LIMIT_MEMORY ? "cgroup" : rl), "processes",
                          limit_json(j->pol.processes, rj->cg_limits & CG_LIMIT_PIDS ? "cgroup" : rl), "cpu_s",
                          limit_json(j->pol.cpu_s, rl), "cpus", cpus_json(j->pol.cpu_milli, rj->cg_limits & CG_LIMIT_CPU),
                          "output", limit_json(j->pol.output, "supervisor")));
        json_object_set_new(rec, "cgroup", json_boolean(rj->j.cgroup_fd >= 0));
        json_t *prot = end ? json_object_get(end, "protections") : NULL;
        json_object_set_new(rec, "protections", prot ? json_incref(prot) : json_null());
        json_object_set_new(rec, "network_events", json_array());
        json_object_set_new(rec, "bundle", json_null());
        json_object_set_new(rec, "idempotency_key",
                            j->req.run.idempotency_key ? json_string(j->req.run.idempotency_key) : json_null());
        if (j->pol.clamped[0])
                json_object_set_new(rec, "clamped", json_string(j->pol.clamped));
        return rec;
}

/* A digest of what the job was given, for the audit log. */
static void inputs_digest(const struct run_request *run, char hex[65]) {
        crypto_hash_sha256_state h;
        unsigned char d[crypto_hash_sha256_BYTES];
        crypto_hash_sha256_init(&h);
        for (size_t i = 0; i < run->argc; i++)
                crypto_hash_sha256_update(&h, (const unsigned char *) run->argv[i], strlen(run->argv[i]) + 1);
        for (size_t i = 0; i < run->n_env; i++) {
                crypto_hash_sha256_update(&h, (const unsigned char *) run->env[i].name, strlen(run->env[i].name) + 1);
                crypto_hash_sha256_update(&h, (const unsigned char *) run->env[i].value, strlen(run->env[i].value) + 1);
        }
        if (run->stdin_data)
                crypto_hash_sha256_update(&h, run->stdin_data, run->stdin_len);
        for (size_t i = 0; i < run->n_files; i++) {
                crypto_hash_sha256_update(&h, (const unsigned char *) run->files[i].path, strlen(run->files[i].path) + 1);
                crypto_hash_sha256_update(&h, run->files[i].data, run->files[i].len);
        }
        crypto_hash_sha256_final(&h, d);
        hex_encode(d, sizeof(d), hex);
}

/* ---------------------------------------------------------------- jobs */

static size_t conn_backlog(const struct conn *c) {
        return c->out_len - c->out_off;
}

static void send_lagged(struct job_watch *w, const char *id) {
        for (int i = 0; i < 2; i++)
                if (w->skipped[i]) {
                        conn_send(w->c, json_pack("{s:i, s:s, s:s, s:s, s:I}", "v", PROTO_VERSION, "event", "lagged", "job", id,
                                                  "stream", i ? "stderr" : "stdout", "skipped", (json_int_t) w->skipped[i]));
                        w->skipped[i] = 0;
                }
}

/* Send an event to every client following the job. Live output is not
 * worth a client: one that lags behind (half its client_buffer unread)
 * misses output, told by a "lagged" event once it catches up, and can read
 * the whole capture with logs. Sending may still drop a client (a write
 * error), and with it its watches, so the recipients are collected first;
 * closed clients stay allocated until the end of the loop turn. */
static void job_event_all(struct rjob *rj, json_t *ev, unsigned stream, size_t len) {
        struct job_watch *to[64], **many = NULL, **list = to;
        struct conn *cs[64], **manyc = NULL, **clist = cs;
        size_t n = 0, cap = ARRAY_SIZE(to);
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &rj->j.watches) {
                struct job_watch *w = list_entry(pos, struct job_watch, job_link);
                if (w->kind != W_FOLLOW || (stream && !(w->streams & stream)))
                        continue;
                if (n == cap) {
                        struct job_watch **nl = realloc(many, 2 * cap * sizeof(*nl));
                        struct conn **nc = realloc(manyc, 2 * cap * sizeof(*nc));
                        if (nl && !many)
                                memcpy(nl, to, sizeof(to));
                        if (nc && !manyc)
                                memcpy(nc, cs, sizeof(cs));
                        if (nl)
                                many = list = nl;
                        if (nc)
                                manyc = clist = nc;
                        if (!nl || !nc)
                                break;
                        cap *= 2;
                }
                list[n] = w;
                clist[n++] = w->c;
        }
        for (size_t i = 0; i < n; i++) {
                /* a closed client's watches are gone: look at it first */
                if (clist[i]->closed)
                        continue;
                struct job_watch *w = list[i];
                if (stream) {
                        int s = stream == STREAM_STDOUT ? 0 : 1;
                        if (conn_backlog(w->c) > S.cfg->client_buffer / 2) {
                                w->skipped[s] += len;
                                continue;
                        }
                        send_lagged(w, rj->j.id);
                        if (clist[i]->closed)
                                continue;
                }
                conn_send(clist[i], json_deep_copy(ev));
        }
        free(many);
        free(manyc);
        json_decref(ev);
}

static void arm_timer(struct rjob *rj, uint64_t ms) {
        struct itimerspec its = { 0 };
        if (ms == 0)
                ms = 1;
        its.it_value.tv_sec = (time_t) (ms / 1000);
        its.it_value.tv_nsec = (long) (ms % 1000) * 1000000;
        timerfd_settime(rj->j.timer_fd, 0, &its, NULL);
}

/* Every process of the job, now: the cgroup when there is one, else the
 * launcher's process group (the launcher's pid 1 takes the namespace with
 * it when the launcher dies). */
static void hard_kill(struct rjob *rj) {
        if (rj->j.cgroup_fd >= 0 && cgroup_job_kill(&S.cg, rj->j.cgroup_fd) == 0)
                return;
        if (rj->j.pid > 0 && !rj->j.exited) {
                kill(-rj->j.pid, SIGKILL);
                kill(rj->j.pid, SIGKILL);
        }
}

static void stop_job(struct rjob *rj, enum job_event why) {
        enum job_state before = rj->j.state;
        if (job_transition(&rj->j, why) < 0)
                return;
        if (before == JOB_RUNNING && rj->j.state == JOB_STOPPING) {
                /* SIGTERM first: the launcher forwards it to the command,
                 * which gets the grace period to clean up. */
                if (rj->j.pid > 0 && !rj->j.exited)
                        kill(rj->j.pid, SIGTERM);
                arm_timer(rj, S.cfg->kill_grace_ms);
                log_info("job %s: %s, SIGTERM sent, kill in %" PRIu64 " ms", rj->j.id,
                         why == JEV_TIMEOUT ? "timed out" : why == JEV_CANCEL ? "cancelled" : "daemon stopping",
                         S.cfg->kill_grace_ms);
        }
}

static void on_timer(struct source *s, uint32_t events) {
        struct rjob *rj = container_of(s, struct rjob, timer_src);
        uint64_t n;
        if (read(s->fd, &n, sizeof(n)) < 0)
                return;
        if (rj->j.state == JOB_RUNNING)
                stop_job(rj, JEV_TIMEOUT);
        else if (rj->j.state == JOB_STOPPING) {
                log_info("job %s: grace period over, killing every process", rj->j.id);
                hard_kill(rj);
        }
}

/* STATE/results/ID exists only for jobs with output or artifacts. */
static int ensure_result_dir(struct rjob *rj) {
        if (rj->result_dir_fd >= 0)
                return rj->result_dir_fd;
        if (mkdirat(S.results_fd, rj->j.id, 0700) < 0 && errno != EEXIST)
                return -1;
        rj->result_dir_fd = openat(S.results_fd, rj->j.id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return rj->result_dir_fd;
}

static void close_src(struct source *s, int *fd) {
        if (*fd >= 0) {
                loop_del(s);
                close(*fd);
                *fd = -1;
        }
}

/* Read what a pipe has (bounded per call for fairness); returns true at EOF. */
static bool drain_output(struct rjob *rj, int i, unsigned max_reads) {
        struct job *j = &rj->j;
        char buf[READ_CHUNK];
        while (max_reads-- > 0 && j->out_fd[i] >= 0) {
                ssize_t n = read(j->out_fd[i], buf, sizeof(buf));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return false;
                        return true;
                }
                if (n == 0)
                        return true;
                j->out_bytes[i] += (uint64_t) n;
                size_t keep = (size_t) n;
                if (j->kept_bytes[i] + keep > j->pol.output) {
                        keep = (size_t) (j->pol.output - j->kept_bytes[i]);
                        j->truncated[i] = true;
                }
                if (keep > 0) {
                        /* Created on the first byte: most short jobs
                         * write nothing to one stream or both, and every
                         * inode created costs on the daemon's hot path. */
                        if (j->file_fd[i] < 0 && ensure_result_dir(rj) >= 0)
                                j->file_fd[i] = openat(rj->result_dir_fd, stream_name(i),
                                                       O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
                        if (j->file_fd[i] < 0 || write_all(j->file_fd[i], buf, keep) < 0)
                                j->truncated[i] = true;
                        else
                                j->kept_bytes[i] += keep;
                        if (!list_empty(&j->watches)) {
                                json_t *ev = json_pack("{s:i, s:s, s:s, s:s}", "v", PROTO_VERSION, "event", "output", "job",
                                                       j->id, "stream", stream_name(i));
                                if (ev && proto_set_data(ev, "data", buf, keep) == 0)
                                        job_event_all(rj, ev, i == 0 ? STREAM_STDOUT : STREAM_STDERR, keep);
                                else
                                        json_decref(ev);
                        }
                }
        }
        return false;
}

static void on_stdout(struct source *s, uint32_t events) {
        struct rjob *rj = container_of(s, struct rjob, out_src[0]);
        if (drain_output(rj, 0, 16))
                close_src(s, &rj->j.out_fd[0]);
}

static void on_stderr(struct source *s, uint32_t events) {
        struct rjob *rj = container_of(s, struct rjob, out_src[1]);
        if (drain_output(rj, 1, 16))
                close_src(s, &rj->j.out_fd[1]);
}

static void status_line(struct rjob *rj, const char *line, size_t len) {
        json_t *m = json_loadb(line, len, 0, NULL);
        if (!m)
                return;
        if (json_object_get(m, "child-pid")) {
                json_decref(m);
                return;
        }
        if (json_object_get(m, "exit-code")) {
                json_decref(rj->j.status_end);
                rj->j.status_end = m;
                return;
        }
        json_decref(m);
}

static void drain_status(struct rjob *rj) {
        struct job *j = &rj->j;
        char buf[8192];
        for (;;) {
                ssize_t n = read(j->status_fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        if (n == 0 || errno != EAGAIN)
                                close_src(&rj->status_src, &j->status_fd);
                        break;
                }
                /* Bounded: the launcher writes two short lines. */
                if (j->status_len + (size_t) n > 1u << 20)
                        continue;
                char *nb = realloc(j->status_buf, j->status_len + (size_t) n + 1);
                if (!nb)
                        break;
                j->status_buf = nb;
                memcpy(nb + j->status_len, buf, (size_t) n);
                j->status_len += (size_t) n;
                char *nl;
                while ((nl = memchr(j->status_buf, '\n', j->status_len))) {
                        size_t l = (size_t) (nl - j->status_buf);
                        status_line(rj, j->status_buf, l);
                        memmove(j->status_buf, nl + 1, j->status_len - l - 1);
                        j->status_len -= l + 1;
                }
        }
}

static void on_status(struct source *s, uint32_t events) {
        drain_status(container_of(s, struct rjob, status_src));
}

static void on_pidfd(struct source *s, uint32_t events) {
        struct rjob *rj = container_of(s, struct rjob, pid_src);
        struct job *j = &rj->j;
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        if (waitid((idtype_t) P_PIDFD, (id_t) j->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
                return;
        j->exited = true;
        rj->t_us[T_EXITED] = now_mono_us();
        if (si.si_code == CLD_EXITED) {
                j->exit_code = si.si_status;
                j->term_signal = 0;
        } else {
                j->exit_code = -1;
                j->term_signal = si.si_status;
        }
        close_src(&rj->pid_src, &j->pidfd);
        /* Stragglers outside the launcher's control (none should exist)
         * must not keep the pipes open or outlive the job. */
        if (j->cgroup_fd >= 0)
                cgroup_job_kill(&S.cg, j->cgroup_fd);
        for (int i = 0; i < 2; i++) {
                while (j->out_fd[i] >= 0 && !drain_output(rj, i, 64)) {
                        /* EAGAIN with the writer gone means empty */
                        break;
                }
                close_src(&rj->out_src[i], &j->out_fd[i]);
        }
        if (j->status_fd >= 0)
                drain_status(rj);
        close_src(&rj->status_src, &j->status_fd);
        finish_job(rj);
}

static void rjob_free(void *p) {
        struct rjob *rj = p;
        request_free(&rj->j.req);
        json_decref(rj->j.status_end);
        free(rj->j.status_buf);
        free(rj->j.error_code);
        free(rj->j.error_message);
        free(rj->profile_path);
        json_decref(rj->rec);
        if (rj->result_dir_fd >= 0)
                close(rj->result_dir_fd);
        for (int i = 0; i < 2; i++)
                if (rj->j.file_fd[i] >= 0)
                        close(rj->j.file_fd[i]);
        free(rj->rec_text);
        free(rj);
}

static void set_error(struct job *j, const char *code, const char *msg) {
        free(j->error_code);
        free(j->error_message);
        j->error_code = strdup(code);
        j->error_message = strdup(msg);
}

/* The job ended (or never started): outcome, artifacts, the durable record,
 * then — and only then — the clients. */
static void finish_job(struct rjob *rj) {
        struct job *j = &rj->j;
        bool was_running = j->started_ms != 0;
        bool had_slot = rj->slot;
        char msg[1024];

        if (j->state != JOB_DONE && job_transition(j, JEV_EXIT) < 0)
                j->state = JOB_DONE;
        j->ended_ms = now_real_ms();

        if (j->exited) {
                json_t *end = j->status_end;
                int code = j->exit_code, sig = j->term_signal;
                if (end) {
                        json_t *ec = json_object_get(end, "exit-code"), *sg = json_object_get(end, "signal");
                        if (json_is_integer(ec))
                                code = (int) json_integer_value(ec);
                        sig = json_is_integer(sg) ? (int) json_integer_value(sg) : 0;
                        json_t *err = json_object_get(end, "error");
                        if (json_is_object(err)) {
                                snprintf(msg, sizeof(msg), "sbx-launch: %s: %s",
                                         json_string_value(json_object_get(err, "step")) ?: "setup",
                                         json_string_value(json_object_get(err, "message")) ?: "failed");
                                set_error(j, E_SETUP, msg);
                        }
                }
                if (sig > 0 && code >= 0 && !end)
                        code = -1;
                j->exit_code = code;
                j->term_signal = sig;
                j->outcome = job_outcome_from_exit(j, code, sig);
                /* With a memory cgroup, the kernel counts its OOM kills. */
                if ((rj->cg_limits & CG_LIMIT_MEMORY) && j->cgroup_fd >= 0 && cgroup_job_oom_kills(j->cgroup_fd) > 0 &&
                    j->outcome != OUTCOME_SUCCEEDED && !j->timed_out && !j->cancelled) {
                        j->outcome = OUTCOME_OOM;
                        set_error(j, "E_OOM", "the job ran out of memory (its cgroup's memory.max)");
                }
                if (j->outcome == OUTCOME_ERROR && !j->error_code)
                        set_error(j, E_SETUP, "sbx-launch could not set up the sandbox (exit status 125; see the job's stderr)");
                if (j->outcome == OUTCOME_TIMED_OUT && !j->error_code) {
                        snprintf(msg, sizeof(msg), "timed out after %" PRIu64 " ms", j->pol.timeout_ms);
                        set_error(j, E_TIMEOUT, msg);
                }
                if (j->cancelled && !j->timed_out && !j->error_code)
                        set_error(j, E_CANCELLED, "cancelled by the client");
        }

        /* The output files stay open: the group commit syncs them with
         * the record (on_idle), and closes them once told. */
        json_t *arts = NULL;
        bool arts_trunc = false;
        if (j->req.run.n_artifacts > 0 && was_running && ensure_result_dir(rj) >= 0) {
                struct sbx_error e;
                if (mkdirat(rj->result_dir_fd, "artifacts", 0700) == 0 || errno == EEXIST) {
                        _cleanup_close_ int adir = openat(rj->result_dir_fd, "artifacts", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (adir >= 0 && workspace_collect(S.work_fd, j->id, j->req.run.artifacts, j->req.run.n_artifacts,
                                                           j->pol.artifacts, adir, &arts, &arts_trunc, &e) < 0)
                                log_warning("job %s: artifacts: %s", j->id, e.msg);
                        if (adir >= 0)
                                fsync(adir);
                }
        }
        /* The record is written by the group commit (on_idle), off the
         * event loop for every job of the batch at once: it syncs the
         * output files and the result directory (whose names must be as
         * durable as the record that points at them), writes and syncs the
         * record under its tmp name, renames it into place, syncs the
         * results directory and deletes the workspaces. */
        json_t *rec = build_result(rj, arts, arts_trunc);
        rj->rec_text = rec ? result_text(rec, &rj->rec_len) : NULL;
        if (!rj->rec_text)
                log_error("job %s: cannot write the result record: out of memory", j->id);
        result_names(j->id, rj->rec_name, rj->rec_tmp);
        rj->rec = rec;

        /* The audit line goes into the same group commit. */
        char digest[65];
        inputs_digest(&j->req.run, digest);
        audit_write_deferred(json_pack("{s:s, s:s, s:s, s:I, s:o, s:s, s:s, s:o, s:o, s:o, s:o}", "event", "job_end", "job",
                                       j->id, "tenant", j->tenant->name, "uid", (json_int_t) j->caller_uid, "command",
                                       argv_json(&j->req.run), "inputs_sha256", digest, "state",
                                       job_outcome_name(j->outcome), "exit_code",
                                       j->exit_code >= 0 ? json_integer(j->exit_code) : json_null(), "signal",
                                       j->term_signal > 0 ? json_integer(j->term_signal) : json_null(), "wall_ms",
                                       rec ? json_incref(json_object_get(rec, "wall_ms")) : json_null(), "cpu_ms",
                                       rec ? json_incref(json_object_get(rec, "cpu_ms")) : json_null()));

        /* Free the slot now; the clients hear of the end once the results
         * directory is synced, for every job that ended in this loop
         * iteration at once (finish_job_tell). */
        if (had_slot) {
                sched_finished(&S.sched, j);
                rj->slot = false;
        }
        if (j->cgroup_fd >= 0) {
                close(j->cgroup_fd);
                j->cgroup_fd = -1;
                if (cgroup_job_remove(&S.cg, j->id) < 0)
                        log_debug("job %s: cgroup not yet empty", j->id);
        }
        close_src(&rj->timer_src, &j->timer_fd);
        list_add_tail(&S.next.finishing, &rj->finishing_link);
        schedule();
}

/* The second half of a job's end, after the sync that made its record
 * durable: index, journal, audit, clients, and goodbye. */
static void finish_job_tell(struct rjob *rj) {
        struct job *j = &rj->j;
        rj->t_us[T_TOLD] = now_mono_us();
        log_debug("job %s: accepted to started %.2f ms, ran %.2f ms, exit to commit %.2f ms, commit %.2f ms", j->id,
                  step_ms(rj, T_ACCEPTED, T_STARTED), step_ms(rj, T_STARTED, T_EXITED), step_ms(rj, T_EXITED, T_COMMIT),
                  step_ms(rj, T_COMMIT, T_TOLD));
        json_t *rec = TAKE_PTR(rj->rec);
        if (rj->rec_err < 0) {
                log_error("job %s: cannot write the result record: %s", j->id, strerror(-rj->rec_err));
                /* Not on disk: the index must not promise it. */
        } else if (rec)
                result_index_add(&S.done, rec);
        for (int i = 0; i < 2; i++)
                if (j->file_fd[i] >= 0) {
                        close(j->file_fd[i]);
                        j->file_fd[i] = -1;
                }
        free(rj->rec_text);
        rj->rec_text = NULL;

        json_t *jr = json_pack("{s:s, s:s}", "ev", "done", "job", j->id);
        if (jr)
                journal_append(&S.journal, jr, false);
        json_decref(jr);

        log_info("job %s (%s): %s, exit %d%s", j->id, j->tenant->name, job_outcome_name(j->outcome), j->exit_code,
                 j->truncated[0] || j->truncated[1] ? ", output truncated" : "");

        /* Now the clients may hear it. Each watch is unlinked before its
         * message goes out: sending may drop the client and its watches. */
        while (!list_empty(&j->watches)) {
                struct job_watch *w = list_entry(j->watches.next, struct job_watch, job_link);
                struct conn *c = w->c;
                enum watch_kind kind = w->kind;
                json_t *tag = w->tag ? json_incref(w->tag) : NULL;
                if (kind == W_FOLLOW)
                        send_lagged(w, j->id);
                if (c->closed) {
                        json_decref(tag);
                        continue; /* closing it freed w */
                }
                watch_free(w);
                if (kind == W_WAIT)
                        conn_send(c, proto_ok(tag, json_pack("{s:s, s:O}", "job", j->id, "result", rec ? rec : json_null())));
                else
                        conn_send(c, json_pack("{s:i, s:s, s:s, s:O}", "v", PROTO_VERSION, "event", "end", "job", j->id,
                                               "result", rec ? rec : json_null()));
                json_decref(tag);
                if (!c->closed && c->read_eof && c->out_len == c->out_off && list_empty(&c->watches))
                        conn_close(c);
        }
        json_decref(rec);

        list_del(&j->all_link);
        loop_defer_free(rjob_free, rj);
        /* A job's end frees descriptors that accept() may have run out of. */
        if (S.listen_paused && S.n_conns < S.cfg->max_connections && !S.stopping) {
                S.listen_paused = false;
                loop_mod(&S.listen_src, EPOLLIN);
        }
        notify_status();
        if (S.stopping && list_empty(&S.jobs))
                loop_quit();
}

/* An in-memory file holding data, read from its start; sealed: nothing can
 * change it any more. */
static int memfd_of(const char *name, const void *data, size_t len, bool sealed, int *ret_fd) {
        int fd = memfd_create(name, MFD_CLOEXEC | (sealed ? MFD_ALLOW_SEALING : 0));
        if (fd < 0)
                return -errno;
        int r = write_all(fd, data, len);
        if (r == 0 && sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
                r = -errno;
        if (r == 0 && lseek(fd, 0, SEEK_SET) < 0)
                r = -errno;
        if (r < 0) {
                close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

/* The profile the daemon generates for a job, on top of the named one: the
 * workspace, the limits the cgroup does not already enforce, the network
 * mode. Handed over as a sealed memfd so no other user can read or swap it. */
static int make_profile(struct rjob *rj, int *ret_fd) {
        struct job *j = &rj->j;
        char ws[4200];
        snprintf(ws, sizeof(ws), "%s/%s", S.work_path, j->id);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        fprintf(f, "# generated by sbx-supervisord for job %s (tenant %s)\n", j->id, j->tenant->name);
        /* The state directory is the operator's choice: spell it through
         * the profile writer so spaces, '$' or ';' in it stay literal. */
        const char *const bind[] = { ws, "/workspace" };
        fprintf(f, "[fs]\n");
        if (profile_write_key(f, "bind", bind, ARRAY_SIZE(bind)) < 0) {
                fclose(f);
                return -ENOMEM;
        }
        fprintf(f, "chdir = /workspace\n");
        fprintf(f, "[limits]\n");
        if (j->pol.memory != PROTO_UNSET && !(rj->cg_limits & CG_LIMIT_MEMORY))
                fprintf(f, "memory = %" PRIu64 "\n", j->pol.memory);
        if (j->pol.processes != PROTO_UNSET && !(rj->cg_limits & CG_LIMIT_PIDS))
                fprintf(f, "processes = %" PRIu64 "\n", j->pol.processes);
        if (j->pol.cpu_s != PROTO_UNSET)
                fprintf(f, "cpu = %" PRIu64 "s\n", j->pol.cpu_s);
        fprintf(f, "[net]\nmode = %s\n", j->pol.net == NET_HOST ? "host" : "none");
        if (fclose(f) != 0)
                return -ENOMEM;
        return memfd_of("sbx-job-profile", text, len, true, ret_fd);
}

static int make_stdin(const struct run_request *run, int *ret_fd) {
        *ret_fd = -1;
        if (!run->stdin_data)
                return 0;
        return memfd_of("sbx-job-stdin", run->stdin_data, run->stdin_len, false, ret_fd);
}

static int add_arg(char ***argv, size_t *n, size_t *cap, const char *a) {
        if (*n + 2 > *cap) {
                size_t nc = *cap ? *cap * 2 : 64;
                char **na = realloc(*argv, nc * sizeof(char *));
                if (!na)
                        return -ENOMEM;
                *argv = na;
                *cap = nc;
        }
        (*argv)[(*n)++] = (char *) a;
        (*argv)[*n] = NULL;
        return 0;
}

static void start_job(struct rjob *rj) {
        struct job *j = &rj->j;
        char msg[1024];
        int r;
        int pout[2] = { -1, -1 }, perr[2] = { -1, -1 }, pst[2] = { -1, -1 };
        _cleanup_close_ int profile_fd = -1, stdin_fd = -1;
        _cleanup_free_ char **argv = NULL;
        size_t argc = 0, cap = 0;

        rj->slot = true;
        j->file_fd[0] = j->file_fd[1] = -1;

        if (S.cg.enabled) {
                r = cgroup_job_create(&S.cg, j->id, &j->pol, &j->cgroup_fd, &rj->cg_limits);
                if (r < 0) {
                        log_warning("job %s: no cgroup (%s); limits go to rlimits", j->id, strerror(-r));
                        j->cgroup_fd = -1;
                        rj->cg_limits = 0;
                }
        }
        if ((r = make_profile(rj, &profile_fd)) < 0 || (r = make_stdin(&j->req.run, &stdin_fd)) < 0) {
                snprintf(msg, sizeof(msg), "cannot prepare the job: %s", strerror(-r));
                goto fail;
        }
        if (pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0 || pipe2(pst, O_CLOEXEC) < 0) {
                snprintf(msg, sizeof(msg), "pipe: %s", strerror(errno));
                goto fail;
        }

        char ws[32] = "/workspace";
        bool oom = false;
        oom |= add_arg(&argv, &argc, &cap, S.cfg->launcher) < 0;
        oom |= add_arg(&argv, &argc, &cap, "--json-status-fd") < 0;
        oom |= add_arg(&argv, &argc, &cap, "3") < 0;
        oom |= add_arg(&argv, &argc, &cap, "--profile") < 0;
        oom |= add_arg(&argv, &argc, &cap, rj->profile_path) < 0;
        oom |= add_arg(&argv, &argc, &cap, "--profile") < 0;
        oom |= add_arg(&argv, &argc, &cap, "/dev/fd/4") < 0;
        for (size_t i = 0; i < j->req.run.n_env; i++) {
                oom |= add_arg(&argv, &argc, &cap, "--setenv") < 0;
                oom |= add_arg(&argv, &argc, &cap, j->req.run.env[i].name) < 0;
                oom |= add_arg(&argv, &argc, &cap, j->req.run.env[i].value) < 0;
        }
        /* The task context comes last and from us: the request cannot set
         * SBX_* (proto.c refuses it), and later settings win anyway. */
        const char *ctx[] = { "SBX_JOB_ID", j->id, "SBX_TENANT", j->tenant->name, "SBX_WORKSPACE", ws };
        for (size_t i = 0; i < ARRAY_SIZE(ctx); i += 2) {
                oom |= add_arg(&argv, &argc, &cap, "--setenv") < 0;
                oom |= add_arg(&argv, &argc, &cap, ctx[i]) < 0;
                oom |= add_arg(&argv, &argc, &cap, ctx[i + 1]) < 0;
        }
        oom |= add_arg(&argv, &argc, &cap, "--") < 0;
        for (size_t i = 0; i < j->req.run.argc; i++)
                oom |= add_arg(&argv, &argc, &cap, j->req.run.argv[i]) < 0;
        if (oom) {
                snprintf(msg, sizeof(msg), "out of memory");
                goto fail;
        }
        char path_env[4300];
        snprintf(path_env, sizeof(path_env), "SBX_PROFILE_PATH=%s", S.cfg->profile_path);
        char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", path_env, "LC_ALL=C.UTF-8", NULL };
        struct spawn_params sp = {
                .path = S.cfg->launcher,
                .argv = argv,
                .envp = envp,
                .fds = { stdin_fd, pout[1], perr[1], pst[1], profile_fd },
                .uid = j->tenant->job_uid,
                .gid = j->tenant->job_gid,
                .cgroup_fd = j->cgroup_fd,
        };
        r = spawn_launcher(&sp, &j->pid, &j->pidfd);
        if (r < 0 && j->cgroup_fd >= 0) {
                /* CLONE_INTO_CGROUP can fail where plain clone works (e.g. a
                 * threaded cgroup); run without the cgroup rather than not at all. */
                log_warning("job %s: clone into cgroup failed (%s), starting without it", j->id, strerror(-r));
                close(j->cgroup_fd);
                j->cgroup_fd = -1;
                rj->cg_limits = 0;
                cgroup_job_remove(&S.cg, j->id);
                sp.cgroup_fd = -1;
                r = spawn_launcher(&sp, &j->pid, &j->pidfd);
        }
        if (r < 0) {
                snprintf(msg, sizeof(msg), "cannot start %s: %s", S.cfg->launcher, strerror(-r));
                goto fail;
        }
        close(pout[1]);
        close(perr[1]);
        close(pst[1]);
        pout[1] = perr[1] = pst[1] = -1;
        j->out_fd[0] = pout[0];
        j->out_fd[1] = perr[0];
        j->status_fd = pst[0];
        fcntl(pout[0], F_SETFL, O_NONBLOCK);
        fcntl(perr[0], F_SETFL, O_NONBLOCK);
        fcntl(pst[0], F_SETFL, O_NONBLOCK);
        loop_add(&rj->out_src[0], j->out_fd[0], EPOLLIN, on_stdout);
        loop_add(&rj->out_src[1], j->out_fd[1], EPOLLIN, on_stderr);
        loop_add(&rj->status_src, j->status_fd, EPOLLIN, on_status);
        loop_add(&rj->pid_src, j->pidfd, EPOLLIN, on_pidfd);
        j->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (j->timer_fd >= 0) {
                loop_add(&rj->timer_src, j->timer_fd, EPOLLIN, on_timer);
                arm_timer(rj, j->pol.timeout_ms);
        }
        job_transition(j, JEV_START);
        j->started_ms = now_real_ms();
        j->started_mono_ms = now_mono_ms();
        rj->t_us[T_STARTED] = now_mono_us();

        unsigned long long st = 0;
        proc_starttime(j->pid, &st);
        rj->starttime = st;
        json_t *jr = json_pack("{s:s, s:s, s:i, s:I}", "ev", "start", "job", j->id, "pid", (int) j->pid, "starttime",
                               (json_int_t) st);
        if (jr)
                journal_append(&S.journal, jr, false);
        json_decref(jr);
        log_debug("job %s: started pid %d", j->id, (int) j->pid);
        job_event_all(rj, json_pack("{s:i, s:s, s:s}", "v", PROTO_VERSION, "event", "started", "job", j->id), 0, 0);
        return;

fail:
        for (int i = 0; i < 2; i++) {
                if (pout[i] >= 0)
                        close(pout[i]);
                if (perr[i] >= 0)
                        close(perr[i]);
                if (pst[i] >= 0)
                        close(pst[i]);
        }
        log_error("job %s: %s", j->id, msg);
        job_transition(j, JEV_SPAWN_FAIL);
        set_error(j, E_SPAWN, msg);
        finish_job(rj);
}

static bool scheduling, schedule_wanted;

/* Jobs start at the end of the loop turn, after its syncs went to the
 * syncer thread: the accept syncs then run while the launchers start, not
 * after. */
static void schedule(void) {
        schedule_wanted = true;
}

static void schedule_now(void) {
        struct job *j;
        /* finish_job() of a job that failed to start calls back in here. */
        if (scheduling || S.stopping)
                return;
        scheduling = true;
        schedule_wanted = false;
        while ((j = sched_next(&S.sched)))
                start_job(rjob_of(j));
        scheduling = false;
}

/* ---------------------------------------------------------------- requests */

static int resolve_profile(const char *name, char **ret) {
        _cleanup_free_ char *copy = strdup(S.cfg->profile_path);
        char *save = NULL;
        if (!copy)
                return -ENOMEM;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                char p[4300];
                snprintf(p, sizeof(p), "%s/%s.ini", d, name);
                if (access(p, R_OK) == 0) {
                        *ret = strdup(p);
                        return *ret ? 0 : -ENOMEM;
                }
        }
        return -ENOENT;
}

/* deferred: the reply is held for the group commit, which syncs the line. */
static void audit_decision_sync(struct conn *c, const char *op, const char *decision, const char *job, const char *code,
                                const char *msg, bool deferred) {
        (deferred ? audit_write_deferred : audit_write)(json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:o, s:o, s:o}", "event", "request", "op", op, "uid",
                              (json_int_t) c->cred.uid, "pid", (json_int_t) c->cred.pid, "tenant",
                              c->tenant ? c->tenant->name : "", "decision", decision, "job", job ? json_string(job) : json_null(),
                              "code", code ? json_string(code) : json_null(), "message",
                              msg ? json_string(msg) ?: json_null() : json_null()));
}

static void audit_decision(struct conn *c, const char *op, const char *decision, const char *job, const char *code,
                           const char *msg) {
        audit_decision_sync(c, op, decision, job, code, msg, false);
}

static void hold_conn(struct conn *c) {
        struct batch *b = &S.next;
        b->journal = true;
        if (c->held)
                return;
        if (b->n_held == b->cap_held) {
                size_t nc = b->cap_held ? b->cap_held * 2 : 64;
                struct conn **n = realloc(b->held, nc * sizeof(*n));
                if (!n) {
                        /* Without room to hold the reply, sync right now. */
                        fdatasync(S.journal.fd);
                        return;
                }
                b->held = n;
                b->cap_held = nc;
        }
        c->held = true;
        b->held[b->n_held++] = c;
}

/* After every batch of events: if the previous group commit is done, hand
 * this turn's syncs to the syncer thread — one journal sync for every job
 * accepted, one results-directory sync for every job ended — and go on
 * serving. Replies and ends are released when the syncs complete
 * (on_synced). Group commit keeps the durability promises at a fraction of
 * the syncs, and off the event loop. */
static void submit_batch(void) {
        struct batch *n = &S.next, *f = &S.inflight;
        struct list *pos, *tmp;
        if (S.syncing || (!n->journal && list_empty(&n->finishing)))
                return;
        /* Up to five entries a job: stdout, stderr, its result directory,
         * its record, its workspace. */
        size_t nf = 0;
        list_for_each_safe(pos, tmp, &n->finishing)
                nf += 5;
        if (nf > S.cap_sfiles) {
                struct sync_file *a = realloc(S.sreq.files, nf * sizeof(*a));
                if (!a) {
                        /* Leave it for the next turn, when memory may be back. */
                        log_error("group commit: out of memory");
                        return;
                }
                S.sreq.files = a;
                S.cap_sfiles = nf;
        }
        struct conn **h = f->held;
        size_t hc = f->cap_held;
        f->held = n->held;
        f->cap_held = n->cap_held;
        f->n_held = n->n_held;
        n->held = h;
        n->cap_held = hc;
        n->n_held = 0;
        f->journal = n->journal;
        n->journal = false;
        list_for_each_safe(pos, tmp, &n->finishing) {
                list_del(pos);
                list_add_tail(&f->finishing, pos);
        }
        nf = 0;
        uint64_t now = now_mono_us();
        list_for_each_safe(pos, tmp, &f->finishing) {
                struct rjob *rj = container_of(pos, struct rjob, finishing_link);
                rj->t_us[T_COMMIT] = now;
                for (int i = 0; i < 2; i++)
                        if (rj->j.file_fd[i] >= 0)
                                S.sreq.files[nf++] = (struct sync_file) { .fd = rj->j.file_fd[i], .dirfd = -1 };
                if (rj->result_dir_fd >= 0)
                        S.sreq.files[nf++] = (struct sync_file) { .fd = rj->result_dir_fd, .dirfd = -1 };
                if (rj->rec_text)
                        S.sreq.files[nf++] = (struct sync_file) { .fd = -1, .dirfd = S.results_fd, .tmp = rj->rec_tmp,
                                                                  .name = rj->rec_name, .data = rj->rec_text,
                                                                  .len = rj->rec_len };
                S.sreq.files[nf++] = (struct sync_file) { .fd = -1, .dirfd = S.work_fd, .name = rj->j.id, .remove = true };
        }
        S.sreq.n_files = nf;
        S.sreq.journal_fd = f->journal ? S.journal.fd : -1;
        S.sreq.audit_fd = audit_take_pending();
        S.sreq.dir_fd = list_empty(&f->finishing) ? -1 : S.results_fd;
        S.syncing = true;
        syncer_submit(&S.sreq);
}

static void on_synced(struct source *s, uint32_t events) {
        struct batch *f = &S.inflight;
        struct list *pos, *tmp;
        int r = syncer_complete();
        if (r < 0)
                log_error("group commit: sync failed: %s", strerror(-r));
        S.syncing = false;
        /* Each record's own verdict, for finish_job_tell. */
        size_t k = 0;
        list_for_each_safe(pos, tmp, &f->finishing) {
                struct rjob *rj = container_of(pos, struct rjob, finishing_link);
                if (!rj->rec_text)
                        continue;
                for (; k < S.sreq.n_files; k++)
                        if (S.sreq.files[k].data == rj->rec_text) {
                                rj->rec_err = S.sreq.files[k].err;
                                break;
                        }
        }
        for (size_t i = 0; i < f->n_held; i++) {
                struct conn *c = f->held[i];
                c->held = false;
                if (c->free_on_release)
                        loop_defer_free(conn_free, c);
                else if (!c->closed)
                        conn_flush(c);
        }
        f->n_held = 0;
        f->journal = false;
        list_for_each_safe(pos, tmp, &f->finishing) {
                list_del(pos);
                finish_job_tell(container_of(pos, struct rjob, finishing_link));
        }
}

static void on_idle(void) {
        submit_batch();
        if (schedule_wanted) {
                schedule_now();
                /* Jobs that failed to start have records to sync. */
                submit_batch();
        }
}

static json_t *accept_record(const struct job *j) {
        char ts[64];
        json_t *jr = json_pack("{s:s, s:s, s:s, s:I, s:s, s:o, s:s}", "ev", "accept", "job", j->id, "tenant", j->tenant->name,
                               "uid", (json_int_t) j->caller_uid, "created", format_rfc3339(j->created_ms, ts, sizeof(ts)),
                               "command", argv_json(&j->req.run), "profile", j->pol.profile);
        if (jr && j->req.run.idempotency_key)
                json_object_set_new(jr, "idempotency_key", json_string(j->req.run.idempotency_key));
        return jr;
}

static void handle_run(struct conn *c, struct request *req) {
        struct sbx_error err;
        struct policy_decision pol;
        struct tenant *t = c->tenant;
        struct run_request *run = &req->run;

        if (S.stopping) {
                conn_send(c, proto_error(req->tag, E_SHUTTING_DOWN, "the daemon is stopping"));
                return;
        }
        if (run->follow && c->n_watches >= MAX_WATCHES_PER_CONN) {
                conn_send(c, proto_error(req->tag, E_LIMIT, "more than %d waits and follows on one connection",
                                         MAX_WATCHES_PER_CONN));
                return;
        }
        if (policy_apply(t, run, &pol, &err) < 0) {
                audit_decision(c, "run", "rejected", NULL, pol.code, err.msg);
                conn_send(c, proto_error(req->tag, pol.code, "%s", err.msg));
                return;
        }
        /* Asked for and impossible: refused, not quietly ignored. (A
         * tenant's max_cpus alone still runs, recorded as not enforced; the
         * daemon warned at start.) */
        if (run->cpu_milli != PROTO_UNSET && !(S.cg.enabled && S.cg.cpu)) {
                const char *why = S.cg.enabled ? "the cgroup cpu controller is not available to it" : "it has no job cgroups";
                audit_decision(c, "run", "rejected", NULL, E_LIMIT, "limits.cpus cannot be enforced");
                conn_send(c, proto_error(req->tag, E_LIMIT, "field 'limits.cpus': this daemon cannot enforce CPU bandwidth (%s)", why));
                return;
        }
        if (run->idempotency_key) {
                struct rjob *dup = NULL;
                struct list *pos, *tmp;
                list_for_each_safe(pos, tmp, &S.jobs) {
                        struct job *x = list_entry(pos, struct job, all_link);
                        if (x->tenant == t && x->req.run.idempotency_key && streq(x->req.run.idempotency_key, run->idempotency_key))
                                dup = rjob_of(x);
                }
                if (dup) {
                        if (run->follow)
                                watch_add(c, dup, W_FOLLOW, STREAM_BOTH, req->tag);
                        conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:s, s:b}", "job", dup->j.id, "state",
                                                                  job_state_name(dup->j.state), "duplicate", 1)));
                        return;
                }
                struct done_entry *d = result_index_find_key(&S.done, t->name, run->idempotency_key);
                if (d) {
                        conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:s, s:b}", "job", d->id, "state", "done", "duplicate", 1)));
                        if (run->follow) {
                                json_t *rec = NULL;
                                if (result_load(S.results_fd, d->id, &rec) == 0)
                                        conn_send(c, json_pack("{s:i, s:s, s:s, s:o}", "v", PROTO_VERSION, "event", "end", "job",
                                                               d->id, "result", rec));
                        }
                        return;
                }
        }
        if (S.sched.n_queued >= S.sched.max_queued || t->n_queued >= t->max_queue) {
                audit_decision(c, "run", "rejected", NULL, E_QUEUE_FULL, "queue full");
                conn_send(c, proto_error(req->tag, E_QUEUE_FULL, "the %s queue is full (%u waiting); try again later",
                                         S.sched.n_queued >= S.sched.max_queued ? "daemon's" : "tenant's",
                                         S.sched.n_queued >= S.sched.max_queued ? S.sched.n_queued : t->n_queued));
                return;
        }
        _cleanup_free_ char *profile_path = NULL;
        if (resolve_profile(pol.profile, &profile_path) < 0) {
                audit_decision(c, "run", "rejected", NULL, E_NO_PROFILE, pol.profile);
                conn_send(c, proto_error(req->tag, E_NO_PROFILE, "field 'profile': no profile '%s' in %s", pol.profile,
                                         S.cfg->profile_path));
                return;
        }

        struct rjob *rj = calloc(1, sizeof(*rj));
        if (!rj) {
                conn_send(c, proto_error(req->tag, E_INTERNAL, "out of memory"));
                return;
        }
        struct job *j = &rj->j;
        rj->t_us[T_ACCEPTED] = now_mono_us();
        new_job_id(j->id, sizeof(j->id));
        j->tenant = t;
        j->caller_uid = c->cred.uid;
        j->state = JOB_QUEUED;
        j->pol = pol;
        j->created_ms = now_real_ms();
        j->pid = -1;
        j->pidfd = j->status_fd = j->timer_fd = j->cgroup_fd = -1;
        j->out_fd[0] = j->out_fd[1] = j->file_fd[0] = j->file_fd[1] = -1;
        rj->result_dir_fd = -1;
        j->exit_code = -1;
        list_init(&j->watches);
        list_init(&j->queue_link);
        rj->profile_path = TAKE_PTR(profile_path);
        j->req = *req;               /* the job owns the request now */
        request_init(req);
        req->tag = j->req.tag ? json_incref(j->req.tag) : NULL;

        sbx_error_clear(&err);
        if (workspace_create(S.work_fd, j->id, &j->req.run, t->job_uid, t->job_gid, &err) < 0) {
                log_error("job %s: %s", j->id, err.msg);
                conn_send(c, proto_error(req->tag, E_INTERNAL, "cannot prepare the job: %s", err.msg));
                workspace_remove(S.work_fd, j->id);
                rjob_free(rj);
                return;
        }

        /* After this record a crash still leaves the job a result record,
         * once it is synced (before the client hears of the job). */
        json_t *jr = accept_record(j);
        int r = jr ? journal_append(&S.journal, jr, false) : -ENOMEM;
        json_decref(jr);
        if (r < 0) {
                log_error("job %s: journal: %s", j->id, strerror(-r));
                conn_send(c, proto_error(req->tag, E_INTERNAL, "cannot record the job: %s", strerror(-r)));
                workspace_remove(S.work_fd, j->id);
                rjob_free(rj);
                return;
        }
        sched_enqueue(&S.sched, j); /* capacity checked above */
        list_add_tail(&S.jobs, &j->all_link);
        audit_decision_sync(c, "run", pol.clamped[0] ? "accepted (clamped)" : "accepted", j->id, NULL,
                            pol.clamped[0] ? pol.clamped : NULL, true);
        if (j->req.run.follow)
                watch_add(c, rj, W_FOLLOW, STREAM_BOTH, req->tag);
        json_t *ok = json_pack("{s:s, s:s}", "job", j->id, "state", "queued");
        if (pol.clamped[0])
                json_object_set_new(ok, "clamped", json_string(pol.clamped));
        /* Durable before acknowledged: this reply (and whatever follows it
         * on this connection) goes out after the journal is synced at the
         * end of this loop iteration, one sync for every job accepted in it. */
        hold_conn(c);
        conn_send(c, proto_ok(req->tag, ok));
        schedule();
        notify_status();
}

/* A finished or active job this tenant owns, or an E_NOT_FOUND reply. Jobs
 * of other tenants are reported as not found: their existence is not ours
 * to reveal. */
static bool lookup_job(struct conn *c, struct request *req, struct rjob **ret_active, struct done_entry **ret_done) {
        *ret_active = NULL;
        *ret_done = NULL;
        struct rjob *rj = find_active(req->job);
        if (rj && rj->j.tenant == c->tenant) {
                *ret_active = rj;
                return true;
        }
        struct done_entry *d = rj ? NULL : result_index_find(&S.done, req->job);
        if (d && streq(d->tenant, c->tenant->name)) {
                *ret_done = d;
                return true;
        }
        conn_send(c, proto_error(req->tag, E_NOT_FOUND, "no job %s", req->job));
        return false;
}

/* Send a stream's captured bytes as output events (follow) or members. */
static void send_capture(struct conn *c, const char *id, unsigned streams, json_t *into) {
        _cleanup_close_ int rdir = openat(S.results_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        for (int i = 0; i < 2; i++) {
                if (!(streams & (i == 0 ? STREAM_STDOUT : STREAM_STDERR)))
                        continue;
                _cleanup_free_ char *data = NULL;
                size_t len = 0;
                if (rdir < 0 || read_file_at(rdir, stream_name(i), 1ull << 32, &data, &len) < 0)
                        len = 0;
                if (into) {
                        proto_set_data(into, stream_name(i), data ? data : "", len);
                        continue;
                }
                for (size_t off = 0; off < len; off += READ_CHUNK) {
                        size_t n = len - off < READ_CHUNK ? len - off : READ_CHUNK;
                        json_t *ev = json_pack("{s:i, s:s, s:s, s:s}", "v", PROTO_VERSION, "event", "output", "job", id, "stream",
                                               stream_name(i));
                        if (ev && proto_set_data(ev, "data", data + off, n) == 0)
                                conn_send(c, ev);
                        else
                                json_decref(ev);
                }
        }
}

static void handle_job_request(struct conn *c, struct request *req) {
        struct rjob *rj;
        struct done_entry *d;
        if (!lookup_job(c, req, &rj, &d))
                return;
        switch (req->op) {
        case REQ_STATUS:
                conn_send(c, proto_ok(req->tag, json_pack("{s:o}", "job", rj ? job_summary(&rj->j) : done_summary(d))));
                return;
        case REQ_RESULT:
        case REQ_WAIT:
                if (rj) {
                        if (req->op == REQ_RESULT)
                                conn_send(c, proto_error(req->tag, E_NOT_DONE, "job %s is %s", rj->j.id,
                                                         rj->j.state == JOB_DONE ? "being recorded; retry" : job_state_name(rj->j.state)));
                        else
                                watch_add(c, rj, W_WAIT, 0, req->tag);
                        return;
                }
                json_t *rec = NULL;
                int r = result_load(S.results_fd, d->id, &rec);
                if (r < 0) {
                        conn_send(c, proto_error(req->tag, E_INTERNAL, "cannot read the result of %s: %s", d->id, strerror(-r)));
                        return;
                }
                conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:o}", "job", d->id, "result", rec)));
                return;
        case REQ_CANCEL:
                if (!rj) {
                        conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:s, s:b}", "job", d->id, "state", d->state, "already_done", 1)));
                        return;
                }
                audit_decision(c, "cancel", "accepted", rj->j.id, NULL, NULL);
                if (rj->j.state == JOB_QUEUED) {
                        sched_remove_queued(&S.sched, &rj->j);
                        job_transition(&rj->j, JEV_CANCEL);
                        set_error(&rj->j, E_CANCELLED, "cancelled by the client before it started");
                        json_t *ok = json_pack("{s:s, s:s}", "job", rj->j.id, "state", "killed");
                        finish_job(rj);
                        /* "killed" is the job's end: the caller hears it once
                         * the record is durable, in the same group commit. */
                        hold_conn(c);
                        conn_send(c, proto_ok(req->tag, ok));
                        return;
                }
                stop_job(rj, JEV_CANCEL);
                conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:s}", "job", rj->j.id, "state", job_state_name(rj->j.state))));
                return;
        case REQ_LOGS:
                if (!req->follow) {
                        json_t *o = json_pack("{s:s}", "job", rj ? rj->j.id : d->id);
                        send_capture(c, rj ? rj->j.id : d->id, req->streams, o);
                        conn_send(c, proto_ok(req->tag, o));
                        return;
                }
                if (rj && c->n_watches >= MAX_WATCHES_PER_CONN) {
                        conn_send(c, proto_error(req->tag, E_LIMIT, "more than %d waits and follows on one connection",
                                                 MAX_WATCHES_PER_CONN));
                        return;
                }
                conn_send(c, proto_ok(req->tag, json_pack("{s:s}", "job", rj ? rj->j.id : d->id)));
                send_capture(c, rj ? rj->j.id : d->id, req->streams, NULL);
                if (rj)
                        watch_add(c, rj, W_FOLLOW, req->streams, req->tag);
                else {
                        json_t *rec2 = NULL;
                        result_load(S.results_fd, d->id, &rec2);
                        conn_send(c, json_pack("{s:i, s:s, s:s, s:o}", "v", PROTO_VERSION, "event", "end", "job", d->id, "result",
                                               rec2 ? rec2 : json_null()));
                }
                return;
        default:
                return;
        }
}

static bool state_matches(const char *filter, const char *state, bool active) {
        if (!filter)
                return true;
        if (streq(filter, "active"))
                return active;
        if (streq(filter, "done"))
                return !active;
        return streq(filter, state);
}

static void handle_list(struct conn *c, struct request *req) {
        json_t *arr = json_array();
        uint64_t n = 0;
        /* newest first: active jobs, then finished ones from the end */
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &S.jobs) {
                struct job *j = list_entry(pos, struct job, all_link);
                if (j->tenant != c->tenant || !state_matches(req->state, job_state_name(j->state), true))
                        continue;
                if (n++ >= req->limit)
                        break;
                json_array_append_new(arr, job_summary(j));
        }
        for (struct done_entry *d = result_index_newest(&S.done, c->tenant->name); d && n < req->limit;
             d = result_index_older(&S.done, d)) {
                if (!state_matches(req->state, d->state, false))
                        continue;
                n++;
                json_array_append_new(arr, done_summary(d));
        }
        conn_send(c, proto_ok(req->tag, json_pack("{s:o}", "jobs", arr)));
}

static void handle_line(struct conn *c, const char *line, size_t len) {
        struct request req;
        struct sbx_error err;
        sbx_error_clear(&err);
        if (len == 0)
                return;
        if (proto_parse_request(line, len, &req, &err) < 0) {
                conn_send(c, proto_error(req.tag, E_BAD_REQUEST, "%s", err.msg));
                request_free(&req);
                return;
        }
        if (c->anonymous)
                log_warning("allow_unauthenticated: uid %u (pid %d) not in any tenant, '%s' let through as tenant 'anonymous'",
                            (unsigned) c->cred.uid, (int) c->cred.pid, req_op_name(req.op));
        switch (req.op) {
        case REQ_PING:
                conn_send(c, proto_ok(req.tag, json_pack("{s:s, s:s, s:I, s:b}", "version", PACKAGE_VERSION, "tenant",
                                                         c->tenant->name, "uid", (json_int_t) c->cred.uid, "anonymous",
                                                         c->anonymous)));
                break;
        case REQ_RUN:
                handle_run(c, &req);
                break;
        case REQ_LIST:
                handle_list(c, &req);
                break;
        default:
                handle_job_request(c, &req);
                break;
        }
        request_free(&req);
}

static void conn_read(struct conn *c) {
        size_t max = (size_t) S.cfg->max_request;
        for (int rounds = 0; rounds < 64 && !c->closed && !c->read_eof; rounds++) {
                /* Stop taking requests while a client ignores the answers. */
                if (c->out_len - c->out_off > S.cfg->client_buffer / 2)
                        break;
                if (c->in_cap - c->in_len < READ_CHUNK) {
                        /* Doubling keeps a long line linear to read; the
                         * line limit bounds it (max_request + one chunk). */
                        size_t nc = c->in_cap ? c->in_cap * 2 : READ_CHUNK;
                        if (nc < c->in_len + READ_CHUNK)
                                nc = c->in_len + READ_CHUNK;
                        if (nc > max + READ_CHUNK && c->in_len + READ_CHUNK <= max + READ_CHUNK)
                                nc = max + READ_CHUNK;
                        char *nb = realloc(c->in, nc);
                        if (!nb) {
                                conn_close(c);
                                return;
                        }
                        c->in = nb;
                        c->in_cap = nc;
                }
                ssize_t n = recv(c->src.fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                conn_close(c);
                        break;
                }
                if (n == 0) {
                        /* Half a line and then EOF is dropped, not run. */
                        c->read_eof = true;
                        c->in_len = 0;
                        break;
                }
                size_t start = c->in_len;
                c->in_len += (size_t) n;
                size_t consumed = 0;
                for (size_t i = start; i < c->in_len && !c->closed; i++) {
                        if (c->in[i] != '\n')
                                continue;
                        if (c->discarding)
                                c->discarding = false;
                        else
                                handle_line(c, c->in + consumed, i - consumed);
                        consumed = i + 1;
                }
                if (c->closed)
                        return;
                if (consumed > 0) {
                        memmove(c->in, c->in + consumed, c->in_len - consumed);
                        c->in_len -= consumed;
                }
                if (c->discarding)
                        c->in_len = 0;
                else if (c->in_len > max) {
                        conn_send(c, proto_error(NULL, E_BAD_REQUEST, "request line longer than %zu bytes (max_request)", max));
                        c->discarding = true;
                        c->in_len = 0;
                }
        }
        if (c->in_len > 0 || c->discarding) {
                if (!c->partial_since_ms)
                        c->partial_since_ms = now_mono_ms();
        } else
                c->partial_since_ms = 0;
        /* Idle clients hold no buffer (one still sending an oversized line
         * keeps it: no allocation per wake-up while it is skipped). */
        if (c->in_len == 0 && c->in_cap > 0 && !c->discarding) {
                free(c->in);
                c->in = NULL;
                c->in_cap = 0;
        }
        if (!c->closed)
                conn_flush(c);
}

static void on_conn(struct source *s, uint32_t events) {
        struct conn *c = container_of(s, struct conn, src);
        if (events & EPOLLOUT)
                conn_flush(c);
        if (c->closed)
                return;
        if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP))
                conn_read(c);
        if (!c->closed && (events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN))
                conn_close(c);
}

static void on_listen(struct source *s, uint32_t events) {
        for (int i = 0; i < 64; i++) {
                int fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EMFILE || errno == ENFILE) {
                                log_warning("accept: %s; pausing new connections", strerror(errno));
                                S.listen_paused = true;
                                loop_mod(&S.listen_src, 0);
                        }
                        return;
                }
                if (S.n_conns >= S.cfg->max_connections) {
                        static const char msg[] = "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"E_TOO_MANY_CONNECTIONS\","
                                                  "\"message\":\"too many connections\"}}\n";
                        (void) !send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                        close(fd);
                        continue;
                }
                struct conn *c = calloc(1, sizeof(*c));
                if (!c) {
                        close(fd);
                        continue;
                }
                list_init(&c->watches);
                list_add_tail(&S.conns, &c->link);
                socklen_t sl = sizeof(c->cred);
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->cred, &sl) < 0) {
                        list_del(&c->link);
                        close(fd);
                        free(c);
                        continue;
                }
                gid_t groups[MAX_PEER_GROUPS];
                socklen_t gl = sizeof(groups);
                size_t ng = 0;
                if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl) == 0)
                        ng = gl / sizeof(gid_t);
                c->tenant = tenant_lookup(S.cfg, c->cred.uid, c->cred.gid, groups, ng);
                if (!c->tenant && S.cfg->allow_unauthenticated) {
                        c->tenant = &S.cfg->anonymous;
                        c->anonymous = true;
                }
                S.n_conns++;
                if (loop_add(&c->src, fd, EPOLLIN | EPOLLRDHUP, on_conn) < 0) {
                        list_del(&c->link);
                        close(fd);
                        free(c);
                        S.n_conns--;
                        continue;
                }
                c->events = EPOLLIN | EPOLLRDHUP;
                if (!c->tenant) {
                        char m[160];
                        snprintf(m, sizeof(m), "uid %u is not in any tenant", (unsigned) c->cred.uid);
                        log_warning("refused connection from uid %u gid %u pid %d: not in any tenant", (unsigned) c->cred.uid,
                                    (unsigned) c->cred.gid, (int) c->cred.pid);
                        audit_decision(c, "connect", "refused", NULL, E_UNAUTHORIZED, m);
                        conn_send(c, proto_error(NULL, E_UNAUTHORIZED, "%s", m));
                        c->read_eof = true; /* close once the refusal is out */
                        conn_flush(c);
                        continue;
                }
                if (c->anonymous)
                        log_warning("allow_unauthenticated: accepted uid %u (pid %d) as tenant 'anonymous'", (unsigned) c->cred.uid,
                                    (int) c->cred.pid);
        }
}

/* ---------------------------------------------------------------- daemon */

static void begin_stop(const char *why) {
        struct list *pos, *tmp;
        if (S.stopping)
                return;
        S.stopping = true;
        log_notice("%s: stopping; %u running and %u queued jobs are ended", why, S.sched.n_running, S.sched.n_queued);
#ifdef HAVE_SYSTEMD
        sd_notify(0, "STOPPING=1");
#endif
        loop_del(&S.listen_src);
        list_for_each_safe(pos, tmp, &S.jobs) {
                struct rjob *rj = rjob_of(list_entry(pos, struct job, all_link));
                if (rj->j.state == JOB_QUEUED) {
                        sched_remove_queued(&S.sched, &rj->j);
                        job_transition(&rj->j, JEV_SHUTDOWN);
                        set_error(&rj->j, E_SHUTTING_DOWN, "supervisor stopped before the job started");
                        finish_job(rj);
                } else {
                        set_error(&rj->j, E_SHUTTING_DOWN, "supervisor stopped while the job ran");
                        stop_job(rj, JEV_SHUTDOWN);
                }
        }
        if (list_empty(&S.jobs))
                loop_quit();
}

static void on_signal(struct source *s, uint32_t events) {
        struct signalfd_siginfo si;
        while (read(s->fd, &si, sizeof(si)) == sizeof(si)) {
                switch (si.ssi_signo) {
                case SIGTERM:
                case SIGINT:
                        begin_stop(si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
                        break;
                case SIGHUP:
                        log_notice("SIGHUP: configuration reload is not supported; restart the daemon to apply changes");
                        break;
                default:
                        break;
                }
        }
}

#define JOURNAL_COMPACT_LINES 10000

/* Slow-loris: a request line must be finished within request_timeout, or
 * the client is told and disconnected; idle clients between requests may
 * stay as long as they like. */
static void expire_partial_requests(uint64_t now) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &S.conns) {
                struct conn *c = list_entry(pos, struct conn, link);
                if (c->closed || !c->partial_since_ms || now - c->partial_since_ms < S.cfg->request_timeout_ms)
                        continue;
                log_warning("client uid %u: request not finished within %" PRIu64 " ms, disconnecting", (unsigned) c->cred.uid,
                            S.cfg->request_timeout_ms);
                conn_send(c, proto_error(NULL, E_BAD_REQUEST, "request not finished within %" PRIu64 " ms (request_timeout)",
                                         S.cfg->request_timeout_ms));
                if (!c->closed)
                        conn_close(c);
        }
}

/* The journal only needs the jobs still in flight: rewrite it with their
 * accept (and start) records so it stays small under constant load. */
static void compact_journal(void) {
        size_t n = 0, cap = 0;
        json_t **recs = NULL;
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &S.jobs) {
                struct rjob *rj = rjob_of(list_entry(pos, struct job, all_link));
                if (n + 2 > cap) {
                        cap = cap ? cap * 2 : 64;
                        json_t **nr = realloc(recs, cap * sizeof(*nr));
                        if (!nr)
                                goto out;
                        recs = nr;
                }
                recs[n] = accept_record(&rj->j);
                if (!recs[n])
                        goto out;
                n++;
                if (rj->j.pid > 0) {
                        recs[n] = json_pack("{s:s, s:s, s:i, s:I}", "ev", "start", "job", rj->j.id, "pid", (int) rj->j.pid,
                                            "starttime", (json_int_t) rj->starttime);
                        if (!recs[n])
                                goto out;
                        n++;
                }
        }
        int r = journal_rewrite(&S.journal, recs, n);
        if (r < 0)
                log_error("journal compaction failed: %s", strerror(-r));
        else
                log_debug("journal compacted to %zu records", n);
out:
        for (size_t i = 0; i < n; i++)
                json_decref(recs[i]);
        free(recs);
}

static void on_sweep(struct source *s, uint32_t events) {
        uint64_t n;
        if (read(s->fd, &n, sizeof(n)) < 0)
                return;
        uint64_t now = now_mono_ms();
        if (now >= S.next_retention_ms) {
                unsigned removed = result_sweep(&S.done, S.results_fd, S.cfg->retention_ms, now_real_ms());
                if (removed)
                        log_info("retention: removed %u old results", removed);
                uint64_t every = S.cfg->retention_ms / 10;
                S.next_retention_ms = now + (every < 1000 ? 1000 : every > 3600000 ? 3600000 : every);
        }
        /* Not while a sync of the journal's descriptor is pending. */
        if (S.journal.lines > JOURNAL_COMPACT_LINES && !S.syncing && !S.next.journal)
                compact_journal();
        expire_partial_requests(now);
}

/* After a crash: every job the journal accepted that has no record gets one,
 * and nothing it started is left running. */
static int recover(void) {
        struct journal_entry *e = NULL;
        size_t n = 0;
        int r = journal_replay(S.state_fd, &e, &n);
        if (r < 0)
                return r;
        if (S.cg.enabled) {
                int k = cgroup_reap_orphans(&S.cg);
                if (k > 0)
                        log_notice("recovery: killed the processes of %d leftover job cgroups", k);
        }
        unsigned recovered = 0;
        for (size_t i = 0; i < n; i++) {
                struct journal_entry *x = &e[i];
                if (x->done || result_exists(S.results_fd, x->id))
                        continue;
                /* Without a cgroup, the recorded pid — if it is still the
                 * same process — and its process group. */
                unsigned long long st;
                if (x->pid > 0 && proc_starttime(x->pid, &st) == 0 && st == x->starttime_ticks) {
                        kill(-x->pid, SIGKILL);
                        kill(x->pid, SIGKILL);
                }
                char path[4300];
                json_t *rec = json_pack("{s:i, s:s, s:s, s:I, s:O, s:O, s:s, s:n, s:n, s:b, s:b, s:{s:s, s:s}, s:O, s:n, s:s}", "v",
                                        PROTO_VERSION, "job", x->id, "tenant", x->tenant, "uid", (json_int_t) x->caller_uid,
                                        "command", json_object_get(x->accept, "command") ?: json_null(), "profile",
                                        json_object_get(x->accept, "profile") ?: json_null(), "state", "error", "exit_code",
                                        "signal", "timed_out", 0, "cancelled", 0, "error", "code", E_RESTARTED, "message",
                                        "supervisor restarted", "created", json_object_get(x->accept, "created") ?: json_null(),
                                        "started", "ended", "");
                if (!rec)
                        continue;
                char ts[64];
                json_object_set_new(rec, "ended", json_string(format_rfc3339(now_real_ms(), ts, sizeof(ts))));
                json_object_set(rec, "idempotency_key", json_object_get(x->accept, "idempotency_key") ?: json_null());
                _cleanup_close_ int rdir = openat(S.results_fd, x->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                for (int s = 0; s < 2; s++) {
                        struct stat sb;
                        uint64_t size = rdir >= 0 && fstatat(rdir, stream_name(s), &sb, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t) sb.st_size : 0;
                        snprintf(path, sizeof(path), "%s/results/%s/%s", S.cfg->state_dir, x->id, stream_name(s));
                        json_object_set_new(rec, stream_name(s), json_pack("{s:I, s:b, s:s}", "size", (json_int_t) size,
                                                                           "truncated", 0, "path", path));
                }
                json_object_set_new(rec, "artifacts", json_array());
                r = result_store(S.results_fd, x->id, rec, true);
                if (r < 0)
                        log_error("recovery: job %s: cannot write its record: %s", x->id, strerror(-r));
                else
                        recovered++;
                audit_write(json_pack("{s:s, s:s, s:s, s:s, s:s}", "event", "job_end", "job", x->id, "tenant", x->tenant, "state",
                                      "error", "message", "supervisor restarted"));
                json_decref(rec);
        }
        if (recovered)
                log_notice("recovery: %u jobs interrupted by a restart now have records (state error, \"supervisor restarted\")",
                           recovered);
        journal_entries_free(e, n);
        /* Every workspace left is from before the restart. */
        _cleanup_closedir_ DIR *wd = NULL;
        if (opendir_dup(S.work_fd, &wd) == 0) {
                struct dirent *de;
                while ((de = readdir(wd)))
                        if (proto_valid_job_id(de->d_name))
                                rm_rf_at(S.work_fd, de->d_name);
        }
        return journal_reset(&S.journal);
}

/* Hold an exclusive lock on dirfd/name for the daemon's life (the lock dies
 * with the process); key and path name the directory in errors. */
static int lock_dir(int dirfd, const char *name, const char *key, const char *path, struct sbx_error *err) {
        int lock = openat(dirfd, name, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lock < 0)
                return sbx_error_set(err, errno, "%s %s: lock", key, path);
        if (flock(lock, LOCK_EX | LOCK_NB) < 0) {
                int e = errno;
                close(lock);
                if (e == EWOULDBLOCK)
                        return sbx_error_msg(err, EBUSY, "another sbx-supervisord is using %s %s", key, path);
                return sbx_error_set(err, e, "%s %s: lock", key, path);
        }
        return 0;
}

/* The workspaces: STATE/work, or workspace_dir (its own file system, say a
 * tmpfs: scratch that never outlives its job need not share the results'
 * disk). The daemon owns it alone: no one else may write it, and a lock
 * keeps a second daemon from sweeping the first one's workspaces. */
static int open_work_dir(struct sbx_error *err) {
        const char *key = S.cfg->work_dir ? "workspace_dir" : "state_dir";
        if (S.cfg->work_dir) {
                S.work_path = strdup(S.cfg->work_dir);
                if (mkdir(S.work_path, 0711) < 0 && errno != EEXIST)
                        return sbx_error_set(err, errno, "workspace_dir %s", S.work_path);
                S.work_fd = open(S.work_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        } else {
                if (asprintf(&S.work_path, "%s/work", S.cfg->state_dir) < 0)
                        S.work_path = NULL;
                if (mkdirat(S.state_fd, "work", 0711) < 0 && errno != EEXIST)
                        return sbx_error_set(err, errno, "state_dir %s", S.cfg->state_dir);
                S.work_fd = openat(S.state_fd, "work", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (!S.work_path)
                return sbx_error_msg(err, ENOMEM, "out of memory");
        if (S.work_fd < 0)
                return sbx_error_set(err, errno, "%s %s", key, S.work_path);
        struct stat st;
        if (fstat(S.work_fd, &st) < 0)
                return sbx_error_set(err, errno, "%s %s", key, S.work_path);
        if (st.st_uid != geteuid())
                return sbx_error_msg(err, EPERM, "%s %s is owned by uid %u, not by the daemon", key, S.work_path,
                                     (unsigned) st.st_uid);
        fchmod(S.work_fd, 0711);
        return lock_dir(S.work_fd, ".lock", key, S.work_path, err);
}

static int open_state_dirs(struct sbx_error *err) {
        const char *sd = S.cfg->state_dir;
        if (mkdir(sd, 0711) < 0 && errno != EEXIST)
                return sbx_error_set(err, errno, "state_dir %s", sd);
        S.state_fd = open(sd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (S.state_fd < 0)
                return sbx_error_set(err, errno, "state_dir %s", sd);
        /* One daemon per state directory: a second one would "recover" the
         * first one's running jobs. */
        int r = lock_dir(S.state_fd, "lock", "state_dir", sd, err);
        if (r < 0)
                return r;
        /* The job uid must be able to reach its workspace (the launcher
         * binds it), but not list anyone's: 0711 on the path. */
        fchmod(S.state_fd, 0711);
        if (mkdirat(S.state_fd, "results", 0700) < 0 && errno != EEXIST)
                return sbx_error_set(err, errno, "state_dir %s", sd);
        S.results_fd = openat(S.state_fd, "results", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (S.results_fd < 0)
                return sbx_error_set(err, errno, "state_dir %s", sd);
        return open_work_dir(err);
}

static int open_socket(struct sbx_error *err) {
        int fd = -1;
#ifdef HAVE_SYSTEMD
        int n = sd_listen_fds(1);
        if (n > 1)
                return sbx_error_msg(err, EINVAL, "systemd passed %d sockets; expected one", n);
        if (n == 1) {
                fd = SD_LISTEN_FDS_START;
                if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
                        return sbx_error_msg(err, EINVAL, "the socket systemd passed is not a listening Unix stream socket");
                fcntl(fd, F_SETFD, FD_CLOEXEC);
                fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
                log_info("listening on the socket passed by systemd");
                S.socket_activated = true;
                return fd;
        }
#endif
        const char *path = S.cfg->socket_path;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return sbx_error_msg(err, ENAMETOOLONG, "socket path %s is too long", path);
        strcpy(sa.sun_path, path);
        _cleanup_free_ char *dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash && slash != dir) {
                *slash = '\0';
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        return sbx_error_set(err, errno, "socket directory %s", dir);
                /* Whoever may write the directory may replace the socket
                 * with their own and collect the clients' requests. */
                struct stat ds;
                if (stat(dir, &ds) == 0 && ((ds.st_mode & 0022) && !(ds.st_mode & S_ISVTX)))
                        log_warning("socket directory %s is writable by group or others (mode %04o): anyone who can "
                                    "write it can replace the socket; use a 0755 directory owned by root",
                                    dir, (unsigned) (ds.st_mode & 07777));
                else if (stat(dir, &ds) == 0 && ds.st_uid != geteuid())
                        log_warning("socket directory %s is owned by uid %u, not by the daemon", dir, (unsigned) ds.st_uid);
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return sbx_error_set(err, errno, "socket");
        /* A live daemon on this path is an error; a stale socket file is
         * replaced. */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0) {
                if (connect(probe, (struct sockaddr *) &sa, sizeof(sa)) == 0) {
                        close(probe);
                        close(fd);
                        return sbx_error_msg(err, EADDRINUSE, "another daemon is listening on %s", path);
                }
                close(probe);
        }
        struct stat st;
        if (lstat(path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode)) {
                        close(fd);
                        return sbx_error_msg(err, EEXIST, "%s exists and is not a socket", path);
                }
                unlink(path);
        }
        mode_t old = umask(0777 & ~S.cfg->socket_mode);
        int r = bind(fd, (struct sockaddr *) &sa, sizeof(sa));
        umask(old);
        if (r < 0) {
                r = errno;
                close(fd);
                return sbx_error_set(err, r, "bind %s", path);
        }
        chmod(path, S.cfg->socket_mode);
        if (S.cfg->socket_gid != (gid_t) -1 && chown(path, (uid_t) -1, S.cfg->socket_gid) < 0) {
                r = errno;
                close(fd);
                return sbx_error_set(err, r, "chown %s", path);
        }
        if (listen(fd, 1024) < 0) {
                r = errno;
                close(fd);
                return sbx_error_set(err, r, "listen %s", path);
        }
        return fd;
}

int server_init(struct config *cfg, struct sbx_error *err) {
        int r;
        memset(&S, 0, sizeof(S));
        S.cfg = cfg;
        S.state_fd = S.work_fd = S.results_fd = -1;
        list_init(&S.jobs);
        list_init(&S.conns);
        list_init(&S.next.finishing);
        list_init(&S.inflight.finishing);
        sched_init(&S.sched, cfg->max_jobs, cfg->max_queue);

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
        r = open_state_dirs(err);
        if (r < 0)
                return r;
        /* The socket before recovery: finding another live daemon on it
         * must stop us before we touch job cgroups. Clients that connect
         * meanwhile wait in the backlog. */
        int lfd = open_socket(err);
        if (lfd < 0)
                return lfd;
        S.listen_src.fd = lfd;
        r = cgroup_setup(cfg->cgroup_root, &S.cg, err);
        if (r < 0)
                return r;
        if (S.cg.enabled)
                log_info("job cgroups under %s (%s); controllers: memory %s, pids %s, cpu %s", S.cg.root, S.cg.how,
                         S.cg.memory ? "yes" : "no (rlimit)", S.cg.pids ? "yes" : "no (rlimit)", S.cg.cpu ? "yes" : "no");
        else
                log_info("no job cgroups: %s; limits are rlimits and kills go to the launcher's process group", S.cg.how);
        if (!(S.cg.enabled && S.cg.cpu))
                for (size_t i = 0; i < cfg->n_tenants; i++)
                        if (cfg->tenants[i].max_cpu_milli != CONFIG_UNSET)
                                log_warning("%s: [tenant.%s] max_cpus is not enforced: CPU bandwidth needs the cgroup cpu "
                                            "controller, which this daemon does not have; results record it as \"by\": \"none\"",
                                            cfg->tenants[i].origin, cfg->tenants[i].name);
        r = audit_open(cfg->audit_log, cfg->audit_fsync);
        if (r < 0)
                return sbx_error_set(err, r, "audit_log %s", cfg->audit_log);
        r = journal_open(&S.journal, S.state_fd);
        if (r < 0)
                return sbx_error_set(err, r, "journal in %s", cfg->state_dir);
        r = recover();
        if (r < 0)
                return sbx_error_set(err, r, "recovery in %s", cfg->state_dir);
        r = result_index_load(&S.done, S.results_fd);
        if (r < 0)
                return sbx_error_set(err, r, "results in %s", cfg->state_dir);
        unsigned removed = result_sweep(&S.done, S.results_fd, cfg->retention_ms, now_real_ms());
        if (removed)
                log_info("retention: removed %u old results", removed);

        r = loop_init();
        if (r < 0)
                return sbx_error_set(err, r, "epoll");
        loop_set_idle(on_idle);
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        sigdelset(&mask, SIGCHLD);
        /* The syncer thread inherits the blocked signals, so they all
         * reach the signalfd. */
        r = syncer_start();
        if (r < 0)
                return sbx_error_set(err, r, "syncer thread");
        loop_add(&S.sync_src, r, EPOLLIN, on_synced);
        int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0)
                return sbx_error_set(err, errno, "signalfd");
        loop_add(&S.signal_src, sfd, EPOLLIN, on_signal);

        int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (tfd >= 0) {
                /* Housekeeping once a second: request timeouts, journal
                 * compaction, and (at its own pace) retention. */
                struct itimerspec its = { .it_value = { 1, 0 }, .it_interval = { 1, 0 } };
                timerfd_settime(tfd, 0, &its, NULL);
                loop_add(&S.sweep_src, tfd, EPOLLIN, on_sweep);
        }

        loop_add(&S.listen_src, lfd, EPOLLIN, on_listen);

        if (cfg->allow_unauthenticated)
                log_warning("allow_unauthenticated is ON: callers in no tenant run jobs as tenant 'anonymous' (job uid %u). "
                            "Never use this in production.",
                            (unsigned) cfg->anonymous.job_uid);
        log_notice("ready on %s: %zu tenants, max_jobs %" PRIu64 ", max_queue %" PRIu64 ", launcher %s", cfg->socket_path,
                   cfg->n_tenants, cfg->max_jobs, cfg->max_queue, cfg->launcher);
        return 0;
}

int server_run(void) {
#ifdef HAVE_SYSTEMD
        sd_notify(0, "READY=1");
#endif
        notify_status();
        return loop_run();
}

void server_done(void) {
        if (S.listen_src.fd > 0) {
                close(S.listen_src.fd);
                if (!S.socket_activated)
                        unlink(S.cfg->socket_path);
        }
        syncer_stop();
        journal_close(&S.journal);
        free(S.next.held);
        free(S.inflight.held);
        S.next.held = S.inflight.held = NULL;
        free(S.sreq.files);
        S.sreq.files = NULL;
        S.cap_sfiles = 0;
        free(S.work_path);
        S.work_path = NULL;
        audit_close();
        result_index_free(&S.done);
        cgroup_teardown(&S.cg);
        loop_done();
}
