/* SPDX-License-Identifier: Apache-2.0 */
/* The scheduler: concurrency and queue limits, global and per tenant,
 * checked in one place; FIFO order that skips tenants at their limit; its
 * counters, which nothing else changes. */
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sched.h"

static struct tenant tenants[2];
static struct tenant anon;
static struct config cfg;

static int setup(void **state) {
        memset(&cfg, 0, sizeof(cfg));
        memset(tenants, 0, sizeof(tenants));
        tenants[0] = (struct tenant) { .name = "a", .slot = 1, .max_jobs = 1, .max_queue = 3 };
        tenants[1] = (struct tenant) { .name = "b", .slot = 2, .max_jobs = 2, .max_queue = 3 };
        cfg.tenants = tenants;
        cfg.n_tenants = 2;
        cfg.n_slots = 3; /* slot 0: the anonymous tenant's */
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

/* A job fetching its bundle counts in the queue (its limit bounds jobs
 * waiting for bundles too) but is passed over until its bundle is ready. */
static void test_fetching_skipped(void **state) {
        struct scheduler s;
        struct job j1, j2;
        struct sbx_error e;
        const struct tenant *b = &tenants[1];
        assert_int_equal(sched_init(&s, &cfg), 0);
        mk(&j1, b);
        mk(&j2, b);
        j1.bundle.set = true;
        assert_int_equal(sched_enqueue(&s, &j1, &e), 0);
        assert_int_equal(sched_enqueue(&s, &j2, &e), 0);
        assert_int_equal(job_transition(&j1, JEV_FETCH, NULL), 0);
        assert_int_equal(s.all.queued, 2);
        assert_ptr_equal(sched_next(&s), &j2);
        assert_null(sched_next(&s));
        assert_int_equal(job_transition(&j1, JEV_FETCHED, NULL), 0);
        assert_ptr_equal(sched_next(&s), &j1);
        assert_int_equal(s.all.queued, 0);
        assert_int_equal(s.all.running, 2);
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

/* A gate of one resource for the jobs it marks (here: tenant b's), like
 * the network pool's blocks for restricted jobs: it is asked only for a
 * job every limit lets start, a job it refuses keeps its place (FIFO once
 * the resource is back) and others pass it. */
struct one_block {
        const struct tenant *needs;
        unsigned free, asked;
};

static bool take_block(void *arg, struct job *j) {
        struct one_block *g = arg;
        g->asked++;
        if (j->tenant != g->needs)
                return true;
        if (!g->free)
                return false;
        g->free--;
        return true;
}

static void test_gate(void **state) {
        struct scheduler s;
        struct job b1, b2, a1;
        struct sbx_error e;
        const struct tenant *a = &tenants[0], *b = &tenants[1];
        struct one_block g = { .needs = b, .free = 1 };
        cfg.max_jobs = 3;
        assert_int_equal(sched_init(&s, &cfg), 0);
        s.gate = (struct sched_gate) { .take = take_block, .arg = &g };
        mk(&b1, b);
        mk(&b2, b);
        mk(&a1, a);
        assert_int_equal(sched_enqueue(&s, &b1, &e), 0);
        assert_int_equal(sched_enqueue(&s, &b2, &e), 0);
        assert_int_equal(sched_enqueue(&s, &a1, &e), 0);
        assert_ptr_equal(sched_next(&s), &b1);
        /* b2 waits for the block, queued; a1 passes it */
        assert_ptr_equal(sched_next(&s), &a1);
        assert_null(sched_next(&s));
        assert_int_equal(s.all.queued, 1);
        assert_int_equal(sched_tenant(&s, b)->queued, 1);
        assert_int_equal(s.all.running, 2);
        /* the block back: b2 goes */
        sched_finished(&s, &b1);
        g.free++;
        assert_ptr_equal(sched_next(&s), &b2);
        assert_int_equal(s.all.queued, 0);
        /* never asked for a job a limit holds back: b has max_jobs 2 */
        struct job b3;
        mk(&b3, b);
        assert_int_equal(sched_enqueue(&s, &b3, &e), 0);
        sched_finished(&s, &a1);
        g.free++;
        unsigned asked = g.asked;
        struct job b4;
        mk(&b4, b);
        sched_finished(&s, &b2);
        assert_ptr_equal(sched_next(&s), &b3);
        assert_int_equal(g.asked, asked + 1);
        assert_int_equal(sched_enqueue(&s, &b4, &e), 0);
        assert_null(sched_next(&s)); /* b4: no block left */
        assert_int_equal(g.asked, asked + 2);
        sched_done(&s);
}

/* The anonymous tenant (not in cfg.tenants) has counters of its own. */
static void test_anonymous(void **state) {
        struct scheduler s;
        struct job j;
        struct sbx_error e;
        anon = (struct tenant) { .name = "anonymous", .slot = 0, .max_jobs = 1, .max_queue = 1 };
        cfg.anonymous = &anon;
        assert_int_equal(sched_init(&s, &cfg), 0);
        mk(&j, cfg.anonymous);
        assert_int_equal(sched_enqueue(&s, &j, &e), 0);
        assert_int_equal(sched_tenant(&s, cfg.anonymous)->queued, 1);
        assert_int_equal(sched_tenant(&s, &tenants[0])->queued, 0);
        sched_done(&s);
}

/* A reload: tenant a as the new file has it (another struct, its name's
 * slot) shares the counters of a as it was; a new tenant's slot starts
 * empty, and the counters already there stay. */
static void test_reloaded(void **state) {
        struct scheduler s;
        struct job j1, j2;
        struct sbx_error e;
        assert_int_equal(sched_init(&s, &cfg), 0);
        mk(&j1, &tenants[0]);
        assert_int_equal(sched_enqueue(&s, &j1, &e), 0);
        struct tenant a2 = { .name = "a", .slot = 1, .max_jobs = 5, .max_queue = 1 };
        assert_ptr_equal(sched_tenant(&s, &a2), sched_tenant(&s, &tenants[0]));
        /* its new max_queue (1) counts the job queued before */
        mk(&j2, &a2);
        assert_int_equal(sched_enqueue(&s, &j2, &e), -EAGAIN);
        struct tenant c = { .name = "c", .slot = 3, .max_jobs = 1, .max_queue = 1 };
        assert_int_equal(sched_grow(&s, 4), 0);
        assert_int_equal(sched_tenant(&s, &c)->queued, 0);
        assert_int_equal(sched_tenant(&s, &a2)->queued, 1);
        assert_ptr_equal(sched_next(&s), &j1);
        sched_finished(&s, &j1);
        sched_done(&s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_limits, setup),
                cmocka_unit_test_setup(test_remove, setup),
                cmocka_unit_test_setup(test_fetching_skipped, setup),
                cmocka_unit_test_setup(test_requeue, setup),
                cmocka_unit_test_setup(test_anonymous, setup),
                cmocka_unit_test_setup(test_reloaded, setup),
                cmocka_unit_test_setup(test_gate, setup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
