/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by bundle.c (resolution, the cache, jobs) and bundle-ops.c (the
 * bundle.show and cache.* operations); not for other modules. */
#pragma once

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bundle.h"
#include "cache.h"
#include "index.h"
#include "loop.h"
#include "pool.h"
#include "util.h"

#define BUNDLE_THREADS 4
#define KNOWN_MAX 4096

struct bundles {
        const struct config *cfg; /* the daemon's (a reload swaps what it holds, not where) */
        struct pool pool;
        struct source src;
        atomic_bool stop;
        int cache_fd;          /* STATE/cache */
        int serials_fd;        /* STATE/registry */
        struct cache cache;
        struct list known;     /* struct known: verified indexes, most recent last */
        size_t n_known;
        struct list tasks;     /* struct btask in flight */
        unsigned trash_seq;
};

/* What a waiter is told once: resolved (entry held for it) or why not. */
struct resolution {
        const char *code;          /* NULL: resolved */
        const char *msg;
        struct cache_entry *entry; /* pinned for the waiter */
        bool from_cache;           /* nothing was downloaded for it */
        bool stale;
        const char *stale_why;
        uint64_t serial;
        uint64_t resolve_us, download_us, verify_us, extract_us;
        const struct bundle_index *index; /* the index it was resolved in, or NULL */
};

struct btask;

/* One reference being resolved for a job or a request. */
struct bwait {
        struct list link;          /* in its task's waiters */
        struct btask *task;        /* NULL when not waiting */
        const struct registry_conf *reg;
        const char *tenant;        /* whose (the tree's users, cache gc --all) */
        struct bundle_ref ref;
        uint64_t t0_us;
        uint64_t serial;
        uint64_t download_us, verify_us, extract_us;
        bool downloaded;
        /* Called once, on the loop, with the waiter unlinked; may free it. */
        void (*ready)(struct bwait *w, const struct resolution *res);
};

/* Start resolving (w->reg, w->ref, w->ready set); ready may be called
 * before this returns. */
void bundle_resolve(struct bundles *b, struct bwait *w);
/* Stop waiting (the job went); ready is never called. */
void bundle_wait_cancel(struct bwait *w);
/* A holder of e lets go; the budget may then remove trees. */
void bundle_unpin(struct bundles *b, struct cache_entry *e);
/* Remove trees: past the age limit or the budget; with all, tenant lets
 * go of every unused tree it used, and those no other tenant used go.
 * Each removed tree tenant used is appended to removed (may be NULL).
 * Returns the bytes freed. */
uint64_t bundle_evict(struct bundles *b, bool all, const char *tenant, json_t *removed);
/* The verified index in memory for registry/name, or NULL. */
const struct bundle_index *bundle_known(struct bundles *b, const struct registry_conf *reg, const char *name);
