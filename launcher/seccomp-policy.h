/* SPDX-License-Identifier: Apache-2.0 */
/* The syscall filter (libseccomp): the built-in default deny list, the
 * strict allow list for compute-only jobs, and the profile's allow/deny
 * lines on top. Applied as the very last step before execve(). */
#pragma once

#include <seccomp.h>

#include "protections.h"

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
int seccomp_policy_build(const struct profile *p, unsigned mem_guard, scmp_filter_ctx *ret_ctx,
                         struct sbx_error *err);

/* The memory guards a filter carries (seccomp-guard.c): under a memory
 * limit kept by rlimits, memfd_create and memfd_secret refused, and shmget
 * too where the IPC namespace's shmall could not be capped. */
enum {
        SECCOMP_GUARD_MEMFD = 1u << 0,
        SECCOMP_GUARD_SHMGET = 1u << 1,
};
/* Which guards p needs, given what pid 1 managed (prot->sysv_shm_capped). */
unsigned seccomp_mem_guard(const struct profile *p, const struct protections *prot);

/* The last profile rule naming nr, or NULL: profile lines override the
 * built-in rules for the syscall they name. */
static inline const struct seccomp_rule *seccomp_profile_rule(const struct profile *p, int nr) {
        const struct seccomp_rule *found = NULL;

        for (size_t i = 0; i < p->n_seccomp_rules; i++)
                if (p->seccomp_rules[i].nr == nr)
                        found = &p->seccomp_rules[i];
        return found;
}

/* seccomp-guard.c: the setuid/setgid guard on every call that sets a
 * file's mode, openat2 -> ENOSYS, and the memory guards of mem_guard;
 * added by the default and strict filters. */
int seccomp_guard_add(const struct profile *p, scmp_filter_ctx ctx, unsigned mem_guard, struct sbx_error *err);
/* Whether name is a syscall the setuid guard checks (the strict list and
 * the profile's allow lines leave it to the guard). */
bool seccomp_guard_handles(const char *name);
/* Whether the calls of a memory guard (one SECCOMP_GUARD_* bit) end up
 * refused, given the profile's own lines and the guards that are on. */
bool seccomp_guard_refuses(const struct profile *p, unsigned guard, unsigned mem_guard);
