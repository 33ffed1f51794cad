/* SPDX-License-Identifier: Apache-2.0 */
/* Registry indexes, bundle references and versions: semver precedence
 * decides "latest", the index is read strictly, the serial comes from the
 * signed trusted comment only. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "index.h"
#include "semver.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static void test_semver(void **state) {
        const char *const valid[] = { "0.0.0", "1.2.3", "10.20.30", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7",
                                      "1.0.0-x.7.z.92", "1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85", "1.0.0-x-y" };
        const char *const invalid[] = { "", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "1.2.03", "1.2.3-", "1.2.3-01",
                                        "1.2.3+", "1.2.3-a..b", "v1.2.3", "1.2.3 ", "-1.2.3", "1.2.3-é", "1234567890.0.0" };
        for (size_t i = 0; i < sizeof(valid) / sizeof(*valid); i++)
                if (!semver_valid(valid[i]))
                        fail_msg("'%s' should be valid", valid[i]);
        for (size_t i = 0; i < sizeof(invalid) / sizeof(*invalid); i++)
                if (semver_valid(invalid[i]))
                        fail_msg("'%s' should be invalid", invalid[i]);
        /* semver.org's example, in increasing precedence */
        const char *const order[] = { "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
                                      "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0" };
        size_t n = sizeof(order) / sizeof(*order);
        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < n; j++) {
                        int c = semver_cmp(order[i], order[j]);
                        int want = i < j ? -1 : i > j ? 1 : 0;
                        if ((c > 0) - (c < 0) != want)
                                fail_msg("semver_cmp(%s, %s) = %d", order[i], order[j], c);
                }
        assert_int_equal(semver_cmp("1.0.0+a", "1.0.0+b"), 0);
}

static const char *const good =
        "{\"format\":1,\"name\":\"hello\",\"versions\":["
        "{\"version\":\"1.2.0\",\"sha256\":\"" SHA_A "\",\"size\":100,\"file\":\"hello-1.2.0.tar.gz\"},"
        "{\"version\":\"1.10.0\",\"sha256\":\"" SHA_B "\",\"size\":200,\"file\":\"hello-1.10.0.tar.gz\"},"
        "{\"version\":\"2.0.0-rc.1\",\"sha256\":\"" SHA_B "\",\"size\":200,\"file\":\"hello-2.0.0-rc.1.tar.gz\"}]}";

static void test_parse_and_resolve(void **state) {
        struct bundle_index ix;
        struct sbx_error e;
        struct bundle_ref r;
        if (index_parse(good, strlen(good), &ix, &e) < 0)
                fail_msg("%s", e.msg);
        assert_string_equal(ix.name, "hello");
        assert_int_equal(ix.n, 3);
        /* pre-releases are not "latest" while a release exists */
        assert_string_equal(index_latest(&ix)->version, "1.10.0");
        assert_int_equal(bundle_ref_parse("hello@1.2.0", &r, &e), 0);
        assert_int_equal(r.kind, REF_VERSION);
        assert_string_equal(index_resolve(&ix, &r)->sha256, SHA_A);
        assert_int_equal(bundle_ref_parse("hello@sha256:" "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", &r, &e), 0);
        assert_int_equal(r.kind, REF_DIGEST);
        assert_string_equal(index_resolve(&ix, &r)->version, "1.10.0");
        assert_int_equal(bundle_ref_parse("hello@9.9.9", &r, &e), 0);
        assert_null(index_resolve(&ix, &r));
        char buf[200];
        bundle_ref_parse("hello@2.0.0-rc.1", &r, &e);
        bundle_ref_str(&r, buf, sizeof(buf));
        assert_string_equal(buf, "hello@2.0.0-rc.1");
        /* written back in version order, and read back the same */
        json_t *j = index_to_json(&ix);
        char *s = json_dumps(j, JSON_COMPACT);
        struct bundle_index again;
        assert_int_equal(index_parse(s, strlen(s), &again, &e), 0);
        assert_string_equal(again.v[0].version, "1.2.0");
        assert_string_equal(again.v[2].version, "2.0.0-rc.1");
        free(s);
        json_decref(j);
        index_free(&again);
        index_free(&ix);
}

static void expect_bad(const char *text, const char *want) {
        struct bundle_index ix;
        struct sbx_error e;
        if (index_parse(text, strlen(text), &ix, &e) == 0)
                fail_msg("parsed: %s", text);
        if (!strstr(e.msg, want))
                fail_msg("'%s' lacks '%s'", e.msg, want);
}

#define V(ver, sha, size, file) "{\"version\":\"" ver "\",\"sha256\":\"" sha "\",\"size\":" size ",\"file\":\"" file "\"}"

static void test_bad_indexes(void **state) {
        expect_bad("", "malformed JSON");
        expect_bad("[]", "index.json:");
        expect_bad("{\"format\":2,\"name\":\"a\",\"versions\":[]}", "format 2");
        expect_bad("{\"format\":1,\"name\":\"A\",\"versions\":[]}", "name: not a bundle name");
        expect_bad("{\"format\":1,\"name\":\"a\",\"versions\":[],\"x\":1}", "index.json:");
        expect_bad("{\"format\":1,\"name\":\"a\",\"name\":\"b\",\"versions\":[]}", "duplicate");
        expect_bad("{\"format\":1,\"name\":\"a\",\"versions\":[" V("1.0", SHA_A, "1", "a.tar.gz") "]}", "versions[0].version");
        expect_bad("{\"format\":1,\"name\":\"a\",\"versions\":[" V("1.0.0", "abc", "1", "a.tar.gz") "]}", "versions[0].sha256");
        expect_bad("{\"format\":1,\"name\":\"a\",\"versions\":[" V("1.0.0", SHA_A, "0", "a.tar.gz") "]}", "versions[0].size");
        expect_bad("{\"format\":1,\"name\":\"a\",\"versions\":[" V("1.0.0", SHA_A, "1", "../a.tar.gz") "]}", "versions[0].file");
        expect_bad("{\"format\":1,\"name\":\"a\",\"versions\":[" V("1.0.0", SHA_A, "1", "a/b") "]}", "versions[0].file");
        expect_bad("{\"format\":1,\"name\":\"a\",\"versions\":[" V("1.0.0", SHA_A, "1", "a") "," V("1.0.0+x", SHA_B, "1", "b") "]}",
                   "listed twice");
}

static void test_refs(void **state) {
        struct bundle_ref r;
        struct sbx_error e;
        assert_int_equal(bundle_ref_parse("hello", &r, &e), 0);
        assert_int_equal(r.kind, REF_LATEST);
        assert_int_equal(bundle_ref_parse("", &r, &e), -EINVAL);
        assert_int_equal(bundle_ref_parse("@1.0.0", &r, &e), -EINVAL);
        assert_int_equal(bundle_ref_parse("../x", &r, &e), -EINVAL);
        assert_int_equal(bundle_ref_parse("hello@", &r, &e), -EINVAL);
        assert_int_equal(bundle_ref_parse("hello@latest", &r, &e), -EINVAL);
        assert_int_equal(bundle_ref_parse("hello@sha256:abc", &r, &e), -EINVAL);
        assert_int_equal(bundle_ref_parse("hello@1.0.0@2", &r, &e), -EINVAL);
}

static void test_comment(void **state) {
        struct sbx_error e;
        uint64_t s = 0;
        assert_int_equal(index_comment_serial("serial=12 name=hello", "hello", &s, &e), 0);
        assert_int_equal(s, 12);
        assert_int_equal(index_comment_serial("timestamp:1\tfile:index.json\tserial=3", "hello", &s, &e), 0);
        assert_int_equal(s, 3);
        assert_int_equal(index_comment_serial("timestamp:1\tfile:index.json", "hello", &s, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "no serial=N"));
        assert_int_equal(index_comment_serial("serial=2 name=other", "hello", &s, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "for bundle 'other'"));
        assert_int_equal(index_comment_serial("serial=0", "hello", &s, &e), -EINVAL);
        assert_int_equal(index_comment_serial("serial=1 serial=2", "hello", &s, &e), -EINVAL);
        assert_int_equal(index_comment_serial("serial=x", "hello", &s, &e), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_semver),     cmocka_unit_test(test_parse_and_resolve),
                cmocka_unit_test(test_bad_indexes), cmocka_unit_test(test_refs),
                cmocka_unit_test(test_comment),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
