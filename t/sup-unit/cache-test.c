/* SPDX-License-Identifier: Apache-2.0 */
/* The bundle cache's bookkeeping: least recently used trees go first, to
 * the byte budget and past the age limit, and a tree a job holds never
 * goes, whatever the budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "cache.h"

#define MB (1ull << 20)
#define DAY_MS (24ull * 3600 * 1000)

static struct cache_entry *add(struct cache *c, char digit, const char *version, uint64_t bytes, uint64_t used_ms) {
        char sha[65];
        memset(sha, digit, 64);
        sha[64] = '\0';
        struct cache_entry *e = cache_entry_new(sha, "main", "hello", version, bytes, used_ms, NULL);
        assert_non_null(e);
        cache_add(c, e);
        return e;
}

/* Remove victims as the daemon does; returns how many went. */
static int evict(struct cache *c, uint64_t budget, uint64_t max_age, uint64_t now, char *gone) {
        int n = 0;
        struct cache_entry *e;
        while ((e = cache_victim(c, budget, max_age, now))) {
                gone[n++] = e->sha256[0];
                cache_remove(c, e);
                cache_entry_free(e);
        }
        gone[n] = '\0';
        return n;
}

static void test_lru_order_and_budget(void **state) {
        struct cache c;
        char gone[16];
        cache_init(&c);
        /* added out of order: the list follows the last use */
        add(&c, 'b', "1.0.1", 10 * MB, 2000);
        add(&c, 'a', "1.0.0", 10 * MB, 1000);
        add(&c, 'c', "1.0.2", 10 * MB, 3000);
        assert_int_equal(c.bytes, 30 * MB);
        /* within budget and young: nothing goes */
        assert_null(cache_victim(&c, 30 * MB, DAY_MS, 4000));
        /* using a makes b the least recently used */
        cache_pin(&c, cache_find(&c, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), 5000);
        cache_unpin(&c, cache_find(&c, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), 6000);
        assert_int_equal(evict(&c, 15 * MB, DAY_MS, 7000, gone), 2);
        assert_string_equal(gone, "bc");
        assert_int_equal(c.n, 1);
        assert_int_equal(c.bytes, 10 * MB);
        cache_done(&c);
}

static void test_held_trees_stay(void **state) {
        struct cache c;
        char gone[16];
        cache_init(&c);
        struct cache_entry *a = add(&c, 'a', "1.0.0", 40 * MB, 1000);
        struct cache_entry *b = add(&c, 'b', "2.0.0", 40 * MB, 2000);
        cache_pin(&c, a, 3000);
        cache_pin(&c, b, 3000);
        cache_pin(&c, b, 3000);
        /* over budget, but both are held: nothing can go */
        assert_null(cache_victim(&c, 1 * MB, 1, 10 * DAY_MS));
        cache_unpin(&c, b, 4000);
        assert_null(cache_victim(&c, 1 * MB, 1, 10 * DAY_MS));
        cache_unpin(&c, b, 5000);
        /* b is free now, a still held */
        assert_int_equal(evict(&c, 1 * MB, DAY_MS, 6000, gone), 1);
        assert_string_equal(gone, "b");
        assert_int_equal(a->refs, 1);
        cache_unpin(&c, a, 7000);
        assert_int_equal(evict(&c, 1 * MB, DAY_MS, 8000, gone), 1);
        assert_int_equal(c.n, 0);
        assert_int_equal(c.bytes, 0);
        cache_done(&c);
}

static void test_age(void **state) {
        struct cache c;
        char gone[16];
        cache_init(&c);
        add(&c, 'a', "1.0.0", 1 * MB, 1 * DAY_MS);
        add(&c, 'b', "1.0.1", 1 * MB, 5 * DAY_MS);
        add(&c, 'c', "1.0.2", 1 * MB, 9 * DAY_MS);
        /* well within the budget: only age decides */
        assert_int_equal(evict(&c, 1ull << 40, 3 * DAY_MS, 9 * DAY_MS, gone), 2);
        assert_string_equal(gone, "ab");
        /* the age counts from the last use, which ends with the job */
        struct cache_entry *cc = cache_find(&c, "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc");
        cache_pin(&c, cc, 10 * DAY_MS);
        assert_null(cache_victim(&c, 1ull << 40, 3 * DAY_MS, 20 * DAY_MS));
        cache_unpin(&c, cc, 20 * DAY_MS);
        assert_null(cache_victim(&c, 1ull << 40, 3 * DAY_MS, 22 * DAY_MS));
        assert_non_null(cache_victim(&c, 1ull << 40, 3 * DAY_MS, 24 * DAY_MS));
        cache_done(&c);
}

static void test_newest(void **state) {
        struct cache c;
        struct bundle_ref r;
        struct sbx_error e;
        cache_init(&c);
        add(&c, 'a', "1.2.0", 1, 1);
        add(&c, 'b', "1.10.0", 1, 2);
        add(&c, 'c', "1.9.0", 1, 3);
        struct cache_entry *other = cache_entry_new("dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "other",
                                                    "hello", "9.0.0", 1, 4, NULL);
        cache_add(&c, other);
        bundle_ref_parse("hello", &r, &e);
        assert_string_equal(cache_newest(&c, "main", &r)->version, "1.10.0");
        bundle_ref_parse("hello@1.9.0", &r, &e);
        assert_string_equal(cache_newest(&c, "main", &r)->sha256, "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc");
        bundle_ref_parse("hello@2.0.0", &r, &e);
        assert_null(cache_newest(&c, "main", &r));
        bundle_ref_parse("hello@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &r, &e);
        assert_string_equal(cache_newest(&c, "main", &r)->version, "1.2.0");
        /* another registry's tree is not this registry's bundle */
        bundle_ref_parse("hello@9.0.0", &r, &e);
        assert_null(cache_newest(&c, "main", &r));
        bundle_ref_parse("bye", &r, &e);
        assert_null(cache_newest(&c, "main", &r));
        cache_done(&c);
}

/* The users of a tree: each tenant once, let go one by one. */
static void test_tenants(void **state) {
        struct cache c;
        cache_init(&c);
        struct cache_entry *e = add(&c, 'a', "1.0.0", MB, 0);
        assert_false(cache_entry_used_by(e, "admin"));
        assert_int_equal(cache_entry_add_tenant(e, "admin"), 1);
        assert_int_equal(cache_entry_add_tenant(e, "admin"), 0);
        assert_int_equal(cache_entry_add_tenant(e, "other"), 1);
        assert_int_equal(e->n_tenants, 2);
        assert_true(cache_entry_used_by(e, "other"));
        assert_int_equal(cache_entry_drop_tenant(e, "admin"), 1);
        assert_int_equal(cache_entry_drop_tenant(e, "admin"), 0);
        assert_false(cache_entry_used_by(e, "admin"));
        assert_true(cache_entry_used_by(e, "other"));
        assert_int_equal(e->n_tenants, 1);
        cache_done(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lru_order_and_budget),
                cmocka_unit_test(test_held_trees_stay),
                cmocka_unit_test(test_age),
                cmocka_unit_test(test_newest),
                cmocka_unit_test(test_tenants),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
