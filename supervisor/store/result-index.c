/* SPDX-License-Identifier: Apache-2.0 */
/* The index of finished jobs in memory (result.h); the cache file it is
 * saved to and loaded from is result-index-file.c. */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto.h"
#include "result-index-internal.h"
#include "result.h"
#include "util.h"

#define NONE UINT32_MAX

struct result_tenant {
        char *name;
        uint32_t newest; /* entry number, NONE */
};

/* ------------------------------------------------------------ hash tables */

/* Keyed (SipHash, a random key per index): idempotency keys are chosen by
 * clients, who must not be able to make every lookup a linear scan. */
static uint64_t hash(const struct result_index *ix, const char *s) {
        uint64_t h;
        crypto_shorthash((unsigned char *) &h, (const unsigned char *) s, strlen(s), ix->hash_key);
        return h;
}

static uint64_t key_hash(const struct result_index *ix, uint32_t tenant_no, const char *key) {
        return hash(ix, key) ^ ((uint64_t) tenant_no + 1) * 0x9e3779b97f4a7c15ull;
}

struct key_probe {
        uint32_t tenant_no;
        const char *key;
};

static bool id_match(const struct result_index *ix, uint32_t i, const void *id) {
        return streq(ix->e[i].id, id);
}

static bool key_match(const struct result_index *ix, uint32_t i, const void *p) {
        const struct key_probe *k = p;
        const struct done_entry *d = &ix->e[i];
        return d->tenant_no == k->tenant_no && d->idempotency_key && streq(d->idempotency_key, k->key);
}

static bool tenant_match(const struct result_index *ix, uint32_t i, const void *name) {
        return streq(ix->tenants[i].name, name);
}

/* Linear probing in a table at most half full: the slot holding what
 * matches, or the free slot where it would go. */
static uint32_t *probe(const struct result_index *ix, uint32_t *slots, size_t mask, uint64_t h,
                       bool (*match)(const struct result_index *, uint32_t, const void *), const void *what) {
        for (size_t i = h & mask;; i = (i + 1) & mask)
                if (slots[i] == 0 || match(ix, slots[i] - 1, what))
                        return &slots[i];
}

/* Link entry i everywhere but in by_id. */
static void link_key_and_tenant(struct result_index *ix, uint32_t i) {
        struct done_entry *d = &ix->e[i];
        if (d->idempotency_key) {
                struct key_probe k = { d->tenant_no, d->idempotency_key };
                /* later entries win: the newest job with the key */
                *probe(ix, ix->by_key, ix->mask, key_hash(ix, d->tenant_no, d->idempotency_key), key_match, &k) = i + 1;
        }
        struct result_tenant *t = &ix->tenants[d->tenant_no];
        d->older = t->newest;
        t->newest = i;
}

static void link_entry(struct result_index *ix, uint32_t i) {
        *probe(ix, ix->by_id, ix->mask, hash(ix, ix->e[i].id), id_match, ix->e[i].id) = i + 1;
        link_key_and_tenant(ix, i);
}

/* Relink every entry (after entries moved), without allocating. */
void result_index_relink(struct result_index *ix) {
        if (!ix->by_id)
                return;
        memset(ix->by_id, 0, (ix->mask + 1) * sizeof(*ix->by_id));
        memset(ix->by_key, 0, (ix->mask + 1) * sizeof(*ix->by_key));
        for (size_t t = 0; t < ix->n_tenants; t++)
                ix->tenants[t].newest = NONE;
        for (size_t i = 0; i < ix->n; i++)
                link_entry(ix, (uint32_t) i);
}

static void ensure_key(struct result_index *ix) {
        if (!ix->by_id && !ix->by_tenant)
                randombytes_buf(ix->hash_key, sizeof(ix->hash_key));
}

/* Tables for ix->cap entries. */
static int grow_tables(struct result_index *ix) {
        size_t size = 64;
        while (size < 2 * ix->cap)
                size *= 2;
        uint32_t *by_id = calloc(size, sizeof(*by_id)), *by_key = calloc(size, sizeof(*by_key));
        if (!by_id || !by_key) {
                free(by_id);
                free(by_key);
                return -ENOMEM;
        }
        ensure_key(ix);
        free(ix->by_id);
        free(ix->by_key);
        ix->by_id = by_id;
        ix->by_key = by_key;
        ix->mask = size - 1;
        result_index_relink(ix);
        return 0;
}

/* Room for cap entries, the tables sized for them. */
int result_index_reserve(struct result_index *ix, size_t cap) {
        if (cap <= ix->cap && ix->by_id)
                return 0;
        if (cap > ix->cap) {
                struct done_entry *ne = realloc(ix->e, cap * sizeof(*ne));
                if (!ne)
                        return -ENOMEM;
                ix->e = ne;
                ix->cap = cap;
        }
        return grow_tables(ix);
}

/* Tenant names are kept once, however many entries share them. */
static int intern_tenant(struct result_index *ix, const char *name, uint32_t *ret) {
        if (ix->by_tenant) {
                uint32_t *slot = probe(ix, ix->by_tenant, ix->tenant_mask, hash(ix, name), tenant_match, name);
                if (*slot) {
                        *ret = *slot - 1;
                        return 0;
                }
        }
        if (ix->n_tenants == ix->cap_tenants) {
                size_t cap = ix->cap_tenants ? 2 * ix->cap_tenants : 8;
                struct result_tenant *nt = realloc(ix->tenants, cap * sizeof(*nt));
                uint32_t *table = calloc(2 * cap, sizeof(*table));
                if (nt)
                        ix->tenants = nt;
                if (!nt || !table) {
                        free(table);
                        return -ENOMEM;
                }
                ensure_key(ix);
                free(ix->by_tenant);
                ix->by_tenant = table;
                ix->cap_tenants = cap;
                ix->tenant_mask = 2 * cap - 1;
                for (size_t t = 0; t < ix->n_tenants; t++)
                        *probe(ix, table, ix->tenant_mask, hash(ix, ix->tenants[t].name), tenant_match,
                               ix->tenants[t].name) = (uint32_t) t + 1;
        }
        char *copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        uint32_t t = (uint32_t) ix->n_tenants++;
        ix->tenants[t] = (struct result_tenant){ copy, NONE };
        *probe(ix, ix->by_tenant, ix->tenant_mask, hash(ix, copy), tenant_match, copy) = t + 1;
        *ret = t;
        return 0;
}

int result_index_find_no(struct result_index *ix, const char *id, uint32_t *ret) {
        if (!ix->by_id)
                return -ENOENT;
        uint32_t slot = *probe(ix, ix->by_id, ix->mask, hash(ix, id), id_match, id);
        if (!slot)
                return -ENOENT;
        *ret = slot - 1;
        return 0;
}

static void copy_str(char *dst, size_t size, const char *src) {
        size_t l = strnlen(src, size - 1);
        memcpy(dst, src, l);
        dst[l] = '\0';
}

static void set_fields(struct done_entry *d, const struct result_fields *f, uint32_t tenant_no, const char *tenant, char *key) {
        copy_str(d->id, sizeof(d->id), f->id);
        d->tenant = tenant;
        d->tenant_no = tenant_no;
        d->idempotency_key = key;
        copy_str(d->state, sizeof(d->state), f->state);
        /* only the conflict check of an idempotency key needs it */
        copy_str(d->request_sha256, sizeof(d->request_sha256), key && f->digest ? f->digest : "");
        d->exit_code = f->exit_code;
        d->created_ms = f->created_ms;
        d->ended_ms = f->ended_ms;
}

/* Index an entry, replacing one with the same id. *ret_replaced: it did. */
int result_index_put(struct result_index *ix, const struct result_fields *f, bool *ret_replaced) {
        uint32_t t;
        int r = intern_tenant(ix, f->tenant, &t);
        if (r == 0 && (ix->n == ix->cap || !ix->by_id))
                r = result_index_reserve(ix, ix->n == ix->cap ? 2 * ix->cap + 256 : ix->cap);
        if (r < 0)
                return r;
        char *key = NULL;
        if (f->key && !(key = strdup(f->key)))
                return -ENOMEM;
        uint32_t *slot = probe(ix, ix->by_id, ix->mask, hash(ix, f->id), id_match, f->id);
        *ret_replaced = *slot != 0;
        if (*ret_replaced) {
                struct done_entry *d = &ix->e[*slot - 1];
                bool moved = d->tenant_no != t || !d->idempotency_key != !key ||
                             (key && !streq(d->idempotency_key, key));
                free(d->idempotency_key);
                set_fields(d, f, t, ix->tenants[t].name, key);
                if (moved)
                        result_index_relink(ix);
                return 0;
        }
        set_fields(&ix->e[ix->n], f, t, ix->tenants[t].name, key);
        *slot = (uint32_t) ix->n + 1;
        link_key_and_tenant(ix, (uint32_t) ix->n++);
        return 0;
}

struct done_entry *result_index_find(struct result_index *ix, const char *id) {
        uint32_t i;
        return result_index_find_no(ix, id, &i) == 0 ? &ix->e[i] : NULL;
}

/* The tenant's number + 1, 0 when it has no entry. */
static uint32_t tenant_slot(const struct result_index *ix, const char *tenant) {
        if (!ix->by_id || !ix->by_tenant)
                return 0;
        return *probe(ix, ix->by_tenant, ix->tenant_mask, hash(ix, tenant), tenant_match, tenant);
}

struct done_entry *result_index_find_key(struct result_index *ix, const char *tenant, const char *key) {
        uint32_t t = tenant_slot(ix, tenant);
        struct key_probe k = { t - 1, key };
        uint32_t slot = t ? *probe(ix, ix->by_key, ix->mask, key_hash(ix, t - 1, key), key_match, &k) : 0;
        return slot ? &ix->e[slot - 1] : NULL;
}

void result_iter_tenant(const struct result_index *ix, const char *tenant, struct result_iter *it) {
        uint32_t t = tenant_slot(ix, tenant);
        it->ix = ix;
        it->next = t ? ix->tenants[t - 1].newest : NONE;
}

const struct done_entry *result_iter_next(struct result_iter *it) {
        if (it->next == NONE)
                return NULL;
        const struct done_entry *d = &it->ix->e[it->next];
        it->next = d->older;
        return d;
}

void result_fields_of_record(json_t *rec, struct result_fields *f) {
        const char *k = json_string_value(json_object_get(rec, "idempotency_key"));
        const char *dg = json_string_value(json_object_get(rec, "request_sha256"));
        json_t *ec = json_object_get(rec, "exit_code");
        *f = (struct result_fields){
                .id = json_string_value(json_object_get(rec, "job")),
                .tenant = json_string_value(json_object_get(rec, "tenant")) ?: "",
                .key = k && *k ? k : NULL,
                .state = json_string_value(json_object_get(rec, "state")) ?: "error",
                .digest = dg && result_is_digest(dg) ? dg : NULL,
                .exit_code = json_is_integer(ec) ? (int) json_integer_value(ec) : -1,
                .created_ms = parse_rfc3339_ms(json_string_value(json_object_get(rec, "created"))),
                .ended_ms = parse_rfc3339_ms(json_string_value(json_object_get(rec, "ended"))),
        };
}

int result_index_add(struct result_index *ix, json_t *rec) {
        struct result_fields f;
        result_fields_of_record(rec, &f);
        if (!f.id || !proto_valid_job_id(f.id))
                return -EINVAL;
        bool replaced;
        int r = result_index_put(ix, &f, &replaced);
        if (r < 0)
                return r;
        if (replaced)
                ix->dead_lines++;
        result_cache_append(ix, result_index_find(ix, f.id));
        return 0;
}

/* Files first: a crash in between leaves a record, which the next sweep
 * finds, not files no record points at. */
static int remove_record(int results_dirfd, const char *id) {
        char name[RESULT_NAME_MAX], tmp[RESULT_NAME_MAX];
        result_names(id, name, tmp);
        int r = rm_rf_at(results_dirfd, id);
        if (r < 0)
                return r;
        if (unlinkat(results_dirfd, name, 0) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

unsigned result_sweep(struct result_index *ix, int results_dirfd, uint64_t retention_ms, uint64_t now_ms) {
        unsigned removed = 0;
        size_t w = 0;
        for (size_t i = 0; i < ix->n; i++) {
                struct done_entry *d = &ix->e[i];
                /* (not ended + retention < now: a retention meaning "for
                 * ever" would overflow and delete everything) */
                if (d->ended_ms && now_ms > d->ended_ms && now_ms - d->ended_ms > retention_ms &&
                    remove_record(results_dirfd, d->id) == 0) {
                        free(d->idempotency_key);
                        removed++;
                        continue;
                }
                ix->e[w++] = *d;
        }
        if (removed == 0)
                return 0;
        ix->n = w;
        result_index_relink(ix);
        ix->dead_lines += removed;
        /* Rewriting costs as much as the lines it drops: amortised, each
         * record's line is written twice at most. If it fails, the old
         * cache stays, and the next load drops the lines. */
        if (ix->attached && ix->dead_lines >= ix->n)
                result_index_save(ix);
        return removed;
}

void result_index_free(struct result_index *ix) {
        for (size_t i = 0; i < ix->n; i++)
                free(ix->e[i].idempotency_key);
        for (size_t t = 0; t < ix->n_tenants; t++)
                free(ix->tenants[t].name);
        free(ix->e);
        free(ix->tenants);
        free(ix->by_id);
        free(ix->by_key);
        free(ix->by_tenant);
        memset(ix, 0, sizeof(*ix));
}
