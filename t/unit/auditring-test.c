/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for supervisor/net/auditring.c, the front's reader of the
 * network audit's ring buffer: records put in memory laid out as the
 * kernel lays out a BPF ring buffer (a length word with its busy and
 * discard bits, then the record, 8-byte aligned; the data mapped twice in
 * a row) come out in order, whole across the wrap, and the consumer
 * position moves past each; a record still being written stops the walk,
 * a discarded one is skipped, and a length no ring holds is refused. */
#include <errno.h>
#include <linux/bpf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "auditring.h"

#define SIZE 256

struct fake {
        unsigned long cons, prod;
        uint8_t data[2 * SIZE];  /* the kernel's double mapping, by hand */
        struct auditring r;
};

struct seen {
        int n;
        char recs[8][64];
        size_t lens[8];
};

static void put(struct fake *f, unsigned long pos, const void *src, size_t len) {
        for (size_t i = 0; i < len; i++) {
                size_t at = (pos + i) & (SIZE - 1);
                f->data[at] = f->data[at + SIZE] = ((const uint8_t *) src)[i];
        }
}

/* A record of len bytes at the producer position, with these bits. */
static void produce(struct fake *f, const char *text, uint32_t bits) {
        uint32_t len = (uint32_t) strlen(text) + 1;
        uint32_t hdr[2] = { len | bits, 0 };
        put(f, f->prod, hdr, sizeof(hdr));
        put(f, f->prod + BPF_RINGBUF_HDR_SZ, text, len);
        f->prod += (len + BPF_RINGBUF_HDR_SZ + 7) & ~7ul;
}

static void on_rec(void *arg, const void *rec, size_t len) {
        struct seen *s = arg;
        assert_true(s->n < 8);
        assert_true(len <= sizeof(s->recs[0]));
        memcpy(s->recs[s->n], rec, len);
        s->lens[s->n++] = len;
}

static void fake_init(struct fake *f) {
        memset(f, 0, sizeof(*f));
        auditring_init(&f->r, &f->cons, &f->prod, f->data, SIZE);
}

static void test_empty(void **state) {
        struct fake f;
        struct seen s = { 0 };
        fake_init(&f);
        assert_int_equal(auditring_consume(&f.r, on_rec, &s), 0);
        assert_int_equal(f.cons, 0);
}

static void test_in_order(void **state) {
        struct fake f;
        struct seen s = { 0 };
        fake_init(&f);
        produce(&f, "first", 0);
        produce(&f, "second record", 0);
        assert_int_equal(auditring_consume(&f.r, on_rec, &s), 2);
        assert_string_equal(s.recs[0], "first");
        assert_int_equal(s.lens[0], 6);
        assert_string_equal(s.recs[1], "second record");
        assert_int_equal(f.cons, f.prod);
        /* nothing twice */
        assert_int_equal(auditring_consume(&f.r, on_rec, &s), 0);
        assert_int_equal(s.n, 2);
}

static void test_busy_stops(void **state) {
        struct fake f;
        struct seen s = { 0 };
        fake_init(&f);
        produce(&f, "done", 0);
        unsigned long busy_at = f.prod;
        produce(&f, "being written", BPF_RINGBUF_BUSY_BIT);
        produce(&f, "after it", 0);
        assert_int_equal(auditring_consume(&f.r, on_rec, &s), 1);
        assert_int_equal(f.cons, busy_at);
        /* committed: the rest come out */
        uint32_t len = (uint32_t) strlen("being written") + 1;
        put(&f, busy_at, &len, sizeof(len));
        assert_int_equal(auditring_consume(&f.r, on_rec, &s), 2);
        assert_string_equal(s.recs[1], "being written");
        assert_string_equal(s.recs[2], "after it");
}

static void test_discard_skipped(void **state) {
        struct fake f;
        struct seen s = { 0 };
        fake_init(&f);
        produce(&f, "dropped by the program", BPF_RINGBUF_DISCARD_BIT);
        produce(&f, "kept", 0);
        assert_int_equal(auditring_consume(&f.r, on_rec, &s), 1);
        assert_string_equal(s.recs[0], "kept");
        assert_int_equal(f.cons, f.prod);
}

static void test_wraps(void **state) {
        struct fake f;
        struct seen s = { 0 };
        char big[41];
        fake_init(&f);
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        /* four records of 56 bytes (8 + 41, aligned), read, then one across the end */
        for (int round = 0; round < 4; round++) {
                produce(&f, big, 0);
                assert_int_equal(auditring_consume(&f.r, on_rec, &s), 1);
                s.n = 0;
        }
        assert_true((f.prod & (SIZE - 1)) + 8 + 45 > SIZE);
        produce(&f, "a record that runs past the end of the ring", 0);
        assert_int_equal(auditring_consume(&f.r, on_rec, &s), 1);
        assert_string_equal(s.recs[0], "a record that runs past the end of the ring");
        assert_int_equal(f.cons, f.prod);
}

static void test_bad_length(void **state) {
        struct fake f;
        struct seen s = { 0 };
        fake_init(&f);
        uint32_t hdr[2] = { SIZE, 0 };
        put(&f, 0, hdr, sizeof(hdr));
        f.prod = SIZE + 8;
        assert_int_equal(auditring_consume(&f.r, on_rec, &s), -EBADMSG);
        assert_int_equal(s.n, 0);
        assert_int_equal(f.cons, 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_empty),         cmocka_unit_test(test_in_order),
                cmocka_unit_test(test_busy_stops),    cmocka_unit_test(test_discard_skipped),
                cmocka_unit_test(test_wraps),         cmocka_unit_test(test_bad_length),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
