/* SPDX-License-Identifier: Apache-2.0 */
/* The index of finished jobs and its cache file (result.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto.h"
#include "result.h"
#include "util.h"

#define CACHE "index"
#define CACHE_TMP ".index.tmp"
/* A cache whose first line is not this one (another format, or garbage) is
 * ignored as a whole. */
#define CACHE_HEADER "sbx-results-index 1\n"
/* Longer lines are not ours; an entry too long for one (possible only for a
 * record written by hand) is left out and read from its record. */
#define CACHE_LINE_MAX_BYTES 4096
#define CACHE_WRITE_CHUNK_BYTES 65536
#define NONE UINT32_MAX

struct result_tenant {
        char *name;
        uint32_t newest; /* entry number, NONE */
};

/* An entry before it is in the index: from a record or a cache line. */
struct fields {
        const char *id, *tenant, *key, *state, *digest;
        int exit_code;
        uint64_t created_ms, ended_ms;
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
static void relink(struct result_index *ix) {
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
        relink(ix);
        return 0;
}

/* Room for cap entries, the tables sized for them. */
static int reserve(struct result_index *ix, size_t cap) {
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

static int find_no(struct result_index *ix, const char *id, uint32_t *ret) {
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

static void set_fields(struct done_entry *d, const struct fields *f, uint32_t tenant_no, const char *tenant, char *key) {
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
static int put(struct result_index *ix, const struct fields *f, bool *ret_replaced) {
        uint32_t t;
        int r = intern_tenant(ix, f->tenant, &t);
        if (r == 0 && (ix->n == ix->cap || !ix->by_id))
                r = reserve(ix, ix->n == ix->cap ? 2 * ix->cap + 256 : ix->cap);
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
                        relink(ix);
                return 0;
        }
        set_fields(&ix->e[ix->n], f, t, ix->tenants[t].name, key);
        *slot = (uint32_t) ix->n + 1;
        link_key_and_tenant(ix, (uint32_t) ix->n++);
        return 0;
}

struct done_entry *result_index_find(struct result_index *ix, const char *id) {
        uint32_t i;
        return find_no(ix, id, &i) == 0 ? &ix->e[i] : NULL;
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

/* ------------------------------------------------------------ cache lines */

/* A line: ID STATE EXIT CREATED_MS ENDED_MS TENANT KEY REQUEST_SHA256 CHECK.
 * Strings are percent-encoded outside [A-Za-z0-9._~-], "-" standing for none
 * or empty (REQUEST_SHA256 is kept for keyed jobs only: the idempotency
 * conflict check is its one reader); CHECK is the FNV-1a hash of what precedes it, in hex, so that a line torn
 * or garbled by a crash (the cache is never synced) is not believed. */
static uint64_t fnv1a(const char *s, size_t len) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t i = 0; i < len; i++)
                h = (h ^ (unsigned char) s[i]) * 0x100000001b3ull;
        return h;
}

static bool plain_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == '~' || c == '-';
}

/* Append the encoding of s at *p, before end; false if it does not fit. */
static bool put_escaped(char **p, const char *end, const char *s) {
        static const char hex[] = "0123456789ABCDEF";
        bool lone_dash = s && streq(s, "-"); /* a lone "-" stands for none */
        for (s = s && *s ? s : "-"; *s; s++) {
                if (end - *p < 4)
                        return false;
                if (plain_char(*s) && !lone_dash)
                        *(*p)++ = *s;
                else {
                        *(*p)++ = '%';
                        *(*p)++ = hex[(unsigned char) *s >> 4];
                        *(*p)++ = hex[(unsigned char) *s & 15];
                }
        }
        *(*p)++ = ' ';
        return true;
}

/* The entry's line in buf; its length, or 0 if it does not fit. */
static size_t format_line(const struct done_entry *d, char *buf, size_t size) {
        char *p = buf, *end = buf + size;
        int n = snprintf(p, size, "%s ", d->id);
        p += n;
        if (!put_escaped(&p, end, d->state))
                return 0;
        n = snprintf(p, (size_t) (end - p), "%d %" PRIu64 " %" PRIu64 " ", d->exit_code, d->created_ms, d->ended_ms);
        if (n < 0 || n >= end - p)
                return 0;
        p += n;
        if (!put_escaped(&p, end, d->tenant) || !put_escaped(&p, end, d->idempotency_key) ||
            !put_escaped(&p, end, d->request_sha256))
                return 0;
        p--; /* the separator before the check */
        if (end - p < 19)
                return 0;
        uint64_t check = fnv1a(buf, (size_t) (p - buf));
        snprintf(p, (size_t) (end - p), " %016" PRIx64 "\n", check);
        return (size_t) (p - buf) + 18;
}

static int hex_digit(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode a field in place; NULL for "-" or a bad encoding (*bad set). */
static char *unescape(char *s, bool *bad) {
        if (streq(s, "-"))
                return NULL;
        char *w = s;
        for (const char *p = s; *p; p++) {
                if (*p != '%') {
                        if (!plain_char(*p))
                                goto fail;
                        *w++ = *p;
                        continue;
                }
                int hi = hex_digit(p[1]), lo = hi < 0 ? -1 : hex_digit(p[2]);
                if (lo < 0 || (hi == 0 && lo == 0))
                        goto fail;
                *w++ = (char) (hi << 4 | lo);
                p += 2;
        }
        *w = '\0';
        return s;
fail:
        *bad = true;
        return NULL;
}

static bool is_digest(const char *s) {
        return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

static bool parse_u64(const char *s, uint64_t *ret) {
        char *end;
        if (*s < '0' || *s > '9')
                return false;
        errno = 0;
        *ret = strtoull(s, &end, 10);
        return errno == 0 && *end == '\0';
}

/* Parse a line (without its newline) in place. */
static bool parse_line(char *line, size_t len, struct fields *f) {
        char *sp = memrchr(line, ' ', len);
        if (!sp || line + len - sp != 17)
                return false;
        uint64_t check = 0;
        for (const char *p = sp + 1; p < line + len; p++) {
                int v = hex_digit(*p);
                if (v < 0)
                        return false;
                check = check << 4 | (uint64_t) v;
        }
        if (check != fnv1a(line, (size_t) (sp - line)))
                return false;
        *sp = '\0';
        char *field[8], *p = line;
        for (int i = 0; i < 8; i++) {
                field[i] = strsep(&p, " ");
                if (!field[i] || !*field[i])
                        return false;
        }
        if (p)
                return false;
        bool bad = false;
        char *end;
        f->id = field[0];
        f->state = unescape(field[1], &bad);
        errno = 0;
        long ec = strtol(field[2], &end, 10);
        f->tenant = unescape(field[5], &bad);
        f->key = unescape(field[6], &bad);
        f->digest = unescape(field[7], &bad);
        if (bad || errno || *end || ec < -1 || ec > INT32_MAX || !f->state || strlen(f->state) >= 16 ||
            !proto_valid_job_id(f->id) || !parse_u64(field[3], &f->created_ms) || !parse_u64(field[4], &f->ended_ms) ||
            (f->digest && !is_digest(f->digest)))
                return false;
        f->exit_code = (int) ec;
        if (!f->tenant)
                f->tenant = "";
        return true;
}

/* Append the entry's line to the cache. The file is opened for each line,
 * not kept open: a results file system that turns read-only (remounted
 * after an I/O error, or by an operator) must not find it busy. A failed
 * append is cut back to whole lines; should the cut fail too, the next
 * line is glued onto the torn one, fails its check at the next load, and
 * its record is read instead. */
static void cache_append(struct result_index *ix, const struct done_entry *d) {
        if (!ix->attached)
                return;
        char line[CACHE_LINE_MAX_BYTES];
        size_t len = format_line(d, line, sizeof(line));
        _cleanup_close_ int fd = len ? openat(ix->dirfd, CACHE, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW) : -1;
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return;
        if (write_all(fd, line, len) < 0 && ftruncate(fd, st.st_size) < 0)
                return; /* see above */
}

static void fields_of_record(json_t *rec, struct fields *f) {
        const char *k = json_string_value(json_object_get(rec, "idempotency_key"));
        const char *dg = json_string_value(json_object_get(rec, "request_sha256"));
        json_t *ec = json_object_get(rec, "exit_code");
        *f = (struct fields){
                .id = json_string_value(json_object_get(rec, "job")),
                .tenant = json_string_value(json_object_get(rec, "tenant")) ?: "",
                .key = k && *k ? k : NULL,
                .state = json_string_value(json_object_get(rec, "state")) ?: "error",
                .digest = dg && is_digest(dg) ? dg : NULL,
                .exit_code = json_is_integer(ec) ? (int) json_integer_value(ec) : -1,
                .created_ms = parse_rfc3339_ms(json_string_value(json_object_get(rec, "created"))),
                .ended_ms = parse_rfc3339_ms(json_string_value(json_object_get(rec, "ended"))),
        };
}

int result_index_add(struct result_index *ix, json_t *rec) {
        struct fields f;
        fields_of_record(rec, &f);
        if (!f.id || !proto_valid_job_id(f.id))
                return -EINVAL;
        bool replaced;
        int r = put(ix, &f, &replaced);
        if (r < 0)
                return r;
        if (replaced)
                ix->dead_lines++;
        cache_append(ix, result_index_find(ix, f.id));
        return 0;
}

/* ------------------------------------------------------------ the cache file */

int result_index_save(struct result_index *ix) {
        if (!ix->attached)
                return -EBADF;
        _cleanup_close_ int fd = openat(ix->dirfd, CACHE_TMP, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                                        0600);
        if (fd < 0)
                return -errno;
        _cleanup_free_ char *buf = malloc(CACHE_WRITE_CHUNK_BYTES);
        size_t used = strlen(CACHE_HEADER);
        int r = buf ? 0 : -ENOMEM;
        if (buf)
                memcpy(buf, CACHE_HEADER, used);
        for (size_t i = 0; i < ix->n && r == 0; i++) {
                if (CACHE_WRITE_CHUNK_BYTES - used < CACHE_LINE_MAX_BYTES) {
                        r = write_all(fd, buf, used);
                        used = 0;
                }
                used += format_line(&ix->e[i], buf + used, CACHE_LINE_MAX_BYTES);
        }
        if (r == 0)
                r = write_all(fd, buf, used);
        /* Not synced: after a crash the next load checks whatever is there. */
        if (r == 0 && renameat(ix->dirfd, CACHE_TMP, ix->dirfd, CACHE) < 0)
                r = -errno;
        if (r < 0) {
                unlinkat(ix->dirfd, CACHE_TMP, 0);
                return r;
        }
        ix->dead_lines = 0;
        return 0;
}

/* Read the cache into the empty index. *stale counts what was wrong with
 * it: lines not believed (torn, garbled, another format), ids twice, or
 * the whole file when it is missing. */
static int read_cache(struct result_index *ix, size_t *stale) {
        int fd = openat(ix->dirfd, CACHE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_fclose_ FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
        if (!f) {
                if (fd >= 0)
                        close(fd);
                (*stale)++;
                return 0;
        }
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        ssize_t len = getline(&line, &cap, f);
        if (len != (ssize_t) strlen(CACHE_HEADER) || memcmp(line, CACHE_HEADER, (size_t) len) != 0) {
                (*stale)++;
                return 0;
        }
        /* Sized once for what the cache holds (lines are about 80 bytes),
         * instead of growing and relinking ten times over. */
        struct stat st;
        if (fstat(fd, &st) == 0) {
                int r = reserve(ix, (size_t) st.st_size / 64 + 1);
                if (r < 0)
                        return r;
        }
        while ((len = getline(&line, &cap, f)) > 0) {
                struct fields fl;
                bool replaced;
                if (len > CACHE_LINE_MAX_BYTES || line[len - 1] != '\n' || !parse_line(line, (size_t) len - 1, &fl)) {
                        (*stale)++;
                        continue;
                }
                int r = put(ix, &fl, &replaced);
                if (r < 0)
                        return r;
                if (replaced)
                        (*stale)++;
        }
        if (ferror(f))
                (*stale)++;
        return 0;
}

/* Check the index read from the cache against the records in the
 * directory: read those it lacks, drop those whose record is gone. */
static int reconcile(struct result_index *ix, size_t *stale) {
        size_t from_cache = ix->n;
        _cleanup_free_ bool *seen = calloc(from_cache + 1, sizeof(*seen));
        _cleanup_closedir_ DIR *d = NULL;
        if (!seen)
                return -ENOMEM;
        int r = opendir_dup(ix->dirfd, &d);
        if (r < 0)
                return r;
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                size_t l = strlen(de->d_name);
                char id[32];
                uint32_t i;
                if (l != 26 || !streq(de->d_name + 21, ".json"))
                        continue;
                memcpy(id, de->d_name, 21);
                id[21] = '\0';
                if (!proto_valid_job_id(id))
                        continue;
                if (find_no(ix, id, &i) == 0) {
                        if (i < from_cache)
                                seen[i] = true;
                        continue;
                }
                json_t *rec = NULL;
                if (result_load(ix->dirfd, id, &rec) < 0)
                        continue; /* unreadable: not listed, as ever */
                struct fields f;
                bool replaced;
                fields_of_record(rec, &f);
                r = f.id && streq(f.id, id) ? put(ix, &f, &replaced) : 0;
                json_decref(rec);
                if (r < 0)
                        return r;
                (*stale)++;
        }
        if (errno)
                return -errno;
        size_t w = 0;
        for (size_t i = 0; i < ix->n; i++) {
                if (i < from_cache && !seen[i]) {
                        free(ix->e[i].idempotency_key);
                        (*stale)++;
                        continue;
                }
                ix->e[w++] = ix->e[i];
        }
        if (w != ix->n) {
                ix->n = w;
                relink(ix);
        }
        return 0;
}

static int cmp_created(const void *a, const void *b) {
        const struct done_entry *x = a, *y = b;
        if (x->created_ms != y->created_ms)
                return x->created_ms < y->created_ms ? -1 : 1;
        if (x->ended_ms != y->ended_ms)
                return x->ended_ms < y->ended_ms ? -1 : 1;
        return strcmp(x->id, y->id);
}

static void sort_by_created(struct result_index *ix) {
        for (size_t i = 1; i < ix->n; i++)
                if (cmp_created(&ix->e[i - 1], &ix->e[i]) > 0) {
                        qsort(ix->e, ix->n, sizeof(*ix->e), cmp_created);
                        relink(ix);
                        return;
                }
}

int result_index_load(struct result_index *ix, int results_dirfd) {
        if (ix->n || ix->attached)
                return -EBUSY;
        ix->attached = true;
        ix->dirfd = results_dirfd;
        /* a save that a crash interrupted */
        unlinkat(results_dirfd, CACHE_TMP, 0);
        size_t stale = 0;
        int r = read_cache(ix, &stale);
        if (r == 0)
                r = reconcile(ix, &stale);
        if (r < 0) {
                result_index_free(ix);
                return r;
        }
        sort_by_created(ix);
        /* Should that fail, the next load reads again what the old cache
         * lacks (or all the records, if there is none). */
        if (stale > 0)
                result_index_save(ix);
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
        relink(ix);
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
