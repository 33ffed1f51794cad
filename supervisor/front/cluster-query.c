/* SPDX-License-Identifier: Apache-2.0 */
/* Cluster mode's requests (cluster-ops.h): a job accepted as a row, and
 * what clients ask of jobs this node does not hold, and of the nodes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "callbacks.h"
#include "cluster-internal.h"
#include "cluster-ops.h"
#include "conn.h"
#include "daemon.h"
#include "db-writer.h"
#include "db.h"
#include "log.h"
#include "recover.h"
#include "runner.h"
#include "subscribe.h"

/* ---- accepting ---- */

static void unavailable_because(struct conn *c, const struct request *req, const char *why) {
        struct cluster *cl = c->d->cluster;
        cl->unavailable++;
        conn_send(c, proto_error(req->tag, E_UNAVAILABLE,
                                 "the cluster's database is unreachable (%s): nothing new is accepted until it answers; retry",
                                 why));
}

static void unavailable(struct conn *c, const struct request *req) {
        unavailable_because(c, req, c->d->cluster->db.err);
}

bool cluster_may_accept(struct conn *c, struct request *req) {
        struct daemon *d = c->d;
        struct cluster *cl = d->cluster;
        /* A session lives where it is made: on this node, which must run
         * sandboxes (and is not draining). */
        if (req->op == REQ_SESSION_CREATE && d->cfg->cluster_role == CLUSTER_API) {
                conn_send(c, proto_error(req->tag, E_UNSUPPORTED,
                                         "node %s has the role api: it runs nothing, and a session lives on the node that makes "
                                         "it; create it through a node of role both",
                                         d->cfg->cluster_node));
                return false;
        }
        if (req->op == REQ_SESSION_CREATE && cl->draining) {
                conn_send(c, proto_error(req->tag, E_UNAVAILABLE,
                                         "node %s drains: it makes no new sessions; create it through another node",
                                         d->cfg->cluster_node));
                return false;
        }
        if (d->cfg->cluster_role == CLUSTER_WORKER) {
                conn_send(c, proto_error(req->tag, E_UNSUPPORTED,
                                         "node %s has the role worker: it runs jobs the cluster queued and accepts none; submit "
                                         "to a node of role api or both",
                                         d->cfg->cluster_node));
                return false;
        }
        cluster_ensure(cl);
        if (!cdb_up(&cl->db)) {
                unavailable(c, req);
                return false;
        }
        return true;
}

/* A job's row on its way to the database (the writer's thread), with the
 * client that waits for it: no further request of the client is read
 * until it is answered. */
struct insert {
        struct cdb_write w;
        struct list link;            /* cl->inserting */
        struct conn *c;
        struct rjob *rj;
        char *accept, *tenant, *key; /* copies: the writer's thread reads them */
        unsigned retries;
        char id[24], digest[65];
        struct cdb_dup dup;
        int r;
        char err[256];               /* why the database refused the row (r -EIO) */
};

static int insert_run(struct cdb *db, struct cdb_write *w) {
        struct insert *in = container_of(w, struct insert, w);
        in->r = cdb_insert_job(db, in->id, in->tenant, in->key, in->digest, in->accept, in->retries, &in->dup);
        if (in->r == -EIO)
                snprintf(in->err, sizeof(in->err), "%s", db->err);
        return in->r < 0 ? in->r : 0;
}

/* The accepted job's reply (and its follow). */
static void accepted(struct conn *c, struct rjob *rj) {
        struct cluster *cl = c->d->cluster;
        struct job *j = &rj->j;
        const char *op = req_op_name(j->req.op);
        audit_request(c, op, j->pol.clamped[0] ? "accepted (clamped)" : "accepted", j, NULL,
                      j->pol.clamped[0] ? j->pol.clamped : NULL, false);
        cl->claim_wanted = true;
        if (c->closed)
                return;
        json_t *ok = json_pack("{s:s, s:s}", "job", j->id, "state", "queued");
        if (ok && j->pol.clamped[0])
                json_object_set_new(ok, "clamped", json_string(j->pol.clamped));
        if (ok && j->bundle.set)
                json_object_set_new(ok, "bundle", json_string(j->req.run.bundle));
        conn_send(c, proto_ok(j->req.tag, ok));
        if (j->req.run.follow)
                subscribe_add_remote(c, &cl->waits, j->id, W_FOLLOW, j->req.tag);
}

const char *cluster_inserting_id(const struct list *pos) {
        return container_of(pos, struct insert, link)->id;
}

static void insert_done(struct cdb_write *w, int r) {
        struct insert *in = container_of(w, struct insert, w);
        struct conn *c = in->c;
        struct cluster *cl = c->d->cluster;
        struct job *j = &in->rj->j;
        json_t *tag = j->req.tag;
        list_del(&in->link);
        cl->n_inserting--;
        if (r < 0)
                in->r = r;
        if (in->r == -ECANCELED)
                ; /* stopping: the client is gone */
        else if (in->r == -EIO && !c->closed) {
                cl->unavailable++;
                conn_send(c, proto_error(tag, E_UNAVAILABLE,
                                         "the cluster's database did not take the job's row (%s): nothing was queued; retry",
                                         in->err));
        }
        else if (in->r < 0 && !c->closed)
                unavailable_because(c, &j->req, cl->writer.err);
        else if (in->r == 0)
                accepted(c, in->rj);
        else if (c->closed)
                ;
        else if (!streq(in->dup.digest, in->rj->req_digest))
                conn_send(c, proto_error(tag, E_CONFLICT,
                                         "field 'idempotency_key': job %s was submitted with this key and a different request",
                                         in->dup.id));
        else {
                conn_send(c, proto_ok(tag, json_pack("{s:s, s:s, s:b}", "job", in->dup.id, "state", in->dup.state, "duplicate", 1)));
                if (j->req.run.follow && subscribe_add_remote(c, &cl->waits, in->dup.id, W_FOLLOW, tag) &&
                    streq(in->dup.state, "done"))
                        cluster_deliver(cl, in->dup.id);
        }
        rjob_free(in->rj);
        free(in->accept);
        free(in->tenant);
        free(in->key);
        free(in);
        conn_unbusy(c);
}

int cluster_submit(struct conn *c, struct rjob *rj) {
        struct cluster *cl = c->d->cluster;
        struct job *j = &rj->j;
        struct insert *in = calloc(1, sizeof(*in));
        json_t *acc = in ? accept_record(rj) : NULL;
        if (in) {
                in->accept = acc ? json_dumps(acc, JSON_COMPACT) : NULL;
                in->tenant = strdup(j->tenant->name);
                in->key = j->req.run.idempotency_key ? strdup(j->req.run.idempotency_key) : NULL;
        }
        json_decref(acc);
        if (!in || !in->accept || !in->tenant || (j->req.run.idempotency_key && !in->key)) {
                conn_send(c, proto_error(j->req.tag, E_INTERNAL, "out of memory"));
                if (in) {
                        free(in->accept);
                        free(in->tenant);
                        free(in->key);
                }
                free(in);
                rjob_free(rj);
                return -1;
        }
        in->c = c;
        in->rj = rj;
        rj->cluster = true;
        in->retries = (unsigned) j->req.run.retries;
        snprintf(in->id, sizeof(in->id), "%s", j->id);
        snprintf(in->digest, sizeof(in->digest), "%s", rj->req_digest);
        in->w.run = insert_run;
        in->w.done = insert_done;
        conn_busy(c);
        list_add_tail(&cl->inserting, &in->link);
        cl->n_inserting++;
        cdb_writer_submit(&cl->writer, &in->w);
        return 0;
}

/* ---- queries of jobs this node does not hold ---- */

static json_t *summary(const struct cdb_job *j, json_t *rec) {
        if (streq(j->state, "done")) {
                json_t *ec = json_object_get(rec, "exit_code");
                return proto_summary_done(j->id, j->tenant, json_string_value(json_object_get(rec, "state")) ?: "done",
                                          j->created_ms, j->ended_ms, json_is_integer(ec) ? (int) json_integer_value(ec) : -1);
        }
        json_error_t je;
        json_t *acc = j->accept ? json_loads(j->accept, 0, &je) : NULL;
        json_t *cmd = json_array_get(json_object_get(acc, "command"), 0);
        json_t *o = proto_summary_live(j->id, j->tenant, j->state, j->created_ms, 0, json_string_value(cmd) ?: "?");
        json_decref(acc);
        if (o && j->node[0])
                json_object_set_new(o, "node", json_string(j->node));
        return o;
}

static void not_done(struct conn *c, const struct request *req, const struct cdb_job *j) {
        if (j->node[0])
                conn_send(c, proto_error(req->tag, E_NOT_DONE, "job %s is %s on node %s", j->id, j->state, j->node));
        else
                conn_send(c, proto_error(req->tag, E_NOT_DONE, "job %s is %s", j->id, j->state));
}

static void op_cancel(struct conn *c, const struct request *req, struct cdb_job *j) {
        struct daemon *d = c->d;
        struct cluster *cl = d->cluster;
        bool took = false;
        struct cdb_job t;
        if (streq(j->state, "done")) {
                json_error_t je;
                json_t *rec = j->record ? json_loads(j->record, 0, &je) : NULL;
                conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:s, s:b}", "job", j->id, "state",
                                                          json_string_value(json_object_get(rec, "state")) ?: "done",
                                                          "already_done", 1)));
                json_decref(rec);
                return;
        }
        int r = cdb_cancel(&cl->db, j->id, d->cfg->cluster_lease_ms, &took, &t);
        if (r == -ENOENT) {
                conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:s, s:b}", "job", j->id, "state", "done", "already_done", 1)));
                return;
        }
        if (r < 0) {
                unavailable(c, req);
                return;
        }
        audit_request(c, "cancel", "accepted", NULL, NULL, NULL, false);
        if (!took) {
                conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:s, s:s}", "job", j->id, "state", "stopping", "node", j->node)));
                return;
        }
        /* Queued: taken by this node, and ended cancelled here. */
        json_error_t je;
        json_t *acc = t.accept ? json_loads(t.accept, 0, &je) : NULL;
        struct rjob *rj = acc ? recover_claim(d, acc, t.attempt, NULL, NULL) : NULL;
        json_decref(acc);
        cdb_job_free(&t);
        if (!rj) {
                conn_send(c, proto_error(req->tag, E_INTERNAL, "job %s: cannot be rebuilt from its row to be cancelled", j->id));
                return;
        }
        if (rj->j.state == JOB_QUEUED || rj->j.state == JOB_FETCHING) {
                sched_remove_queued(&d->sched, &rj->j);
                job_transition(&rj->j, JEV_CANCEL, NULL);
                runner_end(rj);
        }
        /* told once its record is durable, in the database too (commit.c) */
        commit_hold(d, &c->holder);
        conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:s}", "job", rj->j.id, "state", job_outcome_name(rj->j.outcome))));
}

/* A callback's state: this node's own knowledge when it delivers it (its
 * attempts and last error), else the database's, with the node that
 * delivers it. */
static json_t *callback_state(struct cluster *cl, const char *id, json_t *cbm) {
        char state[16], node[CDB_NODE_MAX];
        if (cdb_cb_state(&cl->db, id, state, node) < 0 || streq(node, cl->d->cfg->cluster_node))
                return callbacks_state(&cl->d->cb, id, cbm);
        return json_pack("{s:s, s:O, s:O, s:s, s:s}", "job", id, "delivery", json_object_get(cbm, "delivery") ?: json_null(), "url",
                         json_object_get(cbm, "url") ?: json_null(), "state", state, "node", node);
}

/* logs and download read the files of the node that ran the job: this one
 * serves them as a daemon alone does (dispatch.c); another sends the
 * client there, by name and, when that node advertises its HTTP API, by
 * address (the HTTP API answers 307 to it). */
static void other_node(struct conn *c, const struct request *req, const struct cdb_job *j, bool done) {
        struct cluster *cl = c->d->cluster;
        if (!j->node[0]) {
                conn_send(c, proto_error(req->tag, E_NOT_DONE, "job %s has not started yet: no node keeps its output", j->id));
                return;
        }
        char what[160];
        snprintf(what, sizeof(what), "job %s %s node %s, which keeps its output and artifacts", j->id, done ? "ran on" : "runs on",
                 j->node);
        conn_send(c, cluster_other_node(cl, req->tag, j->node, what, " (the start of its output is in its result: sbxctl wait)"));
}

json_t *cluster_other_node(struct cluster *cl, json_t *tag, const char *node, const char *what, const char *after) {
        char url[CDB_URL_MAX];
        /* as [cluster] advertise takes it: a row changed by hand sends no
         * client elsewhere, nor anything into a Location header */
        bool known = cdb_node_url(&cl->db, node, url) == 0 && !config_cluster_advertise_why(url);
        json_t *o = proto_error(tag, E_OTHER_NODE, "%s: ask that node%s%s%s", what, known ? ", at " : "", known ? url : "", after);
        json_t *e = json_object_get(o, "error");
        json_object_set_new(e, "node", json_string(node));
        if (known)
                json_object_set_new(e, "api", json_string(url));
        return o;
}

void cluster_op_job(struct conn *c, const struct request *req) {
        struct cluster *cl = c->d->cluster;
        struct cdb_job j;
        int r = cdb_get(&cl->db, req->job, &j);
        if (r == -EAGAIN || r == -EIO) {
                unavailable(c, req);
                return;
        }
        if (r < 0 || !streq(j.tenant, c->tenant->name)) {
                if (r == 0)
                        cdb_job_free(&j);
                conn_send(c, proto_error(req->tag, E_NOT_FOUND, "no job %s", req->job));
                return;
        }
        json_error_t je;
        json_t *rec = j.record ? json_loads(j.record, 0, &je) : NULL;
        bool done = streq(j.state, "done") && rec;
        switch (req->op) {
        case REQ_STATUS:
                conn_send(c, proto_ok(req->tag, json_pack("{s:o}", "job", summary(&j, rec))));
                break;
        case REQ_RESULT:
        case REQ_WAIT:
                if (done) {
                        json_t *ok = json_pack("{s:s, s:O}", "job", j.id, "result", rec);
                        json_t *cbm = json_object_get(rec, "callback");
                        if (ok && json_is_object(cbm))
                                json_object_set_new(ok, "callback", callback_state(cl, j.id, cbm));
                        conn_send(c, proto_ok(req->tag, ok));
                } else if (req->op == REQ_RESULT)
                        not_done(c, req, &j);
                else
                        subscribe_add_remote(c, &cl->waits, j.id, W_WAIT, req->tag);
                break;
        case REQ_CANCEL:
                op_cancel(c, req, &j);
                break;
        default:
                other_node(c, req, &j, done);
                break;
        }
        json_decref(rec);
        cdb_job_free(&j);
}

struct list_acc {
        json_t *arr;
        const char *filter;
};

static void list_one(void *arg, const struct cdb_job *j) {
        struct list_acc *a = arg;
        bool live = !j->ended_ms;
        if (!job_state_filter_matches(a->filter, j->state, live))
                return;
        json_t *o = live ? summary(j, NULL)
                         : proto_summary_done(j->id, j->tenant, j->state, j->created_ms, j->ended_ms, j->exit_code);
        json_array_append_new(a->arr, o);
}

void cluster_op_list(struct conn *c, struct request *req) {
        struct cluster *cl = c->d->cluster;
        struct list_acc a = { .arr = json_array(), .filter = req->state };
        /* a filter may drop rows: ask for more, and cut to the limit */
        int r = cdb_list(&cl->db, c->tenant->name, (unsigned) (req->state ? PROTO_MAX_LIST : req->limit), list_one, &a);
        if (r < 0) {
                json_decref(a.arr);
                unavailable(c, req);
                return;
        }
        while (json_array_size(a.arr) > req->limit)
                json_array_remove(a.arr, json_array_size(a.arr) - 1);
        conn_send(c, proto_ok(req->tag, json_pack("{s:o}", "jobs", a.arr)));
}

/* ---- nodes ---- */

static void node_one(void *arg, const struct cdb_node *n) {
        json_array_append_new(arg, json_pack("{s:s, s:s, s:i, s:i, s:b, s:f, s:o}", "node", n->name, "role", n->role, "max_jobs",
                                             (int) n->max_jobs, "running", (int) n->running, "draining", n->draining, "seen_s",
                                             n->seen_s, "started", proto_time(n->started_ms)));
}

void cluster_op_admin(struct conn *c, struct request *req) {
        struct daemon *d = c->d;
        struct cluster *cl = d->cluster;
        if (!cl) {
                conn_send(c, proto_error(req->tag, E_UNSUPPORTED, "%s: this daemon is not in cluster mode ([cluster] database)",
                                         req_op_name(req->op)));
                return;
        }
        cluster_ensure(cl);
        if (req->op == REQ_NODES) {
                json_t *arr = json_array();
                if (cdb_nodes(&cl->db, node_one, arr) < 0) {
                        json_decref(arr);
                        unavailable(c, req);
                        return;
                }
                conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:o}", "this", d->cfg->cluster_node, "nodes", arr)));
                return;
        }
        const char *node = req->name ? req->name : d->cfg->cluster_node;
        int r = cdb_drain(&cl->db, node, !req->undo);
        if (r == -ENOENT) {
                conn_send(c, proto_error(req->tag, E_NOT_FOUND, "no node %s in the cluster", node));
                return;
        }
        if (r < 0) {
                unavailable(c, req);
                return;
        }
        audit_request(c, "drain", "accepted", NULL, NULL, NULL, false);
        /* (the node itself hears it at once: sbx_drain) */
        if (streq(node, d->cfg->cluster_node))
                cluster_set_draining(cl, !req->undo);
        conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:b}", "node", node, "draining", !req->undo)));
}
