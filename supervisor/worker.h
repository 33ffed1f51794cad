/* SPDX-License-Identifier: Apache-2.0 */
/* Blocking work off the event loop: copying artifacts, creating
 * workspaces, reading captures for clients. A few threads take items in
 * order of submission; each item's run() runs on a worker thread and
 * touches only what the item carries, then its done() runs on the event
 * loop. Items are embedded in their owner's struct (container_of). */
#pragma once

struct work {
        void (*run)(struct work *w);  /* on a worker thread */
        void (*done)(struct work *w); /* on the event loop, after run */
        struct work *next;
};

/* Start the threads (with every signal blocked, as the caller's mask must
 * already be); returns the eventfd that is readable when items are done. */
int worker_start(void);
void worker_submit(struct work *w);
/* After the eventfd fired: call done() of every finished item. */
void worker_complete(void);
/* Finish what was submitted, then stop the threads. */
void worker_stop(void);
