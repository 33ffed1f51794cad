/* SPDX-License-Identifier: Apache-2.0 */
/* Result records: STATE/results/ID.json, and STATE/results/ID/ for the
 * job's captured stdout, stderr and artifacts when it has any. A record is
 * written tmp + fsync + rename + fsync(dir) before any client hears the job
 * ended, so an acknowledged result is whole after any crash, and a partial
 * one is never visible.
 *
 * Also the index of finished jobs that `list`, `status` and idempotency keys
 * consult, and the retention sweep. The index lives in memory (hash tables
 * by id and by tenant and key, a newest-first chain per tenant) and is
 * cached in STATE/results/index, one short line per record, so that start-up
 * does not read every record. The records stay the truth: the cache is never
 * synced, and each load checks it against the directory (a record it lacks
 * is read, a line whose record is gone or which fails its checksum is
 * dropped) and rewrites it when it was wrong. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct done_entry {
        char id[24];
        const char *tenant;    /* "" when the record names none; owned by the index */
        char *idempotency_key; /* NULL: none */
        char request_sha256[65]; /* "" for records without one */
        char state[16];
        int exit_code;         /* -1: none */
        uint64_t created_ms;   /* 0: unknown */
        uint64_t ended_ms;     /* 0: unknown */
        uint32_t tenant_no, older; /* the index's: the tenant, its previous entry */
};

/* Zero-initialise, or result_index_free(); then result_index_load() to
 * read the results directory and keep the cache file up to date (without
 * it, the index lives in memory only). Not thread-safe. */
struct result_index {
        struct done_entry *e; /* oldest first: by creation at load, then as added */
        size_t n, cap;
        /* the rest is the index's own */
        struct result_tenant *tenants;
        size_t n_tenants, cap_tenants;
        uint32_t *by_id, *by_key, *by_tenant; /* entry or tenant number + 1; 0: free */
        size_t mask, tenant_mask;
        unsigned char hash_key[16];
        bool attached;     /* loaded: dirfd is the results directory, with the cache */
        int dirfd;
        size_t dead_lines; /* cache lines no entry needs any more */
};

/* sync_dir false: the caller fsyncs results_dirfd before telling anyone
 * (one sync for every record finished in the same loop iteration). */
int result_store(int results_dirfd, const char *id, json_t *rec, bool sync_dir);
/* The record as stored (a JSON line, not NUL-terminated; free() it): the
 * group commit writes it to result_names()' tmp name, fsyncs it, renames it
 * to the record's name and syncs the directory, before anyone is told. */
#define RESULT_NAME_MAX 96
char *result_text(json_t *rec, size_t *ret_len);
void result_names(const char *id, char name[static RESULT_NAME_MAX], char tmp[static RESULT_NAME_MAX]);
int result_load(int results_dirfd, const char *id, json_t **ret);
int result_exists(int results_dirfd, const char *id);

/* Index a record that is durable (its rename and directory sync are done):
 * in memory, and a line appended to the cache file when the index is
 * loaded. A record whose id is already indexed replaces its entry. Returns
 * -EINVAL for a record without a valid "job" id, -ENOMEM; the entry is then
 * not indexed. A failed append to the cache is not an error: the cache is
 * cut back to whole lines, and the next load reads the record itself. The
 * cache is opened for each append, never held open, so that the results
 * file system can be remounted read-only. Entry pointers from the index
 * stay valid until the next add, load, sweep or free. */
int result_index_add(struct result_index *ix, json_t *rec);
struct done_entry *result_index_find(struct result_index *ix, const char *id);
/* The newest entry of this tenant with this idempotency key. */
struct done_entry *result_index_find_key(struct result_index *ix, const char *tenant, const char *key);
/* Finished jobs of one tenant, newest first, without looking at the
 * others': result_iter_tenant(), then result_iter_next() until NULL. */
struct result_iter {
        const struct result_index *ix;
        uint32_t next; /* entry number; UINT32_MAX: none left */
};
void result_iter_tenant(const struct result_index *ix, const char *tenant, struct result_iter *it);
const struct done_entry *result_iter_next(struct result_iter *it);

/* Fill an empty index from the results directory: the cache file, checked
 * against the directory listing; the records the cache lacks are read
 * (unreadable ones are skipped, as before there was a cache). Rewrites the
 * cache when it was missing or wrong. Errors: reading the directory, ENOMEM
 * (the index is then emptied). A cache that cannot be read or written is
 * not an error: the records are read, and the index lives in memory only. */
int result_index_load(struct result_index *ix, int results_dirfd);
/* The same, except that when the cache lacks more than RESULT_REST_BATCH
 * records (it was lost, or this is the first start after an upgrade),
 * they are left in *ret_rest to be read in batches while the daemon
 * serves: result_rest_read() reads the next batch (on any thread; it
 * touches no index), result_rest_merge() indexes it (on the index's
 * thread; *ret_all once every record is indexed, when the cache is
 * rewritten), and result_rest_free() at the end. Until then the index
 * lacks finished jobs: answers that need them wait. *ret_rest is NULL
 * when nothing is left. */
#define RESULT_REST_BATCH 256
struct result_rest;
int result_index_open(struct result_index *ix, int results_dirfd, struct result_rest **ret_rest);
void result_rest_read(struct result_rest *rest);
int result_rest_merge(struct result_index *ix, struct result_rest *rest, bool *ret_all);
size_t result_rest_total(const struct result_rest *rest);
uint64_t result_rest_read_ms(const struct result_rest *rest);
void result_rest_free(struct result_rest *rest);
/* Rewrite the cache file from the index (tmp + rename, unsynced). On error
 * the old cache stays, and is still appended to. */
int result_index_save(struct result_index *ix);
/* Delete records (and their files) that ended more than retention_ms ago;
 * the number deleted. A record that cannot be deleted stays indexed (the
 * next sweep tries again). The cache is rewritten once it holds as many
 * lines for deleted records as for live ones. */
unsigned result_sweep(struct result_index *ix, int results_dirfd, uint64_t retention_ms, uint64_t now_ms);
void result_index_free(struct result_index *ix);

/* Parse an RFC 3339 timestamp written by format_rfc3339(); 0 if invalid. */
uint64_t parse_rfc3339_ms(const char *s);
