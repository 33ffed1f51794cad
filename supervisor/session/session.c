/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "initc.h"
#include "job-secrets.h"
#include "jobs.h"
#include "journal.h"
#include "launch-abi.h"
#include "log.h"
#include "loop.h"
#include "recover.h"
#include "runner.h"
#include "sched.h"
#include "session-internal.h"
#include "session.h"
#include "tenant.h"
#include "trace.h"

/* How long a request to the agent may take. The agent answers in
 * microseconds; one that does not (stopped, flooded by its own sandbox)
 * ends its session, and holds the daemon this long at most, once. */
#define AGENT_TIMEOUT_MS 250
/* Ended sessions remembered, to say when and why. */
#define GONE_MAX 1024
/* The most stdin one exec takes (it goes into the pipe at once). */
#define EXEC_STDIN_MAX (1u << 20)
/* The pipe of a stdin kept open: what session.stdin may have in flight. */
#define EXEC_STDIN_PIPE (1 << 20)

static struct initc_msg msg_loop;
struct initc_msg msg_call;

static int arm(int fd, uint64_t ms) {
        struct itimerspec its = { 0 };
        its.it_value.tv_sec = (time_t) (ms / 1000);
        its.it_value.tv_nsec = (long) (ms % 1000) * 1000000;
        if (ms == 0)
                its.it_value.tv_nsec = 1;
        return timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
}

void session_random_hex(char *out, size_t bytes) {
        uint8_t b[64];
        if (bytes > sizeof(b))
                abort();
        /* getrandom without flags blocks only before the pool is ready,
         * long past at any daemon's start. */
        if (getrandom(b, bytes, 0) != (ssize_t) bytes)
                abort();
        for (size_t i = 0; i < bytes; i++)
                snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* The socket's path through the directory's descriptor: short whatever the
 * state directory's path, and not looked up through it again. */
void sock_path(const struct sessions *ss, const char *id, struct sockaddr_un *sa) {
        memset(sa, 0, sizeof(*sa));
        sa->sun_family = AF_UNIX;
        snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", ss->dir_fd, id);
}

int sessions_init(struct sessions *ss, struct daemon *d, struct jobs *jobs, struct journal *journal, struct scheduler *sched,
                  const struct config *cfg, int state_fd, struct sbx_error *err) {
        memset(ss, 0, sizeof(*ss));
        ss->d = d;
        ss->jobs = jobs;
        ss->journal = journal;
        ss->sched = sched;
        ss->cfg = cfg;
        ss->dir_fd = -1;
        ss->state_fd = state_fd;
        list_init(&ss->live);
        list_init(&ss->gone);
        /* Sockets of sessions from before a restart: those whose sandboxes
         * go on are connected to again (sessions_adopt), the rest removed. */
        if (mkdirat(state_fd, "sessions", 0700) < 0 && errno != EEXIST)
                return sbx_error_set(err, errno, "STATE/sessions");
        ss->dir_fd = openat(state_fd, "sessions", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ss->dir_fd < 0)
                return sbx_error_set(err, errno, "STATE/sessions");
        return 0;
}

static void gone_free(struct session *s) {
        list_del(&s->link);
        free(s);
}

void sessions_done(struct sessions *ss) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &ss->gone) gone_free(list_entry(pos, struct session, link));
        if (ss->dir_fd >= 0)
                close(ss->dir_fd);
        ss->dir_fd = -1;
}

static void on_idle(struct source *src, uint32_t events);

struct session *session_alloc(struct sessions *ss, struct rjob *box, const char *id, uint64_t idle_ms, struct sbx_error *err) {
        struct session *s = calloc(1, sizeof(*s));
        if (!s) {
                sbx_error_set(err, ENOMEM, "session");
                return NULL;
        }
        s->ss = ss;
        if (id)
                snprintf(s->id, sizeof(s->id), "%s", id);
        else
                session_random_hex(s->id, PROTO_SESSION_ID_LEN / 2);
        s->tenant = box->j.tenant;
        s->warm = box->warm;
        snprintf(s->tenant_name, sizeof(s->tenant_name), "%s", box->j.tenant->name);
        s->box = box;
        s->ic.fd = -1;
        s->idle_ms = idle_ms;
        s->created_ms = now_real_ms();
        list_init(&s->execs);
        s->idle_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (s->idle_fd < 0 || loop_add(&s->idle_src, s->idle_fd, EPOLLIN, on_idle) < 0) {
                sbx_error_set(err, errno, "the session's idle timer");
                if (s->idle_fd >= 0)
                        close(s->idle_fd);
                free(s);
                return NULL;
        }
        box->session_box = true;
        box->session_idle_ms = idle_ms;
        box->session = s;
        memcpy(box->session_id, s->id, sizeof(s->id));
        list_add_tail(&ss->live, &s->link);
        return s;
}

int session_new(struct sessions *ss, struct rjob *box, uint64_t idle_ms, struct sbx_error *err) {
        struct session *s = session_alloc(ss, box, NULL, idle_ms, err);
        if (!s)
                return -err->code;
        struct sockaddr_un sa;
        sock_path(ss, s->id, &sa);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                session_abandon(box);
                return sbx_error_set(err, e, "the session's socket");
        }
        box->session_fd = fd;
        return 0;
}

/* Everything of a live session but its entry: the agent's connection, the
 * timer, the socket's file. */
static void release(struct session *s) {
        if (s->ic.fd >= 0) {
                loop_del(&s->ic_src);
                close(s->ic.fd);
                s->ic.fd = -1;
        }
        if (s->idle_fd >= 0) {
                loop_del(&s->idle_src);
                close(s->idle_fd);
                s->idle_fd = -1;
        }
        unlinkat(s->ss->dir_fd, s->id, 0);
}

void session_abandon(struct rjob *box) {
        struct session *s = box->session;
        if (!s)
                return;
        release(s);
        list_del(&s->link);
        box->session = NULL;
        free(s);
}

/* ---- execs ------------------------------------------------------------- */

static struct exec_ref *exec_by_handle(struct session *s, uint32_t handle) {
        for (struct list *p = s->execs.next; p != &s->execs; p = p->next) {
                struct exec_ref *x = list_entry(p, struct exec_ref, link);
                if (x->handle == handle && !x->ended)
                        return x;
        }
        return NULL;
}

/* Its end, as the agent told it (ex) or as the session's end made it (ex
 * NULL: killed with the sandbox). The record gets the command's status,
 * CPU time and peak RSS as sbx-init measured them. */
void exec_stdin_close(struct exec_ref *x) {
        if (x->stdin_fd >= 0)
                close(x->stdin_fd);
        x->stdin_fd = -1;
}

static void exec_tty_close(struct exec_ref *x) {
        if (x->tty_fd >= 0)
                close(x->tty_fd);
        x->tty_fd = -1;
}

static void exec_ended(struct exec_ref *x, const struct sbx_init_exit *ex) {
        if (x->ended)
                return;
        x->ended = true;
        exec_stdin_close(x);
        exec_tty_close(x);
        struct rjob *rj = x->rj;
        int st = ex ? ex->status : W_EXITCODE(0, SIGKILL);
        json_t *end = json_pack("{s:o, s:o}", SBX_STATUS_EXIT_CODE, WIFEXITED(st) ? json_integer(WEXITSTATUS(st)) : json_integer(-1),
                                SBX_STATUS_SIGNAL, WIFSIGNALED(st) ? json_integer(WTERMSIG(st)) : json_null());
        if (end && ex) {
                json_object_set_new(end, SBX_STATUS_CPU_MS, json_integer((json_int_t) ((ex->utime_us + ex->stime_us) / 1000)));
                json_object_set_new(end, SBX_STATUS_PEAK_RSS_KB, json_integer((json_int_t) ex->maxrss_kb));
        }
        json_decref(rj->cap.status_end);
        rj->cap.status_end = end;
        capture_exec_exited(rj, st);
}

static void handle_exit(struct session *s, const struct sbx_init_exit *ex) {
        struct exec_ref *x = exec_by_handle(s, ex->handle);
        if (x)
                exec_ended(x, ex);
}

/* ---- the agent ------------------------------------------------------------ */

static void session_fail(struct session *s, const char *why);

static void end_execs(struct session *s) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &s->execs) {
                struct exec_ref *x = list_entry(pos, struct exec_ref, link);
                if (x->rj->j.state == JOB_RUNNING || x->rj->j.state == JOB_STOPPING)
                        exec_ended(x, NULL);
        }
}

/* Ask the box to end: its launcher's SIGTERM reaches the agent and every
 * command, the grace period, then the cgroup is killed. */
static void end_box(struct session *s, const char *reason) {
        if (s->state == S_ENDING)
                return;
        s->state = S_ENDING;
        /* A box the runner is stopping already (its TTL) keeps that
         * reason: its agent's end is a consequence. */
        if (s->box && !s->box->session_end && s->box->j.state != JOB_STOPPING)
                s->box->session_end = reason;
        if (s->ic.fd >= 0) {
                loop_del(&s->ic_src);
                close(s->ic.fd);
                s->ic.fd = -1;
        }
        end_execs(s);
        if (!s->box)
                return;
        struct rjob *box = s->box;
        if (box->j.state == JOB_QUEUED) {
                sched_remove_queued(s->ss->sched, &box->j);
                job_transition(&box->j, JEV_CANCEL, NULL);
                runner_end(box);
        } else
                runner_stop(box, JEV_CANCEL);
}

static void session_fail(struct session *s, const char *why) {
        if (s->state == S_ENDING)
                return;
        log_warning("session %s (tenant %s): %s: it ends", s->id, s->tenant_name, why);
        end_box(s, "crashed");
}

static void on_call_event(const struct initc_msg *ev, void *userdata) {
        struct session *s = userdata;
        struct sbx_init_exit ex;
        if (ev->hdr.type != SBX_INIT_EV_EXIT)
                return;
        /* Ends of no exec of ours (one a restart interrupted) are dropped. */
        memcpy(&ex, ev->payload, sizeof(ex));
        if (!exec_by_handle(s, ex.handle))
                return;
        if (s->n_held < ARRAY_SIZE(s->held))
                s->held[s->n_held++] = ex;
        else
                session_fail(s, "its agent reported more ends at once than a call can hold");
}

int agent_call(struct session *s, uint32_t type, const void *payload, size_t len) {
        if (s->state != S_READY || s->ic.fd < 0)
                return -ESHUTDOWN;
        initc_msg_clear(&msg_call);
        s->in_call = true;
        int r = initc_call(&s->ic, type, payload, len, AGENT_TIMEOUT_MS, &msg_call, on_call_event, s);
        s->in_call = false;
        unsigned n = s->n_held;
        s->n_held = 0;
        for (unsigned i = 0; i < n; i++)
                handle_exit(s, &s->held[i]);
        if (r < 0) {
                char why[96];
                snprintf(why, sizeof(why), "its agent did not answer (%s)", strerror(-r));
                session_fail(s, why);
                return -ESHUTDOWN;
        }
        return 0;
}

static void on_agent(struct source *src, uint32_t events) {
        struct session *s = container_of(src, struct session, ic_src);
        for (int i = 0; i < 64 && s->ic.fd >= 0; i++) {
                initc_msg_clear(&msg_loop);
                int r = initc_recv(&s->ic, &msg_loop, 0);
                if (r == -ETIMEDOUT)
                        return;
                if (r < 0) {
                        session_fail(s, r == -EPIPE ? "its agent is gone" : "its agent sent what it may not");
                        return;
                }
                const struct sbx_init_hdr *h = &msg_loop.hdr;
                if (h->type == SBX_INIT_EV_READY) {
                        if (s->state == S_STARTING) {
                                s->state = S_READY;
                                s->was_ready = true;
                                arm(s->idle_fd, s->idle_ms);
                                log_info("session %s (tenant %s): ready", s->id, s->tenant_name);
                                session_stop_orphans(s);
                        }
                } else if (h->type == SBX_INIT_EV_EXIT) {
                        struct sbx_init_exit ex;
                        memcpy(&ex, msg_loop.payload, sizeof(ex));
                        handle_exit(s, &ex);
                } else {
                        /* A reply nobody waits for: late, or made up. */
                        session_fail(s, "its agent sent a reply to no request");
                        return;
                }
        }
        initc_msg_clear(&msg_loop);
}

void session_connect(struct session *s) {
        struct sockaddr_un sa;
        sock_path(s->ss, s->id, &sa);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int e = errno;
                if (fd >= 0)
                        close(fd);
                char why[96];
                snprintf(why, sizeof(why), "cannot connect to its agent (%s)", strerror(e));
                session_fail(s, why);
                return;
        }
        int r = initc_init(&s->ic, fd);
        if (r == 0)
                r = loop_add(&s->ic_src, fd, EPOLLIN, on_agent);
        if (r < 0) {
                close(fd);
                s->ic.fd = -1;
                session_fail(s, "cannot watch its agent's socket");
        }
}

static void on_idle(struct source *src, uint32_t events) {
        struct session *s = container_of(src, struct session, idle_src);
        uint64_t n;
        if (read(src->fd, &n, sizeof(n)) < 0)
                return;
        log_info("session %s (tenant %s): idle for %" PRIu64 " ms: it ends", s->id, s->tenant_name, s->idle_ms);
        end_box(s, "idle");
}

/* ---- the job listener ------------------------------------------------------ */

void session_forget(struct session *s) {
        struct sessions *ss = s->ss;
        release(s);
        list_del(&s->link);
        s->ended_ms = now_real_ms();
        if (!s->end_reason)
                s->end_reason = "crashed";
        s->box = NULL;
        s->tenant = NULL; /* its tenant_name stays; the tenant may be reloaded away */
        list_add_tail(&ss->gone, &s->link);
        if (++ss->n_gone > GONE_MAX) {
                gone_free(list_entry(ss->gone.next, struct session, link));
                ss->n_gone--;
        }
}

static void on_job_event(struct rjob *rj, json_t *ev, unsigned stream, size_t len) {
        if (!rj->session_box || !rj->session || stream)
                return;
        const char *e = json_string_value(json_object_get(ev, "event"));
        struct session *s = rj->session;
        if (e && streq(e, "started") && s->state == S_STARTING)
                session_connect(s);
}

static void job_gone(struct rjob *rj) {
        if (rj->session_exec && rj->session) {
                struct exec_ref *x = rj->session;
                list_del(&x->link);
                if (x->s)
                        x->s->n_execs--;
                /* a warm sandbox runs one job */
                if (x->s && x->s->warm)
                        end_box(x->s, "used");
                rj->session = NULL;
                rj->session_signal = NULL;
                exec_stdin_close(x);
                exec_tty_close(x);
                free(x);
                return;
        }
        if (!rj->session_box || !rj->session)
                return;
        struct session *s = rj->session;
        rj->session = NULL;
        s->end_reason = rjob_session_end(rj);
        /* a warm sandbox that never became ready, and was not ended on
         * purpose (taken, flushed, yielded): the pool backs off */
        rj->warm_failed = s->warm && !s->was_ready && !s->taken;
        if (s->state != S_ENDING) {
                /* It ended on its own (TTL, a limit, its agent's end). */
                s->state = S_ENDING;
                end_execs(s);
        }
        /* Execs still listed end on their own records; they forget us. */
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &s->execs) {
                struct exec_ref *x = list_entry(pos, struct exec_ref, link);
                x->s = NULL;
                list_del(&x->link);
                list_init(&x->link);
        }
        log_info("session %s (tenant %s): ended (%s)", s->id, s->tenant_name, s->end_reason ? s->end_reason : "crashed");
        session_forget(s);
}

static void on_job_end(struct rjob *rj, json_t *rec) {
        job_gone(rj);
}

static void on_job_fail(struct rjob *rj, const char *code, const char *msg) {
        job_gone(rj);
}

const struct job_listener session_listener = { .event = on_job_event, .end = on_job_end, .fail = on_job_fail };

/* ---- requests -------------------------------------------------------------- */

struct session *session_find(struct sessions *ss, const struct tenant *t, const char *id, const char **ret_code, char *msg,
                             size_t len) {
        for (struct list *p = ss->live.next; p != &ss->live; p = p->next) {
                struct session *s = list_entry(p, struct session, link);
                if (!tenant_same(s->tenant, t) || !streq(s->id, id) || s->warm)
                        continue;
                if (s->state == S_ENDING) {
                        *ret_code = E_SESSION_ENDED;
                        snprintf(msg, len, "session %s is ending (%s)", id,
                                 s->box && s->box->session_end ? s->box->session_end : "crashed");
                        return NULL;
                }
                if (s->state == S_READY)
                        arm(s->idle_fd, s->idle_ms);
                return s;
        }
        for (struct list *p = ss->gone.prev; p != &ss->gone; p = p->prev) {
                struct session *s = list_entry(p, struct session, link);
                if (!streq(s->id, id) || !streq(s->tenant_name, t->name) || s->warm)
                        continue;
                char when[40];
                *ret_code = E_SESSION_ENDED;
                snprintf(msg, len, "session %s ended at %s: %s", id, format_rfc3339(s->ended_ms, when, sizeof(when)),
                         s->end_reason);
                return NULL;
        }
        *ret_code = E_NOT_FOUND;
        snprintf(msg, len, "no session %s", id);
        return NULL;
}

void session_close(struct session *s) {
        log_info("session %s (tenant %s): closed", s->id, s->tenant_name);
        end_box(s, "closed");
}

void session_end(struct session *s, const char *reason) {
        end_box(s, reason);
}

int session_extend(struct session *s, uint64_t ttl_ms, uint64_t *ret_expires_ms) {
        struct rjob *box = s->box;
        if (!box || box->j.state != JOB_RUNNING)
                return -EAGAIN;
        uint64_t now = now_real_ms(), started = box->j.started_ms;
        uint64_t want = now - started + ttl_ms, most = s->tenant->session_ttl_max_ms;
        if (want > most)
                return -E2BIG;
        int r = runner_extend(box, want);
        if (r < 0)
                return r;
        *ret_expires_ms = started + want;
        return 0;
}

static void exec_signal(struct rjob *rj, int signo) {
        struct exec_ref *x = rj->session;
        if (!x || !x->s || x->ended || !x->handle)
                return;
        struct session *s = x->s;
        if (s->in_call || s->state != S_READY)
                return;
        struct sbx_init_signal m = { .handle = x->handle, .signo = signo, .flags = SBX_INIT_SIGNAL_GROUP };
        (void) agent_call(s, SBX_INIT_SIGNAL, &m, sizeof(m));
}

struct exec_ref *exec_attach(struct session *s, struct rjob *rj) {
        struct exec_ref *x = calloc(1, sizeof(*x));
        if (!x)
                return NULL;
        x->stdin_fd = -1;
        x->tty_fd = -1;
        x->rj = rj;
        x->s = s;
        list_init(&x->link);
        rj->session_exec = true;
        memcpy(rj->session_id, s->id, sizeof(s->id));
        rj->session = x;
        rj->session_signal = exec_signal;
        if (s->box) {
                rj->box.cgroup = s->box->had_cgroup;
                rj->box.cg_limits = s->box->cg_limits;
                rj->box.disk_quota = s->box->ws_mounted;
                rj->box.noswap = s->box->ws_noswap;
                rj->box.encrypted = s->box->ws_encrypted;
                rj->cap.start_prot = s->box->cap.start_prot ? json_incref(s->box->cap.start_prot) : NULL;
        }
        return x;
}

void session_idle_stop(struct session *s) {
        struct itimerspec its = { 0 };
        (void) timerfd_settime(s->idle_fd, 0, &its, NULL);
}

/* The exec's stdin, all at once, then closed: the pipe is made big enough. */
static int feed_stdin(int fd, const unsigned char *data, size_t len) {
        if (len == 0)
                return 0;
        if (len > 65536 && fcntl(fd, F_SETPIPE_SZ, (int) len) < 0)
                return -errno;
        if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
                return -errno;
        ssize_t n = write(fd, data, len);
        if (n < 0)
                return -errno;
        return (size_t) n == len ? 0 : -EAGAIN;
}

int exec_spawn(struct session *s, struct exec_ref *x, const struct request *req, struct sbx_error *err) {
        const struct run_request *run = &x->rj->j.req.run;
        /* what it prints is redacted against its sandbox's secrets */
        if (s->box && job_secrets_share(x->rj, s->box, s->ss->state_fd, s->ss->cfg->secret_proxy_ca, err) < 0)
                return -EIO;
        _cleanup_free_ char *payload = malloc(SBX_INIT_MSG_MAX);
        _cleanup_free_ const char **env = calloc(run->n_env + 1, sizeof(char *));
        _cleanup_free_ char **owned = calloc(run->n_env + 1, sizeof(char *));
        if (!payload || !env || !owned)
                return sbx_error_set(err, ENOMEM, "exec");
        for (size_t i = 0; i < run->n_env; i++) {
                if (asprintf(&owned[i], "%s=%s", run->env[i].name, run->env[i].value) < 0) {
                        for (size_t k = 0; k < i; k++)
                                free(owned[k]);
                        return sbx_error_set(err, ENOMEM, "exec");
                }
                env[i] = owned[i];
        }
        size_t len = 0;
        /* 24x80 goes without a size: an agent from before sizes takes it. */
        struct sbx_init_winsize ws = { .rows = req->rows ? req->rows : 24, .cols = req->cols ? req->cols : 80 };
        bool sized = req->tty && (ws.rows != 24 || ws.cols != 80);
        int r = initc_encode_spawn(payload, SBX_INIT_MSG_MAX, req->tty ? SBX_INIT_SPAWN_TTY : 0, sized ? &ws : NULL,
                                   req->cwd ? req->cwd : ".", (const char *const *) run->argv, env, &len);
        for (size_t i = 0; i < run->n_env; i++)
                free(owned[i]);
        if (r < 0)
                return sbx_error_msg(err, E2BIG, "the command and its environment are larger than the agent takes in one message "
                                                 "(%d bytes)",
                                     SBX_INIT_MSG_MAX);
        bool was_ready = s->state == S_READY;
        r = agent_call(s, SBX_INIT_SPAWN, payload, len);
        /* asked, the agent may have started the command, and the command
         * killed or stopped it before its answer */
        if (r < 0)
                return sbx_error_msg(err, -r, "%s", was_ready ? "the session's agent ended or stopped answering before it said "
                                                                "whether the command started (a process of the sandbox can kill "
                                                                "or stop it); the session ends"
                                                              : "the session's agent failed; the session ends");
        if (msg_call.hdr.error)
                return sbx_error_msg(err, msg_call.hdr.error, "the agent could not start it: %s", strerror(msg_call.hdr.error));
        struct sbx_init_spawned sp;
        memcpy(&sp, msg_call.payload, sizeof(sp));
        x->handle = sp.handle;
        x->rj->session_handle = sp.handle;
        r = feed_stdin(msg_call.fds[0], run->stdin_data, run->stdin_len);
        /* The terminal's master, kept for its size. */
        if (r == 0 && req->tty && (x->tty_fd = fcntl(msg_call.fds[0], F_DUPFD_CLOEXEC, 3)) < 0)
                r = -errno;
        /* Kept for session.stdin, or closed: the command sees its end. */
        if (r == 0 && req->stdin_open) {
                (void) fcntl(msg_call.fds[0], F_SETPIPE_SZ, EXEC_STDIN_PIPE);
                r = fcntl(msg_call.fds[0], F_SETFL, O_NONBLOCK) < 0 ? -errno : 0;
                x->stdin_fd = msg_call.fds[0];
        } else
                close(msg_call.fds[0]);
        msg_call.fds[0] = -1;
        if (r < 0) {
                /* It runs already: it must not run unwatched. */
                struct sbx_init_signal k = { .handle = x->handle, .signo = SIGKILL, .flags = SBX_INIT_SIGNAL_GROUP };
                int f1 = msg_call.fds[1], f2 = msg_call.fds[2];
                msg_call.n_fds = 0;
                (void) agent_call(s, SBX_INIT_SIGNAL, &k, sizeof(k));
                close(f1);
                close(f2);
                return sbx_error_set(err, r, "its stdin");
        }
        r = runner_exec_start(x->rj, msg_call.fds[1], msg_call.fds[2], err);
        /* The capture owns them now, even when it failed (it closed them). */
        msg_call.n_fds = 0;
        return r;
}

struct rjob *session_exec(struct session *s, struct request *req, uid_t caller, const char **ret_code, char *msg, size_t len) {
        struct sessions *ss = s->ss;
        const struct tenant *t = s->tenant;
        struct sbx_error err;
        char tp[TRACEPARENT_LEN + 1];
        sbx_error_clear(&err);
        if (s->state != S_READY) {
                *ret_code = E_NOT_DONE;
                snprintf(msg, len, "session %s is starting; ask again", s->id);
                return NULL;
        }
        if (req->run.stdin_len > EXEC_STDIN_MAX) {
                *ret_code = E_LIMIT;
                snprintf(msg, len, "field 'stdin': an exec takes at most %u bytes", EXEC_STDIN_MAX);
                return NULL;
        }
        uint64_t timeout = req->run.timeout_ms == PROTO_UNSET ? t->default_timeout_ms : req->run.timeout_ms;
        if (timeout > t->max_timeout_ms) {
                *ret_code = E_LIMIT;
                snprintf(msg, len, "field 'timeout_ms': %" PRIu64 " is above the tenant's max_timeout (%" PRIu64 " ms)", timeout,
                         t->max_timeout_ms);
                return NULL;
        }
        struct rjob *rj = rjob_new(ss->d);
        struct exec_ref *x = rj ? exec_attach(s, rj) : NULL;
        if (!x) {
                if (rj)
                        rjob_free(rj);
                *ret_code = E_INTERNAL;
                snprintf(msg, len, "out of memory");
                return NULL;
        }
        struct job *j = &rj->j;
        jobs_new_id(j->id);
        j->tenant = t;
        j->caller_uid = caller;
        j->pol = s->box->j.pol;
        j->pol.timeout_ms = timeout;
        j->job_uid = s->box->j.job_uid;
        j->job_gid = s->box->j.job_gid;
        j->created_ms = now_real_ms();
        j->req = *req;
        request_init(req);
        req->tag = j->req.tag ? json_incref(j->req.tag) : NULL;
        trace_child(s->box->j.req.run.traceparent, tp);
        free(j->req.run.traceparent);
        j->req.run.traceparent = strdup(tp);
        /* Durable before acknowledged, as a run is (the caller holds the
         * reply for the journal's sync). */
        json_t *jr = accept_record(rj);
        int r = jr ? journal_append(ss->journal, jr, false) : -ENOMEM;
        json_decref(jr);
        if (r < 0) {
                rj->session = NULL;
                rjob_free(rj);
                free(x);
                *ret_code = E_STORAGE;
                snprintf(msg, len, "cannot journal the exec: %s", strerror(-r));
                return NULL;
        }
        jobs_add(ss->jobs, rj);
        list_add_tail(&s->execs, &x->link);
        s->n_execs++;
        if (exec_spawn(s, x, &j->req, &err) < 0) {
                x->ended = true;
                runner_exec_failed(rj, err.msg);
        }
        return rj;
}
