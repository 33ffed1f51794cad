/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "semver.h"

void cache_init(struct cache *c) {
        list_init(&c->lru);
        c->n = 0;
        c->bytes = 0;
}

void cache_done(struct cache *c) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &c->lru) {
                struct cache_entry *e = list_entry(pos, struct cache_entry, link);
                cache_remove(c, e);
                cache_entry_free(e);
        }
}

struct cache_entry *cache_entry_new(const char *sha256, const char *registry, const char *name, const char *version,
                                    uint64_t bytes, uint64_t last_used_ms, struct manifest *m) {
        struct cache_entry *e = calloc(1, sizeof(*e));
        if (!e)
                return NULL;
        snprintf(e->sha256, sizeof(e->sha256), "%s", sha256);
        e->registry = strdup(registry);
        e->name = strdup(name);
        e->version = strdup(version);
        e->bytes = bytes;
        e->last_used_ms = last_used_ms;
        list_init(&e->link);
        manifest_init(&e->manifest);
        if (!e->registry || !e->name || !e->version) {
                cache_entry_free(e);
                return NULL;
        }
        if (m) {
                e->manifest = *m;
                manifest_init(m);
        }
        return e;
}

void cache_entry_free(struct cache_entry *e) {
        if (!e)
                return;
        for (size_t i = 0; i < e->n_tenants; i++)
                free(e->tenants[i]);
        free(e->tenants);
        free(e->registry);
        free(e->name);
        free(e->version);
        manifest_free(&e->manifest);
        free(e);
}

bool cache_entry_used_by(const struct cache_entry *e, const char *tenant) {
        for (size_t i = 0; i < e->n_tenants; i++)
                if (streq(e->tenants[i], tenant))
                        return true;
        return false;
}

int cache_entry_add_tenant(struct cache_entry *e, const char *tenant) {
        if (cache_entry_used_by(e, tenant))
                return 0;
        char **t = realloc(e->tenants, (e->n_tenants + 1) * sizeof(*t));
        if (!t)
                return -ENOMEM;
        e->tenants = t;
        if (!(t[e->n_tenants] = strdup(tenant)))
                return -ENOMEM;
        e->n_tenants++;
        return 1;
}

int cache_entry_drop_tenant(struct cache_entry *e, const char *tenant) {
        for (size_t i = 0; i < e->n_tenants; i++)
                if (streq(e->tenants[i], tenant)) {
                        free(e->tenants[i]);
                        e->tenants[i] = e->tenants[--e->n_tenants];
                        return 1;
                }
        return 0;
}

/* The list is kept in order of last use, oldest first. */
void cache_add(struct cache *c, struct cache_entry *e) {
        struct list *pos = c->lru.prev;
        while (pos != &c->lru && list_entry(pos, struct cache_entry, link)->last_used_ms > e->last_used_ms)
                pos = pos->prev;
        /* after pos */
        e->link.prev = pos;
        e->link.next = pos->next;
        pos->next->prev = &e->link;
        pos->next = &e->link;
        c->n++;
        c->bytes += e->bytes;
}

void cache_remove(struct cache *c, struct cache_entry *e) {
        list_del(&e->link);
        c->n--;
        c->bytes -= e->bytes;
}

struct cache_entry *cache_find(const struct cache *c, const char *sha256) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &c->lru) {
                struct cache_entry *e = list_entry(pos, struct cache_entry, link);
                if (streq(e->sha256, sha256))
                        return e;
        }
        return NULL;
}

struct cache_entry *cache_newest(const struct cache *c, const char *registry, const struct bundle_ref *r) {
        struct cache_entry *best = NULL;
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &c->lru) {
                struct cache_entry *e = list_entry(pos, struct cache_entry, link);
                if (!streq(e->registry, registry) || !streq(e->name, r->name))
                        continue;
                if ((r->kind == REF_VERSION && !streq(e->version, r->version)) ||
                    (r->kind == REF_DIGEST && !streq(e->sha256, r->sha256)))
                        continue;
                if (!best || semver_cmp(e->version, best->version) > 0)
                        best = e;
        }
        return best;
}

static void touch(struct cache *c, struct cache_entry *e, uint64_t now_ms) {
        if (now_ms > e->last_used_ms)
                e->last_used_ms = now_ms;
        cache_remove(c, e);
        cache_add(c, e);
}

void cache_pin(struct cache *c, struct cache_entry *e, uint64_t now_ms) {
        e->refs++;
        touch(c, e, now_ms);
}

void cache_unpin(struct cache *c, struct cache_entry *e, uint64_t now_ms) {
        if (e->refs > 0)
                e->refs--;
        /* Its last use ends now: the age counts from the end of the job. */
        touch(c, e, now_ms);
}

struct cache_entry *cache_victim(const struct cache *c, uint64_t budget, uint64_t max_age_ms, uint64_t now_ms) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &c->lru) {
                struct cache_entry *e = list_entry(pos, struct cache_entry, link);
                if (e->refs > 0)
                        continue;
                bool old = now_ms > e->last_used_ms && now_ms - e->last_used_ms > max_age_ms;
                if (old || c->bytes > budget)
                        return e;
        }
        return NULL;
}
