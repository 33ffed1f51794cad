/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "result.h"
#include "util.h"

#define RESULT_MAX (64u << 20)

static void record_name(const char *id, char *buf, size_t len) {
        snprintf(buf, len, "%s.json", id);
}

int result_store(int results_dirfd, const char *id, json_t *rec, bool sync_dir) {
        char name[64];
        size_t n;
        record_name(id, name, sizeof(name));
        _cleanup_free_ char *s = json_line(rec, &n);
        if (!s)
                return -ENOMEM;
        return write_file_durable(results_dirfd, name, s, n, 0600, sync_dir);
}

char *result_text(json_t *rec, size_t *ret_len) {
        return json_line(rec, ret_len);
}

void result_names(const char *id, char name[static RESULT_NAME_MAX], char tmp[static RESULT_NAME_MAX]) {
        record_name(id, name, RESULT_NAME_MAX);
        snprintf(tmp, RESULT_NAME_MAX, ".%s.tmp", name);
}

int result_load(int results_dirfd, const char *id, json_t **ret) {
        char name[64];
        record_name(id, name, sizeof(name));
        _cleanup_free_ char *s = NULL;
        size_t len;
        int r = read_file_at(results_dirfd, name, RESULT_MAX, &s, &len);
        if (r < 0)
                return r;
        json_t *j = json_loadb(s, len, 0, NULL);
        if (!j)
                return -EBADMSG;
        *ret = j;
        return 0;
}

int result_exists(int results_dirfd, const char *id) {
        char name[64];
        record_name(id, name, sizeof(name));
        return faccessat(results_dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

uint64_t parse_rfc3339_ms(const char *s) {
        struct tm tm;
        unsigned ms = 0;
        memset(&tm, 0, sizeof(tm));
        if (!s)
                return 0;
        const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return 0;
        if (*p == '.')
                ms = (unsigned) strtoul(p + 1, NULL, 10);
        time_t t = timegm(&tm);
        return t < 0 ? 0 : (uint64_t) t * 1000 + ms;
}

int result_index_add(struct result_index *ix, json_t *rec) {
        const char *id = json_string_value(json_object_get(rec, "job"));
        if (!id || !proto_valid_job_id(id))
                return -EINVAL;
        if (ix->n == ix->cap) {
                size_t nc = ix->cap ? ix->cap * 2 : 256;
                struct done_entry *ne = realloc(ix->e, nc * sizeof(*ne));
                if (!ne)
                        return -ENOMEM;
                ix->e = ne;
                ix->cap = nc;
        }
        struct done_entry *d = &ix->e[ix->n];
        memset(d, 0, sizeof(*d));
        snprintf(d->id, sizeof(d->id), "%s", id);
        const char *t = json_string_value(json_object_get(rec, "tenant"));
        const char *k = json_string_value(json_object_get(rec, "idempotency_key"));
        const char *st = json_string_value(json_object_get(rec, "state"));
        const char *dg = json_string_value(json_object_get(rec, "request_sha256"));
        if (dg && strlen(dg) == 64)
                memcpy(d->request_sha256, dg, 65);
        d->tenant = strdup(t ? t : "");
        d->idempotency_key = k ? strdup(k) : NULL;
        snprintf(d->state, sizeof(d->state), "%s", st ? st : "error");
        json_t *ec = json_object_get(rec, "exit_code");
        d->exit_code = json_is_integer(ec) ? (int) json_integer_value(ec) : -1;
        d->created_ms = parse_rfc3339_ms(json_string_value(json_object_get(rec, "created")));
        d->ended_ms = parse_rfc3339_ms(json_string_value(json_object_get(rec, "ended")));
        if (!d->tenant)
                return -ENOMEM;
        ix->n++;
        return 0;
}

struct done_entry *result_index_find(struct result_index *ix, const char *id) {
        for (size_t i = ix->n; i-- > 0;)
                if (streq(ix->e[i].id, id))
                        return &ix->e[i];
        return NULL;
}

struct done_entry *result_index_find_key(struct result_index *ix, const char *tenant, const char *key) {
        for (size_t i = ix->n; i-- > 0;)
                if (ix->e[i].idempotency_key && streq(ix->e[i].idempotency_key, key) && streq(ix->e[i].tenant, tenant))
                        return &ix->e[i];
        return NULL;
}

void result_iter_tenant(const struct result_index *ix, const char *tenant, struct result_iter *it) {
        it->ix = ix;
        it->tenant = tenant;
        it->next = ix->n;
}

const struct done_entry *result_iter_next(struct result_iter *it) {
        while (it->next > 0) {
                const struct done_entry *e = &it->ix->e[--it->next];
                if (streq(e->tenant, it->tenant))
                        return e;
        }
        return NULL;
}

static int cmp_created(const void *a, const void *b) {
        const struct done_entry *x = a, *y = b;
        return x->created_ms < y->created_ms ? -1 : x->created_ms > y->created_ms;
}

int result_index_load(struct result_index *ix, int results_dirfd) {
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_dup(results_dirfd, &d);
        if (r < 0)
                return r;
        struct dirent *de;
        while ((de = readdir(d))) {
                char id[32];
                size_t l = strlen(de->d_name);
                if (l < 6 || l - 5 >= sizeof(id) || strcmp(de->d_name + l - 5, ".json") != 0)
                        continue;
                memcpy(id, de->d_name, l - 5);
                id[l - 5] = '\0';
                if (!proto_valid_job_id(id))
                        continue;
                json_t *rec = NULL;
                if (result_load(results_dirfd, id, &rec) == 0) {
                        result_index_add(ix, rec);
                        json_decref(rec);
                }
        }
        if (ix->n > 1)
                qsort(ix->e, ix->n, sizeof(*ix->e), cmp_created);
        return 0;
}

unsigned result_sweep(struct result_index *ix, int results_dirfd, uint64_t retention_ms, uint64_t now_ms) {
        unsigned removed = 0;
        size_t w = 0;
        for (size_t i = 0; i < ix->n; i++) {
                struct done_entry *d = &ix->e[i];
                if (d->ended_ms && d->ended_ms + retention_ms < now_ms) {
                        char name[64];
                        record_name(d->id, name, sizeof(name));
                        /* Files first: a crash in between leaves a record,
                         * which the next sweep finds, not files no record
                         * points at. */
                        rm_rf_at(results_dirfd, d->id);
                        unlinkat(results_dirfd, name, 0);
                        free(d->tenant);
                        free(d->idempotency_key);
                        removed++;
                        continue;
                }
                ix->e[w++] = *d;
        }
        ix->n = w;
        return removed;
}

void result_index_free(struct result_index *ix) {
        for (size_t i = 0; i < ix->n; i++) {
                free(ix->e[i].tenant);
                free(ix->e[i].idempotency_key);
        }
        free(ix->e);
        memset(ix, 0, sizeof(*ix));
}
