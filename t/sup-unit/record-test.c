/* SPDX-License-Identifier: Apache-2.0 */
/* The result record: one builder, so a job that ran here and one that a
 * restart interrupted carry the same fields (sbx-protocol(7) lists them),
 * each limit says what enforced it, and a capture the disk refused says so
 * instead of passing for one cut at the output cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "record.h"

static const char *const keys[] = {
        "v", "job", "tenant", "uid", "job_uid", "job_gid", "command", "profile", "state", "exit_code", "signal",
        "timed_out", "cancelled", "error", "attempt", "created", "started", "ended", "wall_ms", "cpu_ms", "peak_rss_kb",
        "stdout", "stderr", "artifacts", "artifacts_truncated", "limits", "cgroup", "protections", "network_events", "network",
        "bundle", "idempotency_key", "request_sha256",
};

static const char *const limit_keys[] = { "timeout_ms", "memory", "processes", "cpu_s", "cpus", "output", "disk" };

static struct tenant t = { .name = "acme", .job_uid = 900, .job_gid = 901 };
static char *argv[] = { "sh", "-c", "echo hi", NULL };

static void mk(struct job *j) {
        job_init(j);
        j->tenant = &t;
        j->caller_uid = 1000;
        snprintf(j->id, sizeof(j->id), "j00000000000000000001");
        j->req.run.argv = argv;
        j->req.run.argc = 3;
        snprintf(j->pol.profile, sizeof(j->pol.profile), "shell");
        j->pol.timeout_ms = 30000;
        j->pol.memory = 1u << 30;
        j->pol.processes = PROTO_UNSET;
        j->pol.cpu_s = 10;
        j->pol.cpu_milli = 500;
        j->pol.output = 1u << 20;
        j->created_ms = 1700000000000;
        j->started_ms = 1700000000100;
        j->ended_ms = 1700000000350;
}

static void unmk(struct job *j) {
        j->req.run.argv = NULL;
        j->req.run.argc = 0;
        job_release(j);
}

static void all_keys(json_t *rec) {
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                if (!json_object_get(rec, keys[i]))
                        fail_msg("record lacks '%s'", keys[i]);
        for (int s = 0; s < 2; s++) {
                json_t *o = json_object_get(rec, s ? "stderr" : "stdout");
                assert_non_null(json_object_get(o, "size"));
                assert_non_null(json_object_get(o, "produced"));
                assert_non_null(json_object_get(o, "truncated"));
                assert_non_null(json_object_get(o, "path"));
        }
        for (size_t i = 0; i < sizeof(limit_keys) / sizeof(limit_keys[0]); i++)
                assert_non_null(json_object_get(json_object_get(rec, "limits"), limit_keys[i]));
}

static const char *by(json_t *rec, const char *limit) {
        return json_string_value(json_object_get(json_object_get(json_object_get(rec, "limits"), limit), "by"));
}

static void test_ran_here(void **state) {
        struct job j;
        mk(&j);
        j.state = JOB_DONE;
        j.outcome = OUTCOME_SUCCEEDED;
        j.exit_code = 0;
        json_t *end = json_pack("{s:i, s:i, s:i, s:{s:b}}", "exit-code", 0, "cpu-ms", 12, "peak-rss-kb", 3000, "protections",
                                "no-new-privs", 1);
        struct record_input in = {
                .j = &j, .tenant = "acme", .job_uid = 900, .job_gid = 901, .results_path = "/var/lib/sbx/results",
                .out = { { .kept = 3, .produced = 3 }, { .kept = 0 } }, .launcher_end = end, .cgroup_cpu_us = 20000,
                .cgroup = true, .cg_limits = CG_LIMIT_MEMORY | CG_LIMIT_CPU, .req_digest = "ab",
        };
        json_t *rec = record_build(&in);
        assert_non_null(rec);
        all_keys(rec);
        assert_string_equal(json_string_value(json_object_get(rec, "state")), "succeeded");
        assert_int_equal(json_integer_value(json_object_get(rec, "wall_ms")), 250);
        assert_int_equal(json_integer_value(json_object_get(rec, "cpu_ms")), 20); /* the cgroup's, not the launcher's */
        assert_int_equal(json_integer_value(json_object_get(rec, "peak_rss_kb")), 3000);
        assert_true(json_is_true(json_object_get(json_object_get(rec, "protections"), "no-new-privs")));
        assert_string_equal(json_string_value(json_object_get(json_object_get(rec, "stdout"), "path")),
                            "/var/lib/sbx/results/j00000000000000000001/stdout");
        assert_string_equal(by(rec, "memory"), "cgroup");
        assert_string_equal(by(rec, "cpus"), "cgroup");
        assert_string_equal(by(rec, "cpu_s"), "cgroup"); /* cpu.stat: every process of the job together */
        assert_string_equal(by(rec, "timeout_ms"), "supervisor");
        assert_null(by(rec, "processes")); /* not set: no mechanism */
        assert_true(json_is_null(json_object_get(rec, "error")));
        assert_null(json_object_get(json_object_get(rec, "stdout"), "error"));
        json_decref(rec);
        json_decref(end);
        unmk(&j);
}

/* Interrupted by a restart: no launcher record, but every field. */
static void test_recovered(void **state) {
        struct job j;
        mk(&j);
        assert_int_equal(job_transition(&j, JEV_PREPARE, NULL), 0);
        assert_int_equal(job_transition(&j, JEV_START, NULL), 0);
        assert_int_equal(job_transition(&j, JEV_RESTARTED, NULL), 0);
        struct record_input in = {
                .j = &j, .tenant = "gone", .job_uid = 900, .job_gid = 901, .results_path = "/r",
                .out = { { .kept = 10, .produced = 10 }, { .kept = 0 } }, .cgroup_cpu_us = -1, .cg_limits = 0,
        };
        json_t *rec = record_build(&in);
        all_keys(rec);
        assert_string_equal(json_string_value(json_object_get(rec, "state")), "error");
        assert_string_equal(json_string_value(json_object_get(json_object_get(rec, "error"), "code")), E_RESTARTED);
        assert_string_equal(json_string_value(json_object_get(rec, "tenant")), "gone");
        assert_false(json_is_null(json_object_get(rec, "started")));
        assert_true(json_is_null(json_object_get(rec, "protections")));
        assert_true(json_is_null(json_object_get(rec, "cpu_ms")));
        assert_string_equal(by(rec, "memory"), "rlimit");
        assert_string_equal(by(rec, "cpus"), "none"); /* asked for, and nothing could enforce it */
        assert_string_equal(by(rec, "cpu_s"), "rlimit");
        assert_non_null(json_object_get(json_object_get(json_object_get(rec, "limits"), "memory"), "covers"));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(rec, "stdout"), "produced")), 10);
        json_decref(rec);
        unmk(&j);
}

static void test_capture_refused(void **state) {
        struct job j;
        mk(&j);
        struct record_input in = {
                .j = &j, .tenant = "acme", .results_path = "/r", .cgroup_cpu_us = -1,
                .out = { { .kept = 4096, .produced = 9000, .write_err = -28 }, { .kept = 5, .produced = 99, .truncated = true } },
        };
        json_t *rec = record_build(&in);
        json_t *o = json_object_get(rec, "stdout"), *e = json_object_get(rec, "stderr");
        assert_string_equal(json_string_value(json_object_get(o, "error")), "No space left on device");
        assert_false(json_is_true(json_object_get(o, "truncated")));
        assert_int_equal(json_integer_value(json_object_get(o, "produced")), 9000);
        assert_true(json_is_true(json_object_get(e, "truncated")));
        assert_null(json_object_get(e, "error"));
        json_decref(rec);
        unmk(&j);
}

/* A bundle job: the bundle asked for and what it resolved to, the command
 * as run (the manifest's, then the caller's arguments), and the same
 * again after a trip through the journal. */
static void test_bundle(void **state) {
        struct job j;
        struct sbx_error e;
        mk(&j);
        static char *cmd0 = "/bundle/hello.sh";
        j.bundle.set = true;
        assert_int_equal(bundle_ref_parse("hello@1.2.0", &j.bundle.ref, &e), 0);
        j.bundle.registry = "main";
        json_t *b = record_bundle(&j.bundle);
        /* not resolved yet */
        assert_true(json_is_null(json_object_get(b, "sha256")));
        assert_true(json_is_null(json_object_get(b, "source")));
        assert_string_equal(json_string_value(json_object_get(b, "ref")), "hello@1.2.0");
        json_decref(b);
        snprintf(j.bundle.version, sizeof(j.bundle.version), "1.2.0");
        memset(j.bundle.sha256, 'a', 64);
        j.bundle.serial = 4;
        j.bundle.stale = true;
        j.bundle.from_cache = true;
        j.bundle.stale_why = strdup("connection refused");
        j.bundle.download_us = 1500;
        j.bundle.command = calloc(2, sizeof(char *));
        j.bundle.command[0] = strdup(cmd0);
        j.bundle.n_command = 1;
        struct record_input in = { .j = &j, .tenant = "acme", .results_path = "/r", .cgroup_cpu_us = -1 };
        json_t *rec = record_build(&in);
        all_keys(rec);
        b = json_object_get(rec, "bundle");
        assert_string_equal(json_string_value(json_object_get(b, "name")), "hello");
        assert_string_equal(json_string_value(json_object_get(b, "version")), "1.2.0");
        assert_string_equal(json_string_value(json_object_get(b, "source")), "cache");
        assert_true(json_is_true(json_object_get(b, "stale")));
        assert_string_equal(json_string_value(json_object_get(b, "stale_reason")), "connection refused");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(b, "time_us"), "download")), 1500);
        json_t *c = json_object_get(rec, "command");
        assert_int_equal(json_array_size(c), 4);
        assert_string_equal(json_string_value(json_array_get(c, 0)), "/bundle/hello.sh");
        assert_string_equal(json_string_value(json_array_get(c, 1)), "sh");
        /* through the journal and back */
        struct job_bundle again = { 0 };
        record_bundle_restore(b, &again);
        assert_string_equal(again.version, "1.2.0");
        assert_string_equal(again.sha256, j.bundle.sha256);
        assert_true(again.stale && again.from_cache);
        assert_int_equal(again.serial, 4);
        assert_int_equal(again.download_us, 1500);
        free(again.stale_why);
        json_decref(rec);
        unmk(&j);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ran_here),
                cmocka_unit_test(test_recovered),
                cmocka_unit_test(test_capture_refused),
                cmocka_unit_test(test_bundle),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
