/* SPDX-License-Identifier: Apache-2.0 */
/* The job state machine and the scheduler: every transition allowed or
 * refused as job.h draws it; concurrency and queue limits, global and per
 * tenant; FIFO order that skips tenants at their limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "job.h"

static void mk(struct job *j, struct tenant *t) {
        memset(j, 0, sizeof(*j));
        j->tenant = t;
        j->state = JOB_QUEUED;
        list_init(&j->queue_link);
}

static void test_happy_path(void **state) {
        struct tenant t = { .name = "t" };
        struct job j;
        mk(&j, &t);
        assert_int_equal(job_transition(&j, JEV_START), 0);
        assert_int_equal(j.state, JOB_RUNNING);
        assert_int_equal(job_transition(&j, JEV_EXIT), 0);
        assert_int_equal(j.state, JOB_DONE);
        assert_int_equal(job_outcome_from_exit(&j, 0, 0), OUTCOME_SUCCEEDED);
        assert_int_equal(job_outcome_from_exit(&j, 3, 0), OUTCOME_FAILED);
        assert_int_equal(job_outcome_from_exit(&j, 125, 0), OUTCOME_ERROR);
        assert_int_equal(job_outcome_from_exit(&j, 124, 0), OUTCOME_TIMED_OUT);
        assert_int_equal(job_outcome_from_exit(&j, -1, 9), OUTCOME_KILLED);
        assert_int_equal(job_outcome_from_exit(&j, 137, 0), OUTCOME_KILLED);
        /* nothing happens to a finished job */
        for (int ev = JEV_START; ev <= JEV_SHUTDOWN; ev++)
                assert_int_equal(job_transition(&j, (enum job_event) ev), -EINVAL);
}

static void test_timeout_then_exit(void **state) {
        struct tenant t = { .name = "t" };
        struct job j;
        mk(&j, &t);
        job_transition(&j, JEV_START);
        assert_int_equal(job_transition(&j, JEV_TIMEOUT), 0);
        assert_int_equal(j.state, JOB_STOPPING);
        assert_true(j.timed_out);
        /* the grace timer firing, or a later cancel, keeps it stopping */
        assert_int_equal(job_transition(&j, JEV_TIMEOUT), 0);
        assert_int_equal(job_transition(&j, JEV_CANCEL), 0);
        assert_int_equal(j.state, JOB_STOPPING);
        assert_false(j.cancelled); /* the first reason wins */
        assert_int_equal(job_transition(&j, JEV_EXIT), 0);
        assert_int_equal(j.state, JOB_DONE);
        /* even if the command exited 0 in its grace period */
        assert_int_equal(job_outcome_from_exit(&j, 0, 0), OUTCOME_TIMED_OUT);
}

static void test_cancel(void **state) {
        struct tenant t = { .name = "t" };
        struct job j;
        mk(&j, &t);
        assert_int_equal(job_transition(&j, JEV_CANCEL), 0);
        assert_int_equal(j.state, JOB_DONE);
        assert_int_equal(j.outcome, OUTCOME_KILLED);
        mk(&j, &t);
        job_transition(&j, JEV_START);
        assert_int_equal(job_transition(&j, JEV_CANCEL), 0);
        assert_int_equal(j.state, JOB_STOPPING);
        assert_int_equal(job_outcome_from_exit(&j, 143, 0), OUTCOME_KILLED);
}

static void test_refused_transitions(void **state) {
        struct tenant t = { .name = "t" };
        struct job j;
        mk(&j, &t);
        assert_int_equal(job_transition(&j, JEV_EXIT), -EINVAL);    /* never started */
        assert_int_equal(job_transition(&j, JEV_TIMEOUT), -EINVAL); /* timers run only while running */
        assert_int_equal(j.state, JOB_QUEUED);
        job_transition(&j, JEV_START);
        assert_int_equal(job_transition(&j, JEV_START), -EINVAL);
        assert_int_equal(job_transition(&j, JEV_SPAWN_FAIL), -EINVAL);
        mk(&j, &t);
        assert_int_equal(job_transition(&j, JEV_SPAWN_FAIL), 0);
        assert_int_equal(j.outcome, OUTCOME_ERROR);
}

static void test_scheduler_limits(void **state) {
        struct tenant a = { .name = "a", .max_jobs = 1, .max_queue = 3 };
        struct tenant b = { .name = "b", .max_jobs = 2, .max_queue = 3 };
        struct scheduler s;
        struct job ja[4], jb[2];
        sched_init(&s, 2, 5);
        for (int i = 0; i < 3; i++) {
                mk(&ja[i], &a);
                assert_int_equal(sched_enqueue(&s, &ja[i]), 0);
        }
        mk(&ja[3], &a);
        assert_int_equal(sched_enqueue(&s, &ja[3]), -EAGAIN); /* tenant a's queue is full */
        for (int i = 0; i < 2; i++) {
                mk(&jb[i], &b);
                assert_int_equal(sched_enqueue(&s, &jb[i]), 0);
        }
        assert_int_equal(s.n_queued, 5);
        struct job extra;
        mk(&extra, &b);
        assert_int_equal(sched_enqueue(&s, &extra), -EAGAIN); /* the daemon's queue is full */

        /* FIFO, but a is limited to one running job: a0 then b0 */
        assert_ptr_equal(sched_next(&s), &ja[0]);
        assert_ptr_equal(sched_next(&s), &jb[0]);
        assert_null(sched_next(&s)); /* global max_running = 2 */
        sched_finished(&s, &ja[0]);
        /* a1 is next in line and a has a free slot again */
        assert_ptr_equal(sched_next(&s), &ja[1]);
        sched_finished(&s, &jb[0]);
        /* a is at its limit: b1 overtakes a2 */
        assert_ptr_equal(sched_next(&s), &jb[1]);
        assert_null(sched_next(&s));
        sched_finished(&s, &ja[1]);
        assert_ptr_equal(sched_next(&s), &ja[2]);
        assert_int_equal(s.n_queued, 0);
        assert_int_equal(a.n_queued, 0);
        assert_int_equal(s.n_running, 2);
}

static void test_scheduler_remove(void **state) {
        struct tenant a = { .name = "a", .max_jobs = 1, .max_queue = 3 };
        struct scheduler s;
        struct job j1, j2;
        sched_init(&s, 1, 3);
        mk(&j1, &a);
        mk(&j2, &a);
        sched_enqueue(&s, &j1);
        sched_enqueue(&s, &j2);
        sched_remove_queued(&s, &j1);
        assert_int_equal(s.n_queued, 1);
        assert_int_equal(a.n_queued, 1);
        assert_ptr_equal(sched_next(&s), &j2);
        assert_null(sched_next(&s));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_happy_path),         cmocka_unit_test(test_timeout_then_exit),
                cmocka_unit_test(test_cancel),             cmocka_unit_test(test_refused_transitions),
                cmocka_unit_test(test_scheduler_limits),   cmocka_unit_test(test_scheduler_remove),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
