/* SPDX-License-Identifier: Apache-2.0 */
/* The minisign verifier against signatures the real minisign made
 * (t/sup-unit/vectors/README): both modes verify; a changed file, a changed
 * trusted comment, a foreign key and malformed files are refused with the
 * right error. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sodium.h>

#include "minisign.h"

static char *slurp(const char *name, size_t *len) {
        char path[4096];
        const char *src = getenv("SBX_SRCDIR");
        snprintf(path, sizeof(path), "%s/t/sup-unit/vectors/%s", src ? src : ".", name);
        FILE *f = fopen(path, "re");
        if (!f)
                fail_msg("%s: cannot open", path);
        char *buf = calloc(1, 65536);
        *len = fread(buf, 1, 65535, f);
        fclose(f);
        return buf;
}

static void load_key(const char *name, struct minisign_key *k) {
        struct sbx_error e;
        char path[4096];
        const char *src = getenv("SBX_SRCDIR");
        snprintf(path, sizeof(path), "%s/t/sup-unit/vectors/%s", src ? src : ".", name);
        if (minisign_key_load(path, k, &e) < 0)
                fail_msg("%s", e.msg);
}

static void parse_sig(const char *name, struct minisign_sig *s) {
        struct sbx_error e;
        size_t n;
        char *t = slurp(name, &n);
        if (minisign_sig_parse(name, t, n, s, &e) < 0)
                fail_msg("%s", e.msg);
        free(t);
}

static void test_both_modes_verify(void **state) {
        struct minisign_key k;
        struct minisign_sig s;
        struct sbx_error e;
        size_t n;
        char *data = slurp("index.json", &n);
        load_key("key.pub", &k);
        parse_sig("index.json.minisig", &s);
        assert_true(s.prehashed);
        assert_string_equal(s.trusted, "serial=7 name=hello");
        assert_int_equal(minisign_verify(&k, 1, &s, data, n, &e), 0);
        parse_sig("index.json.legacy.minisig", &s);
        assert_false(s.prehashed);
        assert_int_equal(minisign_verify(&k, 1, &s, data, n, &e), 0);
        free(data);
}

static void test_tampered_file(void **state) {
        struct minisign_key k;
        struct minisign_sig s;
        struct sbx_error e;
        size_t n;
        char *data = slurp("index.json", &n);
        load_key("key.pub", &k);
        data[n - 3] ^= 1;
        parse_sig("index.json.minisig", &s);
        assert_int_equal(minisign_verify(&k, 1, &s, data, n, &e), -EBADMSG);
        assert_non_null(strstr(e.msg, "does not match the file"));
        parse_sig("index.json.legacy.minisig", &s);
        assert_int_equal(minisign_verify(&k, 1, &s, data, n, &e), -EBADMSG);
        /* one byte more is another file too */
        data[n - 3] ^= 1;
        parse_sig("index.json.minisig", &s);
        assert_int_equal(minisign_verify(&k, 1, &s, data, n - 1, &e), -EBADMSG);
        free(data);
}

/* The serial lives in the trusted comment: changing it must not verify. */
static void test_tampered_comment(void **state) {
        struct minisign_key k;
        struct minisign_sig s;
        struct sbx_error e;
        size_t n;
        char *data = slurp("index.json", &n);
        load_key("key.pub", &k);
        parse_sig("index.json.minisig", &s);
        snprintf(s.trusted, sizeof(s.trusted), "serial=8 name=hello");
        assert_int_equal(minisign_verify(&k, 1, &s, data, n, &e), -EBADMSG);
        assert_non_null(strstr(e.msg, "trusted comment"));
        free(data);
}

static void test_foreign_key(void **state) {
        struct minisign_key k[2];
        struct minisign_sig s;
        struct sbx_error e;
        size_t n;
        char *data = slurp("index.json", &n);
        load_key("key.pub", &k[0]);
        load_key("other.pub", &k[1]);
        parse_sig("index.json.other.minisig", &s);
        assert_int_equal(minisign_verify(&k[0], 1, &s, data, n, &e), -ENOKEY);
        assert_non_null(strstr(e.msg, "not a trusted key"));
        /* among several trusted keys, the one with the id verifies */
        assert_int_equal(minisign_verify(k, 2, &s, data, n, &e), 0);
        /* a key that claims the id but is another key */
        memcpy(k[0].id, k[1].id, sizeof(k[0].id));
        assert_int_equal(minisign_verify(&k[0], 1, &s, data, n, &e), -EBADMSG);
        free(data);
}

static void test_key_id(void **state) {
        struct minisign_key k;
        char id[17];
        size_t n;
        load_key("key.pub", &k);
        minisign_key_id_str(k.id, id);
        char *text = slurp("key.pub", &n);
        /* minisign's own comment names the id */
        assert_non_null(strstr(text, id));
        free(text);
}

static void test_malformed(void **state) {
        struct minisign_key k;
        struct minisign_sig s;
        struct sbx_error e;
        size_t n;
        char *good = slurp("index.json.minisig", &n);
        assert_int_equal(minisign_sig_parse("x", "", 0, &s, &e), -EINVAL);
        assert_int_equal(minisign_sig_parse("x", good, n / 2, &s, &e), -EINVAL);
        /* lines in another order */
        char *swapped = strdup(good);
        char *l3 = strstr(swapped, "trusted comment: serial");
        l3[0] = 'x';
        assert_int_equal(minisign_sig_parse("x", swapped, n, &s, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "x:3:"));
        free(swapped);
        /* a NUL byte */
        char *nul = malloc(n);
        memcpy(nul, good, n);
        nul[30] = '\0';
        assert_int_equal(minisign_sig_parse("x", nul, n, &s, &e), -EINVAL);
        free(nul);
        /* trailing garbage */
        char *more = calloc(1, n + 16);
        memcpy(more, good, n);
        strcat(more, "junk\n");
        assert_int_equal(minisign_sig_parse("x", more, n + 5, &s, &e), -EINVAL);
        free(more);
        free(good);
        assert_int_equal(minisign_key_parse("k", "untrusted comment: x\nAAAA\n", 26, &k, &e), -EINVAL);
        assert_int_equal(minisign_key_parse("k", "", 0, &k, &e), -EINVAL);
}

int main(void) {
        if (sodium_init() < 0)
                return 1;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_both_modes_verify), cmocka_unit_test(test_tampered_file),
                cmocka_unit_test(test_tampered_comment),  cmocka_unit_test(test_foreign_key),
                cmocka_unit_test(test_key_id),            cmocka_unit_test(test_malformed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
