/* SPDX-License-Identifier: Apache-2.0 */
/* The job uid pool: every uid handed out once until given back, round
 * robin (a uid just returned is the last to be reused), ranges that would
 * include root or the overflow uid refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "uidpool.h"

static void test_take_release(void **state) {
        struct uidpool p;
        uid_t u, seen[4];
        assert_int_equal(uidpool_init(&p, 100000, 4), 0);
        for (int i = 0; i < 4; i++) {
                assert_int_equal(uidpool_take(&p, &seen[i]), 0);
                assert_int_equal(seen[i], 100000 + i);
        }
        assert_int_equal(uidpool_take(&p, &u), -EAGAIN);
        uidpool_release(&p, 100001);
        assert_int_equal(uidpool_take(&p, &u), 0);
        assert_int_equal(u, 100001);
        /* round robin: after a release, the next search starts past the
         * last uid taken */
        uidpool_release(&p, 100000);
        uidpool_release(&p, 100003);
        assert_int_equal(uidpool_take(&p, &u), 0);
        assert_int_equal(u, 100003);
        assert_int_equal(uidpool_take(&p, &u), 0);
        assert_int_equal(u, 100000);
        assert_int_equal(p.n_used, 4);
        /* returning one twice, or one outside, changes nothing */
        uidpool_release(&p, 100002);
        uidpool_release(&p, 100002);
        uidpool_release(&p, 5);
        assert_int_equal(p.n_used, 3);
        uidpool_done(&p);
}

static void test_claim(void **state) {
        struct uidpool p;
        uid_t u;
        assert_int_equal(uidpool_init(&p, 2000, 2), 0);
        assert_true(uidpool_claim(&p, 2000));
        assert_false(uidpool_claim(&p, 1999));
        assert_false(uidpool_claim(&p, 2002));
        assert_int_equal(uidpool_take(&p, &u), 0);
        assert_int_equal(u, 2001);
        assert_int_equal(uidpool_take(&p, &u), -EAGAIN);
        uidpool_done(&p);
}

static void test_bad_ranges(void **state) {
        struct uidpool p;
        assert_int_equal(uidpool_init(&p, 0, 10), -EINVAL);          /* root */
        assert_int_equal(uidpool_init(&p, 65530, 10), -EINVAL);      /* the overflow uid */
        assert_int_equal(uidpool_init(&p, 4294967290u, 10), -EINVAL); /* wraps to (uid_t) -1 */
        assert_int_equal(uidpool_init(&p, 1000, UIDPOOL_MAX_SIZE + 1), -EINVAL);
        assert_int_equal(uidpool_init(&p, 1000, 0), 0); /* no pool */
        uid_t u;
        assert_int_equal(uidpool_take(&p, &u), -EAGAIN);
        assert_false(uidpool_contains(&p, 1000));
        uidpool_done(&p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_take_release),
                cmocka_unit_test(test_claim),
                cmocka_unit_test(test_bad_ranges),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
