/* SPDX-License-Identifier: Apache-2.0 */
/* The bundle cache's bookkeeping: which unpacked trees are kept
 * (STATE/cache/<sha256>/), how many jobs hold each (a held tree is never
 * removed), when each was last used, and which to remove to stay within
 * the byte budget and the age limit, least recently used first. Pure
 * (the trees themselves are cachefs.c's), unit-tested. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "index.h"
#include "manifest.h"
#include "util.h"

struct cache_entry {
        char sha256[SHA256_HEX + 1];
        char *registry;           /* where it came from */
        char *name;
        char *version;
        uint64_t bytes;           /* of the unpacked tree */
        uint64_t last_used_ms;    /* CLOCK_REALTIME */
        unsigned refs;            /* jobs (and requests) holding it */
        char **tenants;           /* the tenants that used it (cache gc --all) */
        size_t n_tenants;
        struct manifest manifest;
        struct list link;         /* in the cache, least recently used first */
};

struct cache {
        struct list lru;          /* struct cache_entry.link */
        size_t n;
        uint64_t bytes;
};

void cache_init(struct cache *c);
/* Free every entry (at exit; the trees stay on disk). */
void cache_done(struct cache *c);

/* A new entry (refs 0), taking the manifest's contents; NULL without
 * memory. Not yet in the cache. */
struct cache_entry *cache_entry_new(const char *sha256, const char *registry, const char *name, const char *version,
                                    uint64_t bytes, uint64_t last_used_ms, struct manifest *m);
void cache_entry_free(struct cache_entry *e);
/* tenant used e: 1 when it had not before, 0, or -ENOMEM. */
int cache_entry_add_tenant(struct cache_entry *e, const char *tenant);
/* tenant lets go of e: 1 when it had used it, else 0. */
int cache_entry_drop_tenant(struct cache_entry *e, const char *tenant);
/* Has tenant used e? */
bool cache_entry_used_by(const struct cache_entry *e, const char *tenant);
/* Add e, placed by its last use. */
void cache_add(struct cache *c, struct cache_entry *e);
/* Take e out of the cache (the caller frees it). */
void cache_remove(struct cache *c, struct cache_entry *e);

struct cache_entry *cache_find(const struct cache *c, const char *sha256);
/* The newest version (semver) of registry/name that r admits, or NULL. */
struct cache_entry *cache_newest(const struct cache *c, const char *registry, const struct bundle_ref *r);

/* A job holds e (used now); and lets go. */
void cache_pin(struct cache *c, struct cache_entry *e, uint64_t now_ms);
void cache_unpin(struct cache *c, struct cache_entry *e, uint64_t now_ms);

/* The next tree to remove, or NULL: an unused one not used for max_age_ms,
 * or while the cache holds more than budget bytes, the least recently
 * used unused one. Held trees are never chosen. */
struct cache_entry *cache_victim(const struct cache *c, uint64_t budget, uint64_t max_age_ms, uint64_t now_ms);
