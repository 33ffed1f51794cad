/* SPDX-License-Identifier: Apache-2.0 */
/* A reply too large for one message (a piece of captured output, a replay
 * of it, a downloaded file), sent in bounded pieces only as fast as the
 * client reads: each piece is made off the event loop (worker.h), queued
 * whole, and the next one is made only once everything queued has gone to
 * the socket and the socket has room again (conn_when_room). So a reply
 * costs the daemon at most a piece of memory, whatever its size and
 * however slowly its client reads, and a slow reader holds up no other
 * client.
 *
 * The owner (logs.c, download.c) embeds a struct paced in its request and
 * says what a piece holds and how its lines are framed; this module paces,
 * sends and ends. From paced_init() to the end the connection is busy (it
 * reads no further requests, so responses keep their order) and referred
 * to; after the end it reads none either until the reply's last piece has
 * gone to the socket (conn.h). Any step of a reply, the owner's first one
 * (opening a file, checking a range) included, is run through
 * paced_submit(); the owner's step ends with paced_continue(),
 * paced_next() or paced_finish().
 *
 * The steps of one tenant's replies share one queue (struct paced_share):
 * they run in the order asked, at most PACED_RUNNING at a time. A tenant
 * flooding the daemon with logs or downloads on many connections so takes
 * one worker thread, not all of them, and waits for its own replies; the
 * other tenants' steps wait for at most one of its pieces. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "pool.h"
#include "util.h"

struct conn;
struct paced;

/* Steps of one tenant's replies off the loop at once. */
#define PACED_RUNNING 1
/* Bytes a piece is made of, near enough: one unread piece fits in a Unix
 * socket's default send buffer once it is writable again. */
#define PACED_PIECE (64u * 1024)

/* One tenant's replies (one per tenant, in struct conns). */
struct paced_share {
        unsigned running;     /* steps off the loop */
        struct list waiting;  /* struct paced.wait_link, oldest first */
        bool kicking;
};

struct paced_ops {
        /* Off the loop: append the next piece's lines (paced_append). On
         * failure set err (negative errno); when this piece ends the reply,
         * set end_sent. */
        void (*piece)(struct paced *p);
        /* On the loop, after a piece was sent and the reply has not ended:
         * true if the owner has finished with it (the reply ends here
         * without an error), false to go on. NULL: go on. */
        bool (*sent)(struct paced *p);
        /* Free the owner's request around p (p->out is already freed). */
        void (*free)(struct paced *p);
};

struct paced {
        struct work work;
        struct conn *c;
        const struct paced_ops *ops;
        const char *job;      /* the job an error event names */
        char *out;            /* serialised lines, each with its newline */
        size_t out_len;
        bool end_sent;
        bool mid_line;        /* what was sent ends inside a line: an error closes */
        int err;
        void (*step_done)(struct work *w);
        struct list wait_link;
};

void paced_share_init(struct paced_share *s);

/* Start a reply on c: hold a reference to it and mark it busy. */
void paced_init(struct paced *p, struct conn *c, const struct paced_ops *ops, const char *job);
/* Append msg's line to the piece being made; msg is taken. Off the loop. */
int paced_append(struct paced *p, json_t *msg);
/* Run a step of the reply off the loop once its tenant's turn comes: run()
 * there, then done() on the loop. */
void paced_submit(struct paced *p, void (*run)(struct work *w), void (*done)(struct work *w));
/* After a step: send what it made (p->out), then end the reply, or make
 * its next piece once the socket has room. An error (p->err) is told to
 * the client, or closes the connection when a line is half sent. */
void paced_continue(struct paced *p);
/* Make the next piece (on the loop). */
void paced_next(struct paced *p);
/* End the reply: drop the room callback, unbusy and release the
 * connection, free the request. */
void paced_finish(struct paced *p);
