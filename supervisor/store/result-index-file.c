/* SPDX-License-Identifier: Apache-2.0 */
/* The cache file of the index of finished jobs (result.h): its line
 * format, appending a line, saving the whole index, and loading it back
 * checked against the records in the results directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto.h"
#include "result-index-internal.h"
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

/* ------------------------------------------------------------ cache lines */

/* A line: ID STATE EXIT CREATED_MS ENDED_MS TENANT KEY REQUEST_SHA256 CHECK.
 * Strings are percent-encoded outside [A-Za-z0-9._~-], "-" standing for none
 * or empty (REQUEST_SHA256 is kept for keyed jobs only: the idempotency
 * conflict check is its one reader); CHECK is the FNV-1a hash of what
 * precedes it, in hex, so that a line torn or garbled by a crash (the cache
 * is never synced) is not believed. */
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

static bool parse_u64(const char *s, uint64_t *ret) {
        char *end;
        if (*s < '0' || *s > '9')
                return false;
        errno = 0;
        *ret = strtoull(s, &end, 10);
        return errno == 0 && *end == '\0';
}

/* Parse a line (without its newline) in place. */
static bool parse_line(char *line, size_t len, struct result_fields *f) {
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
            (f->digest && !result_is_digest(f->digest)))
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
void result_cache_append(struct result_index *ix, const struct done_entry *d) {
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
                int r = result_index_reserve(ix, (size_t) st.st_size / 64 + 1);
                if (r < 0)
                        return r;
        }
        while ((len = getline(&line, &cap, f)) > 0) {
                struct result_fields fl;
                bool replaced;
                if (len > CACHE_LINE_MAX_BYTES || line[len - 1] != '\n' || !parse_line(line, (size_t) len - 1, &fl)) {
                        (*stale)++;
                        continue;
                }
                int r = result_index_put(ix, &fl, &replaced);
                if (r < 0)
                        return r;
                if (replaced)
                        (*stale)++;
        }
        if (ferror(f))
                (*stale)++;
        return 0;
}

/* A record the cache lacks, to be read: its id and inode number. */
struct missing {
        ino_t ino;
        char id[24];
};

static int cmp_ino(const void *a, const void *b) {
        const struct missing *x = a, *y = b;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* Index one record read by id (and expected to carry that id). */
static int put_record(struct result_index *ix, const char *id, json_t *rec, size_t *stale) {
        struct result_fields f;
        bool replaced;
        result_fields_of_record(rec, &f);
        if (!f.id || !streq(f.id, id))
                return 0;
        int r = result_index_put(ix, &f, &replaced);
        if (r == 0)
                (*stale)++;
        return r;
}

/* Check the index read from the cache against the records in the
 * directory: drop entries whose record is gone, and collect the ids of
 * the records it lacks, in the order of their inode numbers (in directory
 * order, a hash of the name, each cold read seeks elsewhere in the inode
 * table). */
static int reconcile(struct result_index *ix, size_t *stale, struct missing **ret_m, size_t *ret_n) {
        size_t from_cache = ix->n;
        _cleanup_free_ bool *seen = calloc(from_cache + 1, sizeof(*seen));
        _cleanup_free_ struct missing *m = NULL;
        size_t nm = 0, cap = 0;
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
                if (result_index_find_no(ix, id, &i) == 0) {
                        if (i < from_cache)
                                seen[i] = true;
                        continue;
                }
                if (nm == cap) {
                        size_t c = cap ? cap * 2 : 256;
                        struct missing *g = reallocarray(m, c, sizeof(*m));
                        if (!g)
                                return -ENOMEM;
                        m = g;
                        cap = c;
                }
                m[nm].ino = de->d_ino;
                memcpy(m[nm++].id, id, 22);
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
                result_index_relink(ix);
        }
        if (nm > 1) /* (qsort wants an array, even of none) */
                qsort(m, nm, sizeof(*m), cmp_ino);
        *ret_m = TAKE_PTR(m);
        *ret_n = nm;
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
                        result_index_relink(ix);
                        return;
                }
}

/* ------------------------------------------------------------ the records the cache lacks */

/* What a batch read of one record: its entry's fields, owned. */
struct loaded {
        bool ok;
        char id[24], state[16], digest[65];
        char *tenant, *key;
        int exit_code;
        uint64_t created_ms, ended_ms;
};

struct result_rest {
        int dirfd;
        struct missing *m;
        size_t n, next; /* next: the first id no batch has taken */
        struct loaded batch[RESULT_REST_BATCH];
        size_t batch_n;
        size_t stale;
        uint64_t read_ms;
};

static void copy_field(char *dst, size_t size, const char *src) {
        snprintf(dst, size, "%s", src ? src : "");
}

void result_rest_read(struct result_rest *rest) {
        uint64_t t0 = now_mono_ms();
        rest->batch_n = 0;
        while (rest->batch_n < RESULT_REST_BATCH && rest->next < rest->n) {
                const char *id = rest->m[rest->next++].id;
                struct loaded *l = &rest->batch[rest->batch_n++];
                json_t *rec = NULL;
                struct result_fields f;
                *l = (struct loaded){ .ok = false };
                if (result_load(rest->dirfd, id, &rec) < 0)
                        continue; /* unreadable: not listed, as ever */
                result_fields_of_record(rec, &f);
                if (f.id && streq(f.id, id) && strlen(f.state) < sizeof(l->state)) {
                        copy_field(l->id, sizeof(l->id), f.id);
                        copy_field(l->state, sizeof(l->state), f.state);
                        copy_field(l->digest, sizeof(l->digest), f.digest);
                        l->tenant = strdup(f.tenant);
                        l->key = f.key ? strdup(f.key) : NULL;
                        l->exit_code = f.exit_code;
                        l->created_ms = f.created_ms;
                        l->ended_ms = f.ended_ms;
                        l->ok = l->tenant && (l->key || !f.key);
                }
                json_decref(rec);
        }
        rest->read_ms += now_mono_ms() - t0;
}

static void free_batch(struct result_rest *rest) {
        for (size_t i = 0; i < rest->batch_n; i++) {
                free(rest->batch[i].tenant);
                free(rest->batch[i].key);
        }
        rest->batch_n = 0;
}

int result_rest_merge(struct result_index *ix, struct result_rest *rest, bool *ret_all) {
        int r = 0;
        for (size_t i = 0; i < rest->batch_n && r == 0; i++) {
                const struct loaded *l = &rest->batch[i];
                uint32_t no;
                bool replaced;
                /* Indexed meanwhile: finished again after a restart, say,
                 * and what the index has is newer than what was read. */
                if (!l->ok || result_index_find_no(ix, l->id, &no) == 0)
                        continue;
                struct result_fields f = { .id = l->id, .tenant = l->tenant, .key = l->key, .state = l->state,
                                           .digest = l->digest[0] ? l->digest : NULL, .exit_code = l->exit_code,
                                           .created_ms = l->created_ms, .ended_ms = l->ended_ms };
                r = result_index_put(ix, &f, &replaced);
                rest->stale++;
        }
        free_batch(rest);
        *ret_all = rest->next >= rest->n;
        if (r < 0 || !*ret_all)
                return r;
        sort_by_created(ix);
        if (rest->stale > 0)
                result_index_save(ix);
        return 0;
}

size_t result_rest_total(const struct result_rest *rest) {
        return rest->n;
}

uint64_t result_rest_read_ms(const struct result_rest *rest) {
        return rest->read_ms;
}

void result_rest_free(struct result_rest *rest) {
        if (!rest)
                return;
        free_batch(rest);
        free(rest->m);
        free(rest);
}

/* ------------------------------------------------------------ loading */

int result_index_open(struct result_index *ix, int results_dirfd, struct result_rest **ret_rest) {
        if (ix->n || ix->attached)
                return -EBUSY;
        ix->attached = true;
        ix->dirfd = results_dirfd;
        /* a save that a crash interrupted */
        unlinkat(results_dirfd, CACHE_TMP, 0);
        size_t stale = 0, nm = 0;
        _cleanup_free_ struct missing *m = NULL;
        int r = read_cache(ix, &stale);
        if (r == 0)
                r = reconcile(ix, &stale, &m, &nm);
        /* A few records are read here; more, by the caller's choice. */
        for (size_t k = 0; r == 0 && (!ret_rest || nm <= RESULT_REST_BATCH) && k < nm; k++) {
                json_t *rec = NULL;
                if (result_load(ix->dirfd, m[k].id, &rec) < 0)
                        continue; /* unreadable: not listed, as ever */
                r = put_record(ix, m[k].id, rec, &stale);
                json_decref(rec);
        }
        if (r < 0) {
                result_index_free(ix);
                return r;
        }
        if (ret_rest && nm > RESULT_REST_BATCH) {
                struct result_rest *rest = calloc(1, sizeof(*rest));
                if (!rest) {
                        result_index_free(ix);
                        return -ENOMEM;
                }
                *rest = (struct result_rest){ .dirfd = results_dirfd, .m = TAKE_PTR(m), .n = nm, .stale = stale };
                *ret_rest = rest;
                return 0;
        }
        if (ret_rest)
                *ret_rest = NULL;
        sort_by_created(ix);
        /* Should that fail, the next load reads again what the old cache
         * lacks (or all the records, if there is none). */
        if (stale > 0)
                result_index_save(ix);
        return 0;
}

int result_index_load(struct result_index *ix, int results_dirfd) {
        return result_index_open(ix, results_dirfd, NULL);
}
