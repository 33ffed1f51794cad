/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for what restricted jobs and their tenants send the
 * network code: allow entries and deny-ports (requests, sbxctl, the
 * configuration), and DNS messages (a job's queries to its proxy, the
 * upstream resolver's answers). The first byte picks the parser:
 *   'a' an allow entry: parsed, or refused with a message; parsed, its
 *       canonical text parses again to the very same entry;
 *   'p' a deny-port, likewise;
 *   'q' a query: read, and answered REFUSED, or refused as no query;
 *   'r' an answer to a fixed query: addresses only from a matching one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnsmsg.h"
#include "netpolicy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_allow(const char *s) {
        struct np_allow a, b;
        struct sbx_error err = { 0 };
        char text[400];
        if (netpolicy_parse_allow(s, &a, &err) < 0) {
                if (!err.msg[0]) {
                        fprintf(stderr, "refused without a message\n");
                        abort();
                }
                return;
        }
        netpolicy_format_allow(&a, text, sizeof(text));
        if (netpolicy_parse_allow(text, &b, &err) < 0 || memcmp(&a, &b, sizeof(a)) != 0 || !netpolicy_allow_within(&a, &b)) {
                fprintf(stderr, "'%s' -> '%s' does not come back\n", s, text);
                abort();
        }
}

static void check_ports(const char *s) {
        struct np_range r;
        struct sbx_error err = { 0 };
        if (netpolicy_parse_ports(s, &r, &err) == 0 && (r.lo == 0 || r.lo > r.hi)) {
                fprintf(stderr, "'%s' gave %u-%u\n", s, r.lo, r.hi);
                abort();
        }
}

static void check_query(const uint8_t *d, size_t n) {
        struct dns_query q;
        uint8_t out[DNSMSG_MAX];
        size_t len;
        if (dnsmsg_parse_query(d, n, &q) == 0) {
                if (!q.name[0] || strlen(q.name) > DNSMSG_NAME_MAX) {
                        fprintf(stderr, "a query with a bad name\n");
                        abort();
                }
                if (dnsmsg_error(d, n, DNSMSG_REFUSED, out, sizeof(out), &len) == 0 && dnsmsg_parse_query(out, len, &q) == 0) {
                        fprintf(stderr, "the refusal reads as a query\n");
                        abort();
                }
        }
}

static void check_answer(const uint8_t *d, size_t n) {
        struct dns_query q = { .id = 0x1234, .qtype = 1 };
        uint8_t addrs[DNSMSG_ADDRS_MAX][16];
        size_t k = 99;
        strcpy(q.name, "db.internal");
        if (dnsmsg_answers(d, n, &q, addrs, DNSMSG_ADDRS_MAX, &k) < 0 ? k != 0 : k > DNSMSG_ADDRS_MAX) {
                fprintf(stderr, "%zu addresses\n", k);
                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        if (data[0] == 'a' || data[0] == 'p') {
                char *s = malloc(size);
                if (!s)
                        return 0;
                memcpy(s, data + 1, size - 1);
                s[size - 1] = '\0';
                if (data[0] == 'a')
                        check_allow(s);
                else
                        check_ports(s);
                free(s);
        } else if (data[0] == 'q')
                check_query(data + 1, size - 1);
        else if (data[0] == 'r')
                check_answer(data + 1, size - 1);
        return 0;
}
