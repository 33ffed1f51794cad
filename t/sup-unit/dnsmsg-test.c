/* SPDX-License-Identifier: Apache-2.0 */
/* The DNS proxy's messages: a job's query read (name lower-cased, one
 * question, no response passing for a query), the REFUSED answer made from
 * it, and only an answer to that very query (id, name, type) giving
 * addresses — A and AAAA, IPv4 mapped, CNAMEs skipped; an answer as large
 * as TCP carries (past DNSMSG_MAX) is read too, a query that large is not. */
#include <ldns/ldns.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dnsmsg.h"

static size_t wire(ldns_pkt *p, uint8_t *out) {
        uint8_t *w = NULL;
        size_t n = 0;
        assert_int_equal(ldns_pkt2wire(&w, p, &n), LDNS_STATUS_OK);
        memcpy(out, w, n);
        free(w);
        ldns_pkt_free(p);
        return n;
}

static size_t query(const char *name, ldns_rr_type t, uint16_t id, uint8_t *out) {
        ldns_pkt *p = NULL;
        assert_int_equal(ldns_pkt_query_new_frm_str(&p, name, t, LDNS_RR_CLASS_IN, LDNS_RD), LDNS_STATUS_OK);
        ldns_pkt_set_id(p, id);
        return wire(p, out);
}

static void test_query(void **state) {
        uint8_t buf[512], out[512];
        struct dns_query q;
        size_t n = query("DB.Internal.", LDNS_RR_TYPE_A, 4242, buf), m;
        assert_int_equal(dnsmsg_parse_query(buf, n, &q), 0);
        assert_string_equal(q.name, "db.internal");
        assert_int_equal(q.id, 4242);
        assert_int_equal(q.qtype, LDNS_RR_TYPE_A);
        assert_int_equal(dnsmsg_parse_query(buf, 5, &q), -EINVAL);
        /* the refusal: same id, same question, rcode REFUSED */
        assert_int_equal(dnsmsg_error(buf, n, LDNS_RCODE_REFUSED, out, sizeof(out), &m), 0);
        ldns_pkt *r = NULL;
        assert_int_equal(ldns_wire2pkt(&r, out, m), LDNS_STATUS_OK);
        assert_true(ldns_pkt_qr(r));
        assert_int_equal(ldns_pkt_id(r), 4242);
        assert_int_equal(ldns_pkt_get_rcode(r), LDNS_RCODE_REFUSED);
        assert_int_equal(ldns_pkt_qdcount(r), 1);
        ldns_pkt_free(r);
        assert_int_equal(dnsmsg_error(buf, n, LDNS_RCODE_SERVFAIL, out, 8, &m), -ENOSPC);
        /* an answer is not a query */
        assert_int_equal(dnsmsg_parse_query(out, m, &q), -EINVAL);
        char t[16];
        assert_string_equal(dnsmsg_type_name(LDNS_RR_TYPE_AAAA, t, sizeof(t)), "AAAA");
}

static size_t answer(uint16_t id, const char *qname, ldns_rr_type qt, const char *const *rrs, uint8_t *out) {
        ldns_pkt *p = NULL;
        assert_int_equal(ldns_pkt_query_new_frm_str(&p, qname, qt, LDNS_RR_CLASS_IN, LDNS_RD), LDNS_STATUS_OK);
        ldns_pkt_set_id(p, id);
        ldns_pkt_set_qr(p, true);
        for (; *rrs; rrs++) {
                ldns_rr *rr = NULL;
                assert_int_equal(ldns_rr_new_frm_str(&rr, *rrs, 60, NULL, NULL), LDNS_STATUS_OK);
                ldns_pkt_push_rr(p, LDNS_SECTION_ANSWER, rr);
        }
        return wire(p, out);
}

static void test_answers(void **state) {
        uint8_t buf[1024], addrs[4][16];
        struct dns_query q = { .id = 7, .qtype = LDNS_RR_TYPE_A };
        strcpy(q.name, "api.example.com");
        static const char *const rrs[] = { "api.example.com. 60 IN CNAME edge.example.net.", "edge.example.net. 60 IN A 203.0.113.9",
                                           "edge.example.net. 60 IN AAAA 2001:db8::9", NULL };
        size_t n = answer(7, "api.example.com.", LDNS_RR_TYPE_A, rrs, buf), k;
        assert_int_equal(dnsmsg_answers(buf, n, &q, addrs, 4, &k), 0);
        assert_int_equal(k, 2);
        static const uint8_t v4[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 203, 0, 113, 9 };
        assert_memory_equal(addrs[0], v4, 16);
        assert_int_equal(addrs[1][0], 0x20);
        assert_int_equal(addrs[1][15], 9);
        /* at most max */
        assert_int_equal(dnsmsg_answers(buf, n, &q, addrs, 1, &k), 0);
        assert_int_equal(k, 1);
        /* another id, another name, another type: not this query's answer */
        n = answer(8, "api.example.com.", LDNS_RR_TYPE_A, rrs, buf);
        assert_int_equal(dnsmsg_answers(buf, n, &q, addrs, 4, &k), -EINVAL);
        n = answer(7, "evil.example.com.", LDNS_RR_TYPE_A, rrs, buf);
        assert_int_equal(dnsmsg_answers(buf, n, &q, addrs, 4, &k), -EINVAL);
        n = answer(7, "api.example.com.", LDNS_RR_TYPE_TXT, rrs, buf);
        assert_int_equal(dnsmsg_answers(buf, n, &q, addrs, 4, &k), -EINVAL);
        /* a query is no answer */
        n = query("api.example.com.", LDNS_RR_TYPE_A, 7, buf);
        assert_int_equal(dnsmsg_answers(buf, n, &q, addrs, 4, &k), -EINVAL);
        memset(buf, 0xff, 64);
        assert_int_equal(dnsmsg_answers(buf, 64, &q, addrs, 4, &k), -EINVAL);
}

/* 300 A records: past the 4096 bytes of UDP, as an answer over TCP may be. */
static void test_large_answer(void **state) {
        static uint8_t buf[DNSMSG_TCP_MAX + 1];
        static char text[300][64];
        static const char *rrs[301];
        uint8_t addrs[DNSMSG_ADDRS_MAX][16];
        struct dns_query q = { .id = 9, .qtype = LDNS_RR_TYPE_A };
        strcpy(q.name, "many.example.com");
        for (int i = 0; i < 300; i++) {
                snprintf(text[i], sizeof(text[i]), "many.example.com. 60 IN A 198.51.%d.%d", i / 200, i % 200 + 1);
                rrs[i] = text[i];
        }
        size_t n = answer(9, "many.example.com.", LDNS_RR_TYPE_A, rrs, buf), k;
        assert_true(n > DNSMSG_MAX);
        assert_int_equal(dnsmsg_answers(buf, n, &q, addrs, DNSMSG_ADDRS_MAX, &k), 0);
        assert_int_equal(k, DNSMSG_ADDRS_MAX);
        assert_int_equal(addrs[0][14], 0);
        assert_int_equal(addrs[0][15], 1);
        /* past what TCP's length can say */
        assert_int_equal(dnsmsg_answers(buf, DNSMSG_TCP_MAX + 1, &q, addrs, DNSMSG_ADDRS_MAX, &k), -EINVAL);
        /* a query is never that large */
        struct dns_query qq;
        assert_int_equal(dnsmsg_parse_query(buf, DNSMSG_MAX + 1, &qq), -EINVAL);
}

/* The daemon's own answer (a header secret's host): 127.0.0.1 for A, read
 * back by the same code that reads upstream answers; nothing for AAAA. */
static void test_loopback(void **state) {
        uint8_t buf[512], out[512], addrs[4][16];
        struct dns_query q;
        size_t n = query("API.example.com.", LDNS_RR_TYPE_A, 77, buf), m, k;
        assert_int_equal(dnsmsg_parse_query(buf, n, &q), 0);
        assert_int_equal(dnsmsg_loopback(buf, n, out, sizeof(out), &m), 0);
        assert_int_equal(dnsmsg_answers(out, m, &q, addrs, 4, &k), 0);
        assert_int_equal(k, 1);
        static const uint8_t lo[16] = { [10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1 };
        assert_memory_equal(addrs[0], lo, 16);
        ldns_pkt *r = NULL;
        assert_int_equal(ldns_wire2pkt(&r, out, m), LDNS_STATUS_OK);
        assert_int_equal(ldns_pkt_get_rcode(r), LDNS_RCODE_NOERROR);
        assert_int_equal(ldns_pkt_id(r), 77);
        ldns_pkt_free(r);
        n = query("api.example.com.", LDNS_RR_TYPE_AAAA, 78, buf);
        assert_int_equal(dnsmsg_parse_query(buf, n, &q), 0);
        assert_int_equal(dnsmsg_loopback(buf, n, out, sizeof(out), &m), 0);
        assert_int_equal(dnsmsg_answers(out, m, &q, addrs, 4, &k), 0);
        assert_int_equal(k, 0);
        assert_int_equal(dnsmsg_loopback(buf, n, out, 8, &m), -ENOSPC);
        assert_int_equal(dnsmsg_loopback(buf, 3, out, sizeof(out), &m), -EINVAL);
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_query),
                cmocka_unit_test(test_answers),
                cmocka_unit_test(test_large_answer),
                cmocka_unit_test(test_loopback),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
