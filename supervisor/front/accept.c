/* SPDX-License-Identifier: Apache-2.0 */
/* The run operation: a request becomes a job only when the daemon may run
 * it (not stopping, storage working), the tenant's policy allows it, it is
 * not a retry of a job already accepted, and the scheduler admits it; then
 * its accept line is journaled, and the reply waits for the journal's sync
 * (durable before acknowledged). Its workspace is made when it starts, off
 * the event loop (runner.c). A bundle job's policy is decided once its
 * manifest is known (bundle-job.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "bundle.h"
#include "cluster-ops.h"
#include "conn.h"
#include "daemon.h"
#include "deps-ops.h"
#include "dispatch.h"
#include "log.h"
#include "netjob.h"
#include "profile.h"
#include "recover.h"
#include "runner.h"
#include "secret-store.h"
#include "session.h"
#include "subscribe.h"
#include "trace.h"
#include "warm.h"

/* What the checks of a run request decided when they refuse it: one
 * place (accept_run) replies and audits. */
struct verdict {
        const char *code;        /* set: refused */
        char msg[SBX_ERROR_MAX];
        bool unaudited;          /* a stopping daemon refuses without an audit line */
};

static bool deny(struct verdict *v, const char *code, const char *fmt, ...) _printf_(3, 4);

static bool deny(struct verdict *v, const char *code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
        va_end(ap);
        v->code = code;
        return false;
}

static void rjob_freep(struct rjob **rj) {
        if (*rj)
                rjob_free(*rj);
}

static void reply_duplicate(struct conn *c, struct request *req, const char *id, const char *state) {
        conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:s, s:b}", "job", id, "state", state, "duplicate", 1)));
}

/* A retry of a job this tenant already submitted with the same key: the
 * first job, unless the payload differs (a different job under a reused
 * key is refused, not answered with the wrong job). Returns true when the
 * request was answered here or refused (v). */
static bool idempotent(struct conn *c, struct request *req, const char *digest, struct verdict *v) {
        struct daemon *d = c->d;
        const char *key = req->run.idempotency_key;
        if (!key)
                return false;
        struct rjob *live = jobs_find_key(&d->jobs, c->tenant, key);
        if (live) {
                if (!streq(live->req_digest, digest)) {
                        deny(v, E_CONFLICT, "field 'idempotency_key': job %s was submitted with this key and a different request",
                               live->j.id);
                        return true;
                }
                if (req->run.follow && !subscribe_add(c, live, W_FOLLOW, STREAM_BOTH, req->tag))
                        return true;
                reply_duplicate(c, req, live->j.id, job_state_name(live->j.state));
                return true;
        }
        struct done_entry *e = result_index_find_key(&d->done, c->tenant->name, key);
        if (!e)
                return false;
        /* Records from before request digests were kept have none. */
        if (e->request_sha256[0] && !streq(e->request_sha256, digest)) {
                deny(v, E_CONFLICT, "field 'idempotency_key': job %s was submitted with this key and a different request", e->id);
                return true;
        }
        reply_duplicate(c, req, e->id, "done");
        if (req->run.follow) {
                json_t *rec = NULL;
                if (result_load(d->dirs.results_fd, e->id, &rec) == 0)
                        conn_send(c, proto_ev_end(e->id, rec));
                json_decref(rec);
        }
        return true;
}

static int resolve_profile(struct daemon *d, const char *name, char **ret, struct verdict *v) {
        struct sbx_error err;
        int r = profile_find(name, d->cfg->profile_path, ret, &err);
        if (r == -ENOENT)
                deny(v, E_NO_PROFILE, "field 'profile': no profile '%s' in %s", name, d->cfg->profile_path);
        else if (r < 0)
                deny(v, E_INTERNAL, "profile '%s': %s", name, strerror(-r));
        return r;
}

/* Storage errors say so (E_STORAGE, and no new work until it works);
 * anything else is the daemon's own failure. */
static void prepare_failed(struct conn *c, const char *what, int r, const char *msg, struct verdict *v) {
        bool storage = r == -ENOSPC || r == -EDQUOT || r == -EROFS || r == -EIO;
        log_error("%s: %s", what, msg);
        if (storage)
                commit_storage_failed(c->d, what, r);
        deny(v, storage ? E_STORAGE : E_INTERNAL, "cannot prepare the job: %s", msg);
}

/* The callback: one the tenant allows (a request cannot make the daemon
 * post to any host it reaches), or the tenant's default. */
static bool callback_admit(struct conn *c, struct request *req, struct verdict *v) {
        const struct tenant *t = c->tenant;
        struct run_request *run = &req->run;
        if (run->callback) {
                if (!t->cb_secret) {
                        deny(v, E_FORBIDDEN, "field 'callback': tenant '%s' has no callback_secret_file: its deliveries could "
                               "not be signed", t->name);
                        return false;
                }
                const char *why = NULL;
                int r = tenant_allows_callback(t, run->callback, &why);
                if (r == -EINVAL)
                        deny(v, E_BAD_REQUEST, "field 'callback': %s", why);
                else if (r == -EACCES)
                        deny(v, E_FORBIDDEN, "field 'callback': tenant '%s' does not allow this URL (callback_allow)", t->name);
                else if (r < 0)
                        deny(v, E_INTERNAL, "field 'callback': %s", strerror(-r));
                return r == 0;
        }
        if (t->cb_url && !(run->callback = strdup(t->cb_url))) {
                deny(v, E_INTERNAL, "out of memory");
                return false;
        }
        return true;
}

/* Progress callbacks: the request's interval or the tenant's; they go
 * where the result goes, so a job asking for them needs a callback. */
static bool progress_admit(struct conn *c, struct request *req, struct verdict *v) {
        struct run_request *run = &req->run;
        if (run->progress_s == PROTO_UNSET) {
                run->progress_s = run->callback ? c->tenant->cb_progress_s : 0;
                return true;
        }
        if (run->progress_s > 0 && !run->callback) {
                deny(v, E_BAD_REQUEST, "field 'progress': the job has no callback (field 'callback', or the tenant's "
                       "callback_url) to send them to");
                return false;
        }
        return true;
}

/* The secrets it asks for: each granted to its tenant (secrets) and set
 * (sbxctl secret set). The values are read when it starts. */
static bool secrets_admit(struct conn *c, struct request *req, const struct policy_decision *pol, struct verdict *v) {
        const struct tenant *t = c->tenant;
        for (size_t i = 0; i < req->run.n_secrets; i++) {
                const char *name = req->run.secrets[i];
                const struct secret_grant *g = tenant_secret(t, name);
                if (!g)
                        return deny(v, E_FORBIDDEN, "field 'secrets': tenant '%s' is not granted secret '%s' (secrets)", t->name,
                                    name);
                /* a bundle's network is known once its manifest is: its
                 * start checks then (job-secrets.c) */
                if (g->mode == SECRET_HEADER && !req->run.bundle && pol->net != NET_RESTRICTED)
                        return deny(v, E_FORBIDDEN, "field 'secrets': '%s' is a header secret, sent by the daemon's proxy: the "
                                    "job needs network restricted", name);
                if (!secret_store_has(c->d->dirs.state_fd, t->name, name))
                        return deny(v, E_NOT_FOUND, "field 'secrets': tenant '%s' has no value for secret '%s' (sbxctl secret set)",
                                    t->name, name);
        }
        return true;
}

/* The tenant's policy: an inline command's decision now; a bundle's
 * once its manifest is known, if the tenant runs bundles at all. */
static bool admit(struct conn *c, struct request *req, struct policy_decision *pol, struct verdict *v) {
        struct sbx_error err;
        const char *code;
        sbx_error_clear(&err);
        if (req->run.bundle) {
                if (bundle_admit(c->tenant, &req->run, &code, &err) < 0) {
                        deny(v, code, "%s", err.msg);
                        return false;
                }
                memset(pol, 0, sizeof(*pol));
                pol->timeout_ms = pol->memory = pol->processes = pol->cpu_s = pol->cpu_milli = pol->output = PROTO_UNSET;
                return true;
        }
        if (c->tenant->bundles_only) {
                deny(v, E_FORBIDDEN, "field 'command': tenant '%s' runs bundles only (bundles_only): name a bundle",
                       c->tenant->name);
                return false;
        }
        if (policy_apply(c->tenant, &req->run, &c->d->caps, pol, &err) < 0) {
                deny(v, pol->code, "%s", err.msg);
                return false;
        }
        return true;
}

/* The job a run request becomes, or NULL: refused (v->code), answered
 * already (a retry of a known job, or no room to follow it), or in cluster
 * mode on its way to the database (answered from there). */
static struct rjob *accept_job(struct conn *c, struct request *req, struct verdict *v) {
        struct daemon *d = c->d;
        struct sbx_error err;
        struct policy_decision pol;
        char digest[65], why[SBX_ERROR_MAX], tp[TRACEPARENT_LEN + 1];
        const char *what;
        int r, serr;
        sbx_error_clear(&err);

        if (d->stopping) {
                v->unaudited = true;
                deny(v, E_SHUTTING_DOWN, "the daemon is stopping");
                return NULL;
        }
        if (commit_storage_failing(d, &what, &serr)) {
                deny(v, E_STORAGE, "the daemon cannot make results durable (%s: %s); no new jobs until it can", what,
                     strerror(-serr));
                return NULL;
        }
        if (req->run.follow && !subscribe_room(c, req->tag))
                return NULL;
        if (cluster_on(d) && !cluster_may_accept(c, req))
                return NULL;
        if (!admit(c, req, &pol, v) || !callback_admit(c, req, v) || !progress_admit(c, req, v) || !secrets_admit(c, req, &pol, v))
                return NULL;
        if (run_has_deps(&req->run)) {
                const char *code;
                if (deps_admit(c, req, &code, why, sizeof(why)) < 0) {
                        deny(v, code, "%s", why);
                        return NULL;
                }
        }
        /* A session's sandbox lives for its TTL, which the tenant's
         * session_ttl_max bounds (session-ops.c), not max_timeout. */
        if (req->op == REQ_SESSION_CREATE)
                pol.timeout_ms = req->ttl_s * 1000;
        proto_request_digest(&req->run, digest);
        /* (in cluster mode the database finds retries of jobs:
         * cluster_submit; a session is this node's) */
        if ((!cluster_on(d) || req->op == REQ_SESSION_CREATE) && idempotent(c, req, digest, v))
                return NULL;
        _cleanup_free_ char *profile_path = NULL;
        if (!req->run.bundle && resolve_profile(d, pol.profile, &profile_path, v) < 0)
                return NULL;
        if (profile_path && (r = netjob_profile_policy(&d->caps, pol.profile, profile_path, &pol, why, sizeof(why))) < 0) {
                deny(v, r == -EOPNOTSUPP ? E_UNSUPPORTED : E_FORBIDDEN, "%s", why);
                return NULL;
        }

        _cleanup_(rjob_freep) struct rjob *rj = rjob_new(d);
        if (!rj) {
                deny(v, E_INTERNAL, "out of memory");
                return NULL;
        }
        struct job *j = &rj->j;
        rj->t_us[T_ACCEPTED] = now_mono_us();
        jobs_new_id(j->id);
        j->tenant = c->tenant;
        j->caller_uid = c->cred.uid;
        j->pol = pol;
        j->created_ms = now_real_ms();
        memcpy(rj->req_digest, digest, sizeof(digest));
        rj->profile_path = TAKE_PTR(profile_path);
        j->req = *req; /* the job owns the request now */
        request_init(req);
        req->tag = j->req.tag ? json_incref(j->req.tag) : NULL;
        /* Its own span in the caller's trace, or a trace of its own:
         * journaled with the request, so a restart keeps it. */
        trace_child(j->req.run.traceparent, tp);
        free(j->req.run.traceparent);
        j->req.run.traceparent = strdup(tp);
        if (!j->req.run.traceparent) {
                deny(v, E_INTERNAL, "out of memory");
                return NULL;
        }
        if (j->req.run.bundle) {
                j->bundle.set = true;
                j->bundle.registry = c->tenant->registry->name;
                bundle_ref_parse(j->req.run.bundle, &j->bundle.ref, &err);
        }

        /* The tenant's sessions' memory together, as their limits say. */
        if (j->req.op == REQ_SESSION_CREATE && c->tenant->session_memory_max != CONFIG_UNSET) {
                uint64_t used = sessions_memory(&d->sessions, c->tenant), cap = c->tenant->session_memory_max;
                if (pol.memory == PROTO_UNSET || used == UINT64_MAX) {
                        deny(v, E_LIMIT, "tenant '%s' has a session_memory_max: a session without a memory limit cannot be counted in it",
                             c->tenant->name);
                        return NULL;
                }
                if (used > cap || pol.memory > cap - used) {
                        deny(v, E_LIMIT,
                             "tenant '%s': session_memory_max is %" PRIu64 " bytes; its live sessions' memory limits take %" PRIu64
                             " and this one asks %" PRIu64,
                             c->tenant->name, cap, used, pol.memory);
                        return NULL;
                }
        }
        if (j->req.op == REQ_SESSION_CREATE && session_new(&d->sessions, rj, j->req.idle_s * 1000, &err) < 0) {
                deny(v, E_INTERNAL, "cannot make the session: %s", err.msg);
                return NULL;
        }
        /* In cluster mode a row in the database, which any node may
         * claim (cluster-ops.c); the reply follows its commit. */
        if (cluster_on(d) && j->req.op != REQ_SESSION_CREATE) {
                cluster_submit(c, TAKE_PTR(rj));
                return NULL;
        }
        /* In a sandbox of its tenant's warm pool, when it may run in one,
         * it starts at once, in the place its box holds (accept_run); else
         * it queues. */
        struct session *warm = warm_take(d, c->tenant, &j->req, &j->pol, rj->profile_path);
        if (warm && session_warm_attach(warm, rj) < 0) {
                deny(v, E_INTERNAL, "out of memory");
                return NULL;
        }
        if (!warm && sched_enqueue(&d->sched, j, &err) < 0) {
                session_abandon(rj);
                deny(v, E_QUEUE_FULL, "%s", err.msg);
                return NULL;
        }
        if (!warm)
                warm_queued(d, c->tenant);
        /* After this line a crash still leaves the job a result record,
         * once it is synced (before the client hears of the job). */
        json_t *jr = accept_record(rj);
        r = jr ? journal_append(&d->journal, jr, false) : -ENOMEM;
        json_decref(jr);
        if (r < 0) {
                if (warm)
                        session_warm_abandon(rj);
                else
                        sched_remove_queued(&d->sched, j);
                session_abandon(rj);
                prepare_failed(c, "journal", r, strerror(-r), v);
                return NULL;
        }
        return TAKE_PTR(rj);
}

/* accept_internal, and with warm_idle_ms a warm sandbox: a session's box
 * marked warm, idle that long before it ends unused. */
static struct rjob *internal_job(struct daemon *d, const struct tenant *t, json_t *request, const struct policy_decision *pol,
                                 uint64_t warm_idle_ms, struct sbx_error *err) {
        struct request req;
        struct verdict v = { 0 };
        char digest[65], tp[TRACEPARENT_LEN + 1];
        request_init(&req);
        _cleanup_free_ char *line = json_dumps(request, JSON_COMPACT);
        if (!line)
                return sbx_error_set(err, ENOMEM, "request"), NULL;
        if (proto_parse_request(line, strlen(line), &req, err) < 0)
                return NULL;
        _cleanup_free_ char *profile_path = NULL;
        if (resolve_profile(d, pol->profile, &profile_path, &v) < 0) {
                request_free(&req);
                return sbx_error_msg(err, ENOENT, "%s", v.msg), NULL;
        }
        _cleanup_(rjob_freep) struct rjob *rj = rjob_new(d);
        if (!rj) {
                request_free(&req);
                return sbx_error_set(err, ENOMEM, "job"), NULL;
        }
        struct job *j = &rj->j;
        rj->t_us[T_ACCEPTED] = now_mono_us();
        jobs_new_id(j->id);
        j->tenant = t;
        j->caller_uid = 0;
        j->pol = *pol;
        j->created_ms = now_real_ms();
        proto_request_digest(&req.run, digest);
        memcpy(rj->req_digest, digest, sizeof(digest));
        rj->profile_path = TAKE_PTR(profile_path);
        j->req = req;
        trace_child(NULL, tp);
        if (!(j->req.run.traceparent = strdup(tp)))
                return sbx_error_set(err, ENOMEM, "job"), NULL;
        if (warm_idle_ms) {
                /* its command, as its record and journal say: the agent */
                struct run_request *run = &j->req.run;
                if (!run->argv && (!(run->argv = calloc(2, sizeof(char *))) || !(run->argv[0] = strdup("sbx-init"))))
                        return sbx_error_set(err, ENOMEM, "job"), NULL;
                run->argc = 1;
                rj->warm = true;
                if (session_new(&d->sessions, rj, warm_idle_ms, err) < 0)
                        return NULL;
        }
        if (sched_enqueue(&d->sched, j, err) < 0) {
                session_abandon(rj);
                return NULL;
        }
        json_t *jr = accept_record(rj);
        int r = jr ? journal_append(&d->journal, jr, false) : -ENOMEM;
        json_decref(jr);
        if (r < 0) {
                sched_remove_queued(&d->sched, j);
                session_abandon(rj);
                return sbx_error_set(err, -r, "journal"), NULL;
        }
        jobs_add(&d->jobs, rj);
        runner_schedule(d);
        return TAKE_PTR(rj);
}

struct rjob *accept_internal(struct daemon *d, const struct tenant *t, json_t *request, const struct policy_decision *pol,
                             struct sbx_error *err) {
        return internal_job(d, t, request, pol, 0, err);
}

struct rjob *accept_warm(struct daemon *d, const struct tenant *t, struct sbx_error *err) {
        struct request req;
        struct policy_decision pol;
        struct verdict v = { 0 };
        char why[SBX_ERROR_MAX];
        /* Its TTL: idle as long as warm_idle, then its job's longest run. */
        uint64_t ttl_s = (t->warm_idle_ms + t->max_timeout_ms) / 1000 + 60;
        json_t *request = json_pack("{s:i, s:s, s:I, s:I}", "v", 1, "op", "session.create", "ttl_s", (json_int_t) ttl_s, "idle_s",
                                    (json_int_t) (t->warm_idle_ms / 1000));
        _cleanup_free_ char *line = request ? json_dumps(request, JSON_COMPACT) : NULL;
        request_init(&req);
        if (!line) {
                json_decref(request);
                return sbx_error_set(err, ENOMEM, "request"), NULL;
        }
        /* The decision a job asking for no limits of its own gets. */
        int r = proto_parse_request(line, strlen(line), &req, err);
        if (r >= 0)
                r = policy_apply(t, &req.run, &d->caps, &pol, err);
        _cleanup_free_ char *profile_path = NULL;
        if (r >= 0 && (r = resolve_profile(d, pol.profile, &profile_path, &v)) < 0)
                sbx_error_msg(err, -r, "%s", v.msg);
        if (r >= 0 && (r = netjob_profile_policy(&d->caps, pol.profile, profile_path, &pol, why, sizeof(why))) < 0)
                sbx_error_msg(err, -r, "%s", why);
        request_free(&req);
        struct rjob *rj = NULL;
        if (r >= 0) {
                pol.timeout_ms = ttl_s * 1000;
                rj = internal_job(d, t, request, &pol, t->warm_idle_ms, err);
        }
        json_decref(request);
        return rj;
}

void accept_run(struct conn *c, struct request *req) {
        struct daemon *d = c->d;
        struct verdict v = { 0 };
        const char *op = req_op_name(req->op);
        struct rjob *rj = accept_job(c, req, &v);

        if (v.code) {
                if (!v.unaudited)
                        audit_request(c, op, "rejected", NULL, v.code, v.msg, true);
                conn_send(c, proto_error(req->tag, v.code, "%s", v.msg));
                return;
        }
        if (!rj)
                return;
        struct job *j = &rj->j;
        jobs_add(&d->jobs, rj);
        audit_request(c, op, j->pol.clamped[0] ? "accepted (clamped)" : "accepted", j, NULL,
                      j->pol.clamped[0] ? j->pol.clamped : NULL, false);
        if (j->req.run.follow)
                subscribe_add(c, rj, W_FOLLOW, STREAM_BOTH, req->tag);
        /* At hand, it queues now; else it waits ("fetching"); refused, it
         * has ended already. */
        if (rj->warm)
                session_warm_start(rj);
        else if (j->bundle.set)
                bundle_job_start(rj);
        else if (run_has_deps(&j->req.run))
                deps_job_start(rj);
        json_t *ok = json_pack("{s:s, s:s}", "job", j->id, "state",
                               j->state == JOB_DONE ? job_outcome_name(j->outcome) : job_state_name(j->state));
        if (j->pol.clamped[0])
                json_object_set_new(ok, "clamped", json_string(j->pol.clamped));
        if (j->bundle.set)
                json_object_set_new(ok, "bundle", json_string(j->req.run.bundle));
        if (rj->session_box) {
                json_object_set_new(ok, "session", json_string(rj->session_id));
                json_object_set_new(ok, "ttl_s", json_integer((json_int_t) (j->pol.timeout_ms / 1000)));
                json_object_set_new(ok, "idle_s", json_integer((json_int_t) j->req.idle_s));
        }
        /* Durable before acknowledged: this reply (and whatever follows it
         * on this connection) goes out after the journal is synced at the
         * end of this loop turn, one sync for every job accepted in it. */
        commit_hold(d, &c->holder);
        /* in cluster mode the session's row too, for the other nodes */
        if (rj->session_box && cluster_on(d))
                cluster_session_created(c, rj);
        conn_send(c, proto_ok(req->tag, ok));
        runner_schedule(d);
        daemon_notify_status(d);
}
