/* SPDX-License-Identifier: Apache-2.0 */
/* The DNS messages the proxy for restricted jobs handles, read and written
 * with ldns (never by hand): a job's query (one question), the REFUSED
 * answer to a name it may not resolve, the loopback answer to a name the
 * daemon serves itself (header secrets' hosts), and the addresses in the upstream
 * resolver's answer to a query it may. Pure, unit-tested. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define DNSMSG_NAME_MAX 253
#define DNSMSG_MAX 4096      /* bytes of a message over UDP that we read; of a query over TCP */
#define DNSMSG_TCP_MAX 65535 /* bytes of an answer over TCP (its length prefix's most) */
#define DNSMSG_ADDRS_MAX 32  /* addresses taken from one answer */

/* Response codes (RFC 1035 4.1.1) */
#define DNSMSG_SERVFAIL 2
#define DNSMSG_REFUSED 5

/* Query types (RFC 1035, RFC 3596) */
#define DNSMSG_TYPE_A 1
#define DNSMSG_TYPE_AAAA 28

struct dns_query {
        uint16_t id;
        uint16_t qtype;                /* LDNS_RR_TYPE_A, _AAAA, ... */
        char name[DNSMSG_NAME_MAX + 2]; /* lower case, without the final dot */
};

/* A standard query with exactly one question; -EINVAL otherwise. */
int dnsmsg_parse_query(const uint8_t *buf, size_t len, struct dns_query *ret);
/* An answer with rcode (DNSMSG_REFUSED, DNSMSG_SERVFAIL) and nothing else
 * to the query in buf (same id and question), in out (cap bytes); -EINVAL
 * when buf is no query, -ENOSPC when out is short. */
int dnsmsg_error(const uint8_t *buf, size_t len, int rcode, uint8_t *out, size_t cap, size_t *ret_len);
/* The daemon's own answer to the query in buf: 127.0.0.1 to a question
 * for an A record (class IN), no record (NOERROR) to any other; as
 * dnsmsg_error otherwise. */
int dnsmsg_loopback(const uint8_t *buf, size_t len, uint8_t *out, size_t cap, size_t *ret_len);
/* An answer to q (its id, a response, the same question; at most
 * DNSMSG_TCP_MAX bytes): the A and AAAA
 * records of its answer section, as 16-byte addresses (IPv4 mapped),
 * at most max; -EINVAL when it answers something else. */
int dnsmsg_answers(const uint8_t *buf, size_t len, const struct dns_query *q, uint8_t (*addrs)[16], size_t max, size_t *ret_n);
/* "A", "AAAA", ... or "TYPEn". */
const char *dnsmsg_type_name(uint16_t qtype, char *buf, size_t len);
