/* SPDX-License-Identifier: Apache-2.0 */
/* Result records: STATE/results/ID.json, and STATE/results/ID/ for the
 * job's captured stdout, stderr and artifacts when it has any. A record is written tmp + fsync + rename +
 * fsync(dir) before any client hears the job ended, so an acknowledged
 * result is whole after any crash, and a partial one is never visible.
 * Also keeps the in-memory index of finished jobs that `list`, `status`
 * and idempotency keys consult, and applies the retention setting. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct done_entry {
        char id[24];
        char *tenant;
        char *idempotency_key;
        char request_sha256[65]; /* "" for records without one */
        char state[16];
        int exit_code;
        uint64_t created_ms;
        uint64_t ended_ms;
};

struct result_index {
        struct done_entry *e;
        size_t n, cap;
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

int result_index_add(struct result_index *ix, json_t *rec);
struct done_entry *result_index_find(struct result_index *ix, const char *id);
struct done_entry *result_index_find_key(struct result_index *ix, const char *tenant, const char *key);
/* Finished jobs of one tenant, newest first. */
struct result_iter {
        const struct result_index *ix;
        const char *tenant;
        size_t next;
};
void result_iter_tenant(const struct result_index *ix, const char *tenant, struct result_iter *it);
const struct done_entry *result_iter_next(struct result_iter *it);
/* Read every stored record into the index. */
int result_index_load(struct result_index *ix, int results_dirfd);
/* Delete records (and their files) that ended more than retention_ms ago. */
unsigned result_sweep(struct result_index *ix, int results_dirfd, uint64_t retention_ms, uint64_t now_ms);
void result_index_free(struct result_index *ix);

/* Parse an RFC 3339 timestamp written by format_rfc3339(); 0 if invalid. */
uint64_t parse_rfc3339_ms(const char *s);
