/* SPDX-License-Identifier: Apache-2.0 */
/* How nft.c's commands reach the kernel, in one of two ways a program
 * picks at link time: libnftables in the process (nft-lib.c: the daemon,
 * one less process per change), or the nft program in a child process
 * (nft-exec.c: sbx-privd, which keeps JSON parsers out of its own memory,
 * and libnftables links libjansson). */
#pragma once

#include "error.h"

/* Run cmds (what `nft -f` reads); 0, or -EIO with nftables' first error
 * line in err (NULL: no message). */
int nft_run(const char *cmds, struct sbx_error *err);
