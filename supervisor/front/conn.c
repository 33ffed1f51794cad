/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "audit.h"
#include "conn.h"
#include "daemon.h"
#include "dispatch.h"
#include "log.h"
#include "paced.h"
#include "proto.h"
#include "subscribe.h"

#define READ_CHUNK 65536
/* Lines read from one client per wake-up, for fairness between clients. */
#define READ_ROUNDS 64

int conns_init(struct conns *cs, const struct config *cfg) {
        list_init(&cs->all);
        cs->n = 0;
        cs->in_bytes = 0;
        cs->slots = NULL;
        cs->n_slots = 0;
        return conns_grow(cs, cfg->n_slots);
}

int conns_grow(struct conns *cs, size_t n_slots) {
        if (n_slots <= cs->n_slots)
                return 0;
        /* each slot's own allocation: connections point into it */
        struct conn_tenant **n = realloc(cs->slots, n_slots * sizeof(*n));
        if (!n)
                return -ENOMEM;
        cs->slots = n;
        for (; cs->n_slots < n_slots; cs->n_slots++) {
                struct conn_tenant *t = calloc(1, sizeof(*t));
                if (!t)
                        return -ENOMEM;
                paced_share_init(&t->share);
                n[cs->n_slots] = t;
        }
        return 0;
}

void conns_done(struct conns *cs) {
        for (size_t i = 0; i < cs->n_slots; i++)
                free(cs->slots[i]);
        free(cs->slots);
        cs->slots = NULL;
        cs->n_slots = 0;
}

static struct conn_tenant *slot_of(struct conns *cs, const struct tenant *t) {
        if (!t || !cs->n_slots)
                return NULL;
        return cs->slots[t->slot < cs->n_slots ? t->slot : 0];
}

unsigned *conns_of_tenant(struct conns *cs, const struct tenant *t) {
        struct conn_tenant *x = slot_of(cs, t);
        return x ? &x->count : NULL;
}

struct paced_share *conns_share_of_tenant(struct conns *cs, const struct tenant *t) {
        struct conn_tenant *x = slot_of(cs, t);
        return x ? &x->share : NULL;
}

/* Buffer memory of unfinished requests is counted over all clients. */
static void set_in_cap(struct conn *c, size_t cap) {
        c->d->conns.in_bytes = c->d->conns.in_bytes - c->in_cap + cap;
        c->in_cap = cap;
}

static void conn_free(void *p) {
        struct conn *c = p;
        if (c->closed)
                c->d->conns.closing--;
        set_in_cap(c, 0);
        free(c->in);
        free(c->out);
        free(c);
}

void conn_ref(struct conn *c) {
        c->refs++;
}

void conn_unref(struct conn *c) {
        if (--c->refs == 0)
                /* Events of this loop turn may still name it. */
                loop_defer_free(conn_free, c);
}

size_t conn_backlog(const struct conn *c) {
        return c->out_len - c->out_off;
}

bool conn_lagging(const struct conn *c) {
        return conn_backlog(c) > c->d->cfg->client_buffer / 2;
}

static bool reply_unsent(const struct conn *c);

/* A request is being served, or its reply's bytes are still queued: the
 * next request waits (in the socket, where it costs the daemon nothing). */
static bool replying(const struct conn *c) {
        return c->busy || reply_unsent(c) || c->handing_off;
}

static void update_events(struct conn *c) {
        /* While replying, not even the peer's half-close is asked for: it
         * would be reported again and again, unread, for as long as the
         * client leaves its reply unread (a hang-up is always reported). */
        uint32_t ev = replying(c) ? 0 : EPOLLRDHUP;
        if (!c->read_eof && !conn_lagging(c) && !replying(c))
                ev |= EPOLLIN;
        if ((conn_backlog(c) || c->on_drained) && !c->holds)
                ev |= EPOLLOUT;
        if (ev != c->events) {
                c->events = ev;
                loop_mod(&c->src, ev);
        }
}

/* The client finished sending and has everything it waits for: the
 * conversation is over. */
static bool finished(const struct conn *c) {
        return c->read_eof && !conn_backlog(c) && list_empty(&c->watches) && !c->busy && !c->holds;
}

static void conn_read(struct conn *c);

static bool reply_unsent(const struct conn *c) {
        return c->reply_end > c->sent_total;
}

static void flush(struct conn *c) {
        if (c->holds) {
                update_events(c);
                return;
        }
        bool had_reply = reply_unsent(c);
        while (c->out_off < c->out_len) {
                ssize_t n = send(c->src.fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        conn_close(c);
                        return;
                }
                c->out_off += (size_t) n;
                c->sent_total += (uint64_t) n;
        }
        /* Its last reply is out: the requests it sent meanwhile are read
         * now (lines already in the buffer raise no event). */
        if (had_reply && !reply_unsent(c) && !c->busy && !c->reading) {
                conn_ref(c);
                conn_read(c);
                conn_unref(c);
                if (c->closed)
                        return;
        }
        if (c->out_off == c->out_len) {
                free(c->out);
                c->out = NULL;
                c->out_len = c->out_off = 0;
                if (finished(c)) {
                        conn_close(c);
                        return;
                }
        }
        if (!c->closed)
                update_events(c);
}

void conn_when_room(struct conn *c, void (*cb)(struct conn *c), void *arg) {
        c->on_drained = cb;
        c->drain_arg = arg;
        if (c->closed) {
                c->on_drained = NULL;
                cb(c);
                return;
        }
        update_events(c);
}

/* Room for n more bytes, or the client is dropped. */
static bool room(struct conn *c, size_t n) {
        if (c->closed)
                return false;
        if (conn_backlog(c) + n > c->d->cfg->client_buffer) {
                /* A client that does not read its messages would make us
                 * hold unbounded output; it is dropped, the jobs go on. */
                log_warning("client uid %u: more than %" PRIu64 " bytes unread, disconnecting", (unsigned) c->cred.uid,
                            c->d->cfg->client_buffer);
                conn_close(c);
                return false;
        }
        /* Sent bytes are dropped from the front once they are half the
         * buffer: amortised, never a copy of the backlog per message. */
        if (c->out_off > 0 && c->out_off >= c->out_len / 2) {
                memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
                c->out_len -= c->out_off;
                c->out_off = 0;
        }
        char *nb = realloc(c->out, c->out_len + n);
        if (!nb) {
                conn_close(c);
                return false;
        }
        c->out = nb;
        return true;
}

void conn_send_raw(struct conn *c, const char *buf, size_t n) {
        if (!room(c, n))
                return;
        memcpy(c->out + c->out_len, buf, n);
        c->out_len += n;
        c->queued_total += n;
        flush(c);
}

void conn_send_reply(struct conn *c, char *buf, size_t n) {
        if (c->closed) {
                free(buf);
                return;
        }
        if (!c->out) {
                /* Nothing queued: the reply is the buffer (no copy of a
                 * megabyte on the event loop). */
                c->out = buf;
                c->out_len = n;
                c->out_off = 0;
        } else {
                bool ok = room(c, n);
                if (ok)
                        memcpy(c->out + c->out_len, buf, n);
                free(buf);
                if (!ok)
                        return;
                c->out_len += n;
        }
        c->queued_total += n;
        c->reply_end = c->queued_total;
        flush(c);
}

void conn_send(struct conn *c, json_t *msg) {
        if (!msg || c->closed) {
                json_decref(msg);
                return;
        }
        size_t n;
        _cleanup_free_ char *s = json_line(msg, &n);
        json_decref(msg);
        if (!s) {
                conn_close(c);
                return;
        }
        conn_send_raw(c, s, n);
}

void conn_hold(struct conn *c) {
        if (c->holds++ == 0)
                conn_ref(c);
}

void conn_release(struct conn *c) {
        if (--c->holds == 0) {
                if (!c->closed)
                        flush(c);
                conn_unref(c);
        }
}

void conn_busy(struct conn *c) {
        if (c->busy++ == 0)
                conn_ref(c);
        if (!c->closed)
                update_events(c);
}

void conn_unbusy(struct conn *c) {
        if (--c->busy > 0)
                return;
        if (!c->closed) {
                /* Lines that arrived meanwhile wait in the buffer. */
                conn_read(c);
                if (!c->closed)
                        flush(c);
        }
        conn_unref(c);
}

static void conn_end(struct conn *c, bool close_fd);

void conn_close(struct conn *c) {
        conn_end(c, true);
}

void conn_hand_off(struct conn *c, void (*cb)(struct conn *c), void *arg) {
        c->handing_off = true;
        conn_when_room(c, cb, arg);
}

int conn_detach(struct conn *c, char **ret_extra, size_t *ret_len) {
        *ret_extra = NULL;
        *ret_len = 0;
        if (c->closed)
                return -1;
        int fd = c->src.fd;
        if (c->in_len) {
                *ret_extra = c->in;
                *ret_len = c->in_len;
                c->in = NULL;
                set_in_cap(c, 0);
                c->in_len = 0;
        }
        conn_end(c, false);
        return fd;
}

static void conn_end(struct conn *c, bool close_fd) {
        if (c->closed)
                return;
        c->closed = true;
        c->d->conns.closing++;
        subscribe_conn_closed(c);
        /* Whoever waited for the client to read on is told it never will. */
        if (c->on_drained) {
                void (*cb)(struct conn *) = c->on_drained;
                c->on_drained = NULL;
                cb(c);
        }
        loop_del(&c->src);
        if (close_fd)
                close(c->src.fd);
        list_del(&c->link);
        c->d->conns.n--;
        if (c->tenant_count)
                (*c->tenant_count)--;
        conn_unref(c);
}

void conns_close_all(struct conns *cs) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cs->all)
                conn_close(list_entry(pos, struct conn, link));
}

/* Hand complete lines to the dispatcher, one at a time: a line that is
 * served off the loop makes the connection busy, and the rest waits. */
static void take_lines(struct conn *c, size_t *scan_from) {
        size_t consumed = 0;
        for (size_t i = *scan_from; i < c->in_len && !c->closed && !replying(c); i++) {
                if (c->in[i] != '\n')
                        continue;
                if (c->discarding)
                        c->discarding = false;
                else
                        dispatch_line(c, c->in + consumed, i - consumed);
                consumed = i + 1;
        }
        if (c->closed)
                return;
        if (consumed > 0) {
                memmove(c->in, c->in + consumed, c->in_len - consumed);
                c->in_len -= consumed;
        }
        *scan_from = replying(c) ? c->in_len : 0;
}

static int grow_in(struct conn *c, size_t max) {
        if (c->in_cap - c->in_len >= READ_CHUNK)
                return 0;
        /* Doubling keeps a long line linear to read; the line limit bounds
         * it (max_request + one chunk). */
        size_t nc = c->in_cap ? c->in_cap * 2 : READ_CHUNK;
        if (nc < c->in_len + READ_CHUNK)
                nc = c->in_len + READ_CHUNK;
        if (nc > max + READ_CHUNK && c->in_len + READ_CHUNK <= max + READ_CHUNK)
                nc = max + READ_CHUNK;
        /* Many clients each sending half of a long line would hold that
         * much memory: beyond the first chunk, every client's unfinished
         * lines share one budget. */
        if (nc > READ_CHUNK && c->d->conns.in_bytes - c->in_cap + nc > c->d->cfg->request_memory)
                return -ENOBUFS;
        char *nb = realloc(c->in, nc);
        if (!nb)
                return -ENOMEM;
        c->in = nb;
        set_in_cap(c, nc);
        return 0;
}

static void conn_read(struct conn *c) {
        size_t max = (size_t) c->d->cfg->max_request, scan = 0;
        c->reading = true;
        /* Lines already buffered first (after a busy request). */
        take_lines(c, &scan);
        for (int rounds = 0; rounds < READ_ROUNDS && !c->closed && !c->read_eof && !replying(c); rounds++) {
                /* Stop taking requests while a client ignores the answers. */
                if (conn_lagging(c))
                        break;
                int r = grow_in(c, max);
                if (r == -ENOBUFS) {
                        log_warning("client uid %u: request memory (request_memory, %" PRIu64 " bytes) is taken by "
                                    "unfinished requests; disconnecting it",
                                    (unsigned) c->cred.uid, c->d->cfg->request_memory);
                        conn_send(c, proto_error(NULL, E_BUSY, "the daemon holds too many unfinished requests; retry later"));
                        conn_close(c);
                        return;
                }
                if (r < 0) {
                        conn_close(c);
                        return;
                }
                ssize_t n = recv(c->src.fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                conn_close(c);
                        break;
                }
                if (n == 0) {
                        /* Half a line and then EOF is dropped, not run. */
                        c->read_eof = true;
                        c->in_len = 0;
                        break;
                }
                scan = c->in_len;
                c->in_len += (size_t) n;
                take_lines(c, &scan);
                if (c->closed)
                        return;
                if (c->discarding)
                        c->in_len = 0;
                else if (c->in_len > max && !replying(c)) {
                        conn_send(c, proto_error(NULL, E_BAD_REQUEST, "request line longer than %zu bytes (max_request)", max));
                        c->discarding = true;
                        c->in_len = 0;
                }
        }
        c->reading = false;
        if (c->closed)
                return;
        /* Lines waiting for a reply to be read are not late: the daemon
         * is not reading them. */
        if ((c->in_len > 0 || c->discarding) && !replying(c)) {
                if (!c->partial_since_ms)
                        c->partial_since_ms = now_mono_ms();
        } else
                c->partial_since_ms = 0;
        /* Idle clients hold no buffer (one still sending an oversized line
         * keeps it: no allocation per wake-up while it is skipped). */
        if (c->in_len == 0 && c->in_cap > 0 && !c->discarding) {
                free(c->in);
                c->in = NULL;
                set_in_cap(c, 0);
        } else if (replying(c) && c->in_cap > c->in_len && !c->discarding) {
                /* Pipelined requests waiting for a reply to be read keep
                 * what they take, not a read chunk each. */
                char *nb = realloc(c->in, c->in_len);
                if (nb) {
                        c->in = nb;
                        set_in_cap(c, c->in_len);
                }
        }
        flush(c);
}

static void on_conn(struct source *s, uint32_t events) {
        struct conn *c = container_of(s, struct conn, src);
        conn_ref(c);
        if (events & EPOLLOUT)
                flush(c);
        if (!c->closed && (events & EPOLLOUT) && c->on_drained && !conn_backlog(c)) {
                void (*cb)(struct conn *) = c->on_drained;
                c->on_drained = NULL;
                cb(c);
                if (!c->closed)
                        update_events(c);
        }
        if (!c->closed && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)))
                conn_read(c);
        if (!c->closed && (events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN))
                conn_close(c);
        conn_unref(c);
}

static void holder_hold(struct commit_holder *h) {
        conn_hold(container_of(h, struct conn, holder));
}

static void holder_release(struct commit_holder *h) {
        conn_release(container_of(h, struct conn, holder));
}

struct conn *conn_new(struct daemon *d, int fd, const struct ucred *cred) {
        struct conn *c = calloc(1, sizeof(*c));
        if (!c)
                return NULL;
        c->d = d;
        c->holder = (struct commit_holder) { .hold = holder_hold, .release = holder_release };
        c->cred = *cred;
        c->refs = 1; /* the daemon's list's */
        list_init(&c->watches);
        if (loop_add(&c->src, fd, EPOLLIN | EPOLLRDHUP, on_conn) < 0) {
                free(c);
                return NULL;
        }
        c->events = EPOLLIN | EPOLLRDHUP;
        list_add_tail(&d->conns.all, &c->link);
        d->conns.n++;
        return c;
}

/* Slow-loris: a request line must be finished within request_timeout, or
 * the client is told and disconnected; idle clients between requests may
 * stay as long as they like. */
void conns_expire_partial(struct conns *cs, uint64_t now_ms, uint64_t timeout_ms) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &cs->all) {
                struct conn *c = list_entry(pos, struct conn, link);
                if (c->closed || replying(c) || !c->partial_since_ms || now_ms - c->partial_since_ms < timeout_ms)
                        continue;
                log_warning("client uid %u: request not finished within %" PRIu64 " ms, disconnecting", (unsigned) c->cred.uid,
                            timeout_ms);
                conn_send(c, proto_error(NULL, E_BAD_REQUEST, "request not finished within %" PRIu64 " ms (request_timeout)",
                                         timeout_ms));
                conn_close(c);
        }
}

void audit_request(const struct conn *c, const char *op, const char *decision, const struct job *job, const char *code,
                   const char *msg, bool refusal) {
        struct audit_who who = {
                .uid = c->cred.uid,
                .pid = c->cred.pid,
                .tenant = c->tenant ? c->tenant->name : NULL,
                .token = c->token ? c->token->name : NULL,
                .peer = c->peer,
        };
        audit_request_by(&who, op, decision, job, code, msg, refusal);
}
