/* SPDX-License-Identifier: Apache-2.0 */
/* Landlock, through the raw syscalls (there is no library). */
#pragma once

#include "protections.h"

/* The highest Landlock ABI the running kernel offers; 0 when Landlock is
 * missing or disabled (ENOSYS, EOPNOTSUPP). */
int landlock_abi_version(void);

/* Restrict the calling process to the sandbox's filesystem as the profile
 * built it: read/execute on read-only binds and the system, write on
 * writable binds and tmpfs, nothing else; TCP port rules when the profile
 * gives them (ABI >= 4); abstract unix socket and signal scoping (ABI >= 6).
 * Paths are the fs operations' destinations, resolved in the new root.
 * Needs no_new_privs. landlock = required fails when Landlock is missing;
 * best-effort records in prot what was applied. */
int landlock_apply(const struct profile *p, struct protections *prot, struct sbx_error *err);
