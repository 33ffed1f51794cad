/* SPDX-License-Identifier: Apache-2.0 */
/* Replies sent in pieces as the client reads (paced.h). */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "paced.h"
#include "proto.h"
#include "util.h"
#include "worker.h"

void paced_init(struct paced *p, struct conn *c, const struct paced_ops *ops, const char *job) {
        p->c = c;
        p->ops = ops;
        p->job = job;
        conn_ref(c);
        conn_busy(c);
}

int paced_append(struct paced *p, json_t *msg) {
        return json_line_append(&p->out, &p->out_len, msg);
}

void paced_finish(struct paced *p) {
        struct conn *c = p->c;
        if (!c->closed)
                c->on_drained = NULL;
        conn_unbusy(c);
        conn_unref(c);
        free(p->out);
        p->out = NULL;
        p->ops->free(p);
}

static void run_piece(struct work *w) {
        struct paced *p = container_of(w, struct paced, work);
        p->ops->piece(p);
}

static void on_drained(struct conn *c) {
        struct paced *p = c->drain_arg;
        c->on_drained = NULL;
        paced_next(p);
}

static void piece_done(struct work *w) {
        struct paced *p = container_of(w, struct paced, work);
        struct conn *c = p->c;
        if (c->closed || p->err < 0) {
                if (!c->closed)
                        conn_send(c, proto_ev_error(p->job, E_INTERNAL, strerror(-p->err)));
                paced_finish(p);
                return;
        }
        if (p->out_len)
                conn_send_raw(c, p->out, p->out_len);
        if (c->closed || p->end_sent || (p->ops->sent && p->ops->sent(p))) {
                paced_finish(p);
                return;
        }
        /* The next piece only once the client has read half of what it
         * has not: its buffer is the bound on what is queued for it. */
        if (conn_lagging(c)) {
                c->drain_arg = p;
                c->on_drained = on_drained;
                return;
        }
        paced_next(p);
}

void paced_next(struct paced *p) {
        p->work.run = run_piece;
        p->work.done = piece_done;
        free(p->out);
        p->out = NULL;
        p->out_len = 0;
        worker_submit(&p->work);
}
