/* SPDX-License-Identifier: Apache-2.0 */
/* Callback deliveries, the daemon's side: the outbox and the dead letters
 * (STATE/callbacks/outbox and STATE/callbacks/dead), the deliveries known
 * to the daemon, and the thread that posts them.
 *
 * A job with a callback leaves an outbox entry that the group commit makes
 * durable before its result record's name appears (commit.c): a record
 * with a "callback" member and no entry in either directory was
 * delivered. The event loop decides what to try when; one thread runs
 * libcurl's multi interface (every transfer non-blocking, side by side,
 * connections reused) and the file operations (removing a delivered
 * entry, moving one to the dead letters), so that neither the network nor
 * the disk holds up the loop. Deliveries are retried with exponential
 * backoff and jitter on connection errors, timeouts, 408, 429 (honouring
 * Retry-After) and 5xx; any other answer is final. A delivery not made
 * within callback_max_age, or refused for good, is moved to the dead
 * letters and audited; an operator may retry or drop it. Each tenant has
 * at most callback_memory_max pending deliveries in memory; the ones
 * after those wait in the outbox only (callback-queue.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "loop.h"
#include "outbox.h"
#include "proto.h"
#include "util.h"

struct metrics_gauges;
struct cb_item;
struct cb_prog;

struct callbacks {
        const struct config *cfg; /* the daemon's (a reload swaps what it holds, not where); NULL: not started */
        int dir_fd, outbox_fd, dead_fd;
        struct list items;        /* struct cb_item.link, oldest first */
        struct list queues;       /* struct cb_queue.link (callback-queue.c) */
        struct list tenants;      /* struct cb_tenant.link (callback-lane.c) */
        struct list lanes;        /* struct cb_lane.link */
        uint64_t pass;            /* cb_dispatch()'s */
        int queue_fd;
        uint64_t n_disk;          /* pending deliveries in the outbox only */
        uint64_t n_dead_disk;     /* dead ones in the dead letters only */
        uint64_t seq;
        unsigned inflight;        /* posts handed to the thread */
        uint64_t n_pending, n_dead;
        uint64_t delivered, attempt_failures, dead_lettered;
        int timer_fd;
        struct source timer_src, done_src;
        /* progress callbacks (callback-progress.c) */
        struct list progs;        /* struct cb_prog.link */
        int prog_timer_fd;
        struct source prog_timer_src;
        unsigned prog_inflight;
        uint64_t prog_delivered, prog_failed, prog_behind;
        struct cb_thread *th;
        bool curl_inited;
        /* Cluster mode: told as each delivery settles ("delivered", "dead",
         * "dropped", or "pending" again when an operator retries it). */
        void (*settled)(void *arg, const char *job, const char *state);
        void *settled_arg;
};

/* Open (or make) the directories and read what they hold: deliveries
 * left pending are tried again at once (up to callback_memory_max of each
 * tenant in memory, the rest queued). */
int callbacks_init(struct callbacks *cb, const struct config *cfg, int state_fd, struct sbx_error *err);
void callbacks_done(struct callbacks *cb);
/* Cluster mode: deliver what was pending from before (callbacks_init()
 * waits for this, so that what another node took over meanwhile is
 * dropped first: callbacks_forget()). */
void callbacks_start(struct callbacks *cb);

/* A job's entry is durable (its record too): deliver it. Takes the entry. */
void callbacks_add(struct callbacks *cb, struct outbox_entry *e);

/* Cluster mode: another node delivers the job's callback now. A pending
 * one held in memory and not being posted leaves, with its outbox entry:
 * true. Otherwise false (a delivery in flight, or one queued on disk
 * only, may then be made twice: deliveries are at least once). */
bool callbacks_forget(struct callbacks *cb, const char *job);
/* Cluster mode: a delivery this node takes over from another (e, parsed
 * from text, len bytes), written to the outbox and delivered. Takes e.
 * 0, or why it could not be written (it is delivered from memory then). */
int callbacks_adopt(struct callbacks *cb, struct outbox_entry *e, const char *text, size_t len);

/* The delivery state of a finished job's callback, for its result: an
 * object (delivery, url, state, attempts, last_error) or, when the daemon
 * holds no entry for it, "delivered". */
json_t *callbacks_state(struct callbacks *cb, const char *job, json_t *rec_callback);

void callbacks_gauges(const struct callbacks *cb, struct metrics_gauges *g);

/* Progress callbacks (callback-progress.c) of a job whose command has
 * started (the launcher's start line): what they say and where they go. */
struct cb_progress_job {
        const char *job, *tenant;
        const char *url;            /* the job's callback; NULL: none */
        const char *traceparent;    /* or NULL */
        uint64_t interval_s;        /* 0 or PROTO_UNSET: no progress callbacks */
        uint64_t started_ms;        /* CLOCK_REALTIME; 0: now */
        const uint64_t *produced;   /* its stdout and stderr bytes so far, read at each heartbeat */
        const bool *exited;         /* its command has exited: no more heartbeats */
        struct cb_prog **slot;      /* where the job keeps their handle: set, and NULL again once they end */
};
/* Start them (nothing if the job asks for none, or has them already). The
 * job's counters and slot are read until callbacks_progress_end(). */
void callbacks_progress_start(struct callbacks *cb, const struct cb_progress_job *pj);
/* The job has ended (before its record is made): no more heartbeats. */
void callbacks_progress_end(struct callbacks *cb, struct cb_prog **slot);

/* callbacks.list, callbacks.retry, callbacks.drop of tenant's jobs: the
 * reply (ok or error) to send; *acted: a retry or drop was done (for the
 * audit log). live: the job named is still running (its callback, not
 * made yet, cannot be acted on). */
json_t *callbacks_op(struct callbacks *cb, const char *tenant, const struct request *req, bool live, bool *acted);
