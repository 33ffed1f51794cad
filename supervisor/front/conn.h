/* SPDX-License-Identifier: Apache-2.0 */
/* One client connection: a bounded line reader (requests), an output
 * buffer with back-pressure (responses and events), and holds that keep
 * replies back until the group commit has made what they promise durable.
 *
 * A connection is freed when it is closed and nothing refers to it any
 * more: a batch holding its replies and work in flight for it each keep a
 * reference (conn_ref / conn_unref). While a request of the connection is
 * being served off the loop (conn_busy), no further request of it is read,
 * so responses keep the order of their requests; nor while the bytes of a
 * large reply (logs, download: conn_send_reply) are still queued, so that
 * requests pipelined on a connection that does not read its replies cost
 * the daemon nothing until it does. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "commit.h"
#include "conf.h"
#include "loop.h"
#include "paced.h"
#include "util.h"

struct daemon;
struct paced_share;

struct conn {
        struct source src;
        struct daemon *d;
        struct ucred cred;
        const struct tenant *tenant;
        bool anonymous;
        char *in;
        size_t in_len, in_cap;
        bool discarding;      /* skipping the rest of an oversized line */
        bool read_eof;
        char *out;
        size_t out_len, out_off;
        uint32_t events;
        struct list watches;  /* struct job_watch.conn_link */
        unsigned n_watches;
        struct list link;     /* in the daemon's list of connections */
        unsigned refs;
        unsigned holds;       /* batches whose sync this connection's output waits for */
        struct commit_holder holder; /* its replies held for the group commit (commit.h) */
        unsigned busy;        /* requests being served off the loop */
        uint64_t partial_since_ms; /* a request line started and not ended */
        unsigned *tenant_count;    /* its tenant's connection count, or NULL */
        struct paced_share *share; /* its tenant's replies (paced.h), or NULL */
        uint64_t queued_total;     /* bytes ever queued */
        uint64_t sent_total;       /* bytes ever sent */
        uint64_t reply_end;        /* queued_total after the last reply's bytes */
        bool reading;              /* in conn_read() */
        bool closed;
        void (*on_drained)(struct conn *c); /* all output is out and the socket has room (conn_when_room) */
        void *drain_arg;
        bool handing_off;          /* conn_hand_off(): no request is read any more */
        const struct http_token *token; /* a request of the HTTP API made with it (http-gate.c), or NULL */
        char peer[56];             /* the HTTP client's address, for the audit log */
};

/* What one tenant slot's connections share. */
struct conn_tenant {
        unsigned count;
        struct paced_share share; /* their replies */
};

struct conns {
        struct list all;      /* struct conn.link */
        unsigned n;
        struct conn_tenant **slots; /* one per tenant slot (struct tenant.slot) */
        size_t n_slots;
        unsigned closing;     /* closed, not yet freed (a step off the loop still holds them) */
        uint64_t in_bytes;    /* held for unfinished request lines, all clients */
};

int conns_init(struct conns *cs, const struct config *cfg);
void conns_done(struct conns *cs);
/* Room for n_slots tenant slots (after a reload added some). */
int conns_grow(struct conns *cs, size_t n_slots);
/* The connection count of tenant t (NULL: callers in no tenant are not
 * counted: they are refused at once). */
unsigned *conns_of_tenant(struct conns *cs, const struct tenant *t);
/* The queue of tenant t's reply pieces (NULL: no tenant). */
struct paced_share *conns_share_of_tenant(struct conns *cs, const struct tenant *t);
/* Close every connection (daemon shutdown). */
void conns_close_all(struct conns *cs);

/* A new connection on fd (already accepted, non-blocking); NULL without
 * memory. It is on the loop and in the daemon's list. */
struct conn *conn_new(struct daemon *d, int fd, const struct ucred *cred);
void conn_ref(struct conn *c);
void conn_unref(struct conn *c);
void conn_close(struct conn *c);

/* Queue msg (stolen) as one line. A client with more than client_buffer
 * unread bytes is disconnected (its jobs go on). */
void conn_send(struct conn *c, json_t *msg);
/* The audit log's line for a decision on c's request (audit_request_by()
 * in store/audit.h, with who c is). */
struct job;
void audit_request(const struct conn *c, const char *op, const char *decision, const struct job *job, const char *code,
                   const char *msg, bool refusal);
/* Lines already serialised, each with its newline. */
void conn_send_raw(struct conn *c, const char *buf, size_t len);
/* The same for a piece of a reply in buf (taken, and used as the buffer
 * when nothing else is queued): no further request is read from c until
 * it has gone to the socket. */
void conn_send_reply(struct conn *c, char *buf, size_t len);
/* Bytes queued and not yet sent. */
size_t conn_backlog(const struct conn *c);
/* Is the client reading slower than we write (half its buffer unread)? */
bool conn_lagging(const struct conn *c);

/* Call cb once everything queued has gone to the socket and the socket
 * has room again (or the connection closed): the next piece of a reply is
 * made only then, so a client that does not read holds at most one piece
 * in the daemon, whatever the reply's size. */
void conn_when_room(struct conn *c, void (*cb)(struct conn *c), void *arg);

/* The socket goes to another owner (session.forward) once everything
 * queued is out: no further request is read; cb runs then, or when the
 * client went away first (c->closed), and takes the socket with
 * conn_detach(). */
void conn_hand_off(struct conn *c, void (*cb)(struct conn *c), void *arg);
/* The socket, still non-blocking, and in *ret_extra (malloc'd, or NULL)
 * the bytes read past the last request taken; the connection is closed
 * without closing the socket. -1 when it was closed already. */
int conn_detach(struct conn *c, char **ret_extra, size_t *ret_len);

/* Replies queued from now on wait until conn_release() (the group commit). */
void conn_hold(struct conn *c);
void conn_release(struct conn *c);

/* A request of c is being served off the loop: read no further requests
 * until conn_unbusy(). */
void conn_busy(struct conn *c);
void conn_unbusy(struct conn *c);

/* Close connections whose request line was begun more than
 * request_timeout ago (slow-loris). */
void conns_expire_partial(struct conns *cs, uint64_t now_ms, uint64_t timeout_ms);
