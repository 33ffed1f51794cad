/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-manifest(5): a manifest parses into exactly what it says, and every
 * mistake is an error naming the file, the line and the key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "manifest.h"

static const char *const full =
        "; a comment\n"
        "[bundle]\n"
        "name = hello\n"
        "version = 1.2.0-rc.1+build.5\n"
        "description = Says \"hello, world\" politely\n"
        "[run]\n"
        "command = /bundle/hello.sh --greeting \"good day\" \\\n"
        "  'x' $$HOME\n"
        "profile = shell\n"
        "[capabilities]\n"
        "network = restricted\n"
        "connect = api.example.com:443 [2001:db8::1]:8443\n"
        "connect = 10.0.0.1:80\n"
        "read-only = /etc/ssl/certs\n"
        "read-only = /etc/resolv.conf /etc/hosts\n"
        "env = TOKEN LANG\n"
        "  EXTRA LANG\n"
        "[limits]\n"
        "timeout = 2m\n"
        "memory = 256M\n"
        "cpu = 1500ms\n"
        "processes = 32\n"
        "output = 1M\n";

static int parse(const char *text, struct manifest *m, struct sbx_error *e) {
        manifest_init(m);
        return manifest_parse(m, "hello.tar.gz:manifest.ini", text, strlen(text), e);
}

static void test_full(void **state) {
        struct manifest m;
        struct sbx_error e;
        if (parse(full, &m, &e) < 0)
                fail_msg("%s", e.msg);
        assert_string_equal(m.name, "hello");
        assert_string_equal(m.version, "1.2.0-rc.1+build.5");
        assert_string_equal(m.description, "Says hello, world politely");
        assert_int_equal(m.n_command, 5);
        assert_string_equal(m.command[0], "/bundle/hello.sh");
        assert_string_equal(m.command[2], "good day");
        assert_string_equal(m.command[3], "'x'");
        assert_string_equal(m.command[4], "$HOME");
        assert_null(m.command[5]);
        assert_string_equal(m.profile, "shell");
        assert_int_equal(m.net, MANIFEST_NET_RESTRICTED);
        assert_int_equal(m.n_connect, 3);
        assert_string_equal(m.connect[1].host, "2001:db8::1");
        assert_int_equal(m.connect[1].port, 8443);
        assert_int_equal(m.connect[2].port, 80);
        assert_int_equal(m.ro_paths, MANIFEST_PATH_BIT(manifest_path_find("/etc/ssl/certs")) |
                                             MANIFEST_PATH_BIT(manifest_path_find("/etc/resolv.conf")) |
                                             MANIFEST_PATH_BIT(manifest_path_find("/etc/hosts")));
        assert_int_equal(m.n_env, 3);
        assert_string_equal(m.env[2], "EXTRA");
        assert_int_equal(m.timeout_ms, 120000);
        assert_int_equal(m.memory, 256u << 20);
        assert_int_equal(m.cpu_s, 2);
        assert_int_equal(m.processes, 32);
        assert_int_equal(m.output, 1u << 20);
        json_t *j = manifest_to_json(&m);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "capabilities"), "network")), "restricted");
        assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(j, "capabilities"), "connect"), 1)),
                            "[2001:db8::1]:8443");
        json_decref(j);
        manifest_free(&m);
}

static void test_minimal_defaults(void **state) {
        struct manifest m;
        struct sbx_error e;
        assert_int_equal(parse("[bundle]\nname=a\nversion=0.0.1\n[run]\ncommand=true\n", &m, &e), 0);
        assert_string_equal(m.profile, "default");
        assert_string_equal(m.description, "");
        assert_int_equal(m.net, MANIFEST_NET_NONE);
        assert_int_equal(m.ro_paths, 0);
        assert_int_equal(m.n_env, 0);
        assert_int_equal(m.memory, MANIFEST_UNSET);
        assert_int_equal(m.timeout_ms, MANIFEST_UNSET);
        manifest_free(&m);
}

static void expect_error(const char *text, const char *want) {
        struct manifest m;
        struct sbx_error e;
        if (parse(text, &m, &e) == 0)
                fail_msg("parsed, expected an error with '%s'", want);
        if (!strstr(e.msg, want))
                fail_msg("error '%s' does not contain '%s'", e.msg, want);
        manifest_free(&m);
}

#define HEAD "[bundle]\nname = a\nversion = 1.0.0\n[run]\ncommand = true\n"

static void test_errors(void **state) {
        expect_error("[bundle]\nname = a\n", "manifest.ini: bundle.version is missing");
        expect_error("[bundle]\nversion = 1.0.0\n[run]\ncommand = x\n", "bundle.name is missing");
        expect_error("[bundle]\nname = a\nversion = 1.0.0\n", "run.command is missing");
        expect_error(HEAD "[capabilities]\nnetwork = host\n", "manifest.ini:7: capabilities.network: expected none or restricted");
        expect_error(HEAD "[capabilities]\nnetwork = restricted\n", "needs at least one connect");
        expect_error(HEAD "[capabilities]\nconnect = a:1\n", "capabilities.connect needs network = restricted");
        expect_error(HEAD "[capabilities]\nnetwork = restricted\nconnect = a\n", ":8: capabilities.connect: 'a': expected HOST:PORT");
        expect_error(HEAD "[capabilities]\nnetwork = restricted\nconnect = a:70000\n", "port from 1 to 65535");
        expect_error(HEAD "[capabilities]\nread-only = /etc/shadow\n", "'/etc/shadow' is not a path a bundle may ask for");
        expect_error(HEAD "[capabilities]\nenv = SBX_JOB_ID\n", "SBX_* variables are the daemon's");
        expect_error(HEAD "[capabilities]\nenv = 1X\n", "'1X' is not a variable name");
        expect_error(HEAD "[limits]\nmemory = lots\n", ":7: limits.memory: expected a positive size");
        expect_error(HEAD "[limits]\ntimeout = 0\n", "expected a positive duration");
        expect_error(HEAD "[limits]\nprocesses = -1\n", "expected a positive number");
        expect_error(HEAD "[limits]\nswap = 1G\n", ":7: limits.swap: unknown key (known in [limits]: timeout memory cpu processes output)");
        expect_error(HEAD "[network]\n", ":6: unknown section [network] (known: bundle run capabilities limits)");
        expect_error(HEAD "[run]\ncommand = false\n", ":7: run.command: set twice in this file (first on line 5)");
        expect_error("[bundle]\nname = Hello\n", ":2: bundle.name: a bundle name is");
        expect_error("[bundle]\nname = a\nversion = 1.0\n", ":3: bundle.version: not a semantic version");
        expect_error("[bundle]\nname = a\nversion = 01.0.0\n", "not a semantic version");
        expect_error("name = a\n", ":1: key 'name' outside of any [section]");
        expect_error("[bundle\nname = a\n", ":1: syntax error: expected '[section]' or 'key = value'");
        expect_error(HEAD "[run]\nprofile = ../etc\n", "a profile name is");
        /* the daemon's environment is not the manifest's to read */
        expect_error("[bundle]\nname = a\nversion = 1.0.0\n[run]\ncommand = echo ${HOME}\n", ":5: run.command: variables (${NAME}) are not expanded here");
        expect_error("[bundle]\nname = a\nversion = 1.0.0\n[run]\ncommand = echo \"a\\x01\"\n", "control character");
        expect_error("[bundle]\nname = a\nversion = 1.0.0\ndescription = caf\xc3\n", ":4: bundle.description: word 1 is not valid UTF-8");
        expect_error(HEAD "[run]\ncommand = \"\"\n", "set twice");
        expect_error("[bundle]\nname = a\nversion = 1.0.0\n[run]\ncommand = \"\"\n", "empty program name");
}

static void test_nul_and_size(void **state) {
        struct manifest m;
        struct sbx_error e;
        const char text[] = "[bundle]\nname = a\0b\n";
        manifest_init(&m);
        assert_int_equal(manifest_parse(&m, "m.ini", text, sizeof(text) - 1, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "m.ini:2: NUL byte in the file"));
        manifest_free(&m);
        char *big = malloc(MANIFEST_MAX_SIZE + 2);
        memset(big, ';', MANIFEST_MAX_SIZE + 1);
        big[MANIFEST_MAX_SIZE + 1] = '\0';
        manifest_init(&m);
        assert_int_equal(manifest_parse(&m, "m.ini", big, MANIFEST_MAX_SIZE + 1, &e), -EFBIG);
        manifest_free(&m);
        free(big);
}

static void test_vocabulary(void **state) {
        for (size_t i = 0; i < manifest_paths_count(); i++) {
                assert_int_equal(manifest_path_find(manifest_path_name(i)), (int) i);
                assert_non_null(strstr(manifest_paths_all(), manifest_path_name(i)));
        }
        assert_int_equal(manifest_path_find("/etc"), -1);
        assert_true(bundle_name_valid("hello-world_2.x"));
        assert_false(bundle_name_valid("-x"));
        assert_false(bundle_name_valid("a/b"));
        assert_false(bundle_name_valid(""));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_full),         cmocka_unit_test(test_minimal_defaults),
                cmocka_unit_test(test_errors),       cmocka_unit_test(test_nul_and_size),
                cmocka_unit_test(test_vocabulary),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
