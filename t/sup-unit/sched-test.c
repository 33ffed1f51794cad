/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler: concurrency and queue limits, global and per tenant,
 * checked in one place; FIFO order that skips tenants at their limit; its
 * counters, which nothing else changes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sched.h"

static struct tenant tenants[2];
static struct config cfg;

static int setup(void **state) {
        memset(&cfg, 0, sizeof(cfg));
        memset(tenants, 0, sizeof(tenants));
        tenants[0] = (struct tenant) { .name = "a", .max_jobs = 1, .max_queue = 3 };
        tenants[1] = (struct tenant) { .name = "b", .max_jobs = 2, .max_queue = 3 };
        cfg.tenants = tenants;
        cfg.n_tenants = 2;
        cfg.max_jobs = 2;
        cfg.max_queue = 5;
        return 0;
}

static void mk(struct job *j, const struct tenant *t) {
        job_init(j);
        j->tenant = t;
}

static void test_limits(void **state) {
        struct scheduler s;
        struct job ja[4], jb[2], extra;
        struct sbx_error e;
        const struct tenant *a = &tenants[0], *b = &tenants[1];
        assert_int_equal(sched_init(&s, &cfg), 0);
        for (int i = 0; i < 3; i++) {
                mk(&ja[i], a);
                assert_int_equal(sched_enqueue(&s, &ja[i], &e), 0);
        }
        mk(&ja[3], a);
        assert_int_equal(sched_enqueue(&s, &ja[3], &e), -EAGAIN);
        assert_string_equal(e.msg, "the tenant's queue is full (3 waiting); try again later");
        for (int i = 0; i < 2; i++) {
                mk(&jb[i], b);
                assert_int_equal(sched_enqueue(&s, &jb[i], &e), 0);
        }
        assert_int_equal(s.all.queued, 5);
        mk(&extra, b);
        assert_int_equal(sched_enqueue(&s, &extra, &e), -EAGAIN);
        assert_string_equal(e.msg, "the daemon's queue is full (5 waiting); try again later");

        /* FIFO, but a is limited to one running job: a0 then b0 */
        assert_ptr_equal(sched_next(&s), &ja[0]);
        assert_ptr_equal(sched_next(&s), &jb[0]);
        assert_null(sched_next(&s)); /* global max_jobs = 2 */
        sched_finished(&s, &ja[0]);
        /* a1 is next in line and a has a free slot again */
        assert_ptr_equal(sched_next(&s), &ja[1]);
        sched_finished(&s, &jb[0]);
        /* a is at its limit: b1 overtakes a2 */
        assert_ptr_equal(sched_next(&s), &jb[1]);
        assert_null(sched_next(&s));
        sched_finished(&s, &ja[1]);
        assert_ptr_equal(sched_next(&s), &ja[2]);
        assert_int_equal(s.all.queued, 0);
        assert_int_equal(sched_tenant(&s, a)->queued, 0);
        assert_int_equal(sched_tenant(&s, a)->running, 1);
        assert_int_equal(sched_tenant(&s, b)->running, 1);
        assert_int_equal(s.all.running, 2);
        sched_done(&s);
}

static void test_remove(void **state) {
        struct scheduler s;
        struct job j1, j2;
        struct sbx_error e;
        const struct tenant *a = &tenants[0];
        cfg.max_jobs = 1;
        assert_int_equal(sched_init(&s, &cfg), 0);
        mk(&j1, a);
        mk(&j2, a);
        assert_int_equal(sched_enqueue(&s, &j1, &e), 0);
        assert_int_equal(sched_enqueue(&s, &j2, &e), 0);
        sched_remove_queued(&s, &j1);
        assert_int_equal(s.all.queued, 1);
        assert_int_equal(sched_tenant(&s, a)->queued, 1);
        assert_ptr_equal(sched_next(&s), &j2);
        assert_null(sched_next(&s));
        sched_done(&s);
}

/* Jobs admitted before a restart queue again whatever the limits, and
 * count like any other. */
static void test_requeue(void **state) {
        struct scheduler s;
        struct job js[5];
        const struct tenant *a = &tenants[0];
        assert_int_equal(sched_init(&s, &cfg), 0);
        for (int i = 0; i < 5; i++) {
                mk(&js[i], a);
                sched_requeue(&s, &js[i]);
        }
        assert_int_equal(sched_tenant(&s, a)->queued, 5);
        struct job more;
        struct sbx_error e;
        mk(&more, a);
        assert_int_equal(sched_enqueue(&s, &more, &e), -EAGAIN);
        assert_ptr_equal(sched_next(&s), &js[0]);
        sched_done(&s);
}

/* The anonymous tenant (not in cfg.tenants) has counters of its own. */
static void test_anonymous(void **state) {
        struct scheduler s;
        struct job j;
        struct sbx_error e;
        cfg.anonymous = (struct tenant) { .name = "anonymous", .max_jobs = 1, .max_queue = 1 };
        assert_int_equal(sched_init(&s, &cfg), 0);
        mk(&j, &cfg.anonymous);
        assert_int_equal(sched_enqueue(&s, &j, &e), 0);
        assert_int_equal(sched_tenant(&s, &cfg.anonymous)->queued, 1);
        assert_int_equal(sched_tenant(&s, &tenants[0])->queued, 0);
        sched_done(&s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_limits, setup),
                cmocka_unit_test_setup(test_remove, setup),
                cmocka_unit_test_setup(test_requeue, setup),
                cmocka_unit_test_setup(test_anonymous, setup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
