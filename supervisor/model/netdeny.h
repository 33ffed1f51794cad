/* SPDX-License-Identifier: Apache-2.0 */
/* Where a restricted job never goes, whatever its allow entries or its DNS
 * answers say: the host and what only the host should reach. A name whose
 * upstream answer points at the job's gateway, the metadata service or
 * the host's own addresses (DNS rebinding) would otherwise be admitted
 * like any other answer. The set is prefixes with a reason each:
 *   pool         network_pool and network_pool6 (every job's gateway, the
 *                host's end of each veth, and the other jobs)
 *   loopback     127.0.0.0/8, ::1 (an answer only: the job's own loopback
 *                is in its own namespace and stays open to it)
 *   link-local   169.254.0.0/16, fe80::/10 (169.254.169.254 among them)
 *   multicast    224.0.0.0/4, ff00::/8
 *   broadcast    255.255.255.255
 *   unspecified  0.0.0.0/8, ::
 *   host         the host's own addresses (read at start, then refreshed)
 *   configured   network_deny of sbx-supervisord.conf(5)
 * IPv4 prefixes are held IPv4 mapped (::ffff:a.b.c.d), so the mapped form
 * of an IPv6 socket is denied as the IPv4 one is. The eBPF programs hold
 * the same set (netaudit_deny_set()); this copy serves the DNS proxy and
 * the check of allow entries. Pure, unit-tested. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "netpolicy.h"

enum netdeny_reason {
        ND_NONE = 0,
        ND_POOL,
        ND_LOOPBACK,
        ND_LINK_LOCAL,
        ND_MULTICAST,
        ND_BROADCAST,
        ND_UNSPECIFIED,
        ND_HOST,
        ND_CONFIGURED,
        ND_REASONS
};

#define NETDENY_MAX 1024 /* prefixes at most (the programs' map size) */

struct netdeny_net {
        uint8_t addr[16]; /* IPv6, or IPv4 mapped; masked to prefix */
        unsigned prefix;  /* of the 128 bits (IPv4: 96 + its own) */
        uint8_t reason;   /* enum netdeny_reason */
};

struct netdeny {
        struct netdeny_net nets[NETDENY_MAX];
        size_t n;
};

/* "pool", "loopback", ... */
const char *netdeny_reason_name(unsigned reason);
/* Add one prefix (addr masked here); an exact duplicate is kept once.
 * -E2BIG past NETDENY_MAX. */
int netdeny_add(struct netdeny *nd, const uint8_t addr[16], unsigned prefix, enum netdeny_reason reason);
/* The fixed classes (every reason but pool, host and configured). */
int netdeny_add_fixed(struct netdeny *nd);
/* Drop every prefix of one reason (before the host's addresses are read
 * again). */
void netdeny_drop(struct netdeny *nd, enum netdeny_reason reason);
/* The reason of the longest prefix holding addr, or ND_NONE. */
enum netdeny_reason netdeny_match(const struct netdeny *nd, const uint8_t addr[16]);
/* An address entry every address of which is denied (within one prefix
 * of nd): the reason, else ND_NONE. Hostname entries: ND_NONE. */
enum netdeny_reason netdeny_covers(const struct netdeny *nd, const struct np_allow *a);
/* Each address entry of p: -EPERM with err naming the first that reaches
 * only denied addresses. */
int netdeny_check_policy(const struct netdeny *nd, const struct netpolicy *p, struct sbx_error *err);
/* "a.b.c.d/n" or "x::/n" (or one address): 0 with ret_addr (mapped) and
 * ret_prefix, -EINVAL. */
int netdeny_parse_cidr(const char *s, uint8_t ret_addr[16], unsigned *ret_prefix);
