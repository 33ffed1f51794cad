/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "jobevents.h"
#include "jobs.h"
#include "proto.h"
#include "subscribe.h"

bool subscribe_room(struct conn *c, json_t *tag) {
        if (c->n_watches < SUBSCRIBE_MAX_PER_CONN)
                return true;
        conn_send(c, proto_error(tag, E_LIMIT, "more than %d waits and follows on one connection", SUBSCRIBE_MAX_PER_CONN));
        return false;
}

/* A watch of c, on the list `on` (a job's, or cluster-ops.c's). */
static struct job_watch *watch_new(struct conn *c, struct list *on, enum watch_kind kind, unsigned streams, json_t *tag) {
        /* Bounded like everything a client controls. */
        if (!subscribe_room(c, tag))
                return NULL;
        struct job_watch *w = calloc(1, sizeof(*w));
        if (!w)
                return NULL;
        c->n_watches++;
        w->c = c;
        w->kind = kind;
        w->streams = streams;
        w->tag = tag ? json_incref(tag) : NULL;
        list_add_tail(on, &w->job_link);
        list_add_tail(&c->watches, &w->conn_link);
        return w;
}

struct job_watch *subscribe_add(struct conn *c, struct rjob *rj, enum watch_kind kind, unsigned streams, json_t *tag) {
        struct job_watch *w = watch_new(c, &rj->watches, kind, streams, tag);
        if (w)
                w->rj = rj;
        return w;
}

struct job_watch *subscribe_add_remote(struct conn *c, struct list *on, const char *job, enum watch_kind kind, json_t *tag) {
        struct job_watch *w = watch_new(c, on, kind, STREAM_BOTH, tag);
        if (w)
                snprintf(w->job, sizeof(w->job), "%s", job);
        return w;
}

static void watch_free(struct job_watch *w) {
        list_del(&w->job_link);
        list_del(&w->conn_link);
        w->c->n_watches--;
        json_decref(w->tag);
        free(w);
}

void subscribe_conn_closed(struct conn *c) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &c->watches)
                watch_free(list_entry(pos, struct job_watch, conn_link));
}

static void send_lagged(struct job_watch *w) {
        for (int i = 0; i < 2; i++)
                if (w->skipped[i] && !w->c->closed) {
                        conn_send(w->c, proto_ev_lagged(w->rj->j.id, i, w->skipped[i]));
                        w->skipped[i] = 0;
                }
}

/* Sending may drop a client (a write error, a full buffer) and with it its
 * watches, so the recipients are collected first (with a reference each:
 * closed clients stay allocated until released). */
struct recipients {
        struct job_watch **w;
        size_t n;
};

static int collect(struct rjob *rj, unsigned stream, bool follow_only, struct recipients *r) {
        struct list *pos, *tmp;
        size_t n = 0;
        list_for_each_safe(pos, tmp, &rj->watches)
                n++;
        r->n = 0;
        r->w = n ? calloc(n, sizeof(*r->w)) : NULL;
        if (n && !r->w)
                return -1;
        list_for_each_safe(pos, tmp, &rj->watches) {
                struct job_watch *w = list_entry(pos, struct job_watch, job_link);
                if (follow_only && (w->kind != W_FOLLOW || (stream && !(w->streams & stream))))
                        continue;
                conn_ref(w->c);
                r->w[r->n++] = w;
        }
        return 0;
}

void subscribe_event(struct rjob *rj, json_t *ev, unsigned stream, size_t len) {
        struct recipients r;
        if (!ev || list_empty(&rj->watches) || collect(rj, stream, true, &r) < 0) {
                json_decref(ev);
                return;
        }
        /* Each watch is looked at only while its client is open: closing
         * a client freed its watches. */
        struct conn **cs = calloc(r.n ? r.n : 1, sizeof(*cs));
        for (size_t i = 0; cs && i < r.n; i++)
                cs[i] = r.w[i]->c;
        for (size_t i = 0; cs && i < r.n; i++) {
                struct conn *c = cs[i];
                if (c->closed)
                        continue;
                struct job_watch *w = r.w[i];
                if (stream) {
                        int s = stream == STREAM_STDOUT ? 0 : 1;
                        if (conn_lagging(c)) {
                                w->skipped[s] += len;
                                continue;
                        }
                        send_lagged(w);
                        if (c->closed)
                                continue;
                }
                conn_send(c, json_incref(ev));
        }
        for (size_t i = 0; i < r.n; i++)
                conn_unref(cs ? cs[i] : r.w[i]->c);
        free(cs);
        free(r.w);
        json_decref(ev);
}

/* What the cluster's database kept of a job's output (cluster-ops.c). */
struct kept_output {
        const char *data[2];
        size_t len[2];
};

/* Tell one watch its job's end (rec) or failure (code and msg), and drop
 * it: a follower first gets what it missed while lagging, or (out) the
 * output kept for a job another node ran. The watch is unlinked before its
 * messages go out: sending may drop the client and its watches. */
static void tell_watch(struct job_watch *w, const char *job, json_t *rec, const char *code, const char *msg,
                       const struct kept_output *out) {
        struct conn *c = w->c;
        enum watch_kind kind = w->kind;
        json_t *tag = w->tag ? json_incref(w->tag) : NULL;
        conn_ref(c);
        if (kind == W_FOLLOW && w->rj)
                send_lagged(w);
        if (!c->closed) {
                watch_free(w);
                for (int i = 0; out && kind == W_FOLLOW && i < 2; i++)
                        if (out->len[i] && !c->closed)
                                conn_send(c, proto_ev_output(job, i, out->data[i], out->len[i]));
                if (!c->closed && code)
                        conn_send(c, kind == W_WAIT ? proto_error(tag, code, "%s", msg) : proto_ev_error(job, code, msg));
                else if (!c->closed && kind == W_WAIT)
                        conn_send(c, proto_ok(tag, json_pack("{s:s, s:O}", "job", job, "result", rec ? rec : json_null())));
                else if (!c->closed)
                        conn_send(c, proto_ev_end(job, rec));
                /* The client finished sending and has everything
                 * it waits for: the conversation is over. */
                if (!c->closed && c->read_eof && !conn_backlog(c) && list_empty(&c->watches) && !c->busy)
                        conn_close(c);
        }
        json_decref(tag);
        conn_unref(c);
}

static void tell_all(struct rjob *rj, json_t *rec, const char *code, const char *msg) {
        while (!list_empty(&rj->watches))
                tell_watch(list_entry(rj->watches.next, struct job_watch, job_link), rj->j.id, rec, code, msg, NULL);
}

/* The watches of job on `from` move to `to` (of rj, or of none). */
static void move_watches(struct list *from, const char *job, struct list *to, struct rjob *rj) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, from) {
                struct job_watch *w = list_entry(pos, struct job_watch, job_link);
                if (!streq(w->job, job))
                        continue;
                list_del(&w->job_link);
                list_add_tail(to, &w->job_link);
                w->rj = rj;
        }
}

void subscribe_remote_end(struct list *on, const char *job, json_t *rec, const char *out, size_t out_len, const char *err,
                          size_t err_len) {
        struct list mine = LIST_INIT(mine);
        const struct kept_output kept = { { out, err }, { out_len, err_len } };
        move_watches(on, job, &mine, NULL);
        while (!list_empty(&mine))
                tell_watch(list_entry(mine.next, struct job_watch, job_link), job, rec, NULL, NULL, &kept);
}

void subscribe_adopt_remote(struct list *on, const char *job, struct rjob *rj) {
        move_watches(on, job, &rj->watches, rj);
}

void subscribe_release_remote(struct rjob *rj, struct list *on) {
        while (!list_empty(&rj->watches)) {
                struct job_watch *w = list_entry(rj->watches.next, struct job_watch, job_link);
                list_del(&w->job_link);
                list_add_tail(on, &w->job_link);
                snprintf(w->job, sizeof(w->job), "%s", rj->j.id);
                w->rj = NULL;
        }
}

void subscribe_end(struct rjob *rj, json_t *rec) {
        tell_all(rj, rec, NULL, NULL);
}

void subscribe_fail(struct rjob *rj, const char *code, const char *msg) {
        tell_all(rj, NULL, code, msg);
}

static void on_event(struct rjob *rj, json_t *ev, unsigned stream, size_t len) {
        subscribe_event(rj, json_incref(ev), stream, len);
}

const struct job_listener subscribe_listener = {
        .event = on_event,
        .end = subscribe_end,
        .fail = subscribe_fail,
};
