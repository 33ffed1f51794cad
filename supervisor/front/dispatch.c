/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "audit.h"
#include "bundle.h"
#include "cluster-ops.h"
#include "conn.h"
#include "daemon.h"
#include "dispatch.h"
#include "log.h"
#include "metrics-http.h"
#include "policy-ops.h"
#include "results-rest.h"
#include "runner.h"
#include "subscribe.h"
#include "tenant.h"

/* A finished or live job this tenant owns, or an E_NOT_FOUND reply. Jobs
 * of other tenants are reported as not found: their existence is not ours
 * to reveal. */
static bool lookup(struct conn *c, const struct request *req, struct rjob **ret_live, struct done_entry **ret_done) {
        struct daemon *d = c->d;
        *ret_live = NULL;
        *ret_done = NULL;
        struct rjob *rj = jobs_find(&d->jobs, req->job);
        if (rj && tenant_same(rj->j.tenant, c->tenant)) {
                *ret_live = rj;
                return true;
        }
        struct done_entry *e = rj ? NULL : result_index_find(&d->done, req->job);
        /* In cluster mode the database holds every job's record: a
         * node's own may be one the fence refused. Logs and downloads are
         * of the files, this node's when it ran the job. */
        bool files = req->op == REQ_LOGS || req->op == REQ_DOWNLOAD;
        if (cluster_on(d) && !rj && !(e && files && streq(e->tenant, c->tenant->name))) {
                cluster_op_job(c, req);
                return false;
        }
        if (e && streq(e->tenant, c->tenant->name)) {
                *ret_done = e;
                return true;
        }
        conn_send(c, proto_error(req->tag, E_NOT_FOUND, "no job %s", req->job));
        return false;
}

static json_t *live_summary(const struct rjob *rj) {
        const struct job *j = &rj->j;
        const struct run_request *run = &j->req.run;
        /* A bundle job's command is its bundle's until it runs. */
        const char *cmd = run->bundle ? (j->bundle.n_command ? j->bundle.command[0] : run->bundle) : run->argv[0];
        json_t *o = proto_summary_live(j->id, j->tenant->name, job_state_name(j->state), j->created_ms, j->started_ms, cmd);
        if (o && run->bundle)
                json_object_set_new(o, "bundle", json_string(run->bundle));
        return o;
}

static json_t *done_summary(const struct done_entry *e) {
        return proto_summary_done(e->id, e->tenant, e->state, e->created_ms, e->ended_ms, e->exit_code);
}

static void op_ping(struct conn *c, struct request *req) {
        json_t *o = json_pack("{s:s, s:s, s:I, s:b}", "version", PACKAGE_VERSION, "tenant", c->tenant->name, "uid",
                              (json_int_t) c->cred.uid, "anonymous", c->anonymous);
        if (o && c->peer[0]) { /* the HTTP API's caller has a token, not a uid */
                json_object_set_new(o, "uid", json_null());
                json_object_set_new(o, "token", c->token ? json_string(c->token->name) : json_null());
        }
        conn_send(c, proto_ok(req->tag, o));
}

static void op_status(struct conn *c, struct request *req, struct rjob *rj, struct done_entry *e) {
        conn_send(c, proto_ok(req->tag, json_pack("{s:o}", "job", rj ? live_summary(rj) : done_summary(e))));
}

/* A live job's record is not on disk yet: say why. */
static void not_done(struct conn *c, struct request *req, struct rjob *rj) {
        const char *what = NULL;
        int err = 0;
        if (rj->j.state != JOB_DONE)
                conn_send(c, proto_error(req->tag, E_NOT_DONE, "job %s is %s", rj->j.id, job_state_name(rj->j.state)));
        else if (rj->rec_err < 0 && commit_storage_failing(c->d, &what, &err))
                conn_send(c, proto_error(req->tag, E_NOT_DONE, "job %s ended (%s) but its record cannot be written yet (%s: %s); "
                                                               "the daemon keeps retrying",
                                         rj->j.id, job_outcome_name(rj->j.outcome), what, strerror(-err)));
        else
                conn_send(c, proto_error(req->tag, E_NOT_DONE, "job %s is being recorded; retry", rj->j.id));
}

static void send_record(struct conn *c, struct request *req, const struct done_entry *e) {
        json_t *rec = NULL;
        int r = result_load(c->d->dirs.results_fd, e->id, &rec);
        if (r < 0) {
                conn_send(c, proto_error(req->tag, E_INTERNAL, "cannot read the result of %s: %s", e->id, strerror(-r)));
                return;
        }
        json_t *ok = json_pack("{s:s, s:O}", "job", e->id, "result", rec);
        /* The record is as it was written; its delivery goes on. */
        json_t *cbm = json_object_get(rec, "callback");
        if (ok && json_is_object(cbm))
                json_object_set_new(ok, "callback", callbacks_state(&c->d->cb, e->id, cbm));
        json_decref(rec);
        conn_send(c, proto_ok(req->tag, ok));
}

static void op_result(struct conn *c, struct request *req, struct rjob *rj, struct done_entry *e) {
        if (rj)
                not_done(c, req, rj);
        else
                send_record(c, req, e);
}

static void op_wait(struct conn *c, struct request *req, struct rjob *rj, struct done_entry *e) {
        if (!rj) {
                send_record(c, req, e);
                return;
        }
        /* A job whose record keeps failing has no end to wait for yet:
         * the truth now rather than a wait without end. */
        if (rj->j.state == JOB_DONE && rj->rec_err < 0) {
                not_done(c, req, rj);
                return;
        }
        subscribe_add(c, rj, W_WAIT, 0, req->tag);
}

static void op_cancel(struct conn *c, struct request *req, struct rjob *rj, struct done_entry *e) {
        struct daemon *d = c->d;
        if (!rj || rj->j.state == JOB_DONE) {
                conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:s, s:b}", "job", rj ? rj->j.id : e->id, "state",
                                                          rj ? job_outcome_name(rj->j.outcome) : e->state, "already_done", 1)));
                return;
        }
        audit_request(c, "cancel", "accepted", &rj->j, NULL, NULL, false);
        if (rj->j.state == JOB_QUEUED || rj->j.state == JOB_FETCHING) {
                sched_remove_queued(&d->sched, &rj->j);
                job_transition(&rj->j, JEV_CANCEL, NULL);
                json_t *ok = json_pack("{s:s, s:s}", "job", rj->j.id, "state", job_outcome_name(rj->j.outcome));
                runner_end(rj);
                /* "killed" is the job's end: the caller hears it once the
                 * record is durable, in the same group commit. */
                commit_hold(d, &c->holder);
                conn_send(c, proto_ok(req->tag, ok));
                return;
        }
        runner_stop(rj, JEV_CANCEL);
        conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:s}", "job", rj->j.id, "state", job_state_name(rj->j.state))));
}

static void op_list(struct conn *c, struct request *req) {
        struct daemon *d = c->d;
        if (cluster_on(d)) {
                cluster_op_list(c, req);
                return;
        }
        json_t *arr = json_array();
        uint64_t n = 0;
        struct list *pos, *tmp;
        /* newest first: live jobs, then finished ones from the end */
        list_for_each_safe(pos, tmp, &d->jobs.all) {
                struct rjob *rj = list_entry(pos, struct rjob, link);
                if (!tenant_same(rj->j.tenant, c->tenant) || !job_state_filter_matches(req->state, job_state_name(rj->j.state), true))
                        continue;
                if (n++ >= req->limit)
                        break;
                json_array_append_new(arr, live_summary(rj));
        }
        struct result_iter it;
        const struct done_entry *e;
        result_iter_tenant(&d->done, c->tenant->name, &it);
        while (n < req->limit && (e = result_iter_next(&it))) {
                if (!job_state_filter_matches(req->state, e->state, false))
                        continue;
                n++;
                json_array_append_new(arr, done_summary(e));
        }
        conn_send(c, proto_ok(req->tag, json_pack("{s:o}", "jobs", arr)));
}

static void op_job(struct conn *c, struct request *req) {
        struct rjob *rj;
        struct done_entry *e;
        if (!lookup(c, req, &rj, &e))
                return;
        switch (req->op) {
        case REQ_STATUS:
                op_status(c, req, rj, e);
                break;
        case REQ_RESULT:
                op_result(c, req, rj, e);
                break;
        case REQ_WAIT:
                op_wait(c, req, rj, e);
                break;
        case REQ_CANCEL:
                op_cancel(c, req, rj, e);
                break;
        case REQ_LOGS:
                logs_serve(c, req, rj, rj ? rj->j.id : e->id);
                break;
        case REQ_DOWNLOAD:
                download_serve(c, req, rj, rj ? rj->j.id : e->id);
                break;
        default:
                break;
        }
}

/* Whether the answer may need a finished job the index has not read yet
 * (results-rest.h). */
static bool needs_results(struct conn *c, const struct request *req) {
        struct daemon *d = c->d;
        switch (req->op) {
        case REQ_LIST:
                return true;
        case REQ_RUN:
                return req->run.idempotency_key != NULL;
        case REQ_STATUS:
        case REQ_RESULT:
        case REQ_WAIT:
        case REQ_CANCEL:
        case REQ_LOGS:
        case REQ_DOWNLOAD:
                return !jobs_find(&d->jobs, req->job) && !result_index_find(&d->done, req->job);
        default:
                return false;
        }
}

void dispatch_line(struct conn *c, const char *line, size_t len) {
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
        if (results_incomplete(c->d) && needs_results(c, &req)) {
                if (!results_wait(c, line, len))
                        conn_send(c, proto_error(req.tag, E_BUSY, "out of memory; retry later"));
                request_free(&req);
                return;
        }
        if (c->anonymous && c->peer[0])
                log_warning("allow_unauthenticated: HTTP client %s without a token, '%s' let through as tenant 'anonymous'", c->peer,
                            req_op_name(req.op));
        else if (c->anonymous)
                log_warning("allow_unauthenticated: uid %u (pid %d) not in any tenant, '%s' let through as tenant 'anonymous'",
                            (unsigned) c->cred.uid, (int) c->cred.pid, req_op_name(req.op));
        if (req_op_is_admin(req.op)) {
                policy_op(c, &req);
                request_free(&req);
                return;
        }
        if (req_op_is_session(req.op)) {
                session_op(c, &req);
                request_free(&req);
                return;
        }
        switch (req.op) {
        case REQ_PING:
                op_ping(c, &req);
                break;
        case REQ_RUN:
                accept_run(c, &req);
                break;
        case REQ_LIST:
                op_list(c, &req);
                break;
        case REQ_BUNDLE_SHOW:
                bundle_op_show(c, &req);
                break;
        case REQ_CACHE_LIST:
                bundle_op_cache_list(c, &req);
                break;
        case REQ_METRICS:
                metrics_op(c, &req);
                break;
        case REQ_CB_LIST:
        case REQ_CB_RETRY:
        case REQ_CB_DROP: {
                bool acted;
                bool live = req.job && jobs_find(&c->d->jobs, req.job);
                json_t *reply = callbacks_op(&c->d->cb, c->tenant->name, &req, live, &acted);
                if (acted)
                        audit_request(c, req_op_name(req.op), "accepted", NULL, NULL, req.job, false); /* the job in the message */
                conn_send(c, reply);
                break;
        }
        case REQ_CACHE_GC:
                audit_request(c, "cache.gc", "accepted", NULL, NULL, NULL, false);
                bundle_op_cache_gc(c, &req);
                break;
        default:
                op_job(c, &req);
                break;
        }
        request_free(&req);
}
