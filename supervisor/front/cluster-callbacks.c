/* SPDX-License-Identifier: Apache-2.0 */
/* Callbacks in cluster mode (sbx-supervisord(8), RUNNING MANY NODES): a
 * job's callback is a row written with its result. The node that ran the
 * job delivers it from its outbox, as a node alone does, and the row
 * hears how it settled; when that node's heartbeat has stopped for a
 * lease, another node takes the row over, keeps it in its own outbox and
 * delivers it with the same delivery id. The node that comes back hears
 * which it lost and drops them. Deliveries stay at least once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callbacks.h"
#include "cluster-internal.h"
#include "daemon.h"
#include "db.h"
#include "log.h"
#include "outbox.h"

/* Settled deliveries wait here for the next tick: at most this many (the
 * oldest are forgotten past it; their rows stay pending, which costs a
 * second delivery only if this node stops). */
#define SETTLE_MAX 4096
/* Rows taken over at a tick. */
#define ADOPT_MAX 64

static void settle_add(struct cluster *cl, const char *job, const char *state) {
        if (cl->n_settle == SETTLE_MAX) {
                memmove(cl->settle, cl->settle + 1, (SETTLE_MAX - 1) * sizeof(*cl->settle));
                cl->n_settle--;
        }
        if (cl->n_settle == cl->cap_settle) {
                size_t cap = cl->cap_settle ? cl->cap_settle * 2 : 32;
                struct cl_settle *m = realloc(cl->settle, cap * sizeof(*m));
                if (!m)
                        return;
                cl->settle = m;
                cl->cap_settle = cap;
        }
        struct cl_settle *s = &cl->settle[cl->n_settle++];
        snprintf(s->job, sizeof(s->job), "%s", job);
        snprintf(s->state, sizeof(s->state), "%s", state);
}

static void on_settled(void *arg, const char *job, const char *state) {
        settle_add(arg, job, state);
}

void cluster_cb_start(struct cluster *cl) {
        cl->d->cb.settled_arg = cl;
        cl->d->cb.settled = on_settled;
}

void cluster_cb_stop(struct cluster *cl) {
        cl->d->cb.settled = NULL;
        free(cl->settle);
        cl->settle = NULL;
        cl->n_settle = cl->cap_settle = 0;
}

void cluster_cb_flush(struct cluster *cl) {
        size_t n = cl->n_settle;
        if (!n || !cdb_up(&cl->db))
                return;
        const char **jobs = calloc(n, sizeof(*jobs)), **states = calloc(n, sizeof(*states));
        if (jobs && states) {
                for (size_t i = 0; i < n; i++) {
                        jobs[i] = cl->settle[i].job;
                        states[i] = cl->settle[i].state;
                }
                if (cdb_cb_settle(&cl->db, jobs, states, n) == 0)
                        cl->n_settle = 0;
        }
        free(jobs);
        free(states);
}

static void on_adopt(void *arg, const char *job, const char *was, const char *entry) {
        struct cluster *cl = arg;
        struct daemon *d = cl->d;
        struct outbox_entry e;
        size_t len = strlen(entry);
        if (outbox_entry_parse(entry, len, &e) < 0) {
                log_error("cluster: the callback of job %s taken over from node %s is not a whole outbox entry: recorded dead",
                          job, was);
                settle_add(cl, job, "dead");
                return;
        }
        if (!streq(e.job, job)) {
                log_error("cluster: the callback row of job %s holds job %s's entry: recorded dead", job, e.job);
                outbox_entry_free(&e);
                settle_add(cl, job, "dead");
                return;
        }
        char delivery[OUTBOX_DELIVERY_LEN + 1];
        snprintf(delivery, sizeof(delivery), "%s", e.delivery);
        int r = callbacks_adopt(&d->cb, &e, entry, len);
        if (r < 0)
                log_error("cluster: callback of job %s taken over from node %s: callbacks/outbox/%s.json: %s; delivered from "
                          "memory only (a restart of this node before then leaves it pending in the database)",
                          job, was, job, strerror(-r));
        else
                log_notice("cluster: callback of job %s (delivery %s) taken over from node %s, whose heartbeat stopped", job,
                           delivery, was);
        cl->cb_adopted++;
}

void cluster_cb_adopt(struct cluster *cl) {
        cdb_cb_adopt(&cl->db, cl->d->cfg->cluster_lease_ms, ADOPT_MAX, on_adopt, cl);
}

static void on_taken(void *arg, const char *job, const char *by) {
        struct cluster *cl = arg;
        bool gone = callbacks_forget(&cl->d->cb, job);
        log_notice("cluster: callback of job %s was taken over by node %s while this node was away: %s", job, by,
                   gone ? "not delivered here" : "it may be delivered twice (deliveries are at least once)");
}

void cluster_cb_taken(struct cluster *cl) {
        cdb_cb_taken(&cl->db, on_taken, cl);
}
