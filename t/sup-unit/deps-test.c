/* SPDX-License-Identifier: Apache-2.0 */
/* A job's Python packages without I/O: pins read and normalised (and
 * what is refused), the tenant's pip_allow with its globs, the layer's
 * key (the pins' order does not matter, the index and Python do), the
 * install job's request, and the lock read back from a pip report that
 * must say exactly what was asked. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "deps.h"

static void test_pins(void **state) {
        struct pip_pin p;
        struct sbx_error err;
        char s[256];
        assert_int_equal(deps_pin_parse("Foo_Bar.baz==1.2.3", &p, &err), 0);
        assert_string_equal(p.name, "foo-bar-baz");
        assert_string_equal(p.version, "1.2.3");
        assert_string_equal(p.sha256, "");
        deps_pin_str(&p, s, sizeof(s));
        assert_string_equal(s, "foo-bar-baz==1.2.3");
        char h[128];
        snprintf(h, sizeof(h), "x==2.0rc1+local#sha256=%064x", 7);
        assert_int_equal(deps_pin_parse(h, &p, &err), 0);
        assert_string_equal(p.version, "2.0rc1+local");
        assert_int_equal(strlen(p.sha256), 64);
        /* refused, each with a reason */
        const char *bad[] = { "x", "x>=1", "==1", "x==", "x==1.*", "-x==1", "x-==1", "x y==1", "x==1 ", "x==1#sha256=ABC",
                              "x==1#sha256=", "x==../1" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
                err.msg[0] = '\0';
                assert_int_equal(deps_pin_parse(bad[i], &p, &err), -EINVAL);
                assert_true(err.msg[0] != '\0');
        }
        (void) state;
}

static void test_allowed(void **state) {
        char *allow[] = { "requests==2.*", "myorg-*", "exact==1.0" };
        struct tenant t = { .pip_allow = allow, .n_pip_allow = 3 };
        struct pip_pin p;
        struct sbx_error err;
        char buf[160];
        const char *why = NULL;
        assert_int_equal(deps_pin_parse("requests==2.31.0", &p, &err), 0);
        assert_true(deps_allowed(&t, &p, buf, sizeof(buf), &why));
        assert_int_equal(deps_pin_parse("requests==3.0", &p, &err), 0);
        assert_false(deps_allowed(&t, &p, buf, sizeof(buf), &why));
        assert_string_equal(why, "version 3.0 is not one the tenant's pip_allow admits for requests");
        assert_int_equal(deps_pin_parse("MyOrg_tools==9", &p, &err), 0);
        assert_true(deps_allowed(&t, &p, buf, sizeof(buf), &why));
        assert_int_equal(deps_pin_parse("exact==1.0.1", &p, &err), 0);
        assert_false(deps_allowed(&t, &p, buf, sizeof(buf), &why));
        assert_int_equal(deps_pin_parse("reqeusts==2.31.0", &p, &err), 0);
        assert_false(deps_allowed(&t, &p, buf, sizeof(buf), &why));
        assert_string_equal(why, "not in the tenant's pip_allow");
        (void) state;
}

static void test_key(void **state) {
        struct pip_pin a[2], b[2];
        struct sbx_error err;
        char k1[DEPS_KEY_HEX + 1], k2[DEPS_KEY_HEX + 1];
        assert_int_equal(deps_pin_parse("a==1", &a[0], &err), 0);
        assert_int_equal(deps_pin_parse("b==2", &a[1], &err), 0);
        b[0] = a[1];
        b[1] = a[0];
        deps_key("http://i/simple/", "python3.11", a, 2, k1);
        deps_key("http://i/simple/", "python3.11", b, 2, k2);
        assert_string_equal(k1, k2);
        assert_int_equal(strlen(k1), 64);
        deps_key("http://j/simple/", "python3.11", a, 2, k2);
        assert_string_not_equal(k1, k2);
        deps_key("http://i/simple/", "python3.12", a, 2, k2);
        assert_string_not_equal(k1, k2);
        deps_key("http://i/simple/", "python3.11", a, 1, k2);
        assert_string_not_equal(k1, k2);
        (void) state;
}

static void test_request(void **state) {
        struct pip_pin p;
        struct sbx_error err;
        assert_int_equal(deps_pin_parse("a==1", &p, &err), 0);
        json_t *r = deps_install_request("http://10.0.0.1:8080/simple/", &p, 1, 5000, 1 << 20, &err);
        assert_non_null(r);
        json_t *allow = json_object_get(json_object_get(r, "network"), "allow");
        assert_string_equal(json_string_value(json_array_get(allow, 0)), "10.0.0.1:8080");
        char *cmd = json_dumps(json_object_get(r, "command"), JSON_COMPACT);
        assert_non_null(strstr(cmd, "\"--only-binary\",\":all:\""));
        assert_non_null(strstr(cmd, "\"--no-deps\""));
        assert_non_null(strstr(cmd, "\"--trusted-host\",\"10.0.0.1:8080\""));
        assert_non_null(strstr(cmd, "\"a==1\""));
        free(cmd);
        json_decref(r);
        /* https: the default port, no --trusted-host; IPv6 */
        r = deps_install_request("https://[2001:db8::1]/simple/", &p, 1, 5000, 1 << 20, &err);
        assert_non_null(r);
        allow = json_object_get(json_object_get(r, "network"), "allow");
        assert_string_equal(json_string_value(json_array_get(allow, 0)), "[2001:db8::1]:443");
        cmd = json_dumps(json_object_get(r, "command"), JSON_COMPACT);
        assert_null(strstr(cmd, "trusted-host"));
        free(cmd);
        json_decref(r);
        const char *bad[] = { "ftp://x/simple/", "http://u:p@x/simple/", "http://x", "http://x:0/s/", "http:///s/", "https://[::1/s/" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
                assert_null(deps_install_request(bad[i], &p, 1, 5000, 1 << 20, &err));
        (void) state;
}

static json_t *report_of(const char *name, const char *version, const char *sha) {
        return json_pack("{s:[{s:{s:s, s:s}, s:{s:s, s:{s:{s:s}}}}]}", "install", "metadata", "name", name, "version", version,
                         "download_info", "url", "http://i/files/x.whl", "archive_info", "hashes", "sha256", sha);
}

static void test_lock(void **state) {
        struct pip_pin p;
        struct sbx_error err;
        char sha[65];
        memset(sha, 'a', 64);
        sha[64] = '\0';
        assert_int_equal(deps_pin_parse("Foo.Bar==1.0", &p, &err), 0);
        json_t *rep = report_of("foo_bar", "1.0", sha);
        json_t *lock = deps_lock_from_report(rep, &p, 1, &err);
        assert_non_null(lock);
        assert_string_equal(json_string_value(json_object_get(json_array_get(lock, 0), "name")), "foo-bar");
        assert_string_equal(json_string_value(json_object_get(json_array_get(lock, 0), "sha256")), sha);
        json_decref(lock);
        json_decref(rep);
        /* another version, another package, a bad hash, a pinned hash not met */
        rep = report_of("foo_bar", "1.1", sha);
        assert_null(deps_lock_from_report(rep, &p, 1, &err));
        json_decref(rep);
        rep = report_of("evil", "1.0", sha);
        assert_null(deps_lock_from_report(rep, &p, 1, &err));
        json_decref(rep);
        rep = report_of("foo_bar", "1.0", "zz");
        assert_null(deps_lock_from_report(rep, &p, 1, &err));
        json_decref(rep);
        char pin[128];
        snprintf(pin, sizeof(pin), "foo-bar==1.0#sha256=%064d", 0);
        assert_int_equal(deps_pin_parse(pin, &p, &err), 0);
        rep = report_of("foo_bar", "1.0", sha);
        assert_null(deps_lock_from_report(rep, &p, 1, &err));
        assert_non_null(strstr(err.msg, "not the pinned one"));
        json_decref(rep);
        /* two entries for one pin */
        rep = json_pack("{s:[]}", "install");
        assert_null(deps_lock_from_report(rep, &p, 1, &err));
        json_decref(rep);
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pins), cmocka_unit_test(test_allowed), cmocka_unit_test(test_key),
                cmocka_unit_test(test_request), cmocka_unit_test(test_lock),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
