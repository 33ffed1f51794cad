/* SPDX-License-Identifier: Apache-2.0 */
/* What callbacks.c (deliveries) and callbacks-ops.c (start-up, requests)
 * share. */
#pragma once

#include "callback-thread.h"
#include "callbacks.h"

/* CB_GONE: leaving memory (delivered, or kept on disk only), counted
 * nowhere. */
enum cb_state { CB_PENDING, CB_INFLIGHT, CB_DEAD, CB_DROPPED, CB_MOVING, CB_GONE };

struct cb_item {
        struct outbox_entry e;
        enum cb_state state;
        unsigned attempts;
        uint64_t next_ms;       /* CLOCK_MONOTONIC: the next attempt */
        long last_status;
        char last_error[192];
        struct list link;
        struct cb_queue *q;     /* its tenant's: counts it while pending */
        struct cb_lane *lane;   /* its tenant's deliveries to its URL */
        bool asked;             /* an operator's retry: now, ahead of its lane's order */
        struct cb_task task;    /* what the thread does for it now */
};

/* What clients see: a delivery in flight, or moving between the
 * directories, is still pending. */
static inline const char *cb_state_name(enum cb_state s) {
        return s == CB_DEAD ? "dead" : s == CB_DROPPED ? "dropped" : "pending";
}

struct cb_item *cb_item_new(struct callbacks *cb, struct outbox_entry *e, enum cb_state state);
void cb_item_free(struct cb_item *it);
/* A dead or dropped delivery is not posted unless it is retried: its body
 * (the bulk of it) is read back then. */
void cb_item_drop_body(struct outbox_entry *e);
/* The entries of a directory whose names end in suffix (hidden names
 * skipped), without their bodies, oldest first (then by job). A file that
 * is not a whole entry is left where it is, logged. On an error (-ENOMEM)
 * *ret still holds the entries read before it, for the caller to free. */
int cb_scan_dir(int dirfd, const char *suffix, struct outbox_entry **ret, size_t *ret_n);
struct cb_item *cb_find(struct callbacks *cb, const char *job);
/* The job's entry's file name, in the outbox, the queue or the dead
 * letters: JOB.json. */
void cb_entry_name(const char *job, char name[static 40]);
/* The one place an item's state changes (it keeps the counts). */
void cb_set_state(struct callbacks *cb, struct cb_item *it, enum cb_state s);
/* Hand the item's task, a file operation, to the thread. */
void cb_file_task(struct callbacks *cb, struct cb_item *it, enum cb_op op);
void cb_dispatch(struct callbacks *cb);

/* A post's curl handle and headers, signed with the tenant's secret. */
struct cb_post {
        const struct tenant *t;
        const char *url, *body;
        size_t body_len;
        const char *delivery, *event, *job, *traceparent;
        unsigned attempt;
        uint64_t timeout_ms;
};
int cb_post_build(struct cb_task *k, const struct cb_post *p);
void cb_post_cleanup(struct cb_task *k);

/* callback-progress.c */
int cb_progress_init(struct callbacks *cb);
/* After the thread stopped. */
void cb_progress_free_all(struct callbacks *cb);
/* A progress post came back. */
void cb_progress_done(struct callbacks *cb, struct cb_task *k);
/* Is a progress post of the job in flight? Its result waits for it. */
bool cb_progress_busy(struct callbacks *cb, const char *job);
void cb_on_done(struct source *s, uint32_t events);
void cb_on_timer(struct source *s, uint32_t events);

/* callback-queue.c: the deliveries kept in the outbox only. */
struct cb_queue;
int cb_queue_init(struct callbacks *cb);
void cb_queue_done(struct callbacks *cb);
/* The tenant's queue, made on first use; NULL when it cannot be (then its
 * deliveries are all held in memory). */
struct cb_queue *cb_queue_get(struct callbacks *cb, const char *tenant);
/* Its tenant's pending deliveries in memory, and its dead or dropped
 * ones, went up or down by one. */
void cb_queue_count(struct cb_queue *q, int pending, int kept);
/* A new pending delivery: true when it was queued (the caller frees it),
 * false when it is to be held in memory (its tenant is below
 * callback_memory_max with nothing queued, or the queue failed). */
bool cb_queue_spill(struct callbacks *cb, struct cb_queue *q, const struct outbox_entry *e);
/* Queue it whatever the bound (it could not be held): true when it was. */
bool cb_queue_force(struct callbacks *cb, const struct outbox_entry *e);
/* Read back queued deliveries, oldest first, while tenants are below
 * callback_memory_max: the thread reads them (one task per tenant at a
 * time), and cb_queue_loaded() takes them in. */
void cb_queue_refill(struct callbacks *cb);
void cb_queue_loaded(struct callbacks *cb, struct cb_task *k);
/* At start-up: every outbox entry, oldest first, held or queued. */
int cb_queue_load(struct callbacks *cb);
/* A queued delivery of the tenant's, into memory now (an operator asked
 * for it); NULL when the outbox has no such entry. */
struct cb_item *cb_queue_promote(struct callbacks *cb, const char *job, const char *tenant);
/* Dead and dropped deliveries beyond callback_memory_max of a tenant
 * leave memory, oldest first. */
void cb_queue_evict(struct callbacks *cb);
/* "dead" or "dropped" by the job's file in the dead letters; NULL: none. */
const char *cb_queue_kept_state(struct callbacks *cb, const char *job);
/* A dead or dropped delivery of the tenant's that left memory, back in it
 * (an operator asked for it); NULL when there is none. */
struct cb_item *cb_queue_revive(struct callbacks *cb, const char *job, const char *tenant);
/* Those of the tenant that left memory (in state, or any), appended to
 * arr while *n < limit. */
void cb_queue_list_kept(struct callbacks *cb, const char *tenant, const char *state, json_t *arr, uint64_t *n, uint64_t limit);
/* Does the outbox hold an entry for the job? */
bool cb_queue_holds(struct callbacks *cb, const char *job);
/* The tenant's queued deliveries, oldest first, appended to arr while
 * *n < limit (as callbacks.list shows them). */
void cb_queue_list(struct callbacks *cb, const char *tenant, json_t *arr, uint64_t *n, uint64_t limit);

/* callback-lane.c: shares of the slots between tenants, and the order of
 * a tenant's deliveries to one URL. */
struct cb_tenant {
        struct list link;       /* cb->tenants */
        char *name;
        unsigned posts, progs;  /* its result and progress posts in flight */
        uint64_t wants;         /* the dispatch pass that found one of its deliveries due */
};
struct cb_lane {
        struct list link;       /* cb->lanes */
        struct cb_tenant *t;
        char *url;
        unsigned refs;          /* items in it */
        unsigned inflight;
        unsigned fails;         /* failed attempts in a row; while > 0, one at a time */
        uint64_t next_ms;       /* CLOCK_MONOTONIC: no attempt before, while failing */
        bool second;            /* its oldest failed: the next attempt is the one after it */
        uint64_t held;          /* the dispatch pass that left one of it waiting: later ones wait too */
        uint64_t skipped;       /* the dispatch pass that passed its oldest over (second) */
};
/* NULL without memory. Freed by cb_tenants_free() only. */
struct cb_tenant *cb_tenant_get(struct callbacks *cb, const char *name);
void cb_tenants_free(struct callbacks *cb);
/* Tenants with result posts in flight or due in the pass (progress:
 * with progress posts in flight). */
unsigned cb_tenants_wanting(struct callbacks *cb, uint64_t pass, bool progress);
/* Counted: cb_lane_put() for each. NULL without memory. */
struct cb_lane *cb_lane_get(struct callbacks *cb, const char *tenant, const char *url);
void cb_lane_put(struct cb_lane *l);
void cb_lane_started(struct cb_lane *l);
/* An attempt of it ended with an answer other than a retry, or with one:
 * then the delay before its lane's next attempt (0: at once). */
void cb_lane_answered(struct callbacks *cb, struct cb_item *it);
uint64_t cb_lane_failed(struct callbacks *cb, struct cb_item *it, long retry_after);
