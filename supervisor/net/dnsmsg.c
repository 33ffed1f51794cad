/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "dnsmsg.h"

static void pkt_freep(ldns_pkt **p) {
        if (*p)
                ldns_pkt_free(*p);
}
#define _cleanup_pkt_ __attribute__((cleanup(pkt_freep)))

/* The question of a query or of an answer: exactly one. */
static ldns_rr *question(ldns_pkt *p) {
        if (ldns_pkt_qdcount(p) != 1 || ldns_rr_list_rr_count(ldns_pkt_question(p)) != 1)
                return NULL;
        return ldns_rr_list_rr(ldns_pkt_question(p), 0);
}

static int name_of(ldns_rr *q, char *out, size_t len) {
        char *s = ldns_rdf2str(ldns_rr_owner(q));
        if (!s)
                return -ENOMEM;
        size_t n = strlen(s);
        if (n > 1 && s[n - 1] == '.')
                s[--n] = '\0';
        /* ldns spells bytes outside letters, digits and '-' as \DDD, so a
         * name may come out longer than the 253 of the wire */
        if (n == 0 || n > DNSMSG_NAME_MAX || n >= len) {
                free(s);
                return -EINVAL;
        }
        for (size_t i = 0; i <= n; i++)
                out[i] = (char) tolower((unsigned char) s[i]);
        free(s);
        return 0;
}

int dnsmsg_parse_query(const uint8_t *buf, size_t len, struct dns_query *ret) {
        _cleanup_pkt_ ldns_pkt *p = NULL;
        if (len > DNSMSG_MAX || ldns_wire2pkt(&p, buf, len) != LDNS_STATUS_OK)
                return -EINVAL;
        ldns_rr *q = question(p);
        if (ldns_pkt_qr(p) || ldns_pkt_get_opcode(p) != LDNS_PACKET_QUERY || !q)
                return -EINVAL;
        memset(ret, 0, sizeof(*ret));
        ret->id = ldns_pkt_id(p);
        ret->qtype = (uint16_t) ldns_rr_get_type(q);
        return name_of(q, ret->name, sizeof(ret->name));
}

/* An answer of ours to the query in buf: rcode, and 127.0.0.1 in its
 * answer section when loopback and it asks for an A record. */
static int answer(const uint8_t *buf, size_t len, int rcode, bool loopback, uint8_t *out, size_t cap, size_t *ret_len) {
        _cleanup_pkt_ ldns_pkt *p = NULL, *r = NULL;
        uint8_t *wire = NULL;
        size_t n = 0;
        if (len > DNSMSG_MAX || ldns_wire2pkt(&p, buf, len) != LDNS_STATUS_OK || !question(p))
                return -EINVAL;
        if (!(r = ldns_pkt_new()))
                return -ENOMEM;
        ldns_pkt_set_id(r, ldns_pkt_id(p));
        ldns_pkt_set_qr(r, true);
        ldns_pkt_set_opcode(r, LDNS_PACKET_QUERY);
        ldns_pkt_set_rd(r, ldns_pkt_rd(p));
        ldns_pkt_set_ra(r, true);
        ldns_pkt_set_rcode(r, (uint8_t) rcode);
        ldns_rr *q = ldns_rr_clone(question(p));
        if (!q || !ldns_pkt_push_rr(r, LDNS_SECTION_QUESTION, q))
                return -ENOMEM;
        if (loopback && ldns_rr_get_type(q) == LDNS_RR_TYPE_A && ldns_rr_get_class(q) == LDNS_RR_CLASS_IN) {
                static const uint8_t lo[4] = { 127, 0, 0, 1 };
                ldns_rr *a = ldns_rr_new_frm_type(LDNS_RR_TYPE_A);
                ldns_rdf *owner = a ? ldns_rdf_clone(ldns_rr_owner(q)) : NULL;
                ldns_rdf *addr = a ? ldns_rdf_new_frm_data(LDNS_RDF_TYPE_A, sizeof(lo), lo) : NULL;
                if (!owner || !addr) {
                        ldns_rdf_deep_free(owner);
                        ldns_rdf_deep_free(addr);
                        ldns_rr_free(a);
                        return -ENOMEM;
                }
                ldns_rr_set_owner(a, owner);
                ldns_rr_set_ttl(a, 60);
                ldns_rr_set_class(a, LDNS_RR_CLASS_IN);
                ldns_rr_set_rdf(a, addr, 0);
                if (!ldns_pkt_push_rr(r, LDNS_SECTION_ANSWER, a)) {
                        ldns_rr_free(a);
                        return -ENOMEM;
                }
        }
        if (ldns_pkt2wire(&wire, r, &n) != LDNS_STATUS_OK)
                return -ENOMEM;
        int rc = 0;
        if (n > cap)
                rc = -ENOSPC;
        else {
                memcpy(out, wire, n);
                *ret_len = n;
        }
        free(wire);
        return rc;
}

int dnsmsg_answers(const uint8_t *buf, size_t len, const struct dns_query *q, uint8_t (*addrs)[16], size_t max, size_t *ret_n) {
        _cleanup_pkt_ ldns_pkt *p = NULL;
        char name[DNSMSG_NAME_MAX + 2];
        *ret_n = 0;
        if (len > DNSMSG_TCP_MAX || ldns_wire2pkt(&p, buf, len) != LDNS_STATUS_OK)
                return -EINVAL;
        ldns_rr *qq = question(p);
        if (!ldns_pkt_qr(p) || ldns_pkt_id(p) != q->id || !qq || ldns_rr_get_type(qq) != q->qtype ||
            name_of(qq, name, sizeof(name)) < 0 || strcmp(name, q->name) != 0)
                return -EINVAL;
        ldns_rr_list *an = ldns_pkt_answer(p);
        for (size_t i = 0; i < ldns_rr_list_rr_count(an) && *ret_n < max; i++) {
                ldns_rr *rr = ldns_rr_list_rr(an, i);
                ldns_rdf *d = ldns_rr_rd_count(rr) == 1 ? ldns_rr_rdf(rr, 0) : NULL;
                uint8_t *a = addrs[*ret_n];
                if (!d)
                        continue;
                if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_A && ldns_rdf_size(d) == 4) {
                        memset(a, 0, 10);
                        a[10] = a[11] = 0xff;
                        memcpy(a + 12, ldns_rdf_data(d), 4);
                        (*ret_n)++;
                } else if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_AAAA && ldns_rdf_size(d) == 16) {
                        memcpy(a, ldns_rdf_data(d), 16);
                        (*ret_n)++;
                }
        }
        return 0;
}

int dnsmsg_error(const uint8_t *buf, size_t len, int rcode, uint8_t *out, size_t cap, size_t *ret_len) {
        return answer(buf, len, rcode, false, out, cap, ret_len);
}

int dnsmsg_loopback(const uint8_t *buf, size_t len, uint8_t *out, size_t cap, size_t *ret_len) {
        return answer(buf, len, 0, true, out, cap, ret_len);
}

const char *dnsmsg_type_name(uint16_t qtype, char *buf, size_t len) {
        const ldns_rr_descriptor *d = ldns_rr_descript(qtype);
        if (d && d->_name)
                snprintf(buf, len, "%s", d->_name);
        else
                snprintf(buf, len, "TYPE%u", (unsigned) qtype);
        return buf;
}
