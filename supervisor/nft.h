/* SPDX-License-Identifier: Apache-2.0 */
/* The host side of restricted jobs' traffic, in an nftables table of the
 * daemon's own (through libnftables): masquerade for the pool's addresses
 * leaving by another interface, forwarding from the jobs' veths out and
 * back for their connections only, nothing from one job's veth to
 * another's. Made afresh at start (so a table a crashed daemon left is
 * replaced), deleted at stop. Blocking: at start and stop only. */
#pragma once

#include <stdint.h>

#include "error.h"

/* table: the table's name; ifprefix: the jobs' veth host ends (a prefix);
 * pool/prefix: the network_pool. */
int nft_setup(const char *table, const char *ifprefix, uint32_t pool, unsigned prefix, struct sbx_error *err);
/* Delete the table; one that is not there is not an error. */
int nft_teardown(const char *table);
/* Is there such a table (ip family)? */
int nft_table_exists(const char *table);
