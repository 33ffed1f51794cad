/* SPDX-License-Identifier: Apache-2.0 */
/* Replies sent in pieces as the client reads (paced.h). */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "paced.h"
#include "proto.h"
#include "util.h"
#include "worker.h"

void paced_share_init(struct paced_share *s) {
        memset(s, 0, sizeof(*s));
        list_init(&s->waiting);
}

void paced_init(struct paced *p, struct conn *c, const struct paced_ops *ops, const char *job) {
        p->c = c;
        p->ops = ops;
        p->job = job;
        list_init(&p->wait_link);
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

static void kick(struct paced_share *s) {
        /* done() of a step of a closed connection may end other replies
         * and kick again: the outer loop goes on instead. */
        if (s->kicking)
                return;
        s->kicking = true;
        while (!list_empty(&s->waiting)) {
                struct paced *p = list_entry(s->waiting.next, struct paced, wait_link);
                if (!p->c->closed && s->running >= PACED_RUNNING)
                        break;
                list_del(&p->wait_link);
                list_init(&p->wait_link);
                if (p->c->closed) {
                        /* Nobody to make it for: it ends as after a step. */
                        p->step_done(&p->work);
                        continue;
                }
                s->running++;
                worker_submit(&p->work);
        }
        s->kicking = false;
}

/* A step is back on the loop: the tenant's next one may start. */
static void step_done(struct work *w) {
        struct paced *p = container_of(w, struct paced, work);
        struct paced_share *s = p->c->share;
        s->running--;
        p->step_done(w);
        kick(s);
}

void paced_submit(struct paced *p, void (*run)(struct work *w), void (*done)(struct work *w)) {
        struct paced_share *s = p->c->share;
        p->work.run = run;
        p->work.done = step_done;
        p->step_done = done;
        list_add_tail(&s->waiting, &p->wait_link);
        kick(s);
}

static void run_piece(struct work *w) {
        struct paced *p = container_of(w, struct paced, work);
        p->ops->piece(p);
}

static void on_room(struct conn *c) {
        struct paced *p = c->drain_arg;
        paced_next(p);
}

void paced_continue(struct paced *p) {
        struct conn *c = p->c;
        if (c->closed || p->err < 0) {
                /* An error event inside a half-sent line would be taken for
                 * its bytes: the client hears of it by the hang-up. */
                if (!c->closed && p->mid_line)
                        conn_close(c);
                else if (!c->closed)
                        conn_send(c, proto_ev_error(p->job, E_INTERNAL, strerror(-p->err)));
                paced_finish(p);
                return;
        }
        size_t n = p->out_len;
        p->out_len = 0;
        if (n)
                conn_send_reply(c, TAKE_PTR(p->out), n);
        if (c->closed || p->end_sent || (p->ops->sent && p->ops->sent(p))) {
                paced_finish(p);
                return;
        }
        conn_when_room(c, on_room, p);
}

static void piece_done(struct work *w) {
        paced_continue(container_of(w, struct paced, work));
}

void paced_next(struct paced *p) {
        free(p->out);
        p->out = NULL;
        p->out_len = 0;
        paced_submit(p, run_piece, piece_done);
}
