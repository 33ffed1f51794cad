/* SPDX-License-Identifier: Apache-2.0 */
/* The thread of callbacks.c: it runs libcurl's multi interface for the
 * posts and does the outbox's file operations, so that neither blocks
 * the event loop. Tasks go in with cb_thread_submit() and come back, done,
 * through cb_thread_take_done() after the eventfd fired. */
#pragma once

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

enum cb_op {
        CB_OP_POST,    /* post; on a 2xx answer remove outbox/NAME */
        CB_OP_PROGRESS, /* post, nothing on disk (a progress delivery) */
        CB_OP_LOAD,    /* run work() (reading queued deliveries back, callback-queue.c) */
        CB_OP_DEAD,    /* outbox/NAME to dead/NAME */
        CB_OP_DROP,    /* outbox/NAME (or dead/NAME with from_dead) to dead/JOB.dropped */
        CB_OP_RESTORE, /* write text to outbox/NAME (synced), then remove dead/NAME (from_dead) or dead/JOB.dropped */
};

struct cb_task {
        enum cb_op op;
        void *owner;
        char name[40];          /* JOB.json */
        char dropped[40];       /* JOB.dropped */
        bool from_dead;
        /* CB_OP_POST */
        CURL *h;
        struct curl_slist *hdrs;
        char errbuf[CURL_ERROR_SIZE];
        long status;            /* the HTTP answer, 0: none */
        long retry_after;       /* its Retry-After in seconds, -1: none */
        int curl_rc;
        /* CB_OP_LOAD */
        void (*work)(struct cb_task *task);
        /* CB_OP_RESTORE */
        char *text;
        size_t text_len;
        int file_err;           /* -errno of the file operation */
        struct cb_task *next;
};

struct cb_thread;

/* Returns the eventfd that becomes readable when tasks are done. */
int cb_thread_start(int outbox_fd, int dead_fd, struct cb_thread **ret);
void cb_thread_submit(struct cb_thread *t, struct cb_task *task);
/* The tasks done since the last call, in the order they finished. */
struct cb_task *cb_thread_take_done(struct cb_thread *t);
/* Stop at once (posts in flight are abandoned: their entries stay in the
 * outbox); every task not taken back is handed to drop(). */
void cb_thread_stop(struct cb_thread *t, void (*drop)(struct cb_task *task));
