/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/json-string.c: every input, valid UTF-8 or not, gives
 * a complete JSON string of valid UTF-8, and a short buffer cuts between
 * characters, never inside an escape or a multi-byte sequence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "json-string.h"

static void check(const char *in, const char *want) {
        char buf[JSON_STRING_MAX(64)];
        size_t n = json_string_escape(buf, sizeof(buf), in);
        assert_string_equal(buf, want);
        assert_int_equal(n, strlen(want));
}

static void test_plain_and_escapes(void **state) {
        (void) state;
        check("", "\"\"");
        check("/data/x y", "\"/data/x y\"");
        check("a\"b\\c", "\"a\\\"b\\\\c\"");
        check("\n\t\r", "\"\\n\\t\\r\"");
        check("\x01\x1f\x7f", "\"\\u0001\\u001f\x7f\"");
}

static void test_valid_utf8_is_kept(void **state) {
        (void) state;
        check("caf\xc3\xa9", "\"caf\xc3\xa9\"");                   /* U+00E9 */
        check("\xe2\x82\xac", "\"\xe2\x82\xac\"");                 /* U+20AC */
        check("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");         /* U+1F600 */
        check("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"");         /* U+10FFFF */
        check("\xed\x9f\xbf", "\"\xed\x9f\xbf\"");                 /* U+D7FF */
}

static void test_invalid_bytes_become_fffd(void **state) {
        (void) state;
        check("\xff", "\"\\ufffd\"");
        check("/tmp/\xff\xfe", "\"/tmp/\\ufffd\\ufffd\"");
        /* Overlong forms of '/' and NUL. */
        check("\xc0\xaf", "\"\\ufffd\\ufffd\"");
        check("\xc1\x80", "\"\\ufffd\\ufffd\"");
        check("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");
        check("\xf0\x80\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
        /* A UTF-16 surrogate, and a code point above U+10FFFF. */
        check("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
        check("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
        check("\xf5\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
        /* A sequence cut short, by another character or by the end. */
        check("\xe2\x82" "a", "\"\\ufffd\\ufffda\"");
        check("x\xe2\x82", "\"x\\ufffd\\ufffd\"");
        /* A lone continuation byte. */
        check("\x80" "ok", "\"\\ufffdok\"");
}

static void test_every_byte_fits_the_bound(void **state) {
        (void) state;
        unsigned char in[256];
        char out[JSON_STRING_MAX(sizeof(in))];
        /* Every byte value but NUL, each on its own and all in a row. */
        for (unsigned b = 1; b < 256; b++) {
                unsigned char one[2] = { (unsigned char) b, 0 };
                size_t n = json_string_escape(out, JSON_STRING_MAX(1), (const char *) one);
                assert_true(n >= 3 && out[n - 1] == '"' && out[n] == '\0');
        }
        for (unsigned b = 1; b < 256; b++)
                in[b - 1] = (unsigned char) b;
        in[255] = 0;
        size_t n = json_string_escape(out, sizeof(out), (const char *) in);
        assert_int_equal(out[0], '"');
        assert_int_equal(out[n - 1], '"');
        /* Nothing was cut: the last input byte, 0xff, is the last escape. */
        assert_int_equal(memcmp(out + n - 7, "\\ufffd\"", 7), 0);
}

static void test_short_buffer_cuts_between_characters(void **state) {
        (void) state;
        char buf[16];
        /* "\ufffd" needs 6 bytes: with the quotes and the NUL, 11. */
        assert_int_equal(json_string_escape(buf, 10, "ab\xff"), 4);
        assert_string_equal(buf, "\"ab\"");
        assert_int_equal(json_string_escape(buf, 11, "ab\xff"), 10);
        assert_string_equal(buf, "\"ab\\ufffd\"");
        /* A four-byte character is kept whole or left out. */
        json_string_escape(buf, 6, "\xf0\x9f\x98\x80");
        assert_string_equal(buf, "\"\"");
        json_string_escape(buf, 7, "\xf0\x9f\x98\x80");
        assert_string_equal(buf, "\"\xf0\x9f\x98\x80\"");
        json_string_escape(buf, 4, "\"");
        assert_string_equal(buf, "\"\"");
        assert_int_equal(json_string_escape(buf, 2, "x"), 0);
        assert_string_equal(buf, "");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plain_and_escapes),
                cmocka_unit_test(test_valid_utf8_is_kept),
                cmocka_unit_test(test_invalid_bytes_become_fffd),
                cmocka_unit_test(test_every_byte_fits_the_bound),
                cmocka_unit_test(test_short_buffer_cuts_between_characters),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
