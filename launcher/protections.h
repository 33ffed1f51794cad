/* SPDX-License-Identifier: Apache-2.0 */
/* The record of what the launcher really applied, filled by each hardening
 * step (harden.c, seccomp*.c, landlock.c, caps.c), and which memory limit
 * the launcher can apply itself. Data only: the steps include it, and
 * none of them needs another's file for it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "profile.h"

/* Plain data: sent over the report socket from the command's process to
 * the launcher outside, which prints it in the status record. */
struct protections {
        bool no_new_privs;
        bool seccomp;              /* a filter was loaded */
        enum seccomp_mode seccomp_mode;
        int landlock_abi;          /* ABI used, 0 = Landlock not applied */
        bool landlock_fs;
        bool landlock_net;         /* TCP port rules (ABI >= 4) */
        bool landlock_scoped;      /* abstract unix + signal scoping (ABI >= 6) */
        bool caps_dropped;         /* all five sets and bounding set empty */
        bool nested_userns_blocked;
        bool proc_masked;
        bool openat2;              /* setup resolved paths with openat2 */
        bool setid_refused;        /* the filter refuses setuid/setgid modes */
        bool memfd_refused;        /* the filter refuses memfd_create and memfd_secret */
        bool shmget_refused;       /* the filter refuses shmget */
        bool sysv_shm_capped;      /* the IPC namespace's shmall is the memory limit */
};

/* An AddressSanitizer build has reserved terabytes of shadow memory before
 * main(): under an address-space or data limit its allocator can map
 * nothing more and aborts before execve. Such builds exist to test the rest
 * of the launcher; they leave these two limits out (and the tests that hit
 * them skip, saying why). */
#if defined(__SANITIZE_ADDRESS__)
#define SBX_SKIP_VM_LIMITS 1
#else
#define SBX_SKIP_VM_LIMITS 0
#endif

/* Whether the profile's memory limit is applied, as RLIMIT_AS: the
 * launcher's only means (it has no cgroup). The filter then refuses memfd
 * (see seccomp-guard.c). */
static inline bool limits_memory_rlimited(const struct profile *p) {
        uint64_t m = p->limits.memory_bytes;
        return !SBX_SKIP_VM_LIMITS && m != PROFILE_UNSET && m != PROFILE_UNLIMITED;
}
