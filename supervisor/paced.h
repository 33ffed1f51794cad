/* SPDX-License-Identifier: Apache-2.0 */
/* A reply too large for one message (a replay of captured output, a
 * downloaded file), sent in bounded pieces only as fast as the client
 * reads: each piece is made off the event loop (worker.h), queued whole,
 * and the next one is asked for only once the connection has drained
 * below half its buffer. So no reply size costs the daemon more than a
 * piece of memory, and a slow reader holds up no other client.
 *
 * The owner (logs.c, download.c) embeds a struct paced in its request and
 * says what a piece holds and how its lines are framed; this module paces,
 * sends and ends. From paced_init() to the end the connection is busy (it
 * reads no further requests, so responses keep their order) and referred
 * to. The work item is the owner's for any step before the pieces (opening
 * a file, a one-shot reply); such a step ends with paced_next() or
 * paced_finish(). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "pool.h"

struct conn;
struct paced;

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
        int err;
};

/* Start a reply on c: hold a reference to it and mark it busy. */
void paced_init(struct paced *p, struct conn *c, const struct paced_ops *ops, const char *job);
/* Append msg's line to the piece being made; msg is taken. Off the loop. */
int paced_append(struct paced *p, json_t *msg);
/* Make the next piece (on the loop). */
void paced_next(struct paced *p);
/* End the reply: drop the drain callback, unbusy and release the
 * connection, free the request. */
void paced_finish(struct paced *p);
