/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/parse.c, lib/env-name.c and lib/error.c: the number,
 * size, duration, boolean, mode and variable name checks that profiles,
 * options and requests go through. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "env-name.h"
#include "error.h"
#include "parse.h"

static void test_uint64(void **state) {
        uint64_t v;
        assert_int_equal(parse_uint64("0", UINT64_MAX, &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(parse_uint64("18446744073709551615", UINT64_MAX, &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(parse_uint64("18446744073709551616", UINT64_MAX, &v), -ERANGE);
        assert_int_equal(parse_uint64("99999999999999999999999", UINT64_MAX, &v), -ERANGE);
        assert_int_equal(parse_uint64("11", 10, &v), -ERANGE);
        assert_int_equal(parse_uint64("10", 10, &v), 0);
        assert_int_equal(v, 10);
        const char *bad[] = { "", " 1", "1 ", "+1", "-1", "1x", "0x10", "1.5", "١" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(parse_uint64(bad[i], UINT64_MAX, &v), -EINVAL);
        assert_int_equal(parse_uint64(NULL, UINT64_MAX, &v), -EINVAL);
}

static void test_size(void **state) {
        static const struct {
                const char *s;
                uint64_t v;
        } ok[] = {
                { "0", 0 }, { "512", 512 }, { "1B", 1 }, { "64K", 64 << 10 }, { "64k", 64 << 10 },
                { "64KiB", 64 << 10 }, { "64KB", 64 << 10 }, { "512M", 512ULL << 20 }, { "2G", 2ULL << 30 },
                { "2GiB", 2ULL << 30 }, { "1T", 1ULL << 40 }, { "16777215T", 16777215ULL << 40 },
                { "unlimited", UINT64_MAX },
        };
        uint64_t v;
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                assert_int_equal(parse_size(ok[i].s, &v), 0);
                assert_true(v == ok[i].v);
        }
        /* 2^24 T is 2^64: one past the largest value. */
        assert_int_equal(parse_size("16777216T", &v), -ERANGE);
        assert_int_equal(parse_size("18446744073709551616", &v), -ERANGE);
        assert_int_equal(parse_size("0000000000000000000000000000000001", &v), -ERANGE);
        const char *bad[] = { "", "M", "1 M", " 1M", "1M ", "1.5G", "-1", "1X", "1MM", "1Mi", "1mb",
                              "Unlimited", "infinity", "1e6" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(parse_size(bad[i], &v), -EINVAL);
}

static void test_duration(void **state) {
        static const struct {
                const char *s;
                uint64_t ms;
        } ok[] = {
                { "0", 0 }, { "30", 30000 }, { "1500ms", 1500 }, { "30s", 30000 }, { "5m", 300000 },
                { "5min", 300000 }, { "2h", 7200000 }, { "1d", 86400000 },
        };
        uint64_t v;
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                assert_int_equal(parse_duration_ms(ok[i].s, &v), 0);
                assert_true(v == ok[i].ms);
        }
        assert_int_equal(parse_duration_ms("18446744073709551615s", &v), -ERANGE);
        assert_int_equal(parse_duration_ms("213503982334601d", &v), -ERANGE);
        const char *bad[] = { "", "s", "1 s", "1.5s", "-1s", "1sec", "1M", "1S", "unlimited", "1ms1" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(parse_duration_ms(bad[i], &v), -EINVAL);
}

static void test_cpus(void **state) {
        static const struct {
                const char *s;
                uint64_t milli;
        } ok[] = { { "1", 1000 }, { "0.5", 500 }, { "2", 2000 }, { "1.25", 1250 }, { "0.001", 1 }, { "0.010", 10 } };
        uint64_t v;
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                assert_int_equal(parse_cpus_milli(ok[i].s, &v), 0);
                assert_true(v == ok[i].milli);
        }
        assert_int_equal(parse_cpus_milli("0", &v), -ERANGE);
        assert_int_equal(parse_cpus_milli("0.000", &v), -ERANGE);
        assert_int_equal(parse_cpus_milli("99999999999", &v), -ERANGE);
        const char *bad[] = { "", ".5", "1.", "1.0001", "-1", "+1", "1e3", "1,5", " 1", "1 ", "two", "1.2.3" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(parse_cpus_milli(bad[i], &v), -EINVAL);
}

static void test_bool(void **state) {
        const char *yes[] = { "yes", "true", "on", "1" }, *no[] = { "no", "false", "off", "0" };
        bool b;
        for (size_t i = 0; i < 4; i++) {
                b = false;
                assert_int_equal(parse_bool(yes[i], &b), 0);
                assert_true(b);
                assert_int_equal(parse_bool(no[i], &b), 0);
                assert_false(b);
        }
        const char *bad[] = { "", "Yes", "y", "2", "yes ", "truee" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(parse_bool(bad[i], &b), -EINVAL);
}

static void test_mode(void **state) {
        mode_t m;
        assert_int_equal(parse_mode("1777", &m), 0);
        assert_int_equal(m, 01777);
        assert_int_equal(parse_mode("0755", &m), 0);
        assert_int_equal(m, 0755);
        assert_int_equal(parse_mode("07777", &m), 0);
        assert_int_equal(m, 07777);
        assert_int_equal(parse_mode("0", &m), 0);
        assert_int_equal(m, 0);
        assert_int_equal(parse_mode("17777", &m), -ERANGE);
        const char *bad[] = { "", "8", "0758", "u+rwx", "755 ", "-755", "000755", "0x1ff" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(parse_mode(bad[i], &m), -EINVAL);
}

/* What the writer prints, the parser reads back to the same value. */
static void test_format_round_trip(void **state) {
        uint64_t sizes[] = { 0, 1, 1023, 1024, 1536, 64 << 20, 3ULL << 30, 5ULL << 40, 1ULL << 62, UINT64_MAX - 1 };
        uint64_t durations[] = { 0, 1, 999, 1000, 1500, 60000, 90000, 3600000, 86400000, UINT64_MAX - 1 };
        char buf[64];
        uint64_t v;
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                assert_int_equal(parse_size(format_size(sizes[i], buf, sizeof(buf)), &v), 0);
                assert_true(v == sizes[i]);
        }
        for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
                assert_int_equal(parse_duration_ms(format_duration_ms(durations[i], buf, sizeof(buf)), &v), 0);
                assert_true(v == durations[i]);
        }
        assert_string_equal(format_size(64 << 20, buf, sizeof(buf)), "64M");
        assert_string_equal(format_size(1536, buf, sizeof(buf)), "1536");
        assert_string_equal(format_size(UINT64_MAX, buf, sizeof(buf)), "unlimited");
        assert_string_equal(format_duration_ms(90000, buf, sizeof(buf)), "90s");
        assert_string_equal(format_duration_ms(1500, buf, sizeof(buf)), "1500ms");
        assert_string_equal(format_duration_ms(7200000, buf, sizeof(buf)), "2h");
}

static void test_error(void **state) {
        struct sbx_error e;
        sbx_error_clear(&e);
        assert_int_equal(sbx_error_set(&e, ENOENT, "open %s", "/x"), -ENOENT);
        assert_int_equal(e.code, ENOENT);
        assert_string_equal(e.msg, "open /x: No such file or directory");
        assert_int_equal(sbx_error_msg(&e, -EINVAL, "p.ini:3: bad"), -EINVAL);
        assert_string_equal(e.msg, "p.ini:3: bad");
        assert_int_equal(sbx_error_wrap(&e, "loading %s", "p"), -EINVAL);
        assert_string_equal(e.msg, "loading p: p.ini:3: bad");
        assert_int_equal(sbx_error_set(NULL, EPERM, "x"), -EPERM);

        /* A long message is cut, never overflowed, and stays terminated. */
        char big[3 * SBX_ERROR_MAX];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        sbx_error_msg(&e, EINVAL, "%s", big);
        assert_int_equal(strlen(e.msg), SBX_ERROR_MAX - 1);
        sbx_error_wrap(&e, "%s", big);
        assert_int_equal(strlen(e.msg), SBX_ERROR_MAX - 1);
        sbx_error_msg(&e, EINVAL, "short");
        sbx_error_wrap(&e, "%s", big);
        assert_int_equal(strlen(e.msg), SBX_ERROR_MAX - 1);
}

static void test_env_name(void **state) {
        static const char *const good[] = { "A", "_", "PATH", "a_b9", "_9" };
        static const char *const bad[] = { "", "9A", "A-B", "A=B", "A B", "\xc3\xa9", "A.B" };
        char longest[ENV_NAME_MAX + 2];

        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                assert_true(env_name_valid(good[i], strlen(good[i])));
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_false(env_name_valid(bad[i], strlen(bad[i])));
        /* Only the first len bytes count: "PATH" of "PATH=/bin". */
        assert_true(env_name_valid("PATH=/bin", 4));
        memset(longest, 'A', sizeof(longest));
        assert_true(env_name_valid(longest, ENV_NAME_MAX));
        assert_false(env_name_valid(longest, ENV_NAME_MAX + 1));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_uint64),
                cmocka_unit_test(test_size),
                cmocka_unit_test(test_duration),
                cmocka_unit_test(test_cpus),
                cmocka_unit_test(test_bool),
                cmocka_unit_test(test_mode),
                cmocka_unit_test(test_format_round_trip),
                cmocka_unit_test(test_error),
                cmocka_unit_test(test_env_name),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
