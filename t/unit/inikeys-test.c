/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/inikeys.c, the key-table engine under profiles,
 * manifests and the daemon's configuration: hostile files are refused,
 * each with FILE:LINE, the section and the key in the message. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "inikeys.h"

struct thing {
        char *name;
        bool flag;
        uint64_t size, wait_ms, count;
        int mode;
        unsigned items;
        unsigned sub_keys;
};

static int add_item(struct inikey_ctx *c) {
        struct thing *t = c->obj;
        if (c->n != 1)
                return inikey_fail(c, "expected one word, got %zu", c->n);
        t->items++;
        return 0;
}

static int sub_key(struct inikey_ctx *c) {
        ((struct thing *) c->obj)->sub_keys++;
        return 0;
}

static const char *const modes[] = { "fast", "slow", NULL };

#define IN(f) .off = offsetof(struct thing, f)
static const struct inikey keys[] = {
        { .section = "a", .key = "name", .kind = INIKEY_STRING, IN(name) },
        { .section = "a", .key = "flag", .kind = INIKEY_BOOL, IN(flag) },
        { .section = "a", .key = "size", .kind = INIKEY_SIZE, IN(size), .min = 1024, .max = 1 << 20 },
        { .section = "a", .key = "wait", .kind = INIKEY_DURATION, IN(wait_ms), .min = 100, .max = 60000 },
        { .section = "a", .key = "count", .kind = INIKEY_UINT, IN(count), .min = 1, .max = 10 },
        { .section = "a", .key = "mode", .kind = INIKEY_ENUM, IN(mode), .names = modes },
        { .section = "b", .key = "item", .repeat = INIKEY_APPEND, .fn = add_item },
        { .section = "sub.", .key = "x", .fn = sub_key },
};
static const struct inikey_table tables[] = { INIKEY_TABLE(keys) };

static const struct inikey_format strict = {
        .tables = tables, .n_tables = 1, .sections = "a b sub.NAME", .words = true, .sections_once = true,
};
static const struct inikey_format lenient = {
        .tables = tables, .n_tables = 1, .sections = "a b sub.NAME", .last_wins = true,
};

static struct thing th;
static struct sbx_error e;

static int parse_len(const struct inikey_format *fmt, const char *text, size_t len) {
        free(th.name);
        memset(&th, 0, sizeof(th));
        return inikeys_parse(fmt, "t.ini", text, len, &th, &e);
}

static int parse(const struct inikey_format *fmt, const char *text) {
        return parse_len(fmt, text, strlen(text));
}

/* Refused with exactly msg (which starts with "t.ini:LINE: "). */
static void refused(const struct inikey_format *fmt, const char *text, const char *msg) {
        assert_int_equal(parse(fmt, text), -EINVAL);
        assert_string_equal(e.msg, msg);
}

static void test_good(void **state) {
        (void) state;
        assert_int_equal(parse(&strict, "[a]\nname = x\nflag = yes\nsize = 64K\nwait = 1s\ncount = 10\nmode = slow\n"
                                        "[b]\nitem = 1\nitem = 2\n  3\n[sub.one]\nx = 1\n[sub.two]\nx = 2\n"),
                         0);
        assert_string_equal(th.name, "x");
        assert_true(th.flag);
        assert_int_equal(th.size, 65536);
        assert_int_equal(th.wait_ms, 1000);
        assert_int_equal(th.count, 10);
        assert_int_equal(th.mode, 1);
        assert_int_equal(th.items, 3);
        assert_int_equal(th.sub_keys, 2);
}

static void test_duplicate_key(void **state) {
        (void) state;
        refused(&strict, "[a]\nname = x\nname = y\n", "t.ini:3: a.name: set twice in this file (first on line 2)");
        refused(&strict, "[sub.one]\nx = 1\nx = 2\n", "t.ini:3: sub.one.x: set twice in this file (first on line 2)");
        /* Where the format says the later line wins, it does. */
        assert_int_equal(parse(&lenient, "[a]\nname = x\nname = y\n"), 0);
        assert_string_equal(th.name, "y");
}

static void test_unknown(void **state) {
        (void) state;
        refused(&strict, "[a]\nnope = 1\n",
                "t.ini:2: a.nope: unknown key (known in [a]: name flag size wait count mode)");
        refused(&strict, "[a]\nname = x\n\n[zz]\n", "t.ini:4: unknown section [zz] (known: a b sub.NAME)");
        /* a prefix alone names no section */
        refused(&strict, "[sub.]\n", "t.ini:1: unknown section [sub.] (known: a b sub.NAME)");
        refused(&strict, "name = x\n", "t.ini:1: key 'name' outside of any [section]");
        /* An indented known key is a mistake, not a continuation. */
        assert_int_equal(parse(&strict, "[b]\nitem = 1\n  item = 2\n"), -EINVAL);
        assert_non_null(strstr(e.msg, "t.ini:3: "));
}

static void test_section_repeated(void **state) {
        (void) state;
        refused(&strict, "[a]\nname = x\n[b]\n[a]\nflag = no\n", "t.ini:4: [a] again (first on line 1)");
        assert_int_equal(parse(&lenient, "[a]\nname = x\n[b]\n[a]\nflag = no\n"), 0);
}

static void test_continuation(void **state) {
        (void) state;
        refused(&strict, "[a]\nname = x\n  y\n",
                "t.ini:3: a.name: takes a single line (an indented line continues the previous key)");
}

static void test_lines(void **state) {
        (void) state;
        char big[400];
        snprintf(big, sizeof(big), "[a]\nname = %0300d\n", 0);
        assert_int_equal(parse(&strict, big), -EINVAL);
        assert_non_null(strstr(e.msg, "t.ini:2: line longer than"));

        static const char nul[] = "[a]\nname = x\n\nflag = y\0es\n";
        assert_int_equal(parse_len(&strict, nul, sizeof(nul) - 1), -EINVAL);
        assert_string_equal(e.msg, "t.ini:4: NUL byte in the file");

        /* CRLF line ends are read as line ends, never as part of a value. */
        assert_int_equal(parse(&strict, "[a]\r\nname = x\r\ncount = 2\r\n"), 0);
        assert_string_equal(th.name, "x");
        assert_int_equal(th.count, 2);
        refused(&strict, "[a]\r\nname = x\r\nname = y\r\n", "t.ini:3: a.name: set twice in this file (first on line 2)");
}

static void test_values(void **state) {
        (void) state;
        refused(&strict, "[a]\nsize = 10\n", "t.ini:2: a.size: expected a size from 1024 to 1048576 bytes (value '10')");
        refused(&strict, "[a]\nsize = 2M\n", "t.ini:2: a.size: expected a size from 1024 to 1048576 bytes (value '2M')");
        refused(&strict, "[a]\nwait = 50ms\n",
                "t.ini:2: a.wait: expected a duration from 100 to 60000 ms (value '50ms')");
        refused(&strict, "[a]\ncount = 0\n", "t.ini:2: a.count: expected a number from 1 to 10 (value '0')");
        refused(&strict, "[a]\ncount = 11\n", "t.ini:2: a.count: expected a number from 1 to 10 (value '11')");
        refused(&strict, "[a]\ncount = -1\n", "t.ini:2: a.count: expected a number from 1 to 10 (value '-1')");
        refused(&strict, "[a]\nflag = maybe\n", "t.ini:2: a.flag: expected yes or no (value 'maybe')");
        refused(&strict, "[a]\nmode = warp\n", "t.ini:2: a.mode: expected fast or slow (value 'warp')");
        refused(&strict, "[b]\nitem = \"open\n", "t.ini:2: b.item: unterminated double quote (value '\"open')");
        refused(&strict, "[b]\nitem = 1 2\n", "t.ini:2: b.item: expected one word, got 2 (value '1 2')");
        /* A control byte in a value is shown as '?', never written out. */
        refused(&strict, "[a]\ncount = 1\x1b[2J\n", "t.ini:2: a.count: expected a number from 1 to 10 (value '1?[2J')");
}

static void test_find(void **state) {
        (void) state;
        int why = 0;
        assert_non_null(inikeys_find(&strict, "sub.x", "x", &why));
        assert_null(inikeys_find(&strict, "a", "nope", &why));
        assert_int_equal(why, -ENOENT);
        assert_null(inikeys_find(&strict, "zz", "x", &why));
        assert_int_equal(why, -ESRCH);
        assert_int_equal(inikeys_unknown(&strict, "zz", "x", why, "cli", &e), -EINVAL);
        assert_string_equal(e.msg, "cli: unknown section [zz] (known: a b sub.NAME)");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_good),          cmocka_unit_test(test_duplicate_key),
                cmocka_unit_test(test_unknown),       cmocka_unit_test(test_section_repeated),
                cmocka_unit_test(test_continuation),  cmocka_unit_test(test_lines),
                cmocka_unit_test(test_values),        cmocka_unit_test(test_find),
        };
        int r = cmocka_run_group_tests(tests, NULL, NULL);
        free(th.name);
        return r;
}
