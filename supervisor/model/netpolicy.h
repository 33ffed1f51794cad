/* SPDX-License-Identifier: Apache-2.0 */
/* Restricted egress: the allow entries and deny-ports of a job, parsed and
 * validated from their text (requests, sbxctl, tenant caps), checked
 * against a tenant's maximum allowlist, and turned into what the eBPF
 * programs look up (one longest-prefix entry per destination with every
 * port rule that covers it). Pure, unit-tested.
 *
 * An allow entry: DEST[:PORTS][/PROTO]
 *   DEST   an IPv4 address or CIDR (203.0.113.0/24), an IPv6 one in
 *          brackets ([2001:db8::/32]; the brackets may be left out when no
 *          port follows), or a hostname (db.internal)
 *   PORTS  a port (443), a range (8000-8100) or * (every port; the
 *          default)
 *   PROTO  tcp (the default), udp, or any
 * A deny-port: a port or a range; it wins over every allow entry. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define NETPOLICY_MAX_ALLOW 32 /* allow entries of one job, or of one tenant's cap */
#define NETPOLICY_MAX_DENY 16  /* deny-ports of one job (its own and its tenant's) */
#define NETPOLICY_HOST_MAX 253

#define NETPOLICY_TCP 1u
#define NETPOLICY_UDP 2u

struct np_allow {
        bool is_host;        /* a hostname (resolved through the DNS proxy) */
        char host[NETPOLICY_HOST_MAX + 1]; /* lower case; "" for addresses */
        bool v6;             /* written as an IPv6 address */
        uint8_t addr[16];    /* IPv6, or IPv4 mapped (::ffff:a.b.c.d), masked to prefix */
        unsigned prefix;     /* bits of addr that count (IPv4: 96 + its own prefix) */
        uint16_t port_lo, port_hi;
        unsigned protos;     /* NETPOLICY_TCP | NETPOLICY_UDP */
};

struct np_range {
        uint16_t lo, hi;
};

struct netpolicy {
        struct np_allow allow[NETPOLICY_MAX_ALLOW];
        size_t n_allow;
        struct np_range deny[NETPOLICY_MAX_DENY];
        size_t n_deny;
};

/* One entry from its text; err names the text and what is wrong. */
int netpolicy_parse_allow(const char *s, struct np_allow *ret, struct sbx_error *err);
/* http[s]://HOST[:PORT]/PATH: "HOST:PORT" into buf, the allow entry that
 * reaches it (an IPv6 address in brackets; port 80 or 443 unless said);
 * -EINVAL with err naming the URL when it is not one (another scheme, a
 * user or password, no host, no path, a bad port). */
int netpolicy_url_endpoint(const char *url, char *buf, size_t len, struct sbx_error *err);
/* A deny-port: "25" or "6000-6100". */
int netpolicy_parse_ports(const char *s, struct np_range *ret, struct sbx_error *err);
/* The entry as text, canonical (what the record and messages show). */
void netpolicy_format_allow(const struct np_allow *a, char *buf, size_t len);
void netpolicy_format_ports(const struct np_range *r, char *buf, size_t len);

/* Is everything a admits also admitted by cap (destination within, ports
 * within, protocols within; a hostname only by the same name or a
 * "*.suffix" cap; a "*.suffix" only by a "*.suffix" cap of the same or a
 * shorter suffix)? */
bool netpolicy_allow_within(const struct np_allow *a, const struct np_allow *cap);
/* Each entry of p within some entry of caps[0..n): 0, or -EPERM with err
 * naming the first entry that is not and the tenant. */
int netpolicy_check_caps(const struct netpolicy *p, const struct np_allow *caps, size_t n, const char *tenant,
                         struct sbx_error *err);
/* Add the tenant's deny-ports to the job's (-E2BIG past NETPOLICY_MAX_DENY). */
int netpolicy_add_deny(struct netpolicy *p, const struct np_range *deny, size_t n);
/* Does p have a hostname entry? */
bool netpolicy_has_hosts(const struct netpolicy *p);

/* What the programs' prefix map gets: per distinct destination, every
 * rule of the entries whose prefix covers it. */
struct np_rule {
        uint16_t lo, hi;
        unsigned protos;
};
struct np_lpm {
        uint8_t addr[16];
        unsigned prefix;
        struct np_rule rules[NETPOLICY_MAX_ALLOW];
        size_t n_rules;
};
/* Fills out[] (room for NETPOLICY_MAX_ALLOW) from the address entries of
 * p; returns how many. Hostname entries are not addresses: skipped. */
size_t netpolicy_lpm(const struct netpolicy *p, struct np_lpm *out);
/* Does a hostname entry of p name host (exactly, or "*.suffix")? */
bool netpolicy_host_allowed(const struct netpolicy *p, const char *host);
/* The port rules an address that host resolved to gets in the allow map:
 * those of p's entries naming host, and of its address entries that
 * cover addr (a longest match on it must still admit what they admit).
 * Returns how many (at most NETPOLICY_MAX_ALLOW). */
size_t netpolicy_rules_for(const struct netpolicy *p, const uint8_t addr[16], const char *host, struct np_rule *out);

/* The verdict the programs give (the reference the tests hold them to):
 * addr in the 16-byte form, proto NETPOLICY_TCP or NETPOLICY_UDP. */
bool netpolicy_admits(const struct netpolicy *p, const uint8_t addr[16], uint16_t port, unsigned proto);
