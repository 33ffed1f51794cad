/* SPDX-License-Identifier: Apache-2.0 */
/* Sessions in cluster mode (sbx-supervisord(8) RUNNING MANY NODES): a
 * session lives on the node that created it, where its sandbox, agent and
 * workspace are; a row in the database says which node, so that another
 * node sends the session's requests there (E_OTHER_NODE naming it, and
 * over the HTTP API a redirect). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster-internal.h"
#include "cluster-ops.h"
#include "conn.h"
#include "daemon.h"
#include "jobevents.h"
#include "log.h"
#include "session.h"
#include "tenant.h"

/* A session's row on its way to the database (the writer's thread). */
struct sess_write {
        struct cdb_write w;
        struct conn *c;        /* held until the row is in: the create's reply */
        bool end;
        char id[PROTO_SESSION_ID_LEN + 1];
        char why[32];
        char *tenant;
        int r;
};

static int sess_run(struct cdb *db, struct cdb_write *w) {
        struct sess_write *s = container_of(w, struct sess_write, w);
        s->r = s->end ? cdb_session_end(db, s->id, s->why) : cdb_session_add(db, s->id, s->tenant);
        return s->r;
}

static void sess_done(struct cdb_write *w, int r) {
        struct sess_write *s = container_of(w, struct sess_write, w);
        if (r == 0)
                r = s->r;
        if (r < 0 && r != -ECANCELED)
                log_warning("cluster: session %s: its %s could not be written to the database (%s): other nodes %s", s->id,
                            s->end ? "end" : "row", strerror(-r),
                            s->end ? "send its requests here still, and this node answers that it ended"
                                   : "answer that they know no such session");
        if (s->c)
                conn_release(s->c);
        free(s->tenant);
        free(s);
}

static void sess_write(struct cluster *cl, struct conn *c, const char *id, const char *tenant, const char *why) {
        struct sess_write *s = calloc(1, sizeof(*s));
        if (s && tenant && !(s->tenant = strdup(tenant))) {
                free(s);
                s = NULL;
        }
        if (!s) {
                log_warning("cluster: session %s: out of memory for its row in the database", id);
                return;
        }
        s->end = why != NULL;
        snprintf(s->id, sizeof(s->id), "%s", id);
        snprintf(s->why, sizeof(s->why), "%s", why ? why : "");
        if (c) {
                s->c = c;
                conn_hold(c);
        }
        s->w.run = sess_run;
        s->w.done = sess_done;
        cdb_writer_submit(&cl->writer, &s->w);
}

void cluster_session_created(struct conn *c, const struct rjob *box) {
        struct cluster *cl = c->d->cluster;
        if (cl)
                sess_write(cl, c, box->session_id, box->j.tenant->name, NULL);
}

/* The box of a session ended here: its row says so. */
static void box_gone(struct rjob *rj) {
        struct cluster *cl = rj->d->cluster;
        if (!cl || !rj->session_box || !rj->session_id[0] || rj->warm)
                return;
        sess_write(cl, NULL, rj->session_id, NULL, rjob_session_end(rj) ?: "crashed");
}

static void on_end(struct rjob *rj, json_t *rec) {
        (void) rec;
        box_gone(rj);
}

static void on_fail(struct rjob *rj, const char *code, const char *msg) {
        (void) code;
        (void) msg;
        box_gone(rj);
}

const struct job_listener cluster_session_listener = { .end = on_end, .fail = on_fail };

bool cluster_session_elsewhere(struct conn *c, const struct request *req) {
        struct daemon *d = c->d;
        struct cluster *cl = d->cluster;
        char node[CDB_NODE_MAX], why[32], when[40];
        uint64_t ended = 0;
        if (!cl || !req->session || !c->tenant)
                return false;
        cluster_ensure(cl);
        int r = cdb_session_where(&cl->db, req->session, c->tenant->name, node, &ended, why);
        if (r < 0)
                return false; /* this node's own answer stands */
        if (ended) {
                conn_send(c, proto_error(req->tag, E_SESSION_ENDED, "session %s ended at %s on node %s: %s", req->session,
                                         format_rfc3339(ended, when, sizeof(when)), node, why[0] ? why : "crashed"));
                return true;
        }
        if (streq(node, d->cfg->cluster_node))
                return false; /* its end not written: this node's answer */
        char what[96];
        snprintf(what, sizeof(what), "session %s lives on node %s", req->session, node);
        conn_send(c, cluster_other_node(cl, req->tag, node, what, ""));
        return true;
}
