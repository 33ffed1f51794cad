/* SPDX-License-Identifier: Apache-2.0 */
/* A logs response's data members are written in pieces: joined, they must
 * be what jansson writes for the same bytes whole (proto_set_data), as a
 * string when jansson takes them for UTF-8 and as base64 when it does not,
 * however the bytes are cut into pieces. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "jsonpiece.h"
#include "proto.h"

/* What jansson makes of the bytes: the member's name and its value as
 * written, without the quotes. */
static char *whole(const unsigned char *s, size_t n, bool *ret_utf8) {
        json_t *o = json_object();
        assert_int_equal(proto_set_data(o, "stdout", (const char *) s, n), 0);
        *ret_utf8 = json_object_get(o, "stdout") != NULL;
        char *line = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        /* {"stdout":"..."} or {"stdout_b64":"..."} */
        char *v = strstr(line, "\":\"") + 3;
        size_t vl = strlen(v) - 2;
        char *r = strndup(v, vl);
        free(line);
        return r;
}

/* The same bytes checked and encoded in pieces of `cut` (a multiple of 3). */
static char *pieces(const unsigned char *s, size_t n, size_t cut, bool *ret_utf8) {
        struct utf8_state u;
        jsonpiece_check_init(&u);
        for (size_t at = 0; at < n; at += 7)
                jsonpiece_check(&u, s + at, n - at < 7 ? n - at : 7);
        bool utf8 = jsonpiece_check_end(&u);
        char *buf = NULL;
        size_t len = 0;
        for (size_t at = 0; at < n; at += cut)
                assert_int_equal(jsonpiece_encode(&buf, &len, s + at, n - at < cut ? n - at : cut, utf8), 0);
        assert_int_equal(jsonpiece_append(&buf, &len, "", 0), 0);
        buf[len] = '\0';
        *ret_utf8 = utf8;
        return buf;
}

static void same(const unsigned char *s, size_t n) {
        static const size_t cuts[] = { 3, 6, 30, 3000 };
        bool wu;
        char *w = whole(s, n, &wu);
        for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
                bool pu;
                char *p = pieces(s, n, cuts[i], &pu);
                assert_int_equal(pu, wu);
                assert_string_equal(p, w);
                free(p);
        }
        free(w);
}

static void test_known(void **state) {
        (void) state;
        static const char *const cases[] = {
                "", "plain text\n", "quote \" backslash \\ slash / tab \t cr \r ff \f bs \b", "nul \0 in it",
                "\x01\x1f\x7f", "é ü 漢字 😀", "\xc3", "\xc3\x28", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                "\xc0\xaf", "\xff", "ok then cut \xe6\xbc",
        };
        static const size_t lens[] = { 0, 11, 49, 11, 3, 0, 1, 2, 3, 3, 4, 2, 1, 14 };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                same((const unsigned char *) cases[i], lens[i] ? lens[i] : strlen(cases[i]));
}

static void test_random(void **state) {
        (void) state;
        unsigned char buf[600];
        srand(18);
        for (int round = 0; round < 3000; round++) {
                size_t n = (size_t) (rand() % (int) sizeof(buf));
                int kind = round % 3;
                for (size_t i = 0; i < n; i++) {
                        int r = rand();
                        /* mostly text, some control bytes, some UTF-8, some anything */
                        if (kind == 0)
                                buf[i] = (unsigned char) (r % 4 ? 0x20 + r % 95 : r % 32);
                        else if (kind == 1)
                                buf[i] = (unsigned char) (r % 2 ? 0x20 + r % 95 : 0x80 + r % 0x80);
                        else
                                buf[i] = (unsigned char) r;
                }
                if (kind == 1 && n >= 4) {
                        /* a few whole characters too */
                        memcpy(buf, "\xe2\x82\xac", 3);
                }
                same(buf, n);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_known),
                cmocka_unit_test(test_random),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
