/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for supervisor/core/urlmatch.c and the callback_allow key that
 * uses it: the URLs a string prefix let through (issue 18: userinfo, a
 * port that is not one, a host that only starts like the allowed one) are
 * refused, and what an operator means by a prefix is allowed. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "config-keys.h"
#include "urlmatch.h"

/* Does the prefix rule allow url? Both must parse. */
static bool allows(const char *rule, const char *url) {
        struct urlmatch r, u;
        const char *why = NULL;
        assert_int_equal(urlmatch_parse(rule, &r, &why), 0);
        assert_null(urlmatch_rule_check(&r));
        int rc = urlmatch_parse(url, &u, &why);
        if (rc < 0) {
                urlmatch_done(&r);
                return false;
        }
        bool ok = urlmatch_allows(&r, &u);
        urlmatch_done(&r);
        urlmatch_done(&u);
        return ok;
}

/* url is refused by the parser, with a reason containing want. */
static void refused(const char *url, const char *want) {
        struct urlmatch u;
        const char *why = NULL;
        int rc = urlmatch_parse(url, &u, &why);
        if (rc == 0) {
                urlmatch_done(&u);
                fail_msg("'%s' parsed", url);
        }
        assert_int_equal(rc, -EINVAL);
        assert_non_null(why);
        if (!strstr(why, want))
                fail_msg("'%s': '%s' does not say '%s'", url, why, want);
}

static void test_attacks_of_issue_18(void **state) {
        (void) state;
        const char *rule = "http://127.0.0.1:18080";
        /* userinfo: the host is the second 127.0.0.1, on port 7777 */
        refused("http://127.0.0.1:18080@127.0.0.1:7777/ssrf", "userinfo");
        assert_false(allows(rule, "http://127.0.0.1:18080@127.0.0.1:7777/ssrf"));
        /* a port above 65535 */
        refused("http://127.0.0.1:180809/x", "Port");
        assert_false(allows(rule, "http://127.0.0.1:180809/x"));
        /* a port that goes on as a name */
        refused("http://127.0.0.1:18080.nip.io/x", "Port");
        assert_false(allows(rule, "http://127.0.0.1:18080.nip.io/x"));
        /* a host name that begins like the allowed one */
        assert_false(allows("http://hooks.example", "http://hooks.example.evil.test/x"));
        assert_false(allows("http://hooks.example", "http://hooks.examplex/x"));
        /* an empty user is still userinfo */
        refused("http://@127.0.0.1:18080/x", "userinfo");
        refused("http://u:p@127.0.0.1:18080/x", "userinfo");
        refused("http://127.0.0.1:18080/x#frag", "fragment");
}

static void test_scheme_host_port(void **state) {
        (void) state;
        assert_true(allows("http://127.0.0.1:18080", "http://127.0.0.1:18080/"));
        assert_true(allows("http://127.0.0.1:18080", "http://127.0.0.1:18080/cb?job=1"));
        assert_false(allows("http://127.0.0.1:18080", "https://127.0.0.1:18080/"));
        assert_false(allows("https://h.example", "http://h.example/"));
        assert_false(allows("http://127.0.0.1:18080", "http://127.0.0.1:18081/"));
        assert_false(allows("http://127.0.0.1:18080", "http://127.0.0.2:18080/"));
        /* the scheme's default port, written or not */
        assert_true(allows("http://h.example", "http://h.example:80/x"));
        assert_true(allows("http://h.example:80", "http://h.example/x"));
        assert_true(allows("https://h.example", "https://h.example:443/x"));
        assert_false(allows("https://h.example", "https://h.example:80/x"));
        assert_true(allows("http://h.example:8080", "http://h.example:08080/x"));
        /* host names: case and a final dot do not make another host */
        assert_true(allows("http://Hooks.Example", "HTTP://hooks.EXAMPLE./x"));
        /* IPv4 as curl connects to it */
        assert_true(allows("http://127.0.0.1", "http://0x7f.1/x"));
        assert_true(allows("http://127.0.0.1", "http://2130706433/x"));
        assert_true(allows("http://127.0.0.1", "http://%31%32%37.0.0.1/x"));
        /* IPv6 literals in their forms */
        assert_true(allows("http://[::1]:9000", "http://[0:0:0::1]:9000/x"));
        assert_true(allows("http://[2001:DB8::1]", "http://[2001:db8:0::1]/x"));
        assert_true(allows("http://[::ffff:127.0.0.1]", "http://[::FFFF:7f00:1]/x"));
        assert_false(allows("http://[::1]:9000", "http://127.0.0.1:9000/x"));
        assert_false(allows("http://[::1]:9000", "http://[::2]:9000/x"));
        refused("http://[fe80::1%25eth0]/x", "zone");
}

static void test_path_segments(void **state) {
        (void) state;
        assert_true(allows("http://h/a", "http://h/a"));
        assert_true(allows("http://h/a", "http://h/a/"));
        assert_true(allows("http://h/a", "http://h/a/b"));
        assert_true(allows("http://h/a", "http://h/a?x=1"));
        assert_false(allows("http://h/a", "http://h/ab"));
        assert_false(allows("http://h/a", "http://h/a.b"));
        assert_false(allows("http://h/a", "http://h/"));
        assert_true(allows("http://h/a/", "http://h/a/b"));
        assert_false(allows("http://h/a/", "http://h/a"));
        assert_true(allows("http://h/", "http://h/anything/at/all"));
        assert_true(allows("http://h", "http://h"));
        /* dot segments are resolved before the comparison */
        assert_false(allows("http://h/a", "http://h/a/../admin"));
        assert_true(allows("http://h/a", "http://h/x/../a/b"));
        /* what a receiver may decode into another path */
        refused("http://h/a/..%2fadmin", "percent-encoded");
        refused("http://h/a/%2E%2E/admin", "percent-encoded");
        refused("http://h/a/..%5cadmin", "percent-encoded");
        refused("http://h/a\\..\\admin", "backslash");
}

static void test_not_urls(void **state) {
        (void) state;
        refused("ftp://h/x", "http");
        refused("file:///etc/passwd", "http");
        refused("gopher://h/x", "");
        refused("h.example/x", "");
        refused("http://", "");
        refused("http://h:/x?\x01", "");
        refused("http://ex ample/", "");
        refused("http://caf\xc3\xa9.example/", "ASCII");
}

static void test_same_origin(void **state) {
        (void) state;
        struct urlmatch a, b, c;
        const char *why;
        assert_int_equal(urlmatch_parse("http://127.0.0.1:8000/reg", &a, &why), 0);
        assert_int_equal(urlmatch_parse("http://127.0.0.1:8000/moved/x", &b, &why), 0);
        assert_int_equal(urlmatch_parse("http://localhost:8000/reg", &c, &why), 0);
        assert_true(urlmatch_same_origin(&a, &b));
        assert_false(urlmatch_same_origin(&a, &c));
        urlmatch_done(&a);
        urlmatch_done(&b);
        urlmatch_done(&c);
}

/* The callback_allow line of a tenant section, applied through the key table. */
static int allow_key(struct tenant *t, const char *v, const char *origin, struct sbx_error *err) {
        const struct inikey_format fmt = { .tables = &config_callback_table, .n_tables = 1 };
        int why = 0;
        struct inikey_ctx c = { .section = "tenant.t", .value = v, .origin = origin, .obj = t, .err = err };
        c.def = inikeys_find(&fmt, c.section, "callback_allow", &why);
        assert_non_null(c.def);
        return inikeys_apply(&fmt, &c);
}

/* callback_allow in a tenant section: bad entries name where and why. */
static void allow_key_fails(const char *v, const char *want) {
        struct tenant t = { 0 };
        struct sbx_error err = { 0 };
        int rc = allow_key(&t, v, "sbx.conf:12", &err);
        assert_int_equal(rc, -EINVAL);
        if (!strstr(err.msg, "sbx.conf:12: callback_allow: ") || !strstr(err.msg, want))
                fail_msg("'%s': got '%s', want '%s'", v, err.msg, want);
        tenant_callback_free(&t);
}

static void test_allow_key(void **state) {
        (void) state;
        struct tenant t = { 0 };
        struct sbx_error err = { 0 };
        const char *why = NULL;
        allow_key_fails("http://u:p@h.example/", "userinfo");
        allow_key_fails("http://h.example/ http://h.example:99999/", "Port");
        allow_key_fails("http://h.example/x?q=1", "query");
        allow_key_fails("http://h.example/x#f", "fragment");
        allow_key_fails("ftp://h.example/", "http");
        assert_int_equal(allow_key(&t, "http://127.0.0.1:18080/hooks https://[::1]/b", "sbx.conf:3", &err),
                         0);
        t.cb_secret = (unsigned char *) "k";
        assert_int_equal(tenant_allows_callback(&t, "http://127.0.0.1:18080/hooks/1", &why), 0);
        assert_int_equal(tenant_allows_callback(&t, "https://[0::1]:443/b", &why), 0);
        assert_int_equal(tenant_allows_callback(&t, "http://127.0.0.1:18080/hooksx", &why), -EACCES);
        assert_int_equal(tenant_allows_callback(&t, "http://127.0.0.1:18080.nip.io/hooks", &why), -EINVAL);
        assert_int_equal(tenant_allows_callback(&t, "http://127.0.0.1:18080@127.0.0.1:7777/hooks", &why), -EINVAL);
        assert_non_null(strstr(why, "userinfo"));
        t.cb_secret = NULL;
        tenant_callback_free(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_attacks_of_issue_18),
                cmocka_unit_test(test_scheme_host_port),
                cmocka_unit_test(test_path_segments),
                cmocka_unit_test(test_not_urls),
                cmocka_unit_test(test_same_origin),
                cmocka_unit_test(test_allow_key),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
