/* SPDX-License-Identifier: Apache-2.0 */
/* Restricted egress policy: every form of allow entry and deny-port
 * parses to what it says (and each bad one is refused naming what is
 * wrong), a request is held within its tenant's cap entry by entry, and
 * the prefix entries the programs get give the verdicts the policy means
 * (nested prefixes keep the wider entries' ports, deny-ports win). */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "netdeny.h"
#include "netpolicy.h"

static struct np_allow parse_ok(const char *s) {
        struct np_allow a;
        struct sbx_error e;
        sbx_error_clear(&e);
        if (netpolicy_parse_allow(s, &a, &e) < 0)
                fail_msg("%s: %s", s, e.msg);
        return a;
}

static void refused(const char *s, const char *needle) {
        struct np_allow a;
        struct sbx_error e;
        sbx_error_clear(&e);
        int r = netpolicy_parse_allow(s, &a, &e);
        if (r != -EINVAL || !strstr(e.msg, needle))
                fail_msg("%s: rc=%d msg='%s' (wanted '%s')", s, r, e.msg, needle);
}

static void canonical(const char *s, const char *want) {
        char buf[320];
        struct np_allow a = parse_ok(s);
        netpolicy_format_allow(&a, buf, sizeof(buf));
        if (strcmp(buf, want) != 0)
                fail_msg("%s: '%s', wanted '%s'", s, buf, want);
}

static void test_parse(void **state) {
        struct np_allow a = parse_ok("203.0.113.0/24:443");
        assert_false(a.is_host);
        assert_false(a.v6);
        assert_int_equal(a.prefix, 96 + 24);
        assert_int_equal(a.port_lo, 443);
        assert_int_equal(a.port_hi, 443);
        assert_int_equal(a.protos, NETPOLICY_TCP);
        a = parse_ok("[2001:db8::/32]:8000-8100/udp");
        assert_true(a.v6);
        assert_int_equal(a.prefix, 32);
        assert_int_equal(a.port_lo, 8000);
        assert_int_equal(a.port_hi, 8100);
        assert_int_equal(a.protos, NETPOLICY_UDP);
        a = parse_ok("DB.Internal:5432");
        assert_true(a.is_host);
        assert_string_equal(a.host, "db.internal");
        canonical("192.0.2.1", "192.0.2.1:*/tcp");
        canonical("192.0.2.1:53/any", "192.0.2.1:53/any");
        canonical("10.0.0.0/8:1-1024/udp", "10.0.0.0/8:1-1024/udp");
        canonical("2001:db8::1", "[2001:db8::1]:*/tcp");
        canonical("[2001:db8::1]:443", "[2001:db8::1]:443/tcp");
        canonical("[::/0]:*/any", "[::/0]:*/any");
        canonical("0.0.0.0/0:*/any", "0.0.0.0/0:*/any");
        canonical("api.example.com:443", "api.example.com:443/tcp");
        canonical("*.example.com", "*.example.com:*/tcp");

        refused("", "empty");
        refused("10.0.0.1:0", "bad port '0'");
        refused("10.0.0.1:65536", "bad port");
        refused("10.0.0.1:90-80", "bad port '90-80'");
        refused("10.0.0.1:http", "bad port");
        refused("10.0.0.0/33", "an IPv4 prefix is /0 to /32");
        refused("[2001:db8::/129]", "an IPv6 prefix is /0 to /128");
        refused("10.0.0.1/8", "bits set past its /8 prefix (the network is 10.0.0.0/8)");
        refused("300.1.2.3", "is not an IPv4 or IPv6 address, a CIDR or a hostname");
        refused("bad_name.example", "is not an IPv4");
        refused("-a.example", "is not an IPv4");
        refused("[db.internal]:80", "is not an IPv4");
        refused("[2001:db8::1", "'[' without ']'");
        refused("[2001:db8::1]x", "expected ':PORTS'");
        refused("10.0.0.1/abc", "bad prefix length");
        refused("a b", "spaces");
        refused("10.0.0.1/sctp", "bad prefix length");
}

static void test_ports(void **state) {
        struct np_range r;
        struct sbx_error e;
        assert_int_equal(netpolicy_parse_ports("25", &r, &e), 0);
        assert_int_equal(r.lo, 25);
        assert_int_equal(r.hi, 25);
        assert_int_equal(netpolicy_parse_ports("6000-6100", &r, &e), 0);
        assert_int_equal(r.hi, 6100);
        assert_int_equal(netpolicy_parse_ports("*", &r, &e), -EINVAL);
        assert_int_equal(netpolicy_parse_ports("0", &r, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "deny-port '0'"));
}

static void test_caps(void **state) {
        struct np_allow caps[] = { parse_ok("10.0.0.0/8:1-1024/any"), parse_ok("[2001:db8::/32]:443"), parse_ok("*.example.com:443") };
        struct np_allow in = parse_ok("10.1.2.0/24:80");
        assert_true(netpolicy_allow_within(&in, &caps[0]));
        in = parse_ok("10.1.2.3:80/udp");
        assert_true(netpolicy_allow_within(&in, &caps[0]));
        in = parse_ok("10.1.2.3:2000");
        assert_false(netpolicy_allow_within(&in, &caps[0])); /* port */
        in = parse_ok("10.0.0.0/7:80");
        assert_false(netpolicy_allow_within(&in, &caps[0])); /* wider */
        in = parse_ok("11.0.0.1:80");
        assert_false(netpolicy_allow_within(&in, &caps[0]));
        in = parse_ok("[2001:db8:1::5]:443");
        assert_true(netpolicy_allow_within(&in, &caps[1]));
        in = parse_ok("[2001:db8:1::5]:443/udp");
        assert_false(netpolicy_allow_within(&in, &caps[1])); /* protocol */
        in = parse_ok("api.example.com:443");
        assert_true(netpolicy_allow_within(&in, &caps[2]));
        in = parse_ok("example.com:443");
        assert_false(netpolicy_allow_within(&in, &caps[2]));
        in = parse_ok("api.example.com:443");
        assert_false(netpolicy_allow_within(&in, &caps[0])); /* a name is never inside an address */
        /* a wildcard only within the tenant's wildcards */
        in = parse_ok("*.example.com:443");
        assert_true(netpolicy_allow_within(&in, &caps[2]));
        in = parse_ok("*.eu.example.com:443");
        assert_true(netpolicy_allow_within(&in, &caps[2]));
        in = parse_ok("*.com:443");
        assert_false(netpolicy_allow_within(&in, &caps[2])); /* wider */
        in = parse_ok("*.badexample.com:443");
        assert_false(netpolicy_allow_within(&in, &caps[2])); /* not on a label's boundary */
        struct np_allow one = parse_ok("db.example.com:443");
        in = parse_ok("*.db.example.com:443");
        assert_false(netpolicy_allow_within(&in, &one)); /* a wildcard under a single name */

        struct netpolicy p = { .n_allow = 2 };
        struct sbx_error e;
        p.allow[0] = parse_ok("10.9.9.9:22");
        p.allow[1] = parse_ok("192.0.2.1:22");
        assert_int_equal(netpolicy_check_caps(&p, caps, 3, "acme", &e), -EPERM);
        assert_string_equal(e.msg, "field 'network.allow[1]': 192.0.2.1:22/tcp is beyond tenant 'acme''s network_allow");
        p.n_allow = 1;
        assert_int_equal(netpolicy_check_caps(&p, caps, 3, "acme", &e), 0);
        /* no cap at all: nothing beyond loopback */
        assert_int_equal(netpolicy_check_caps(&p, caps, 0, "acme", &e), -EPERM);
}

static void addr4(const char *s, uint8_t out[16]) {
        memset(out, 0, 16);
        out[10] = out[11] = 0xff;
        assert_int_equal(inet_pton(AF_INET, s, out + 12), 1);
}

static void test_verdicts(void **state) {
        struct netpolicy p = { 0 };
        uint8_t a[16];
        p.allow[p.n_allow++] = parse_ok("10.0.0.0/8:443");
        p.allow[p.n_allow++] = parse_ok("10.1.0.0/16:80");
        p.allow[p.n_allow++] = parse_ok("10.1.2.3:53/udp");
        p.allow[p.n_allow++] = parse_ok("10.1.0.0/16:80"); /* a repeat adds nothing */
        p.allow[p.n_allow++] = parse_ok("[2001:db8::/32]:8000-8100");
        p.allow[p.n_allow++] = parse_ok("db.internal:5432");
        struct np_lpm lpm[NETPOLICY_MAX_ALLOW];
        size_t n = netpolicy_lpm(&p, lpm);
        assert_int_equal(n, 4); /* the name is not a prefix */
        /* 10.1.2.3/32 carries its own rule and both wider ones */
        assert_int_equal(lpm[2].prefix, 128);
        assert_int_equal(lpm[2].n_rules, 4);

        addr4("10.1.2.3", a);
        assert_true(netpolicy_admits(&p, a, 443, NETPOLICY_TCP)); /* from /8 */
        assert_true(netpolicy_admits(&p, a, 80, NETPOLICY_TCP));  /* from /16 */
        assert_true(netpolicy_admits(&p, a, 53, NETPOLICY_UDP));
        assert_false(netpolicy_admits(&p, a, 53, NETPOLICY_TCP));
        assert_false(netpolicy_admits(&p, a, 22, NETPOLICY_TCP));
        addr4("10.2.0.1", a);
        assert_true(netpolicy_admits(&p, a, 443, NETPOLICY_TCP));
        assert_false(netpolicy_admits(&p, a, 80, NETPOLICY_TCP));
        assert_false(netpolicy_admits(&p, a, 443, NETPOLICY_UDP));
        addr4("192.0.2.1", a);
        assert_false(netpolicy_admits(&p, a, 443, NETPOLICY_TCP));
        addr4("127.0.0.1", a);
        assert_true(netpolicy_admits(&p, a, 9, NETPOLICY_TCP));
        inet_pton(AF_INET6, "2001:db8:5::1", a);
        assert_true(netpolicy_admits(&p, a, 8050, NETPOLICY_TCP));
        assert_false(netpolicy_admits(&p, a, 8101, NETPOLICY_TCP));
        inet_pton(AF_INET6, "2001:db9::1", a);
        assert_false(netpolicy_admits(&p, a, 8050, NETPOLICY_TCP));

        /* deny-ports win over every allow entry */
        struct np_range d = { 80, 80 };
        assert_int_equal(netpolicy_add_deny(&p, &d, 1), 0);
        addr4("10.1.2.3", a);
        assert_false(netpolicy_admits(&p, a, 80, NETPOLICY_TCP));
        assert_true(netpolicy_admits(&p, a, 443, NETPOLICY_TCP));
        struct np_range many[NETPOLICY_MAX_DENY] = { { 0 } };
        assert_int_equal(netpolicy_add_deny(&p, many, NETPOLICY_MAX_DENY), -E2BIG);
        assert_true(netpolicy_has_hosts(&p));
}

/* Names the DNS proxy resolved: their addresses get the name's rules and
 * those of the address entries that cover them. */
static void test_names(void **state) {
        struct netpolicy p = { 0 };
        struct np_rule r[NETPOLICY_MAX_ALLOW];
        uint8_t a[16];
        p.allow[p.n_allow++] = parse_ok("db.internal:5432");
        p.allow[p.n_allow++] = parse_ok("*.example.com:443");
        p.allow[p.n_allow++] = parse_ok("10.0.0.0/8:22");
        assert_true(netpolicy_host_allowed(&p, "db.internal"));
        assert_true(netpolicy_host_allowed(&p, "api.example.com"));
        assert_false(netpolicy_host_allowed(&p, "example.com"));
        assert_false(netpolicy_host_allowed(&p, "db.internal.evil"));
        assert_false(netpolicy_host_allowed(&p, "10.0.0.1"));
        addr4("10.1.1.1", a);
        assert_int_equal(netpolicy_rules_for(&p, a, "db.internal", r), 2);
        assert_int_equal(r[0].lo, 5432);
        assert_int_equal(r[1].lo, 22);
        addr4("192.0.2.7", a);
        assert_int_equal(netpolicy_rules_for(&p, a, "api.example.com", r), 1);
        assert_int_equal(r[0].lo, 443);
}

/* What restricted jobs never reach: the fixed classes, IPv4 and mapped
 * alike; the longest prefix decides the reason; entries reaching only
 * them are refused, broad ones taken. */
static void test_deny(void **state) {
        (void) state;
        struct netdeny nd = { .n = 0 };
        uint8_t a[16];
        unsigned p;
        assert_int_equal(netdeny_add_fixed(&nd), 0);
        assert_int_equal(netdeny_parse_cidr("10.214.0.0/16", a, &p), 0);
        assert_int_equal(p, 96 + 16);
        assert_int_equal(netdeny_add(&nd, a, p, ND_POOL), 0);
        assert_int_equal(netdeny_add(&nd, a, p, ND_POOL), 0);
        size_t n = nd.n;
        assert_int_equal(netdeny_parse_cidr("10.0.0.1/8", a, &p), -EINVAL);
        assert_int_equal(netdeny_parse_cidr("fd00::/129", a, &p), -EINVAL);
        assert_int_equal(netdeny_parse_cidr("example.com", a, &p), -EINVAL);
        assert_int_equal(netdeny_parse_cidr("10.0.0.0/8:80", a, &p), -EINVAL);
        addr4("169.254.169.254", a);
        assert_int_equal(netdeny_match(&nd, a), ND_LINK_LOCAL);
        assert_int_equal(inet_pton(AF_INET6, "::ffff:169.254.169.254", a), 1);
        assert_int_equal(netdeny_match(&nd, a), ND_LINK_LOCAL);
        addr4("10.214.3.1", a);
        assert_int_equal(netdeny_match(&nd, a), ND_POOL);
        addr4("10.215.3.1", a);
        assert_int_equal(netdeny_match(&nd, a), ND_NONE);
        addr4("255.255.255.255", a);
        assert_int_equal(netdeny_match(&nd, a), ND_BROADCAST);
        addr4("0.0.0.0", a);
        assert_int_equal(netdeny_match(&nd, a), ND_UNSPECIFIED);
        addr4("239.1.2.3", a);
        assert_int_equal(netdeny_match(&nd, a), ND_MULTICAST);
        assert_int_equal(inet_pton(AF_INET6, "fe80::1", a), 1);
        assert_int_equal(netdeny_match(&nd, a), ND_LINK_LOCAL);
        assert_int_equal(inet_pton(AF_INET6, "::", a), 1);
        assert_int_equal(netdeny_match(&nd, a), ND_UNSPECIFIED);
        assert_int_equal(inet_pton(AF_INET6, "2001:db8::1", a), 1);
        assert_int_equal(netdeny_match(&nd, a), ND_NONE);
        /* a host address inside a wider configured network: the longer wins */
        assert_int_equal(netdeny_parse_cidr("192.0.2.0/24", a, &p), 0);
        assert_int_equal(netdeny_add(&nd, a, p, ND_CONFIGURED), 0);
        addr4("192.0.2.9", a);
        assert_int_equal(netdeny_add(&nd, a, 128, ND_HOST), 0);
        assert_int_equal(netdeny_match(&nd, a), ND_HOST);
        addr4("192.0.2.10", a);
        assert_int_equal(netdeny_match(&nd, a), ND_CONFIGURED);
        netdeny_drop(&nd, ND_HOST);
        addr4("192.0.2.9", a);
        assert_int_equal(netdeny_match(&nd, a), ND_CONFIGURED);
        assert_int_equal(nd.n, n + 1);
        /* allow entries */
        struct np_allow e = parse_ok("169.254.169.254:80");
        assert_int_equal(netdeny_covers(&nd, &e), ND_LINK_LOCAL);
        e = parse_ok("[::ffff:169.254.169.254]:80");
        assert_int_equal(netdeny_covers(&nd, &e), ND_LINK_LOCAL);
        e = parse_ok("10.214.0.0/24");
        assert_int_equal(netdeny_covers(&nd, &e), ND_POOL);
        e = parse_ok("10.0.0.0/8");
        assert_int_equal(netdeny_covers(&nd, &e), ND_NONE);
        e = parse_ok("0.0.0.0/0:*/any");
        assert_int_equal(netdeny_covers(&nd, &e), ND_NONE);
        e = parse_ok("127.0.0.1:8080"); /* the job's own loopback */
        assert_int_equal(netdeny_covers(&nd, &e), ND_NONE);
        e = parse_ok("db.internal:5432");
        assert_int_equal(netdeny_covers(&nd, &e), ND_NONE);
        struct netpolicy pol = { .n_allow = 2 };
        struct sbx_error err;
        pol.allow[0] = parse_ok("10.0.0.0/8");
        pol.allow[1] = parse_ok("192.0.2.0/25:443");
        assert_int_equal(netdeny_check_policy(&nd, &pol, &err), -EPERM);
        assert_non_null(strstr(err.msg, "network.allow[1]"));
        assert_non_null(strstr(err.msg, "configured"));
        assert_int_equal(netdeny_check_policy(NULL, &pol, &err), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_ports),
                cmocka_unit_test(test_caps),
                cmocka_unit_test(test_verdicts),
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_deny),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
