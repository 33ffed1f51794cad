/* SPDX-License-Identifier: Apache-2.0 */
/* A job's secrets redacted from its output: the raw value and each
 * encoding of it, wherever the chunks of a stream cut it; the leftmost and
 * longest match; what is refused when adding a secret; the one-shot
 * buffer and the file copy equal to the stream. The encodings expected are
 * literals worked out apart from the code under test. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "redact.h"

#define S(lit) lit, sizeof(lit) - 1

/* "s3cr3t/p?ss>>~": all nine forms differ (14 bytes: the base64 forms
 * have a prefix of their own) */
static const char key[] = "s3cr3t/p?ss>>~";
static const char *const key_forms[REDACT_FORMS] = {
        "s3cr3t/p?ss>>~",
        "czNjcjN0L3A/c3M+Pn4",
        "czNjcjN0L3A_c3M-Pn4",
        "czNjcjN0L3A/c3M+Pn",
        "czNjcjN0L3A_c3M-Pn",
        "7333637233742f703f73733e3e7e",
        "7333637233742F703F73733E3E7E",
        "s3cr3t%2Fp%3Fss%3E%3E~",
        "s3cr3t%2fp%3fss%3e%3e~",
};

struct bytes {
        char *p;
        size_t len;
};

static void append(struct bytes *b, const void *p, size_t n) {
        b->p = realloc(b->p, b->len + n + 1);
        assert_non_null(b->p);
        if (n)
                memcpy(b->p + b->len, p, n);
        b->len += n;
        b->p[b->len] = '\0';
}

static struct redactor *with(const char *name, const void *value, size_t len) {
        struct redactor *r = redactor_new();
        assert_non_null(r);
        assert_int_equal(redactor_add(r, name, value, len), 0);
        return r;
}

/* in through redact_buffer, compared with want */
static void check_buffer(struct redactor *r, const void *in, size_t n, const void *want, size_t want_len) {
        char *out;
        size_t len;
        assert_int_equal(redact_buffer(r, in, n, &out, &len), 0);
        assert_int_equal(len, want_len);
        assert_memory_equal(out, want, len);
        assert_int_equal(out[len], '\0');
        free(out);
}

static void check_str(struct redactor *r, const char *in, const char *want) {
        check_buffer(r, in, strlen(in), want, strlen(want));
}

/* in through a stream, fed in the pieces the cuts (ascending offsets)
 * make, never holding back more than the longest pattern less one byte */
static struct bytes stream_cut(struct redactor *r, const void *in, size_t n, const size_t *cuts, size_t n_cuts) {
        struct redact_stream s;
        struct bytes b = { 0 };
        const char *o;
        size_t len, at = 0;
        redact_stream_init(&s, r);
        for (size_t i = 0; i <= n_cuts; i++) {
                size_t end = i < n_cuts ? cuts[i] : n;
                bool final = i == n_cuts;
                assert_int_equal(redact_stream_feed(&s, (const char *) in + at, end - at, final, &o, &len), 0);
                append(&b, o, len);
                assert_true(s.held_len < redactor_max_pattern(r) || s.held_len == 0);
                if (final)
                        assert_int_equal(s.held_len, 0);
                at = end;
        }
        redact_stream_release(&s);
        return b;
}

static void test_raw(void **state) {
        struct redactor *r = with("PASS", S("hunter2-secret"));
        check_str(r, "login ok, password hunter2-secret, bye\n", "login ok, password [secret PASS], bye\n");
        check_str(r, "hunter2-secret", "[secret PASS]");
        assert_int_equal(redactor_count(r), 1);
        assert_string_equal(redactor_name(r, 0), "PASS");
        assert_int_equal(redactor_hits(r, 0), 2);
        assert_null(redactor_name(r, 1));
        assert_int_equal(redactor_hits(r, 1), 0);
        redactor_free(r);
}

static void test_forms(void **state) {
        struct redactor *r = with("API_KEY", S(key));
        char in[128], want[128];
        for (size_t i = 0; i < REDACT_FORMS; i++) {
                snprintf(in, sizeof(in), "k=%s;", key_forms[i]);
                snprintf(want, sizeof(want), "k=[secret API_KEY];");
                check_str(r, in, want);
        }
        assert_int_equal(redactor_hits(r, 0), REDACT_FORMS);
        /* the longest is the hex: the bound of what is held */
        assert_int_equal(redactor_max_pattern(r), strlen(key_forms[5]));
        redactor_free(r);

        /* hunter2-secret: base64 equals base64url and the percent forms
         * equal the raw value; each is found once, named once */
        r = with("PASS", S("hunter2-secret"));
        check_str(r, "aHVudGVyMi1zZWNyZXQ 68756e746572322d736563726574 68756E746572322D736563726574",
                  "[secret PASS] [secret PASS] [secret PASS]");
        /* as echo | base64 makes it: the newline changes the last character */
        check_str(r, "aHVudGVyMi1zZWNyZXQK", "[secret PASS]K");
        assert_int_equal(redactor_hits(r, 0), 4);
        assert_int_equal(redactor_pattern_count(r), 5);
        redactor_free(r);

        /* high bytes: base64 of 0xfb 0xff 0xbf is "+/+/" or "-_-_" */
        static const char hi[] = "\xfb\xff\xbfk3y/?=&x";
        static const char *const hi_forms[] = {
                "+/+/azN5Lz89Jng", "-_-_azN5Lz89Jng", "+/+/azN5Lz89Jn", "-_-_azN5Lz89Jn", "fbffbf6b33792f3f3d2678", "FBFFBF6B33792F3F3D2678",
                "%FB%FF%BFk3y%2F%3F%3D%26x", "%fb%ff%bfk3y%2f%3f%3d%26x",
        };
        r = with("HI", S(hi));
        check_buffer(r, S("<\xfb\xff\xbfk3y/?=&x>"), S("<[secret HI]>"));
        for (size_t i = 0; i < sizeof(hi_forms) / sizeof(hi_forms[0]); i++) {
                snprintf(in, sizeof(in), "<%s>", hi_forms[i]);
                check_str(r, in, "<[secret HI]>");
        }
        assert_int_equal(redactor_hits(r, 0), 9);
        redactor_free(r);
}

/* A form equal to one present is not added again: the same value under a
 * second name adds no pattern, and its occurrences keep the first name. */
static void test_forms_once(void **state) {
        struct redactor *r = with("API_KEY", S(key));
        assert_int_equal(redactor_pattern_count(r), REDACT_FORMS);
        /* digits: raw = %XX = %xx, base64 = base64url, hex = HEX */
        assert_int_equal(redactor_add(r, "PIN", S("12345678")), 0);
        assert_int_equal(redactor_pattern_count(r), REDACT_FORMS + 4);
        check_str(r, "12345678 MTIzNDU2Nzg 3132333435363738", "[secret PIN] [secret PIN] [secret PIN]");
        assert_int_equal(redactor_add(r, "PIN_AGAIN", S("12345678")), 0);
        assert_int_equal(redactor_count(r), 3);
        assert_int_equal(redactor_pattern_count(r), REDACT_FORMS + 4);
        check_str(r, "12345678", "[secret PIN]");
        assert_int_equal(redactor_hits(r, 1), 4);
        assert_int_equal(redactor_hits(r, 2), 0);
        /* the value of one is a form of another: it stays named for the first;
         * new are only its base64 (and its prefix: 16 bytes) and its hex
         * (digits: one case) */
        assert_int_equal(redactor_add(r, "HEXED", S("3132333435363738")), 0);
        assert_int_equal(redactor_pattern_count(r), REDACT_FORMS + 4 + 3);
        check_str(r, "3132333435363738", "[secret PIN]");
        redactor_free(r);
}

static void test_split_everywhere(void **state) {
        struct redactor *r = with("API_KEY", S(key));
        uint64_t runs = 0;
        for (size_t f = 0; f < REDACT_FORMS; f++) {
                char in[128];
                int n = snprintf(in, sizeof(in), "head %s tail", key_forms[f]);
                for (size_t cut = 0; cut <= (size_t) n; cut++, runs++) {
                        struct bytes b = stream_cut(r, in, (size_t) n, &cut, 1);
                        assert_string_equal(b.p, "head [secret API_KEY] tail");
                        free(b.p);
                }
        }
        /* one replacement a run: a cut never makes it twice, nor none */
        assert_int_equal(redactor_hits(r, 0), runs);
        redactor_free(r);
}

static void test_three_feeds(void **state) {
        struct redactor *r = with("PASS", S("hunter2-secret"));
        static const char in[] = "a hunter2-secret b hunter2-secret";
        size_t n = strlen(in);
        for (size_t i = 0; i <= n; i++)
                for (size_t j = i; j <= n; j++) {
                        size_t cuts[2] = { i, j };
                        struct bytes b = stream_cut(r, in, n, cuts, 2);
                        assert_string_equal(b.p, "a [secret PASS] b [secret PASS]");
                        free(b.p);
                }
        redactor_free(r);
}

static void test_held_and_flushed(void **state) {
        struct redactor *r = with("PASS", S("hunter2-secret"));
        struct redact_stream s;
        const char *o;
        size_t len;
        redact_stream_init(&s, r);
        /* nothing that could start the secret: all of it goes out now */
        assert_int_equal(redact_stream_feed(&s, S("progress 42%\r"), false, &o, &len), 0);
        assert_int_equal(len, strlen("progress 42%\r"));
        assert_memory_equal(o, "progress 42%\r", len);
        /* the secret's head is held back, and what stands before it is not */
        assert_int_equal(redact_stream_feed(&s, S("x hunter2-sec"), false, &o, &len), 0);
        assert_int_equal(len, 2);
        assert_memory_equal(o, "x ", 2);
        assert_int_equal(s.held_len, strlen("hunter2-sec"));
        /* the end: it was not the secret after all */
        assert_int_equal(redact_stream_feed(&s, NULL, 0, true, &o, &len), 0);
        assert_int_equal(len, strlen("hunter2-sec"));
        assert_memory_equal(o, "hunter2-sec", len);
        assert_int_equal(redactor_hits(r, 0), 0);
        redact_stream_release(&s);

        /* a held head that a later feed completes or disproves */
        redact_stream_init(&s, r);
        assert_int_equal(redact_stream_feed(&s, S("hunter2"), false, &o, &len), 0);
        assert_int_equal(len, 0);
        assert_int_equal(redact_stream_feed(&s, S("-secretX hunter2!"), false, &o, &len), 0);
        assert_int_equal(len, strlen("[secret PASS]X hunter2!"));
        assert_memory_equal(o, "[secret PASS]X hunter2!", len);
        assert_int_equal(s.held_len, 0);
        assert_int_equal(redact_stream_feed(&s, NULL, 0, true, &o, &len), 0);
        assert_int_equal(len, 0);
        redact_stream_release(&s);
        redactor_free(r);
}

static void test_overlap_adjacent(void **state) {
        struct redactor *r = with("A", S("abcdefgh"));
        /* adjacent: both */
        check_str(r, "abcdefghabcdefgh", "[secret A][secret A]");
        /* overlapping itself: the leftmost, then the scan goes on past it */
        check_str(r, "abcdefgabcdefghbcdefgh", "abcdefg[secret A]bcdefgh");
        redactor_free(r);

        r = with("A", S("abcabcab"));
        check_str(r, "abcabcabcab", "[secret A]cab");
        redactor_free(r);

        r = with("A", S("aaaaaaaa"));
        check_str(r, "aaaaaaaaaa", "[secret A]aa");
        check_str(r, "aaaaaaaaaaaaaaaa", "[secret A][secret A]");
        assert_int_equal(redactor_hits(r, 0), 3);
        redactor_free(r);

        /* two secrets overlapping: the leftmost wins and the other's tail
         * stays */
        r = with("A", S("abcdefgh12"));
        assert_int_equal(redactor_add(r, "B", S("gh12345678")), 0);
        check_str(r, "abcdefgh12345678", "[secret A]345678");
        check_str(r, "Xgh12345678abcdefgh12", "X[secret B][secret A]");
        assert_int_equal(redactor_hits(r, 0), 2);
        assert_int_equal(redactor_hits(r, 1), 1);
        redactor_free(r);
}

static void test_longest_wins(void **state) {
        struct redactor *r = with("SHORT", S("prefix-secret"));
        assert_int_equal(redactor_add(r, "LONG", S("prefix-secret-longer")), 0);
        check_str(r, "prefix-secret-longer", "[secret LONG]");
        check_str(r, "prefix-secret-long", "[secret SHORT]-long");
        check_str(r, "prefix-secret", "[secret SHORT]");
        /* the same, whatever the order they were added in */
        struct redactor *q = with("LONG", S("prefix-secret-longer"));
        assert_int_equal(redactor_add(q, "SHORT", S("prefix-secret")), 0);
        check_str(q, "1prefix-secret-longer2prefix-secret3", "1[secret LONG]2[secret SHORT]3");
        redactor_free(q);

        /* a stream cut anywhere waits for the longer one before it picks */
        static const char in[] = "<prefix-secret-longer><prefix-secret-long>";
        for (size_t cut = 0; cut <= strlen(in); cut++) {
                struct bytes b = stream_cut(r, in, strlen(in), &cut, 1);
                assert_string_equal(b.p, "<[secret LONG]><[secret SHORT]-long>");
                free(b.p);
        }
        redactor_free(r);
}

static void test_near_miss(void **state) {
        struct redactor *r = with("PASS", S("hunter2-secret"));
        static const char *const miss[] = {
                "hunter2-secreT", "hunter2-secre", "unter2-secret", "Hunter2-secret", "hunter2_secret",
                "aHVudGVyMi1zZWNyZ", "68756e746572322d73656372657", "68756e746572322D736563726574",
        };
        for (size_t i = 0; i < sizeof(miss) / sizeof(miss[0]); i++)
                check_str(r, miss[i], miss[i]);
        assert_int_equal(redactor_hits(r, 0), 0);
        redactor_free(r);
}

static void test_counts(void **state) {
        struct redactor *r = with("ONE", S("first-secret-1"));
        assert_int_equal(redactor_add(r, "TWO", S("second-secret-2")), 0);
        assert_int_equal(redactor_add(r, "THREE", S("third-secret-3")), 0);
        check_str(r, "first-secret-1 second-secret-2 first-secret-1", "[secret ONE] [secret TWO] [secret ONE]");
        /* the stream counts into the same secrets */
        size_t cut = 5;
        struct bytes b = stream_cut(r, S("second-secret-2 first-secret-1"), &cut, 1);
        assert_string_equal(b.p, "[secret TWO] [secret ONE]");
        free(b.p);
        assert_int_equal(redactor_count(r), 3);
        assert_string_equal(redactor_name(r, 2), "THREE");
        assert_int_equal(redactor_hits(r, 0), 3);
        assert_int_equal(redactor_hits(r, 1), 2);
        assert_int_equal(redactor_hits(r, 2), 0);
        redactor_free(r);
}

static void test_length_limits(void **state) {
        struct redactor *r = redactor_new();
        assert_int_equal(redactor_add(r, "SHORT", S("1234567")), -EINVAL);
        assert_int_equal(redactor_add(r, "EMPTY", "", 0), -EINVAL);
        assert_int_equal(redactor_add(r, "NULLV", NULL, 8), -EINVAL);
        assert_int_equal(redactor_count(r), 0);
        assert_int_equal(redactor_add(r, "EIGHT", S("12345678")), 0);
        char *big = malloc(REDACT_MAX_LEN + 1);
        memset(big, 'z', REDACT_MAX_LEN + 1);
        assert_int_equal(redactor_add(r, "BIG", big, REDACT_MAX_LEN + 1), -EINVAL);
        assert_int_equal(redactor_add(r, "BIG", big, REDACT_MAX_LEN), 0);
        assert_int_equal(redactor_count(r), 2);
        /* refused ones left nothing behind: a 7-byte string is no secret */
        check_str(r, "1234567 12345678", "1234567 [secret EIGHT]");
        /* the biggest value, cut in the middle of its hex */
        big[0] = 'y';
        big[REDACT_MAX_LEN - 1] = 'y';
        assert_int_equal(redactor_add(r, "BIG2", big, REDACT_MAX_LEN), 0);
        /* all unreserved: the percent forms are the raw value, hex is longest */
        assert_int_equal(redactor_max_pattern(r), 2 * REDACT_MAX_LEN);
        char *hex = malloc(2 * REDACT_MAX_LEN + 2);
        for (size_t i = 0; i < REDACT_MAX_LEN; i++)
                memcpy(hex + 2 * i, big[i] == 'y' ? "79" : "7a", 2);
        hex[2 * REDACT_MAX_LEN] = '\n';
        size_t cut = REDACT_MAX_LEN + 3;
        struct bytes b = stream_cut(r, hex, 2 * REDACT_MAX_LEN + 1, &cut, 1);
        assert_string_equal(b.p, "[secret BIG2]\n");
        free(b.p);
        free(hex);
        free(big);
        redactor_free(r);
}

static void test_too_many(void **state) {
        struct redactor *r = redactor_new();
        char name[16], value[32];
        for (int i = 0; i < REDACT_MAX_SECRETS; i++) {
                snprintf(name, sizeof(name), "S%d", i);
                snprintf(value, sizeof(value), "value-number-%02d", i);
                assert_int_equal(redactor_add(r, name, value, strlen(value)), 0);
        }
        assert_int_equal(redactor_add(r, "S32", S("value-number-32")), -E2BIG);
        assert_int_equal(redactor_count(r), REDACT_MAX_SECRETS);
        check_str(r, "value-number-31 value-number-32 value-number-00",
                  "[secret S31] value-number-32 [secret S0]");
        redactor_free(r);
}

static void test_bad_names(void **state) {
        struct redactor *r = redactor_new();
        char long_name[REDACT_NAME_MAX + 2];
        memset(long_name, 'N', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = '\0';
        static const char *const bad[] = { "", "has-dash", "has space", "dot.ted", "new\nline", "caf\xc3\xa9", "[x]" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(redactor_add(r, bad[i], S("good-value")), -EINVAL);
        assert_int_equal(redactor_add(r, NULL, S("good-value")), -EINVAL);
        assert_int_equal(redactor_add(r, long_name, S("good-value")), -EINVAL);
        long_name[REDACT_NAME_MAX] = '\0';
        assert_int_equal(redactor_add(r, long_name, S("good-value")), 0);
        assert_int_equal(redactor_add(r, "lower_UPPER_09", S("other-value")), 0);
        /* one name, one secret */
        assert_int_equal(redactor_add(r, "lower_UPPER_09", S("third-value")), -EINVAL);
        assert_int_equal(redactor_count(r), 2);
        assert_string_equal(redactor_name(r, 0), long_name);
        redactor_free(r);
}

/* A file copy with secrets on both sides of the 64 KiB chunks' edges. */
static void test_buffer_fd_stream_agree(void **state) {
        struct redactor *r = with("PASS", S("hunter2-secret"));
        assert_int_equal(redactor_add(r, "API_KEY", S(key)), 0);
        size_t n = 3 * 65536 + 1000;
        char *in = malloc(n);
        for (size_t i = 0; i < n; i++)
                in[i] = (char) ('a' + i % 23);
        /* hunter2-secret at the odd ones, API_KEY's forms 0, 2, 4 and 8
         * (raw, base64url, its prefix, %xx) at the even ones; the last
         * ends the file */
        static const size_t at[] = { 0, 100, 65536 - 5, 65536 * 2 - 13, 65536 * 2 + 1, 65536 * 3 - 1, 3 * 65536 + 1000 - 22 };
        for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
                const char *v = i % 2 ? "hunter2-secret" : key_forms[i == 6 ? 8 : i];
                memcpy(in + at[i], v, strlen(v));
        }

        char *want;
        size_t want_len;
        assert_int_equal(redact_buffer(r, in, n, &want, &want_len), 0);
        assert_int_equal(redactor_hits(r, 0) + redactor_hits(r, 1), 7);

        size_t cuts[] = { 1, 4096, 65536 - 1, 65536 + 7, 65536 * 2 - 6 };
        struct bytes b = stream_cut(r, in, n, cuts, sizeof(cuts) / sizeof(cuts[0]));
        assert_int_equal(b.len, want_len);
        assert_memory_equal(b.p, want, want_len);
        free(b.p);

        int fin = memfd_create("redact-in", MFD_CLOEXEC), fout = memfd_create("redact-out", MFD_CLOEXEC);
        assert_true(fin >= 0 && fout >= 0);
        assert_int_equal(write(fin, "skip", 4), 4);
        assert_int_equal(write(fin, in, n), (ssize_t) n);
        /* from the current offset */
        assert_int_equal(lseek(fin, 4, SEEK_SET), 4);
        assert_int_equal(redact_fd(r, fin, fout), (int64_t) want_len);
        char *got = malloc(want_len + 1);
        assert_int_equal(pread(fout, got, want_len + 1, 0), (ssize_t) want_len);
        assert_memory_equal(got, want, want_len);
        assert_int_equal(redactor_hits(r, 0) + redactor_hits(r, 1), 21);

        /* an fd it cannot read */
        assert_int_equal(redact_fd(r, -1, fout), -EBADF);
        free(got);
        free(want);
        free(in);
        close(fin);
        close(fout);
        redactor_free(r);
}

static void test_empty(void **state) {
        struct redactor *r = with("PASS", S("hunter2-secret"));
        check_buffer(r, "", 0, "", 0);
        check_buffer(r, NULL, 0, "", 0);
        struct redact_stream s;
        const char *o;
        size_t len;
        redact_stream_init(&s, r);
        assert_int_equal(redact_stream_feed(&s, NULL, 0, false, &o, &len), 0);
        assert_int_equal(len, 0);
        assert_int_equal(redact_stream_feed(&s, NULL, 0, true, &o, &len), 0);
        assert_int_equal(len, 0);
        redact_stream_release(&s);
        int fin = memfd_create("redact-in", MFD_CLOEXEC), fout = memfd_create("redact-out", MFD_CLOEXEC);
        assert_true(fin >= 0 && fout >= 0);
        assert_int_equal(redact_fd(r, fin, fout), 0);
        close(fin);
        close(fout);
        redactor_free(r);

        /* no secrets: a plain copy, nothing held */
        r = redactor_new();
        check_str(r, "nothing to hide", "nothing to hide");
        size_t cut = 3;
        struct bytes b = stream_cut(r, S("nothing to hide"), &cut, 1);
        assert_string_equal(b.p, "nothing to hide");
        free(b.p);
        redactor_free(r);
}

static void test_binary(void **state) {
        static const char v[] = "\x00\x01sec\x00ret\xff";
        struct redactor *r = with("BIN", S(v));
        /* around and inside NULs of the input too */
        static const char in[] = "\x00\x00\x01sec\x00ret\xff\x00\x01sec\x00reT\xff\x00";
        static const char want[] = "\x00[secret BIN]\x00\x01sec\x00reT\xff\x00";
        check_buffer(r, S(in), S(want));
        for (size_t cut = 0; cut <= sizeof(in) - 1; cut++) {
                struct bytes b = stream_cut(r, S(in), &cut, 1);
                assert_int_equal(b.len, sizeof(want) - 1);
                assert_memory_equal(b.p, want, b.len);
                free(b.p);
        }
        check_str(r, "b64 AAFzZWMAcmV0/w url AAFzZWMAcmV0_w hex 000173656300726574ff HEX 000173656300726574FF",
                  "b64 [secret BIN] url [secret BIN] hex [secret BIN] HEX [secret BIN]");
        check_str(r, "%00%01sec%00ret%FF %00%01sec%00ret%ff", "[secret BIN] [secret BIN]");
        redactor_free(r);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_raw),
                cmocka_unit_test(test_forms),
                cmocka_unit_test(test_forms_once),
                cmocka_unit_test(test_split_everywhere),
                cmocka_unit_test(test_three_feeds),
                cmocka_unit_test(test_held_and_flushed),
                cmocka_unit_test(test_overlap_adjacent),
                cmocka_unit_test(test_longest_wins),
                cmocka_unit_test(test_near_miss),
                cmocka_unit_test(test_counts),
                cmocka_unit_test(test_length_limits),
                cmocka_unit_test(test_too_many),
                cmocka_unit_test(test_bad_names),
                cmocka_unit_test(test_buffer_fd_stream_agree),
                cmocka_unit_test(test_empty),
                cmocka_unit_test(test_binary),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
