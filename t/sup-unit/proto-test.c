/* SPDX-License-Identifier: Apache-2.0 */
/* Request validation (sbx-protocol(7)): every malformed request is refused
 * with a message that names the field; valid ones parse completely. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "netpolicy.h"
#include "profile.h"
#include "proto.h"
#include "trace.h"

static int parse(const char *line, struct request *r, struct sbx_error *e) {
        sbx_error_clear(e);
        return proto_parse_request(line, strlen(line), r, e);
}

/* Refused, and the message contains `needle`. */
static void refused(const char *line, const char *needle) {
        struct request r;
        struct sbx_error e;
        int rc = parse(line, &r, &e);
        if (rc != -EINVAL || !strstr(e.msg, needle))
                fail_msg("%s\n  rc=%d msg='%s' (wanted '%s')", line, rc, e.msg, needle);
        request_free(&r);
}

static void test_run_full(void **state) {
        struct request r;
        struct sbx_error e;
        const char *line =
                "{\"v\":1,\"op\":\"run\",\"id\":\"t1\",\"command\":[\"/bin/echo\",\"hi\"],\"profile\":\"python\","
                "\"env\":{\"A\":\"1\"},\"stdin\":\"in\",\"timeout_ms\":5000,\"limits\":{\"memory\":1048576,\"processes\":10,"
                "\"cpu_s\":3,\"cpus\":1.5,\"output\":100},\"network\":\"none\",\"files\":[{\"path\":\"d/f.txt\",\"data\":\"x\",\"mode\":493},"
                "{\"path\":\"b\",\"data_b64\":\"AAEC\"}],\"artifacts\":[\"out/*\"],\"idempotency_key\":\"k\",\"follow\":true}";
        assert_int_equal(parse(line, &r, &e), 0);
        assert_int_equal(r.op, REQ_RUN);
        assert_string_equal(json_string_value(r.tag), "t1");
        assert_int_equal(r.run.argc, 2);
        assert_string_equal(r.run.argv[1], "hi");
        assert_null(r.run.argv[2]);
        assert_string_equal(r.run.profile, "python");
        assert_int_equal(r.run.n_env, 1);
        assert_int_equal(r.run.stdin_len, 2);
        assert_int_equal(r.run.timeout_ms, 5000);
        assert_int_equal(r.run.memory, 1048576);
        assert_int_equal(r.run.processes, 10);
        assert_int_equal(r.run.cpu_s, 3);
        assert_int_equal(r.run.cpu_milli, 1500);
        assert_int_equal(r.run.output, 100);
        assert_int_equal(r.run.n_files, 2);
        assert_int_equal(r.run.files[0].mode, 0755);
        assert_int_equal(r.run.files[1].len, 3);
        assert_int_equal(r.run.files[1].data[2], 2);
        assert_int_equal(r.run.n_artifacts, 1);
        assert_string_equal(r.run.idempotency_key, "k");
        assert_true(r.run.follow);
        request_free(&r);
}

static void test_run_minimal_defaults(void **state) {
        struct request r;
        struct sbx_error e;
        assert_int_equal(parse("{\"v\":1,\"op\":\"run\",\"command\":[\"true\"]}", &r, &e), 0);
        assert_int_equal(r.run.timeout_ms, PROTO_UNSET);
        assert_int_equal(r.run.memory, PROTO_UNSET);
        assert_int_equal(r.run.cpu_milli, PROTO_UNSET);
        assert_int_equal(r.run.net, -1);
        assert_null(r.run.profile);
        assert_false(r.run.follow);
        request_free(&r);
}

static void test_malformed(void **state) {
        refused("{", "malformed JSON");
        refused("not json", "malformed JSON");
        refused("[1,2]", "must be a JSON object");
        refused("{\"v\":1,\"op\":\"ping\"} trailing", "malformed JSON");
        refused("{\"v\":1,\"op\":\"ping\",\"op\":\"run\"}", "malformed JSON"); /* duplicate key */
}

static void test_envelope(void **state) {
        refused("{\"op\":\"ping\"}", "missing field 'v'");
        refused("{\"v\":2,\"op\":\"ping\"}", "field 'v'");
        refused("{\"v\":\"1\",\"op\":\"ping\"}", "field 'v'");
        refused("{\"v\":1}", "missing field 'op'");
        refused("{\"v\":1,\"op\":5}", "field 'op': expected string, got integer");
        refused("{\"v\":1,\"op\":\"explode\"}", "unknown request 'explode'");
        refused("{\"v\":1,\"op\":\"ping\",\"extra\":1}", "unknown field 'extra'");
        refused("{\"v\":1,\"op\":\"ping\",\"id\":[1]}", "field 'id'");
}

static void test_run_types(void **state) {
        refused("{\"v\":1,\"op\":\"run\"}", "missing field 'command'");
        refused("{\"v\":1,\"op\":\"run\",\"command\":\"ls\"}", "field 'command': expected array, got string");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[]}", "field 'command'");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[1]}", "field 'command[0]': expected string, got integer");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"\"]}", "command[0]");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"timeout_ms\":\"5s\"}", "field 'timeout_ms': expected non-negative integer, got string");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"timeout_ms\":-1}", "field 'timeout_ms': must not be negative");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"timeout_ms\":1.5}", "field 'timeout_ms': expected non-negative integer, got number");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"timeout_ms\":0}", "timeout_ms");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"follow\":1}", "field 'follow': expected boolean");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"limits\":{\"memory\":\"1G\"}}", "field 'limits.memory'");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"limits\":{\"swap\":1}}", "unknown field 'limits.swap'");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"limits\":{\"disk\":0}}", "field 'limits.disk': must be positive");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"limits\":{\"cpus\":\"2\"}}", "field 'limits.cpus': expected number, got string");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"limits\":{\"cpus\":0}}", "field 'limits.cpus': 0 is out of range (0.01 to 1024 CPUs)");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"limits\":{\"cpus\":0.001}}", "limits.cpus': 0.001 is out of range");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"limits\":{\"cpus\":-1}}", "limits.cpus': -1 is out of range");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"limits\":{\"cpus\":1025}}", "limits.cpus': 1025 is out of range");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":\"wifi\"}", "field 'network'");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"env\":{\"A\":1}}", "field 'env.A': expected string");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"env\":{\"1A\":\"x\"}}", "invalid variable name");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"env\":{\"SBX_TENANT\":\"x\"}}", "reserved");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"profile\":\"../etc/passwd\"}", "field 'profile'");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"stdin\":\"a\",\"stdin_b64\":\"YQ==\"}", "exclude");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"stdin_b64\":\"!!!\"}", "stdin_b64");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"stdin\":\"a\\u0000b\"}", "malformed JSON");
}

/* network: a mode string, or an object with mode and audit; restricted is
 * refused by name while this build cannot enforce it. */
static void test_run_network(void **state) {
        struct request r;
        struct sbx_error e;
        char d1[65], d2[65], d3[65];
        assert_int_equal(parse("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":{\"mode\":\"host\",\"audit\":true}}", &r, &e), 0);
        assert_int_equal(r.run.net, NET_HOST);
        assert_true(r.run.net_audit);
        proto_request_digest(&r.run, d1);
        request_free(&r);
        assert_int_equal(parse("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":\"host\"}", &r, &e), 0);
        assert_int_equal(r.run.net, NET_HOST);
        assert_false(r.run.net_audit);
        proto_request_digest(&r.run, d2);
        request_free(&r);
        /* audit without a mode: the default mode, audited */
        assert_int_equal(parse("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":{\"audit\":true}}", &r, &e), 0);
        assert_int_equal(r.run.net, -1);
        assert_true(r.run.net_audit);
        proto_request_digest(&r.run, d3);
        request_free(&r);
        /* the audit is part of what idempotency compares */
        assert_string_not_equal(d1, d2);
        assert_int_equal(parse("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"]}", &r, &e), 0);
        proto_request_digest(&r.run, d1);
        request_free(&r);
        assert_string_not_equal(d1, d3);
        /* restricted: always audited, its entries parsed and kept in
         * canonical form */
        assert_int_equal(parse("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":{\"mode\":\"restricted\","
                               "\"allow\":[\"10.0.0.0/8:443\",\"[2001:db8::1]:53/udp\"],\"deny_ports\":[\"25\"]}}",
                               &r, &e),
                         0);
        assert_int_equal(r.run.net, NET_RESTRICTED);
        assert_true(r.run.net_audit);
        assert_non_null(r.run.netpol);
        assert_int_equal(r.run.netpol->n_allow, 2);
        assert_int_equal(r.run.netpol->n_deny, 1);
        json_t *back = proto_run_json(&r.run);
        assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(back, "network"), "allow"), 1)),
                            "[2001:db8::1]:53/udp");
        json_decref(back);
        request_free(&r);
        assert_int_equal(parse("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":\"restricted\"}", &r, &e), 0);
        assert_non_null(r.run.netpol);
        assert_int_equal(r.run.netpol->n_allow, 0);
        request_free(&r);
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":{\"mode\":\"restricted\",\"allow\":[\"10.0.0.1:0\"]}}",
                "field 'network.allow[0]': allow '10.0.0.1:0': bad port");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":{\"mode\":\"restricted\",\"allow\":[1]}}",
                "field 'network.allow[0]': expected string, got integer");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":{\"mode\":\"restricted\",\"deny_ports\":[\"x\"]}}",
                "field 'network.deny_ports[0]'");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":{\"mode\":\"host\",\"allow\":[]}}",
                "field 'network.allow': only with mode \"restricted\"");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":{\"mode\":\"wifi\"}}",
                "field 'network.mode': expected \"none\", \"host\" or \"restricted\"");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":{\"audit\":\"yes\"}}",
                "field 'network.audit': expected boolean, got string");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":{\"allowed\":[]}}", "unknown field 'network.allowed'");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"network\":[]}", "field 'network': expected string or object, got array");
        refused("{\"v\":1,\"op\":\"run\",\"bundle\":\"x\",\"network\":{\"audit\":true}}", "a bundle's manifest declares its network");
}

static void test_run_files(void **state) {
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"files\":[\"x\"]}", "field 'files[0]': expected object");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"files\":[{\"data\":\"x\"}]}", "missing field 'files[0].path'");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"files\":[{\"path\":\"a\"}]}", "exactly one of");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"files\":[{\"path\":\"../a\",\"data\":\"\"}]}", "files[0].path");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"files\":[{\"path\":\"a/../../b\",\"data\":\"\"}]}", "files[0].path");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"files\":[{\"path\":\"/a\",\"data\":\"\"}]}", "files[0].path");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"files\":[{\"path\":\"a//b\",\"data\":\"\"}]}", "files[0].path");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"files\":[{\"path\":\"a\",\"data\":\"\",\"mode\":511}]}", "files[0].mode");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"files\":[{\"path\":\"a\",\"data\":\"\"},{\"path\":\"a\",\"data\":\"\"}]}", "given twice");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"files\":[{\"path\":\"a\",\"data\":\"\",\"owner\":0}]}", "unknown field 'files[0].owner'");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"artifacts\":[\"../*\"]}", "artifacts[0]");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"a\"],\"artifacts\":[7]}", "artifacts[0]");
}

static void test_job_requests(void **state) {
        struct request r;
        struct sbx_error e;
        assert_int_equal(parse("{\"v\":1,\"op\":\"status\",\"job\":\"j0123456789abcdef0123\"}", &r, &e), 0);
        assert_int_equal(r.op, REQ_STATUS);
        assert_string_equal(r.job, "j0123456789abcdef0123");
        request_free(&r);
        assert_int_equal(parse("{\"v\":1,\"op\":\"logs\",\"job\":\"j0123456789abcdef0123\",\"stream\":\"stderr\",\"follow\":true}", &r, &e), 0);
        assert_int_equal(r.streams, STREAM_STDERR);
        assert_true(r.follow);
        request_free(&r);
        refused("{\"v\":1,\"op\":\"status\"}", "missing field 'job'");
        refused("{\"v\":1,\"op\":\"wait\",\"job\":\"../../etc\"}", "field 'job': not a job id");
        refused("{\"v\":1,\"op\":\"cancel\",\"job\":\"j0123456789abcdef0123\",\"force\":true}", "unknown field 'force'");
        refused("{\"v\":1,\"op\":\"logs\",\"job\":\"j0123456789abcdef0123\",\"stream\":\"stdin\"}", "field 'stream'");
        refused("{\"v\":1,\"op\":\"list\",\"state\":\"sleeping\"}", "field 'state'");
        refused("{\"v\":1,\"op\":\"list\",\"limit\":0}", "field 'limit'");
        assert_int_equal(parse("{\"v\":1,\"op\":\"list\",\"state\":\"failed\",\"limit\":3}", &r, &e), 0);
        assert_int_equal(r.limit, 3);
        request_free(&r);
}

#define JOB "\"job\":\"j0123456789abcdef0123\""
static void test_download_requests(void **state) {
        struct request r;
        struct sbx_error e;
        assert_int_equal(parse("{\"v\":1,\"op\":\"download\"," JOB ",\"artifact\":\"out/a.tar\"}", &r, &e), 0);
        assert_int_equal(r.op, REQ_DOWNLOAD);
        assert_string_equal(r.artifact, "out/a.tar");
        request_free(&r);
        assert_int_equal(parse("{\"v\":1,\"op\":\"download\"," JOB ",\"stream\":\"stderr\"}", &r, &e), 0);
        assert_null(r.artifact);
        assert_int_equal(r.streams, STREAM_STDERR);
        request_free(&r);
        refused("{\"v\":1,\"op\":\"download\"," JOB "}", "exactly one of the fields 'artifact' and 'stream'");
        refused("{\"v\":1,\"op\":\"download\"," JOB ",\"artifact\":\"a\",\"stream\":\"stdout\"}", "exactly one");
        refused("{\"v\":1,\"op\":\"download\"," JOB ",\"stream\":\"both\"}", "field 'stream'");
        refused("{\"v\":1,\"op\":\"download\"," JOB ",\"artifact\":\"../stdout\"}", "field 'artifact'");
        refused("{\"v\":1,\"op\":\"download\"," JOB ",\"artifact\":\"/etc/passwd\"}", "field 'artifact'");
        refused("{\"v\":1,\"op\":\"download\",\"artifact\":\"a\"}", "missing field 'job'");
}

static void test_traceparent(void **state) {
        char tp[TRACEPARENT_LEN + 1], tp2[TRACEPARENT_LEN + 1], id[TRACE_ID_LEN + 1];
        const char *given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        assert_true(trace_valid(given));
        assert_true(trace_valid("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-ever"));
        assert_false(trace_valid("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"));
        assert_false(trace_valid("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"));
        assert_false(trace_valid("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
        assert_false(trace_valid("00-00000000000000000000000000000000-00f067aa0ba902b7-01"));
        assert_false(trace_valid("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"));
        assert_false(trace_valid("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1"));
        assert_false(trace_valid("00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01"));
        assert_false(trace_valid("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));
        assert_false(trace_valid(""));
        /* a child: the trace and flags kept, a new span */
        assert_int_equal(trace_child(given, tp), 0);
        assert_true(trace_valid(tp));
        assert_memory_equal(tp, given, 36);
        assert_memory_not_equal(tp + 36, given + 36, 16);
        assert_string_equal(tp + 52, "-00");
        trace_id_of(tp, id);
        assert_string_equal(id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_int_equal(trace_child("nonsense", tp), -EINVAL);
        /* a new trace: sampled, and not the same twice */
        assert_int_equal(trace_child(NULL, tp), 0);
        assert_int_equal(trace_child(NULL, tp2), 0);
        assert_true(trace_valid(tp));
        assert_string_equal(tp + 52, "-01");
        assert_memory_not_equal(tp + 3, tp2 + 3, 32);
        /* in a run request: validated, and kept in its JSON form */
        struct request r;
        struct sbx_error e;
        assert_int_equal(parse("{\"v\":1,\"op\":\"run\",\"command\":[\"true\"],\"traceparent\":"
                               "\"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00\"}", &r, &e), 0);
        assert_string_equal(r.run.traceparent, given);
        json_t *j = proto_run_json(&r.run);
        assert_string_equal(json_string_value(json_object_get(j, "traceparent")), given);
        json_decref(j);
        request_free(&r);
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"true\"],\"traceparent\":\"00-abc\"}", "field 'traceparent'");
        refused("{\"v\":1,\"op\":\"run\",\"command\":[\"true\"],\"traceparent\":1}", "field 'traceparent'");
}

static void test_tag_kept_on_error(void **state) {
        struct request r;
        struct sbx_error e;
        assert_int_equal(parse("{\"v\":1,\"op\":\"nope\",\"id\":42}", &r, &e), -EINVAL);
        assert_non_null(r.tag);
        assert_int_equal(json_integer_value(r.tag), 42);
        request_free(&r);
}

static void test_data_encoding(void **state) {
        json_t *o = json_object();
        assert_int_equal(proto_set_data(o, "data", "hi", 2), 0);
        assert_string_equal(json_string_value(json_object_get(o, "data")), "hi");
        assert_int_equal(proto_set_data(o, "bin", "\xff\xfe", 2), 0);
        assert_null(json_object_get(o, "bin"));
        assert_string_equal(json_string_value(json_object_get(o, "bin_b64")), "//4=");
        json_decref(o);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_run_full),     cmocka_unit_test(test_run_minimal_defaults),
                cmocka_unit_test(test_malformed),    cmocka_unit_test(test_envelope),
                cmocka_unit_test(test_run_types),    cmocka_unit_test(test_run_files), cmocka_unit_test(test_run_network),
                cmocka_unit_test(test_job_requests), cmocka_unit_test(test_tag_kept_on_error),
                cmocka_unit_test(test_data_encoding), cmocka_unit_test(test_download_requests),
                cmocka_unit_test(test_traceparent),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
