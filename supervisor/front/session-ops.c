/* SPDX-License-Identifier: Apache-2.0 */
/* The session requests (sbx-protocol(7), SESSIONS): each computes its
 * answer or its refusal, and session_op replies once. session.create goes
 * through the run path (accept.c) with the session's own bounds checked
 * here first. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "cluster-ops.h"
#include "conn.h"
#include "daemon.h"
#include "dispatch.h"
#include "service.h"
#include "session.h"
#include "subscribe.h"

/* Session defaults where the request names none: within the tenant's
 * maxima. */
#define TTL_DEFAULT_S 600
#define IDLE_DEFAULT_S 300

struct answer {
        json_t *ok;              /* the reply's members, or NULL */
        const char *code;        /* refused: the error code */
        char msg[SBX_ERROR_MAX];
        bool held;               /* the reply waits for the journal's sync */
        bool sent;               /* replied already (another node's session) */
};

static void refuse(struct answer *a, const char *code, const char *fmt, ...) _printf_(3, 4);

static void refuse(struct answer *a, const char *code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(a->msg, sizeof(a->msg), fmt, ap);
        va_end(ap);
        a->code = code;
}

static const char *errno_code(int e) {
        switch (e) {
        case ENOENT:
        case ENOTDIR:
                return E_NOT_FOUND;
        case EEXIST:
        case EISDIR:
        case ENOTEMPTY:
                return E_CONFLICT;
        case EXDEV:
        case ELOOP:
        case EINVAL:
        case ENAMETOOLONG:
        case EBADMSG:
                return E_BAD_REQUEST;
        case ENOSPC:
        case EDQUOT:
        case E2BIG:
                return E_LIMIT;
        case ESHUTDOWN:
                return E_SESSION_ENDED;
        case EACCES:
        case EPERM:
                return E_FORBIDDEN;
        default:
                return E_INTERNAL;
        }
}

/* Bounds the run path does not know: how many, how long, how idle. */
static bool create_admit(struct conn *c, struct request *req, struct answer *a) {
        struct daemon *d = c->d;
        const struct tenant *t = c->tenant;
        unsigned n = sessions_count(&d->sessions, t);
        if (n >= t->max_sessions) {
                refuse(a, E_LIMIT, "tenant '%s' has %u sessions, its max_sessions", t->name, n);
                return false;
        }
        uint64_t ttl_max = t->session_ttl_max_ms / 1000, idle_max = t->session_idle_max_ms / 1000;
        if (req->ttl_s == PROTO_UNSET)
                req->ttl_s = TTL_DEFAULT_S < ttl_max ? TTL_DEFAULT_S : ttl_max;
        else if (req->ttl_s > ttl_max) {
                refuse(a, E_LIMIT, "field 'ttl_s': %" PRIu64 " is above the tenant's session_ttl_max (%" PRIu64 " s)", req->ttl_s,
                       ttl_max);
                return false;
        }
        if (req->idle_s == PROTO_UNSET)
                req->idle_s = IDLE_DEFAULT_S < idle_max ? IDLE_DEFAULT_S : idle_max;
        else if (req->idle_s > idle_max) {
                refuse(a, E_LIMIT, "field 'idle_s': %" PRIu64 " is above the tenant's session_idle_max (%" PRIu64 " s)",
                       req->idle_s, idle_max);
                return false;
        }
        /* Its command, as its record and journal say: the agent. */
        struct run_request *run = &req->run;
        run->argv = calloc(2, sizeof(char *));
        if (!run->argv || !(run->argv[0] = strdup("sbx-init"))) {
                refuse(a, E_INTERNAL, "out of memory");
                return false;
        }
        run->argc = 1;
        return true;
}

static void op_exec(struct conn *c, struct request *req, struct session *s, struct answer *a) {
        bool follow = req->run.follow;
        json_t *tag = req->tag ? json_incref(req->tag) : NULL;
        struct rjob *rj = session_exec(s, req, c->cred.uid, &a->code, a->msg, sizeof(a->msg));
        if (!rj) {
                json_decref(tag);
                return;
        }
        audit_request(c, "session.exec", "accepted", &rj->j, NULL, NULL, false);
        /* Like a run: it follows, and the reply waits for the journal. */
        /* Its "started" was told before anyone could follow it: the
         * follower hears it now, as a run's follower does. */
        if (follow && subscribe_add(c, rj, W_FOLLOW, STREAM_BOTH, tag) && rj->j.state == JOB_RUNNING)
                job_tell_event(rj, proto_ev_started(rj->j.id), 0, 0);
        a->ok = json_pack("{s:s, s:s, s:s}", "job", rj->j.id, "session", rj->session_id, "state",
                          rj->j.state == JOB_DONE ? job_outcome_name(rj->j.outcome) : job_state_name(rj->j.state));
        json_decref(tag);
        a->held = true;
}

static void op_files(struct session *s, struct request *req, struct answer *a) {
        struct sbx_error err;
        sbx_error_clear(&err);
        int r;
        json_t *o = NULL;
        switch (req->op) {
        case REQ_SESSION_PUT:
                r = session_put(s, req->path, req->offset, req->data, req->data_len, req->mode, &err);
                if (r == 0)
                        o = json_pack("{s:s, s:I}", "path", req->path, "size", (json_int_t) (req->offset + req->data_len));
                break;
        case REQ_SESSION_GET:
                r = session_get(s, req->path, req->offset, req->max_bytes, &o, &err);
                break;
        default:
                r = session_ls(s, req->path, &o, &err);
                break;
        }
        if (r < 0) {
                refuse(a, errno_code(-r), "%s", err.msg);
                return;
        }
        a->ok = o;
}

/* session.expose: the tenant may, the daemon has a proxy; the answer says
 * how to reach the port (its Host, the token, a signed URL on request). */
static void op_expose(struct conn *c, struct request *req, struct session *s, struct answer *a) {
        struct daemon *d = c->d;
        if (req->op == REQ_SESSION_UNEXPOSE) {
                int r = session_unexpose(s, req->port);
                if (r == -ENOENT) {
                        refuse(a, E_NOT_FOUND, "session %s does not expose port %u", req->session, (unsigned) req->port);
                        return;
                }
                service_close_session(d, req->session, req->port);
                audit_request(c, "session.unexpose", "accepted", NULL, NULL, NULL, false);
                if (r < 0) {
                        refuse(a, E_STORAGE, "port %u is no longer exposed, but the journal did not take it (%s): a restart "
                                             "would expose it again",
                               (unsigned) req->port, strerror(-r));
                        return;
                }
                a->ok = json_pack("{s:s, s:i}", "session", req->session, "port", (int) req->port);
                return;
        }
        if (!c->tenant->session_services) {
                refuse(a, E_FORBIDDEN, "tenant '%s' may not expose services (session_services)", c->tenant->name);
                return;
        }
        if (!service_on(d)) {
                refuse(a, E_FORBIDDEN, "the daemon has no service proxy (service_listen)");
                return;
        }
        const char *token;
        int r = session_expose(s, req->port, &token);
        if (r == -E2BIG) {
                refuse(a, E_LIMIT, "a session exposes at most %d ports", SESSION_PORTS_MAX);
                return;
        }
        if (r < 0) {
                refuse(a, E_STORAGE, "cannot journal the exposure: %s", strerror(-r));
                return;
        }
        audit_request(c, "session.expose", "accepted", NULL, NULL, NULL, false);
        const char *domain = d->cfg->service_domain ? d->cfg->service_domain : "localhost";
        char host[300];
        snprintf(host, sizeof(host), "%u-%s.%s", (unsigned) req->port, req->session, domain);
        a->ok = json_pack("{s:s, s:i, s:s, s:s, s:s}", "session", req->session, "port", (int) req->port, "host", host, "token", token,
                          "listen", d->cfg->service_listen);
        if (a->ok && req->signed_ttl_s) {
                uint64_t exp = (uint64_t) time(NULL) + req->signed_ttl_s;
                char sig[65], query[128];
                service_sign(d, req->session, req->port, exp, sig);
                snprintf(query, sizeof(query), "sbx_exp=%" PRIu64 "&sbx_sig=%s", exp, sig);
                json_object_set_new(a->ok, "signed_query", json_string(query));
                json_object_set_new(a->ok, "signed_expires", proto_time(exp * 1000));
        }
}

/* A forward granted, until its reply is out and the socket can be taken. */
struct forward_pending {
        int ufd;
        bool connected;
        char session[PROTO_SESSION_ID_LEN + 1];
        char tenant[64];
        uint16_t port;
        uint64_t rate;
};

static void forward_go(struct conn *c) {
        struct forward_pending *p = c->drain_arg;
        char *extra;
        size_t n;
        uid_t uid = c->cred.uid;
        int cfd = conn_detach(c, &extra, &n);
        if (cfd < 0)
                close(p->ufd);
        else {
                struct service_forward f = { .cfd = cfd, .ufd = p->ufd, .connected = p->connected, .extra = extra, .extra_len = n,
                                             .session = p->session, .tenant = p->tenant, .port = p->port, .uid = uid, .rate = p->rate };
                service_forward(c->d, &f);
        }
        free(extra);
        free(p);
}

/* session.forward: the connection becomes a byte stream to an exposed
 * port in the session once the reply is out. */
static void op_forward(struct conn *c, struct request *req, struct session *s, struct answer *a) {
        const struct tenant *t = session_tenant(s);
        if (!c->tenant->session_services) {
                refuse(a, E_FORBIDDEN, "tenant '%s' may not use services (session_services)", c->tenant->name);
                return;
        }
        if (!service_on(c->d) || !session_exposes(s, req->port)) {
                refuse(a, E_NOT_FOUND, "session %s does not expose port %u (session.expose first)", req->session, (unsigned) req->port);
                return;
        }
        if (!list_empty(&c->watches)) {
                refuse(a, E_CONFLICT, "this connection follows jobs: a forward takes a connection of its own");
                return;
        }
        if (service_connections(c->d, req->session) >= t->service_connections) {
                refuse(a, E_LIMIT, "the session has as many service connections as its tenant's service_connections (%" PRIu64 ")",
                       (uint64_t) t->service_connections);
                return;
        }
        struct forward_pending *p = calloc(1, sizeof(*p));
        if (!p) {
                refuse(a, E_INTERNAL, "out of memory");
                return;
        }
        int r = session_connect_port(s, req->port, &p->ufd);
        if (r < 0) {
                free(p);
                if (r == -ESHUTDOWN)
                        refuse(a, E_NOT_DONE, "session %s is not ready", req->session);
                else
                        refuse(a, E_INTERNAL, "the session's agent could not connect to port %u: %s", (unsigned) req->port,
                               strerror(-r));
                return;
        }
        /* On the loopback a connect is over before the agent answers: a
         * port nobody listens on is refused here, not after the reply. */
        struct pollfd pf = { .fd = p->ufd, .events = POLLOUT };
        int err = 0;
        socklen_t el = sizeof(err);
        if (poll(&pf, 1, 0) == 1) {
                if (getsockopt(p->ufd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
                        err = errno;
                p->connected = !err;
        }
        if (err) {
                close(p->ufd);
                free(p);
                refuse(a, E_NOT_FOUND, "nothing answers on port %u in session %s (%s)", (unsigned) req->port, req->session, strerror(err));
                return;
        }
        snprintf(p->session, sizeof(p->session), "%s", req->session);
        snprintf(p->tenant, sizeof(p->tenant), "%s", t->name);
        p->port = req->port;
        p->rate = t->service_bandwidth;
        audit_request(c, "session.forward", "accepted", NULL, NULL, NULL, false);
        a->ok = json_pack("{s:s, s:i, s:b}", "session", req->session, "port", (int) req->port, "forwarding", true);
        conn_hand_off(c, forward_go, p);
}

static void answer_for(struct conn *c, struct request *req, struct answer *a) {
        struct daemon *d = c->d;
        if (req->op == REQ_SESSION_LIST) {
                a->ok = json_pack("{s:o}", "sessions", sessions_list(&d->sessions, c->tenant));
                return;
        }
        struct session *s = session_find(&d->sessions, c->tenant, req->session, &a->code, a->msg, sizeof(a->msg));
        /* in cluster mode it may live on another node */
        if (!s && streq(a->code, E_NOT_FOUND) && cluster_session_elsewhere(c, req)) {
                a->code = NULL;
                a->sent = true;
        }
        if (!s)
                return;
        switch (req->op) {
        case REQ_SESSION_SHOW:
                a->ok = session_describe(s);
                break;
        case REQ_SESSION_CLOSE:
                audit_request(c, "session.close", "accepted", NULL, NULL, NULL, false);
                session_close(s);
                a->ok = json_pack("{s:s, s:s}", "session", req->session, "state", "ending");
                break;
        case REQ_SESSION_EXTEND: {
                uint64_t until;
                int r = session_extend(s, req->ttl_s * 1000, &until);
                if (r == -E2BIG)
                        refuse(a, E_LIMIT, "field 'ttl_s': the session would live longer than the tenant's session_ttl_max "
                                           "(%" PRIu64 " s from its start)",
                               c->tenant->session_ttl_max_ms / 1000);
                else if (r == -EAGAIN)
                        refuse(a, E_NOT_DONE, "session %s is not running yet", req->session);
                else if (r < 0)
                        refuse(a, E_STORAGE, "session %s: the new expiry cannot be journaled: %s", req->session, strerror(-r));
                else
                        a->ok = json_pack("{s:s, s:o}", "session", req->session, "expires", proto_time(until));
                break;
        }
        case REQ_SESSION_EXEC:
                op_exec(c, req, s, a);
                break;
        case REQ_SESSION_SIGNAL: {
                int r = session_signal(s, req->job, req->signo);
                if (r == -ENOENT)
                        refuse(a, E_NOT_FOUND, "no job %s in session %s", req->job, req->session);
                else if (r == -ESRCH)
                        refuse(a, E_CONFLICT, "job %s is not running", req->job);
                else if (r < 0)
                        refuse(a, errno_code(-r), "signal: %s", strerror(-r));
                else
                        a->ok = json_pack("{s:s, s:i}", "job", req->job, "signal", req->signo);
                break;
        }
        case REQ_SESSION_RESIZE: {
                int r = session_resize(s, req->job, req->rows, req->cols);
                if (r == -ENOENT)
                        refuse(a, E_NOT_FOUND, "no job %s in session %s", req->job, req->session);
                else if (r == -ESRCH)
                        refuse(a, E_CONFLICT, "job %s is not running", req->job);
                else if (r == -ENOTTY)
                        refuse(a, E_CONFLICT, "job %s has no terminal (it was not started with tty)", req->job);
                else if (r < 0)
                        refuse(a, E_INTERNAL, "job %s: its terminal's size: %s", req->job, strerror(-r));
                else
                        a->ok = json_pack("{s:s, s:i, s:i}", "job", req->job, "rows", req->rows, "cols", req->cols);
                break;
        }
        case REQ_SESSION_EXPOSE:
        case REQ_SESSION_UNEXPOSE:
                op_expose(c, req, s, a);
                break;
        case REQ_SESSION_FORWARD:
                op_forward(c, req, s, a);
                break;
        case REQ_SESSION_STDIN: {
                size_t n = 0;
                int r = session_stdin(s, req->job, req->data, req->data_len, req->eof, &n);
                if (r == -ENOENT)
                        refuse(a, E_NOT_FOUND, "no running job %s in session %s", req->job, req->session);
                else if (r == -ESRCH)
                        refuse(a, E_CONFLICT, "job %s is not running", req->job);
                else if (r == -EBADF)
                        refuse(a, E_CONFLICT, "job %s: its stdin was not kept open (stdin_open), or was closed", req->job);
                else if (r == -EPIPE)
                        refuse(a, E_CONFLICT, "job %s closed its stdin", req->job);
                else if (r < 0)
                        refuse(a, E_INTERNAL, "job %s: stdin: %s", req->job, strerror(-r));
                else
                        a->ok = json_pack("{s:s, s:I, s:b}", "job", req->job, "written", (json_int_t) n, "closed",
                                          req->eof && n == req->data_len);
                break;
        }
        default:
                op_files(s, req, a);
                break;
        }
}

void session_op(struct conn *c, struct request *req) {
        struct answer a = { 0 };
        if (req->op == REQ_SESSION_CREATE) {
                if (create_admit(c, req, &a)) {
                        accept_run(c, req);
                        return;
                }
                audit_request(c, "session.create", "rejected", NULL, a.code, a.msg, true);
        } else
                answer_for(c, req, &a);
        if (a.sent)
                return;
        if (a.code) {
                conn_send(c, proto_error(req->tag, a.code, "%s", a.msg));
                return;
        }
        if (a.held)
                commit_hold(c->d, &c->holder);
        conn_send(c, proto_ok(req->tag, a.ok));
}
