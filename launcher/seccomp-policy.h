/* SPDX-License-Identifier: Apache-2.0 */
/* The syscall filter (libseccomp): the built-in default deny list, the
 * strict allow list for compute-only jobs, and the profile's allow/deny
 * lines on top. Applied as the very last step before execve(). */
#pragma once

#include <seccomp.h>

#include "harden.h"

/* The first native syscall number that we have not reviewed: everything
 * from here up returns ENOSYS under the default filter, so a syscall added
 * to Linux after this list was written is never silently allowed. 456 is
 * futex_requeue (Linux 6.7), the last entry in libseccomp 2.5.4's table;
 * x86_64 and the generic table share numbers from 424 on. */
#define SBX_SECCOMP_FIRST_UNREVIEWED 457

/* Build the filter for p and load it. Sets no_new_privs (required to load a
 * filter without CAP_SYS_ADMIN). Fills prot->seccomp/seccomp_mode. */
int seccomp_policy_apply(const struct profile *p, struct protections *prot, struct sbx_error *err);

/* Build (without loading) the libseccomp filter for p. Used at run time
 * for profiles with their own rules, and at build time by seccomp-gen to
 * precompile the default filter. */
int seccomp_policy_build(const struct profile *p, scmp_filter_ctx *ret_ctx, struct sbx_error *err);
