/* SPDX-License-Identifier: Apache-2.0 */
/* A pool of threads for blocking work off the event loop: items are taken
 * in order of submission; each item's run() runs on a pool thread and
 * touches only what the item carries, then its done() runs on the event
 * loop once the pool's eventfd has fired. Items are embedded in their
 * owner's struct (container_of). worker.c is one pool (artifacts,
 * workspaces, captures); bundles have their own, so that a slow download
 * never holds up another job's artifacts. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct work {
        void (*run)(struct work *w);  /* on a pool thread */
        void (*done)(struct work *w); /* on the event loop, after run */
        struct work *next;
};

#define POOL_MAX_THREADS 8

struct pool {
        pthread_t threads[POOL_MAX_THREADS];
        size_t n_threads;
        pthread_mutex_t mu;
        pthread_cond_t cv;
        struct work *todo_head, *todo_tail, *finished;
        bool quit;
        int efd;
};

/* Start n threads (with every signal blocked, as the caller's mask must
 * already be); returns the eventfd that is readable when items are done. */
int pool_start(struct pool *p, size_t n);
void pool_submit(struct pool *p, struct work *w);
/* After the eventfd fired: call done() of every finished item. */
void pool_complete(struct pool *p);
/* Finish what was submitted, then stop the threads; done() of what they
 * finished runs on the caller's thread. */
void pool_stop(struct pool *p);
