/* SPDX-License-Identifier: Apache-2.0 */
/* The host side of restricted jobs' traffic, in nftables tables of the
 * daemon's own (through libnftables), one name in the ip family and, with
 * an IPv6 pool, the ip6 family: masquerade for the pool's addresses
 * leaving by another interface, forwarding from the jobs' veths out and
 * back for their connections only, nothing from one job's veth to
 * another's. Made afresh at start (so a table a crashed daemon left is
 * replaced, and an ip6 one is deleted when there is no IPv6 pool now),
 * deleted at stop. Blocking: at start and stop only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define NFT_GUARD_MAX 1024

/* What forwarding the daemon switched on (netfwd.h) must not let through
 * besides the jobs' packets: whatever comes in by one of ifaces (nft set
 * elements, '"eth0", "eth1"'; "" none) and goes to no job's veth is
 * dropped; all: every forwarded packet that is not a job's (the chain's
 * policy), for a host-wide switch. */
struct nft_guard {
        const char *ifaces;
        bool all;
};

/* table: the tables' name; ifprefix: the jobs' veth host ends (a prefix);
 * pool/prefix: the network_pool; pool6/prefix6: the network_pool6
 * (prefix6 0: none, no ip6 table); guard4, guard6: the forwarding guards
 * of each family. */
int nft_setup(const char *table, const char *ifprefix, uint32_t pool, unsigned prefix, const uint8_t pool6[16],
              unsigned prefix6, const struct nft_guard *guard4, const struct nft_guard *guard6, struct sbx_error *err);
/* Delete the tables (both families); one that is not there is not an error. */
int nft_teardown(const char *table);
/* Is there such a table? family: "ip" or "ip6". */
int nft_table_exists(const char *family, const char *table);
