/* SPDX-License-Identifier: Apache-2.0 */
/* The job state machine: every transition allowed or refused as job.h
 * draws it, and the outcome, exit code and error a job ends with for each
 * set of facts its launcher's exit gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "job.h"

static struct tenant t = { .name = "t" };

static void mk(struct job *j) {
        job_init(j);
        j->tenant = &t;
        j->pol.timeout_ms = 1500;
}

static void running(struct job *j) {
        mk(j);
        assert_int_equal(job_transition(j, JEV_START, NULL), -EINVAL); /* not before it is prepared */
        assert_int_equal(job_transition(j, JEV_PREPARE, NULL), 0);
        assert_int_equal(j->state, JOB_STARTING);
        assert_int_equal(job_transition(j, JEV_START, NULL), 0);
        assert_int_equal(j->state, JOB_RUNNING);
}

static void exit_with(struct job *j, int status, int sig) {
        struct job_exit x = { .status = status, .signal = sig };
        assert_int_equal(job_exited(j, &x), 0);
        assert_int_equal(j->state, JOB_DONE);
}

static void test_happy_path(void **state) {
        struct job j;
        running(&j);
        exit_with(&j, 0, 0);
        assert_int_equal(j.outcome, OUTCOME_SUCCEEDED);
        assert_int_equal(j.exit_code, 0);
        assert_null(j.error_code);
        /* nothing happens to a finished job */
        for (int ev = JEV_START; ev <= JEV_RETRY; ev++)
                assert_int_equal(job_transition(&j, (enum job_event) ev, "x"), -EINVAL);
        struct job_exit x = { 0 };
        assert_int_equal(job_exited(&j, &x), -EINVAL);
        job_release(&j);
}

static void test_outcome_from_exit(void **state) {
        struct job j;
        mk(&j);
        assert_int_equal(job_outcome_from_exit(&j, 0, 0), OUTCOME_SUCCEEDED);
        assert_int_equal(job_outcome_from_exit(&j, 3, 0), OUTCOME_FAILED);
        assert_int_equal(job_outcome_from_exit(&j, 125, 0), OUTCOME_ERROR);
        assert_int_equal(job_outcome_from_exit(&j, 124, 0), OUTCOME_TIMED_OUT);
        assert_int_equal(job_outcome_from_exit(&j, -1, 9), OUTCOME_KILLED);
        assert_int_equal(job_outcome_from_exit(&j, 137, 0), OUTCOME_KILLED);
        job_release(&j);
}

/* The launcher's own end record wins over its exit status. */
static void test_end_record(void **state) {
        struct job j;
        running(&j);
        struct job_exit x = { .status = 3, .have_end = true, .end_exit_code = -1, .end_signal = 9 };
        assert_int_equal(job_exited(&j, &x), 0);
        assert_int_equal(j.outcome, OUTCOME_KILLED);
        assert_int_equal(j.term_signal, 9);
        job_release(&j);
}

static void test_setup_failure(void **state) {
        struct job j;
        running(&j);
        struct job_exit x = { .status = 125, .have_end = true, .end_exit_code = 125, .setup_step = "mount",
                              .setup_message = "bind /nope: No such file or directory" };
        assert_int_equal(job_exited(&j, &x), 0);
        assert_int_equal(j.outcome, OUTCOME_ERROR);
        assert_string_equal(j.error_code, E_SETUP);
        assert_string_equal(j.error_message, "sbx-launch: mount: bind /nope: No such file or directory");
        job_release(&j);
        /* Without the launcher's word: still a set-up failure, said so. */
        running(&j);
        exit_with(&j, 125, 0);
        assert_string_equal(j.error_code, E_SETUP);
        job_release(&j);
}

/* The daemon's own child failing before exec is not a sandbox set-up
 * failure. */
static void test_spawn_failure(void **state) {
        struct job j;
        running(&j);
        struct job_exit x = { .status = 125, .spawn_error = "cannot switch to the job uid: Operation not permitted" };
        assert_int_equal(job_exited(&j, &x), 0);
        assert_int_equal(j.outcome, OUTCOME_ERROR);
        assert_string_equal(j.error_code, E_SPAWN);
        assert_string_equal(j.error_message, "cannot switch to the job uid: Operation not permitted");
        assert_int_equal(j.exit_code, -1);
        job_release(&j);
        mk(&j);
        assert_int_equal(job_transition(&j, JEV_SPAWN_FAIL, "x"), -EINVAL); /* queued: nothing was spawned */
        assert_int_equal(job_transition(&j, JEV_PREPARE, NULL), 0);
        assert_int_equal(job_transition(&j, JEV_SPAWN_FAIL, "pipe: Too many open files"), 0);
        assert_int_equal(j.outcome, OUTCOME_ERROR);
        assert_string_equal(j.error_code, E_SPAWN);
        assert_string_equal(j.error_message, "pipe: Too many open files");
        job_release(&j);
}

static void test_oom(void **state) {
        struct job j;
        running(&j);
        struct job_exit x = { .status = 137, .oom_killed = true };
        assert_int_equal(job_exited(&j, &x), 0);
        assert_int_equal(j.outcome, OUTCOME_OOM);
        assert_string_equal(j.error_code, E_OOM);
        job_release(&j);
        /* A job that succeeded despite an OOM kill of a child succeeded. */
        running(&j);
        x.status = 0;
        assert_int_equal(job_exited(&j, &x), 0);
        assert_int_equal(j.outcome, OUTCOME_SUCCEEDED);
        job_release(&j);
}

static void test_timeout_then_exit(void **state) {
        struct job j;
        running(&j);
        assert_int_equal(job_transition(&j, JEV_TIMEOUT, NULL), 0);
        assert_int_equal(j.state, JOB_STOPPING);
        assert_true(j.timed_out);
        /* the grace timer firing, or a later cancel, keeps it stopping */
        assert_int_equal(job_transition(&j, JEV_TIMEOUT, NULL), 0);
        assert_int_equal(job_transition(&j, JEV_CANCEL, NULL), 0);
        assert_int_equal(j.state, JOB_STOPPING);
        assert_false(j.cancelled); /* the first reason wins */
        /* even if the command exited 0 in its grace period */
        exit_with(&j, 0, 0);
        assert_int_equal(j.outcome, OUTCOME_TIMED_OUT);
        assert_string_equal(j.error_code, E_TIMEOUT);
        assert_string_equal(j.error_message, "timed out after 1500 ms");
        job_release(&j);
}

static void test_cancel(void **state) {
        struct job j;
        mk(&j);
        assert_int_equal(job_transition(&j, JEV_CANCEL, NULL), 0);
        assert_int_equal(j.state, JOB_DONE);
        assert_int_equal(j.outcome, OUTCOME_KILLED);
        assert_string_equal(j.error_code, E_CANCELLED);
        job_release(&j);
        running(&j);
        assert_int_equal(job_transition(&j, JEV_CANCEL, NULL), 0);
        assert_int_equal(j.state, JOB_STOPPING);
        exit_with(&j, 143, 0);
        assert_int_equal(j.outcome, OUTCOME_KILLED);
        assert_string_equal(j.error_code, E_CANCELLED);
        job_release(&j);
}

static void test_shutdown(void **state) {
        struct job j;
        mk(&j);
        assert_int_equal(job_transition(&j, JEV_SHUTDOWN, NULL), 0);
        assert_int_equal(j.outcome, OUTCOME_ERROR);
        assert_string_equal(j.error_code, E_SHUTTING_DOWN);
        job_release(&j);
        /* Running: stopped, and its record says why even after the exit. */
        running(&j);
        assert_int_equal(job_transition(&j, JEV_SHUTDOWN, NULL), 0);
        assert_int_equal(j.state, JOB_STOPPING);
        exit_with(&j, 143, 0);
        assert_int_equal(j.outcome, OUTCOME_KILLED);
        assert_string_equal(j.error_code, E_SHUTTING_DOWN);
        job_release(&j);
}

/* After a restart: a running job ends E_RESTARTED, or is queued again as
 * its next attempt; a queued one may be rejected under a new policy. */
/* After a restart, the outcome the journal kept: as it was recorded. */
static void test_recorded(void **state) {
        struct job j;
        job_init(&j);
        assert_int_equal(job_recorded(&j, "failed", 3, 0, NULL, NULL), 0);
        assert_int_equal(j.state, JOB_DONE);
        assert_int_equal(j.outcome, OUTCOME_FAILED);
        assert_int_equal(j.exit_code, 3);
        assert_null(j.error_code);
        /* done already: nothing changes */
        assert_int_equal(job_recorded(&j, "succeeded", 0, 0, NULL, NULL), -EINVAL);
        assert_int_equal(j.outcome, OUTCOME_FAILED);
        job_release(&j);
        job_init(&j);
        assert_int_equal(job_recorded(&j, "timed_out", -1, 9, E_TIMEOUT, "timed out after 5 ms"), 0);
        assert_string_equal(j.error_code, E_TIMEOUT);
        assert_int_equal(j.term_signal, 9);
        job_release(&j);
        job_init(&j);
        assert_int_equal(job_recorded(&j, "none", 0, 0, NULL, NULL), -EINVAL);
        assert_int_equal(job_recorded(&j, "bogus", 0, 0, NULL, NULL), -EINVAL);
        assert_int_equal(job_recorded(&j, NULL, 0, 0, NULL, NULL), -EINVAL);
        assert_int_equal(j.state, JOB_QUEUED);
        job_release(&j);
}

static void test_restart(void **state) {
        struct job j;
        running(&j);
        j.started_ms = 1000;
        assert_int_equal(job_transition(&j, JEV_RESTARTED, NULL), 0);
        assert_int_equal(j.state, JOB_DONE);
        assert_int_equal(j.outcome, OUTCOME_ERROR);
        assert_string_equal(j.error_code, E_RESTARTED);
        job_release(&j);
        running(&j);
        j.started_ms = 1000;
        assert_int_equal(job_transition(&j, JEV_RETRY, NULL), 0);
        assert_int_equal(j.state, JOB_QUEUED);
        assert_int_equal(j.attempt, 2);
        assert_int_equal(j.started_ms, 0);
        assert_int_equal(job_transition(&j, JEV_REJECTED, "no longer allowed"), 0);
        assert_int_equal(j.outcome, OUTCOME_REJECTED);
        assert_string_equal(j.error_message, "no longer allowed");
        job_release(&j);
        mk(&j);
        assert_int_equal(job_transition(&j, JEV_RESTARTED, NULL), -EINVAL); /* never started: it runs */
        assert_int_equal(job_transition(&j, JEV_RETRY, NULL), -EINVAL);
        job_release(&j);
}

static void test_refused_transitions(void **state) {
        struct job j;
        mk(&j);
        struct job_exit x = { 0 };
        assert_int_equal(job_exited(&j, &x), -EINVAL);                      /* never started */
        assert_int_equal(job_transition(&j, JEV_TIMEOUT, NULL), -EINVAL); /* timers run only while running */
        assert_int_equal(j.state, JOB_QUEUED);
        job_release(&j);
        running(&j);
        assert_int_equal(job_transition(&j, JEV_START, NULL), -EINVAL);
        assert_int_equal(job_transition(&j, JEV_SPAWN_FAIL, "x"), -EINVAL);
        assert_int_equal(job_transition(&j, JEV_REJECTED, "x"), -EINVAL);
        assert_int_equal(job_transition(&j, JEV_ABANDON, NULL), -EINVAL);
        job_release(&j);
}

/* While its workspace is made a job cannot stop; a cancel or shutdown
 * then marks it, and it ends without running once ready. */
static void test_starting(void **state) {
        struct job j;
        mk(&j);
        assert_int_equal(job_transition(&j, JEV_PREPARE, NULL), 0);
        assert_int_equal(job_transition(&j, JEV_ABANDON, NULL), -EINVAL); /* nothing asked it */
        assert_int_equal(job_transition(&j, JEV_TIMEOUT, NULL), -EINVAL); /* its clock starts with the launcher */
        assert_int_equal(job_transition(&j, JEV_CANCEL, NULL), 0);
        assert_int_equal(j.state, JOB_STARTING);
        assert_true(j.abandon);
        assert_int_equal(job_transition(&j, JEV_ABANDON, NULL), 0);
        assert_int_equal(j.state, JOB_DONE);
        assert_int_equal(j.outcome, OUTCOME_KILLED);
        assert_string_equal(j.error_code, E_CANCELLED);
        job_release(&j);
        mk(&j);
        job_transition(&j, JEV_PREPARE, NULL);
        assert_int_equal(job_transition(&j, JEV_SHUTDOWN, NULL), 0);
        assert_int_equal(job_transition(&j, JEV_ABANDON, NULL), 0);
        assert_int_equal(j.outcome, OUTCOME_ERROR);
        assert_string_equal(j.error_code, E_SHUTTING_DOWN);
        job_release(&j);
}

/* All its processes together used its CPU time: stopped, and the record
 * says why even though a signal ended it. */
static void test_cpu_time(void **state) {
        struct job j;
        running(&j);
        assert_int_equal(job_transition(&j, JEV_CPU_TIME, "used 10.2 s of CPU time, its limit is 10 s"), 0);
        assert_int_equal(j.state, JOB_STOPPING);
        exit_with(&j, -1, 9);
        assert_int_equal(j.outcome, OUTCOME_KILLED);
        assert_string_equal(j.error_code, E_CPU_TIME);
        assert_string_equal(j.error_message, "used 10.2 s of CPU time, its limit is 10 s");
        job_release(&j);
}

/* A bundle job waits in "fetching" for its bundle, then queues, or ends
 * with its bundle's failure. */
static void test_fetching(void **state) {
        struct job j;
        mk(&j);
        /* an inline job has no bundle to fetch */
        assert_int_equal(job_transition(&j, JEV_FETCH, NULL), -EINVAL);
        j.bundle.set = true;
        assert_int_equal(job_transition(&j, JEV_FETCH, NULL), 0);
        assert_int_equal(j.state, JOB_FETCHING);
        assert_string_equal(job_state_name(j.state), "fetching");
        assert_int_equal(job_transition(&j, JEV_START, NULL), -EINVAL); /* not before its bundle */
        assert_int_equal(job_transition(&j, JEV_TIMEOUT, NULL), -EINVAL);
        assert_int_equal(job_transition(&j, JEV_FETCHED, NULL), 0);
        assert_int_equal(j.state, JOB_QUEUED);
        assert_int_equal(job_transition(&j, JEV_FETCHED, NULL), -EINVAL);
        job_release(&j);

        mk(&j);
        j.bundle.set = true;
        job_transition(&j, JEV_FETCH, NULL);
        assert_int_equal(job_bundle_failed(&j, E_BUNDLE_SIGNATURE, "signed with key ABC"), 0);
        assert_int_equal(j.state, JOB_DONE);
        assert_int_equal(j.outcome, OUTCOME_ERROR);
        assert_string_equal(j.error_code, E_BUNDLE_SIGNATURE);
        assert_int_equal(job_bundle_failed(&j, E_BUNDLE_INVALID, "x"), -EINVAL);
        job_release(&j);

        /* a refused capability is a rejection, decided while still queued */
        mk(&j);
        j.bundle.set = true;
        assert_int_equal(job_bundle_failed(&j, E_FORBIDDEN, "bundle hello declares ..."), 0);
        assert_int_equal(j.outcome, OUTCOME_REJECTED);
        job_release(&j);

        mk(&j);
        j.bundle.set = true;
        job_transition(&j, JEV_FETCH, NULL);
        assert_int_equal(job_transition(&j, JEV_CANCEL, NULL), 0);
        assert_int_equal(j.outcome, OUTCOME_KILLED);
        assert_string_equal(j.error_code, E_CANCELLED);
        job_release(&j);

        mk(&j);
        j.bundle.set = true;
        job_transition(&j, JEV_FETCH, NULL);
        assert_int_equal(job_transition(&j, JEV_SHUTDOWN, NULL), 0);
        assert_int_equal(j.outcome, OUTCOME_ERROR);
        assert_string_equal(j.error_code, E_SHUTTING_DOWN);
        job_release(&j);
}

/* list's filter: the live states, the outcomes, "active" and "done". */
static void test_state_names(void **state) {
        static const char *const ok[] = { "queued", "starting", "fetching", "running", "stopping", "succeeded", "failed", "timed_out",
                                          "killed", "oom", "rejected", "error", "active", "done" };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                assert_true(job_state_filter_valid(ok[i]));
        assert_false(job_state_filter_valid("none"));
        assert_false(job_state_filter_valid("Running"));
        assert_false(job_state_filter_valid(""));
        assert_true(job_state_filter_matches(NULL, "running", true));
        assert_true(job_state_filter_matches("active", "queued", true));
        assert_false(job_state_filter_matches("active", "failed", false));
        assert_true(job_state_filter_matches("done", "failed", false));
        assert_true(job_state_filter_matches("failed", "failed", false));
        assert_false(job_state_filter_matches("failed", "oom", false));
        assert_string_equal(job_state_name(JOB_STOPPING), "stopping");
        assert_string_equal(job_outcome_name(OUTCOME_TIMED_OUT), "timed_out");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_happy_path),     cmocka_unit_test(test_outcome_from_exit),
                cmocka_unit_test(test_end_record),     cmocka_unit_test(test_setup_failure),
                cmocka_unit_test(test_spawn_failure),  cmocka_unit_test(test_oom),
                cmocka_unit_test(test_timeout_then_exit), cmocka_unit_test(test_cancel),
                cmocka_unit_test(test_shutdown),       cmocka_unit_test(test_restart),
                cmocka_unit_test(test_recorded),
                cmocka_unit_test(test_refused_transitions), cmocka_unit_test(test_state_names),
                cmocka_unit_test(test_starting),       cmocka_unit_test(test_cpu_time),
                cmocka_unit_test(test_fetching),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
