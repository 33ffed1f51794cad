/* SPDX-License-Identifier: Apache-2.0 */
/* Argument-checked rules of the default and strict filters that guard the
 * host rather than the kernel:
 *
 * setuid/setgid bits. A writable bind is a host directory, on a file
 * system that honours setuid even though the sandbox's own mount of it is
 * nosuid: a job that copies a binary there and sets 6755 plants a program
 * that any local user can run from the host path with the job's uid and
 * gid (the red-team review of issue 9 did exactly that). So every call
 * that sets a file's mode refuses a mode with S_ISUID or S_ISGID (EPERM):
 * chmod, fchmod, fchmodat, fchmodat2, creat, mknod, mknodat, and open and
 * openat when they create (O_CREAT or O_TMPFILE). The filter sees the
 * mode but not the file, so S_ISGID on a directory is refused too; the
 * kernel still hands a new directory the setgid bit of its parent, so
 * group-shared host directories keep working. openat2 carries its flags
 * and mode in a struct the filter cannot read: ENOSYS, and the C library
 * and every careful caller fall back to openat.
 *
 * memfd and SysV shm. Under an address-space rlimit, a memfd holds memory
 * that no process maps: written with write() or fallocate(), never
 * counted; a SysV segment stays after its last detach. When the profile's
 * memory limit is only an rlimit, memfd_create and memfd_secret are
 * refused (EPERM), and shmget too unless pid 1 could cap the IPC
 * namespace's shmall at the limit (harden.c), so that "memory" means
 * what it says.
 *
 * A profile deny line for one of these syscalls replaces its guard (the
 * whole syscall is refused anyway); an allow line lifts a memory guard
 * but not the setuid guard, which no profile can switch off short of
 * seccomp = none. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "seccomp-policy.h"

#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif

/* A syscall that sets a file's mode: which argument holds the mode and,
 * for the open family, which holds the flags (-1: it always applies). */
struct mode_call {
        const char *name;
        unsigned mode_arg;
        int flags_arg;
        bool strict;       /* on the strict allow list */
};

static const struct mode_call mode_calls[] = {
        { "chmod", 1, -1, true },
        { "fchmod", 1, -1, true },
        { "fchmodat", 2, -1, true },
        { "fchmodat2", 2, -1, false },
        { "creat", 1, -1, true },
        { "mknod", 1, -1, false },
        { "mknodat", 2, -1, false },
        { "open", 2, 1, true },
        { "openat", 3, 2, true },
};

static const uint64_t setid_bits[] = { S_ISUID, S_ISGID };
/* open(2) uses the mode only when it creates a file. */
static const uint64_t create_flags[] = { O_CREAT, __O_TMPFILE };

/* The calls of each memory guard, NULL-terminated. */
static const char *const memfd_calls[] = { "memfd_create", "memfd_secret", NULL };
static const char *const shmget_calls[] = { "shmget", NULL };

static const char *const *guard_calls(unsigned guard) {
        return guard == SECCOMP_GUARD_MEMFD ? memfd_calls : shmget_calls;
}

unsigned seccomp_mem_guard(const struct profile *p, const struct protections *prot) {
        if (!limits_memory_rlimited(p))
                return 0;
        return SECCOMP_GUARD_MEMFD | (prot->sysv_shm_capped ? 0 : SECCOMP_GUARD_SHMGET);
}

bool seccomp_guard_handles(const char *name) {
        for (size_t i = 0; i < ARRAY_SIZE(mode_calls); i++)
                if (streq(mode_calls[i].name, name))
                        return true;
        return false;
}

static struct scmp_arg_cmp masked(unsigned arg, uint64_t mask, uint64_t datum) {
        return (struct scmp_arg_cmp) { .arg = arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = mask, .datum_b = datum };
}

static int add_rule(scmp_filter_ctx ctx, uint32_t action, int nr, const char *name, unsigned n,
                    const struct scmp_arg_cmp *c, struct sbx_error *err) {
        int r = seccomp_rule_add_array(ctx, action, nr, n, c);
        if (r < 0 && r != -EOPNOTSUPP)
                return sbx_error_set(err, r, "seccomp: setuid guard for %s", name);
        return 0;
}

/* EPERM for each set-id bit (and, for open, each way of creating); in
 * strict mode also the allow rules for the harmless calls, which do not
 * overlap the refusals. */
static int guard_mode_call(scmp_filter_ctx ctx, const struct mode_call *mc, int nr, bool strict,
                           struct sbx_error *err) {
        int r;

        for (size_t b = 0; b < ARRAY_SIZE(setid_bits); b++) {
                struct scmp_arg_cmp c[2] = { masked(mc->mode_arg, setid_bits[b], setid_bits[b]) };
                if (mc->flags_arg < 0) {
                        r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, mc->name, 1, c, err);
                        if (r < 0)
                                return r;
                        continue;
                }
                for (size_t f = 0; f < ARRAY_SIZE(create_flags); f++) {
                        c[1] = masked((unsigned) mc->flags_arg, create_flags[f], create_flags[f]);
                        r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, mc->name, 2, c, err);
                        if (r < 0)
                                return r;
                }
        }
        if (!strict)
                return 0;
        struct scmp_arg_cmp clean = masked(mc->mode_arg, S_ISUID | S_ISGID, 0);
        r = add_rule(ctx, SCMP_ACT_ALLOW, nr, mc->name, 1, &clean, err);
        if (r < 0 || mc->flags_arg < 0)
                return r;
        struct scmp_arg_cmp no_create = masked((unsigned) mc->flags_arg, O_CREAT | __O_TMPFILE, 0);
        return add_rule(ctx, SCMP_ACT_ALLOW, nr, mc->name, 1, &no_create, err);
}

int seccomp_guard_add(const struct profile *p, scmp_filter_ctx ctx, unsigned mem_guard, struct sbx_error *err) {
        bool strict = p->seccomp == SECCOMP_STRICT;
        int r, nr;

        for (size_t i = 0; i < ARRAY_SIZE(mode_calls); i++) {
                const struct mode_call *mc = &mode_calls[i];
                nr = seccomp_syscall_resolve_name(mc->name);
                if (nr < 0)
                        continue;
                const struct seccomp_rule *rule = seccomp_profile_rule(p, nr);
                if (rule && !rule->allow)
                        continue; /* refused whole by the profile */
                /* strict: not allowed at all unless the profile says so */
                if (strict && !mc->strict && !rule)
                        continue;
                r = guard_mode_call(ctx, mc, nr, strict, err);
                if (r < 0)
                        return r;
        }

        nr = SCMP_SYS(openat2);
        if (!seccomp_profile_rule(p, nr) && !strict) {
                r = add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, "openat2", 0, NULL, err);
                if (r < 0)
                        return r;
        }

        for (unsigned g = SECCOMP_GUARD_MEMFD; g <= SECCOMP_GUARD_SHMGET; g <<= 1) {
                if (!(mem_guard & g))
                        continue;
                for (const char *const *c = guard_calls(g); *c; c++) {
                        nr = seccomp_syscall_resolve_name(*c);
                        if (nr < 0 || seccomp_profile_rule(p, nr))
                                continue;
                        r = add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, *c, 0, NULL, err);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

bool seccomp_guard_refuses(const struct profile *p, unsigned guard, unsigned mem_guard) {
        if (p->n_seccomp_rules == 0)
                return mem_guard & guard;
        for (const char *const *c = guard_calls(guard); *c; c++) {
                int nr = seccomp_syscall_resolve_name(*c);
                if (nr < 0)
                        continue;
                const struct seccomp_rule *rule = seccomp_profile_rule(p, nr);
                if (rule ? rule->allow : !(mem_guard & guard))
                        return false;
        }
        return true;
}
