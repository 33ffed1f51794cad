/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by result-index.c (the index of finished jobs in memory) and
 * result-index-file.c (the cache file it is saved to and loaded from);
 * not for other modules. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "result.h"

/* An entry before it is in the index: from a record or a cache line. */
struct result_fields {
        const char *id, *tenant, *key, *state, *digest;
        int exit_code;
        uint64_t created_ms, ended_ms;
};

/* Index an entry, replacing one with the same id. *ret_replaced: it did. */
int result_index_put(struct result_index *ix, const struct result_fields *f, bool *ret_replaced);
/* Room for cap entries, the tables sized for them. */
int result_index_reserve(struct result_index *ix, size_t cap);
/* Relink every entry (after entries moved or were dropped), without
 * allocating. */
void result_index_relink(struct result_index *ix);
/* The number of the entry with this id; -ENOENT. */
int result_index_find_no(struct result_index *ix, const char *id, uint32_t *ret);
/* The fields of a record; id is NULL if it names none. */
void result_fields_of_record(json_t *rec, struct result_fields *f);

/* Append the entry's line to the cache file of a loaded index; a failure
 * is not an error (result_index_add()). */
void result_cache_append(struct result_index *ix, const struct done_entry *d);

/* A request digest as records and cache lines hold it: 64 lowercase hex. */
static inline bool result_is_digest(const char *s) {
        return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}
