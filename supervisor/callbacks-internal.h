/* SPDX-License-Identifier: Apache-2.0 */
/* What callbacks.c (deliveries) and callbacks-ops.c (start-up, requests)
 * share. */
#pragma once

#include "callback-thread.h"
#include "callbacks.h"

enum cb_state { CB_PENDING, CB_INFLIGHT, CB_DEAD, CB_DROPPED, CB_MOVING };

struct cb_item {
        struct outbox_entry e;
        enum cb_state state;
        unsigned attempts;
        uint64_t next_ms;       /* CLOCK_MONOTONIC: the next attempt */
        long last_status;
        char last_error[192];
        struct list link;
        struct cb_task task;    /* what the thread does for it now */
};

/* What clients see: a delivery in flight, or moving between the
 * directories, is still pending. */
static inline const char *cb_state_name(enum cb_state s) {
        return s == CB_DEAD ? "dead" : s == CB_DROPPED ? "dropped" : "pending";
}

struct cb_item *cb_item_new(struct callbacks *cb, struct outbox_entry *e, enum cb_state state);
void cb_item_free(struct cb_item *it);
struct cb_item *cb_find(struct callbacks *cb, const char *job);
/* The one place an item's state changes (it keeps the counts). */
void cb_set_state(struct callbacks *cb, struct cb_item *it, enum cb_state s);
/* Hand the item's task, a file operation, to the thread. */
void cb_file_task(struct callbacks *cb, struct cb_item *it, enum cb_op op);
void cb_dispatch(struct callbacks *cb);
void cb_on_done(struct source *s, uint32_t events);
void cb_on_timer(struct source *s, uint32_t events);
