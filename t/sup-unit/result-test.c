/* SPDX-License-Identifier: Apache-2.0 */
/* Result records and the index of finished jobs: a durable write replaces a
 * record whole; lookups by id, by tenant and idempotency key, and a tenant's
 * jobs newest first; the cache file is used at load instead of the records,
 * and checked against them: a record it lacks (a crash between the rename
 * and the append) is read, a line whose record is gone is dropped, a torn or
 * garbled line is not believed and its record read instead; retention
 * deletes records with their files and rewrites the cache. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "result.h"
#include "util.h"

static char dir[64];
static int dfd = -1;

static int setup(void **state) {
        strcpy(dir, "/tmp/sbx-result-test.XXXXXX");
        assert_non_null(mkdtemp(dir));
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        return 0;
}

static int teardown(void **state) {
        int up = open("/tmp", O_RDONLY | O_DIRECTORY);
        rm_rf_at(up, dir + 5);
        close(up);
        close(dfd);
        return 0;
}

static void job_id(unsigned n, char id[static 24]) {
        snprintf(id, 24, "j%020x", n);
}

/* A record shaped like the daemon's, created at second n. */
static json_t *record(unsigned n, const char *tenant, const char *key, const char *state, int exit_code) {
        char id[24], created[64], ended[64];
        job_id(n, id);
        uint64_t t = 1795000000000ull + n * 1000ull;
        format_rfc3339(t, created, sizeof(created));
        format_rfc3339(t + 1500, ended, sizeof(ended));
        json_t *r = json_pack("{s:i, s:s, s:s, s:i, s:[s, s], s:s, s:s, s:o, s:s, s:s, s:i}", "v", 1, "job", id, "tenant",
                              tenant, "uid", 1000, "command", "echo", "hi", "profile", "default", "state", state, "exit_code",
                              exit_code >= 0 ? json_integer(exit_code) : json_null(), "created", created, "ended", ended,
                              "wall_ms", 1500);
        assert_non_null(r);
        json_object_set_new(r, "idempotency_key", key ? json_string(key) : json_null());
        char digest[65];
        snprintf(digest, sizeof(digest), "%064x", n);
        json_object_set_new(r, "request_sha256", json_string(digest));
        return r;
}

/* Store a record (as the group commit does) and return its id. */
static void store(unsigned n, const char *tenant, const char *key, const char *state, struct result_index *ix) {
        json_t *r = record(n, tenant, key, state, strcmp(state, "succeeded") == 0 ? 0 : 1);
        char id[24];
        job_id(n, id);
        assert_int_equal(result_store(dfd, id, r, false), 0);
        if (ix)
                assert_int_equal(result_index_add(ix, r), 0);
        json_decref(r);
}

static struct done_entry *find_n(struct result_index *ix, unsigned n) {
        char id[24];
        job_id(n, id);
        return result_index_find(ix, id);
}

static void overwrite_record(unsigned n, const char *text) {
        char name[64];
        job_id(n, name);
        strcat(name, ".json");
        int fd = openat(dfd, name, O_WRONLY | O_TRUNC | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
}

static void read_cache(char **ret, size_t *ret_len) {
        assert_int_equal(read_file_at(dfd, "index", 1 << 24, ret, ret_len), 0);
}

static void write_cache(const char *s, size_t len) {
        int fd = openat(dfd, "index", O_WRONLY | O_TRUNC | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, s, len), (ssize_t) len);
        close(fd);
}

static unsigned count_lines(const char *s) {
        unsigned n = 0;
        for (; *s; s++)
                n += *s == '\n';
        return n;
}

static void test_result_store(void **state) {
        char id[24];
        job_id(1, id);
        assert_int_equal(mkdirat(dfd, id, 0700), 0); /* its output directory */
        json_t *r = record(1, "t", NULL, "succeeded", 0);
        assert_int_equal(result_store(dfd, id, r, true), 0);
        json_object_set_new(r, "state", json_string("failed"));
        assert_int_equal(result_store(dfd, id, r, false), 0);
        char tmp[96];
        snprintf(tmp, sizeof(tmp), ".%s.json.tmp", id);
        assert_int_equal(faccessat(dfd, tmp, F_OK, 0), -1);
        json_decref(r);
        json_t *back;
        assert_int_equal(result_load(dfd, id, &back), 0);
        assert_string_equal(json_string_value(json_object_get(back, "state")), "failed");
        json_decref(back);
        assert_true(result_exists(dfd, id));
        job_id(2, id);
        assert_false(result_exists(dfd, id));
        assert_int_equal(result_load(dfd, id, &back), -ENOENT);
}

static void test_rfc3339(void **state) {
        char buf[64];
        uint64_t t = 1795000000123ull;
        assert_int_equal(parse_rfc3339_ms(format_rfc3339(t, buf, sizeof(buf))), t);
        assert_int_equal(parse_rfc3339_ms("garbage"), 0);
        assert_int_equal(parse_rfc3339_ms(NULL), 0);
}

/* Many entries (the tables grow several times), three tenants sharing keys. */
static void test_lookup(void **state) {
        static const char *const tenants[] = { "alice", "bob", "carol-2" };
        struct result_index ix = { 0 };
        const unsigned n = 5000;
        for (unsigned i = 1; i <= n; i++) {
                char key[32];
                snprintf(key, sizeof(key), "k%u", i / 3);
                json_t *r = record(i, tenants[i % 3], i % 5 ? key : NULL, i % 7 ? "succeeded" : "failed", i % 7 ? 0 : 7);
                assert_int_equal(result_index_add(&ix, r), 0);
                json_decref(r);
        }
        assert_int_equal(ix.n, n);
        for (unsigned i = 1; i <= n; i++) {
                struct done_entry *d = find_n(&ix, i);
                assert_non_null(d);
                assert_string_equal(d->tenant, tenants[i % 3]);
                assert_string_equal(d->state, i % 7 ? "succeeded" : "failed");
                assert_int_equal(d->exit_code, i % 7 ? 0 : 7);
                assert_int_equal(d->ended_ms - d->created_ms, 1500);
                if (i % 5) {
                        char key[32];
                        snprintf(key, sizeof(key), "k%u", i / 3);
                        assert_string_equal(d->idempotency_key, key);
                        /* the same key under another tenant is another job */
                        assert_ptr_equal(result_index_find_key(&ix, tenants[i % 3], key), d);
                } else
                        assert_null(d->idempotency_key);
        }
        assert_null(find_n(&ix, n + 1));
        assert_null(result_index_find_key(&ix, "alice", "nope"));
        assert_null(result_index_find_key(&ix, "dave", "k1"));

        /* each tenant's jobs, newest first, and only theirs */
        for (unsigned t = 0; t < 3; t++) {
                unsigned seen = 0, last = n + 3;
                struct result_iter it;
                result_iter_tenant(&ix, tenants[t], &it);
                for (const struct done_entry *d; (d = result_iter_next(&it));) {
                        unsigned i = (unsigned) strtoul(d->id + 1, NULL, 16);
                        assert_int_equal(i % 3, t);
                        assert_true(i < last);
                        last = i;
                        seen++;
                }
                assert_int_equal(seen, n / 3 + (t > 0 && t <= n % 3));
        }
        struct result_iter it;
        result_iter_tenant(&ix, "dave", &it);
        assert_null(result_iter_next(&it));

        /* a record stored again replaces its entry, key included */
        json_t *r = record(10, "alice", "fresh", "killed", -1);
        assert_int_equal(result_index_add(&ix, r), 0);
        json_decref(r);
        assert_int_equal(ix.n, n);
        struct done_entry *d = find_n(&ix, 10);
        assert_string_equal(d->state, "killed");
        assert_int_equal(d->exit_code, -1);
        assert_ptr_equal(result_index_find_key(&ix, "alice", "fresh"), d);
        assert_null(result_index_find_key(&ix, "bob", "k3")); /* job 10 was bob's */

        /* the newest job with a key is the one found */
        r = record(n + 1, "bob", "k3", "failed", 1);
        assert_int_equal(result_index_add(&ix, r), 0);
        json_decref(r);
        assert_ptr_equal(result_index_find_key(&ix, "bob", "k3"), find_n(&ix, n + 1));

        r = json_pack("{s:s}", "job", "../etc");
        assert_int_equal(result_index_add(&ix, r), -EINVAL);
        json_decref(r);
        result_index_free(&ix);
        assert_null(result_index_find(&ix, "j00000000000000000001"));
        result_iter_tenant(&ix, "alice", &it);
        assert_null(result_iter_next(&it));
}

/* The first load reads the records and writes the cache; the next one
 * uses the cache and does not read them: a record replaced by garbage is
 * still listed as the cache says. */
static void test_load_uses_cache(void **state) {
        for (unsigned i = 1; i <= 50; i++)
                store(i, i % 2 ? "alice" : "bob", NULL, "succeeded", NULL);
        struct result_index ix = { 0 };
        assert_int_equal(result_index_load(&ix, dfd), 0);
        assert_int_equal(ix.n, 50);
        result_index_free(&ix);
        size_t len;
        char *cache;
        read_cache(&cache, &len);
        assert_int_equal(count_lines(cache), 51);
        assert_memory_equal(cache, "sbx-results-index 1\n", 20);
        free(cache);

        overwrite_record(7, "not json");
        assert_int_equal(result_index_load(&ix, dfd), 0);
        assert_int_equal(ix.n, 50);
        struct done_entry *d = find_n(&ix, 7);
        assert_non_null(d);
        assert_string_equal(d->state, "succeeded");
        assert_string_equal(d->tenant, "alice");
        /* sorted by creation: the newest last */
        struct result_iter it;
        result_iter_tenant(&ix, "bob", &it);
        assert_ptr_equal(result_iter_next(&it), find_n(&ix, 50));
        result_index_free(&ix);
}

/* A crash between a record's rename and its cache line, and a crash in a
 * sweep between a record's deletion and the cache's rewrite. */
static void test_reconcile(void **state) {
        struct result_index ix = { 0 };
        assert_int_equal(result_index_load(&ix, dfd), 0);
        assert_int_equal(ix.n, 0);
        for (unsigned i = 1; i <= 20; i++)
                store(i, "alice", NULL, "succeeded", &ix);
        result_index_free(&ix);
        store(21, "alice", "late", "failed", NULL); /* no cache line */
        char name[64];
        job_id(5, name);
        strcat(name, ".json");
        assert_int_equal(unlinkat(dfd, name, 0), 0); /* record gone */

        assert_int_equal(result_index_load(&ix, dfd), 0);
        assert_int_equal(ix.n, 20);
        assert_null(find_n(&ix, 5));
        assert_non_null(find_n(&ix, 21));
        assert_ptr_equal(result_index_find_key(&ix, "alice", "late"), find_n(&ix, 21));
        result_index_free(&ix);
        /* and the cache was rewritten to match */
        size_t len;
        char *cache;
        read_cache(&cache, &len);
        assert_int_equal(count_lines(cache), 21);
        char id5[24];
        job_id(5, id5);
        assert_null(strstr(cache, id5));
        free(cache);
}

/* A cache damaged by a crash (torn, garbled, another format) is not
 * believed: its bad lines are ignored and those records read. */
static void test_corrupt_cache(void **state) {
        for (unsigned i = 1; i <= 30; i++)
                store(i, "alice", NULL, "succeeded", NULL);
        struct result_index ix = { 0 };
        assert_int_equal(result_index_load(&ix, dfd), 0);
        result_index_free(&ix);
        size_t len;
        char *cache;
        read_cache(&cache, &len);
        char id[24];
        /* a lie about job 3 whose checksum does not match */
        job_id(3, id);
        char *line = strstr(cache, id);
        assert_non_null(line);
        memcpy(strstr(line, "succeeded"), "killedxxx", 9);
        /* job 4's line replaced by garbage */
        job_id(4, id);
        line = strstr(cache, id);
        memset(line, 'x', 20);
        /* the last line torn */
        write_cache(cache, len - 7);
        free(cache);

        assert_int_equal(result_index_load(&ix, dfd), 0);
        assert_int_equal(ix.n, 30);
        for (unsigned i = 1; i <= 30; i++) {
                struct done_entry *d = find_n(&ix, i);
                assert_non_null(d);
                assert_string_equal(d->state, "succeeded");
        }
        result_index_free(&ix);
        /* rewritten whole: the next load believes every line */
        read_cache(&cache, &len);
        assert_int_equal(count_lines(cache), 31);
        free(cache);
        overwrite_record(3, "not json");
        assert_int_equal(result_index_load(&ix, dfd), 0);
        assert_int_equal(ix.n, 30);
        assert_non_null(find_n(&ix, 3));
        result_index_free(&ix);

        /* a cache in another format is ignored as a whole */
        write_cache("sbx-results-index 2\n", 20);
        assert_int_equal(result_index_load(&ix, dfd), 0);
        assert_int_equal(ix.n, 29); /* job 3's record is garbage now */
        assert_null(find_n(&ix, 3));
        result_index_free(&ix);
}

/* Names and keys with any bytes, and the request digests of keyed jobs,
 * survive the cache. */
static void test_cache_escaping(void **state) {
        static const char *const keys[] = { "-", "a b", "100%", "x\ty\nz", "caf\xc3\xa9", "%2D", "k-1" };
        struct result_index ix = { 0 };
        assert_int_equal(result_index_load(&ix, dfd), 0);
        for (unsigned i = 0; i < ARRAY_SIZE(keys); i++)
                store(i + 1, i % 2 ? "team-a" : "-", keys[i], "succeeded", &ix);
        store(20, "", NULL, "timed_out", &ix);
        result_index_free(&ix);
        overwrite_record(1, "not json"); /* so that its entry must come from the cache */
        assert_int_equal(result_index_load(&ix, dfd), 0);
        assert_int_equal(ix.n, ARRAY_SIZE(keys) + 1);
        for (unsigned i = 0; i < ARRAY_SIZE(keys); i++) {
                struct done_entry *d = result_index_find_key(&ix, i % 2 ? "team-a" : "-", keys[i]);
                assert_non_null(d);
                assert_ptr_equal(d, find_n(&ix, i + 1));
                assert_string_equal(d->idempotency_key, keys[i]);
                /* what the conflict check of a key compares */
                char digest[65];
                snprintf(digest, sizeof(digest), "%064x", i + 1);
                assert_string_equal(d->request_sha256, digest);
        }
        struct done_entry *d = find_n(&ix, 20);
        assert_string_equal(d->tenant, "");
        assert_null(d->idempotency_key);
        assert_string_equal(d->request_sha256, ""); /* no key, no need */
        assert_string_equal(d->state, "timed_out");
        result_index_free(&ix);
}

static void test_sweep(void **state) {
        struct result_index ix = { 0 };
        assert_int_equal(result_index_load(&ix, dfd), 0);
        for (unsigned i = 1; i <= 10; i++) {
                char id[24];
                job_id(i, id);
                assert_int_equal(mkdirat(dfd, id, 0700), 0); /* its output */
                store(i, i % 2 ? "alice" : "bob", i == 2 ? "two" : NULL, "succeeded", &ix);
        }
        uint64_t ended4 = find_n(&ix, 4)->ended_ms;
        /* a retention of "for ever" keeps everything */
        assert_int_equal(result_sweep(&ix, dfd, UINT64_MAX - 1000, ended4 + 10000), 0);
        /* kept until older than the setting */
        assert_int_equal(result_sweep(&ix, dfd, 1000, ended4 + 1000), 3);
        assert_int_equal(ix.n, 7);
        for (unsigned i = 1; i <= 10; i++) {
                char id[24];
                job_id(i, id);
                assert_int_equal(find_n(&ix, i) != NULL, i > 3);
                assert_int_equal(result_exists(dfd, id), i > 3);
                assert_int_equal(faccessat(dfd, id, F_OK, 0) == 0, i > 3); /* and its files */
        }
        assert_null(result_index_find_key(&ix, "bob", "two"));
        unsigned seen = 0;
        struct result_iter it;
        result_iter_tenant(&ix, "alice", &it);
        while (result_iter_next(&it))
                seen++;
        assert_int_equal(seen, 3); /* 5, 7, 9 */

        /* 3 dead lines for 7 live ones: not rewritten yet */
        size_t len;
        char *cache;
        read_cache(&cache, &len);
        assert_int_equal(count_lines(cache), 11);
        free(cache);
        assert_int_equal(result_sweep(&ix, dfd, 1000, ended4 + 3000), 2);
        read_cache(&cache, &len);
        assert_int_equal(count_lines(cache), 6);
        free(cache);
        /* appends go to the rewritten cache */
        store(11, "alice", NULL, "succeeded", &ix);
        result_index_free(&ix);
        read_cache(&cache, &len);
        assert_int_equal(count_lines(cache), 7);
        free(cache);
        assert_int_equal(result_index_load(&ix, dfd), 0);
        assert_int_equal(ix.n, 6);
        result_index_free(&ix);
}

/* A leftover of a save a crash interrupted is removed; the index is loaded
 * once only. */
static void test_load_leftovers(void **state) {
        int fd = openat(dfd, ".index.tmp", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
        store(1, "alice", NULL, "succeeded", NULL);
        struct result_index ix = { 0 };
        assert_int_equal(result_index_load(&ix, dfd), 0);
        assert_int_equal(faccessat(dfd, ".index.tmp", F_OK, 0), -1);
        assert_int_equal(result_index_load(&ix, dfd), -EBUSY);
        assert_int_equal(ix.n, 1);
        result_index_free(&ix);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_result_store),
                T(test_rfc3339),
                T(test_lookup),
                T(test_load_uses_cache),
                T(test_reconcile),
                T(test_corrupt_cache),
                T(test_cache_escaping),
                T(test_sweep),
                T(test_load_leftovers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
