/* SPDX-License-Identifier: Apache-2.0 */
/* The syscall filter. Three modes (sbx-profile(5) [security] seccomp=):
 *
 * default  everything allowed except a deny list at least as strong as the
 *          union of Flatpak's and Docker's defaults for an unprivileged
 *          job, plus ENOSYS for every syscall newer than our review
 *          (SBX_SECCOMP_FIRST_UNREVIEWED), so new kernel attack surface is
 *          never allowed by accident;
 * strict   an allow list for compute-only jobs (interpreters, shells, file
 *          I/O, no sockets); everything else ENOSYS;
 * none     no filter; no_new_privs is still set.
 *
 * Profile allow/deny lines replace the built-in rules for the syscall they
 * name (the last line for a syscall wins). Only the native ABI is allowed:
 * i386 (int 0x80) and x32 (nr | __X32_SYSCALL_BIT) calls kill the process,
 * because an ABI the filter does not describe is a classic bypass. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>

#include "seccomp-policy.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

static void seccomp_releasep(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}
#define _cleanup_seccomp_ _cleanup_(seccomp_releasep)

/* Unconditional denials of the default filter. */
struct deny {
        const char *name;
        int errnum;
};

static const struct deny default_deny[] = {
        /* Joining or making namespaces (CVE-2021-41133 and the nested
         * user namespace kernel bugs). clone/unshare are filtered on their
         * flags below; clone3 passes flags in memory the filter cannot
         * read, so it gets ENOSYS and libc falls back to clone. */
        { "setns", EPERM },
        { "clone3", ENOSYS },
        /* Mount tables, old and new API: the job must not rearrange its
         * view of the filesystem or reach outside it. */
        { "mount", EPERM },
        { "umount", EPERM },
        { "umount2", EPERM },
        { "pivot_root", EPERM },
        { "chroot", EPERM },
        { "open_tree", EPERM },
        { "move_mount", EPERM },
        { "fsopen", EPERM },
        { "fsconfig", EPERM },
        { "fsmount", EPERM },
        { "fspick", EPERM },
        { "mount_setattr", EPERM },
        /* Large kernel attack surface with a history of exploits. */
        { "io_uring_setup", EPERM },
        { "io_uring_enter", EPERM },
        { "io_uring_register", EPERM },
        { "userfaultfd", EPERM },
        { "bpf", EPERM },
        { "perf_event_open", EPERM },
        /* Kernel keyrings are not namespaced. */
        { "keyctl", EPERM },
        { "add_key", EPERM },
        { "request_key", EPERM },
        /* Reaching into other processes. */
        { "ptrace", EPERM },
        { "process_vm_readv", EPERM },
        { "process_vm_writev", EPERM },
        { "process_madvise", EPERM },
        { "pidfd_getfd", EPERM },
        { "kcmp", EPERM },
        /* Whole-machine operations. */
        { "kexec_load", EPERM },
        { "kexec_file_load", EPERM },
        { "init_module", EPERM },
        { "finit_module", EPERM },
        { "delete_module", EPERM },
        { "create_module", EPERM },
        { "get_kernel_syms", EPERM },
        { "query_module", EPERM },
        { "syslog", EPERM },
        { "acct", EPERM },
        { "quotactl", EPERM },
        { "quotactl_fd", EPERM },
        { "swapon", EPERM },
        { "swapoff", EPERM },
        { "reboot", EPERM },
        { "settimeofday", EPERM },
        { "stime", EPERM },
        { "clock_settime", EPERM },
        { "clock_adjtime", EPERM },
        { "adjtimex", EPERM },
        { "sethostname", EPERM },
        { "setdomainname", EPERM },
        { "iopl", EPERM },
        { "ioperm", EPERM },
        { "vhangup", EPERM },
        { "lookup_dcookie", EPERM },
        { "nfsservctl", EPERM },
        { "_sysctl", EPERM },
        { "uselib", EPERM },
        { "fanotify_init", EPERM },
        /* File handles bypass path-based confinement ("shocker"). */
        { "open_by_handle_at", EPERM },
        { "name_to_handle_at", EPERM },
        /* NUMA policy calls Flatpak blocks: they let one job degrade
         * memory placement for the whole machine. */
        { "mbind", EPERM },
        { "migrate_pages", EPERM },
        { "move_pages", EPERM },
        { "set_mempolicy", EPERM },
        { "get_mempolicy", EPERM },
        { "set_mempolicy_home_node", EPERM },
};

/* Namespace flags of clone(2); CLONE_NEWTIME shares its bit with the exit
 * signal in clone(2), so it is only checked for unshare(2). */
static const uint64_t clone_ns_flags[] = {
        CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
        CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
};
#define CLONE_NS_MASK (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | \
                       CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

/* The strict allow list: what a shell, python3 or a compiled compute job
 * needs to start, read and write files and run children. No sockets, no
 * ptrace, no namespace or mount calls, no kernel tunables. */
static const char *const strict_allow[] = {
        "read", "write", "readv", "writev", "pread64", "pwrite64",
        "preadv", "pwritev", "preadv2", "pwritev2", "sendfile",
        "copy_file_range", "splice", "tee",
        "open", "openat", "creat", "close", "close_range",
        "stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs",
        "access", "faccessat", "faccessat2", "lseek", "getdents", "getdents64",
        "readlink", "readlinkat", "getcwd", "chdir", "fchdir",
        "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename",
        "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat",
        "chmod", "fchmod", "fchmodat", "truncate", "ftruncate", "fallocate",
        "fsync", "fdatasync", "sync_file_range", "flock", "utimensat",
        "utime", "utimes", "futimesat", "umask", "fadvise64",
        "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
        "mmap", "munmap", "mprotect", "mremap", "madvise", "brk", "mincore",
        "msync", "mlock", "munlock", "membarrier", "memfd_create",
        "pipe", "pipe2", "dup", "dup2", "dup3", "fcntl",
        "poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1",
        "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd",
        "eventfd2", "timerfd_create", "timerfd_settime", "timerfd_gettime",
        "signalfd", "signalfd4",
        "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend",
        "rt_sigpending", "rt_sigtimedwait", "rt_sigqueueinfo", "sigaltstack",
        "kill", "tkill", "tgkill", "pause", "alarm", "setitimer", "getitimer",
        "timer_create", "timer_settime", "timer_gettime", "timer_getoverrun",
        "timer_delete",
        "getpid", "getppid", "gettid", "getuid", "geteuid", "getgid",
        "getegid", "getgroups", "getresuid", "getresgid", "getpgrp",
        "getpgid", "setpgid", "getsid", "setsid", "uname", "sysinfo",
        "getrlimit", "setrlimit", "prlimit64", "getrusage", "times",
        "getpriority", "setpriority", "sched_yield", "sched_getaffinity",
        "sched_setaffinity", "sched_getparam", "sched_getscheduler",
        "sched_get_priority_max", "sched_get_priority_min", "getcpu",
        "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep",
        "gettimeofday", "time", "getrandom",
        "fork", "vfork", "execve", "execveat", "wait4", "waitid", "exit",
        "exit_group", "set_tid_address", "set_robust_list",
        "get_robust_list", "rseq", "futex", "futex_waitv", "arch_prctl",
        "prctl", "capget", "restart_syscall", "seccomp",
        "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
};

/* ioctls a compute job legitimately makes on its stdio. */
static const uint32_t strict_ioctls[] = {
        TCGETS, TIOCGWINSZ, TIOCGPGRP, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX,
};

static int add(scmp_filter_ctx ctx, uint32_t action, int nr, const char *name,
               unsigned n_args, const struct scmp_arg_cmp *args, struct sbx_error *err) {
        int r = seccomp_rule_add_array(ctx, action, nr, n_args, args);
        /* -EOPNOTSUPP: the syscall does not exist on this architecture. */
        if (r < 0 && r != -EOPNOTSUPP)
                return sbx_error_set(err, r, "seccomp: rule for %s", name);
        return 0;
}

/* Resolve a name; negative when this architecture lacks the syscall. */
static int resolve(const char *name) {
        return seccomp_syscall_resolve_name(name);
}

static int add_builtin_default(const struct profile *p, scmp_filter_ctx ctx, unsigned mem_guard,
                               struct sbx_error *err) {
        int r, nr;

        for (size_t i = 0; i < ARRAY_SIZE(default_deny); i++) {
                nr = resolve(default_deny[i].name);
                if (nr < 0 || seccomp_profile_rule(p, nr))
                        continue;
                r = add(ctx, SCMP_ACT_ERRNO(default_deny[i].errnum), nr, default_deny[i].name, 0, NULL, err);
                if (r < 0)
                        return r;
        }

        /* clone and unshare with any namespace flag: EPERM. */
        nr = SCMP_SYS(clone);
        if (!seccomp_profile_rule(p, nr))
                for (size_t i = 0; i < ARRAY_SIZE(clone_ns_flags); i++) {
                        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i], clone_ns_flags[i]);
                        r = add(ctx, SCMP_ACT_ERRNO(EPERM), nr, "clone", 1, &c, err);
                        if (r < 0)
                                return r;
                }
        nr = SCMP_SYS(unshare);
        if (!seccomp_profile_rule(p, nr))
                for (size_t i = 0; i <= ARRAY_SIZE(clone_ns_flags); i++) {
                        uint64_t f = i < ARRAY_SIZE(clone_ns_flags) ? clone_ns_flags[i] : CLONE_NEWTIME;
                        struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, f, f);
                        r = add(ctx, SCMP_ACT_ERRNO(EPERM), nr, "unshare", 1, &c, err);
                        if (r < 0)
                                return r;
                }

        /* TIOCSTI/TIOCLINUX push input into the controlling terminal
         * (CVE-2017-5226, CVE-2023-28100). The kernel reads cmd as a 32-bit
         * int, so compare only the low 32 bits (CVE-2019-10063). */
        nr = SCMP_SYS(ioctl);
        if (!seccomp_profile_rule(p, nr)) {
                const uint32_t bad[] = { TIOCSTI, TIOCLINUX };
                for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                        struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, bad[i]);
                        r = add(ctx, SCMP_ACT_ERRNO(EPERM), nr, "ioctl", 1, &c, err);
                        if (r < 0)
                                return r;
                }
        }

        /* personality: only PER_LINUX. Other personas disable ASLR
         * (ADDR_NO_RANDOMIZE), map page zero (MMAP_PAGE_ZERO) or fake an
         * older kernel; any high bit set is refused too. */
        nr = SCMP_SYS(personality);
        if (!seccomp_profile_rule(p, nr)) {
                struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_NE, PER_LINUX);
                r = add(ctx, SCMP_ACT_ERRNO(EPERM), nr, "personality", 1, &c, err);
                if (r < 0)
                        return r;
        }

        /* Socket families: UNIX, INET, INET6 and NETLINK only. Anything
         * above AF_NETLINK (including garbage in the high 32 bits) and each
         * unlisted family below it gets EAFNOSUPPORT, as if the kernel had
         * been built without it. */
        nr = SCMP_SYS(socket);
        if (!seccomp_profile_rule(p, nr)) {
                struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_GT, AF_NETLINK);
                r = add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, "socket", 1, &c, err);
                if (r < 0)
                        return r;
                for (uint64_t fam = 0; fam < AF_NETLINK; fam++) {
                        if (fam == AF_UNIX || fam == AF_INET || fam == AF_INET6)
                                continue;
                        c = (struct scmp_arg_cmp) SCMP_A0(SCMP_CMP_EQ, fam);
                        r = add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), nr, "socket", 1, &c, err);
                        if (r < 0)
                                return r;
                }
        }
        return seccomp_guard_add(p, ctx, mem_guard, err);
}

static int add_builtin_strict(const struct profile *p, scmp_filter_ctx ctx, unsigned mem_guard,
                              struct sbx_error *err) {
        int r, nr;

        for (size_t i = 0; i < ARRAY_SIZE(strict_allow); i++) {
                nr = resolve(strict_allow[i]);
                /* The guarded calls get conditional rules below. */
                if (nr < 0 || seccomp_profile_rule(p, nr) || seccomp_guard_handles(strict_allow[i]) ||
                    ((mem_guard & SECCOMP_GUARD_MEMFD) && streq(strict_allow[i], "memfd_create")))
                        continue;
                r = add(ctx, SCMP_ACT_ALLOW, nr, strict_allow[i], 0, NULL, err);
                if (r < 0)
                        return r;
        }

        /* clone without namespace flags (fork, threads). */
        nr = SCMP_SYS(clone);
        if (!seccomp_profile_rule(p, nr)) {
                struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NS_MASK, 0);
                r = add(ctx, SCMP_ACT_ALLOW, nr, "clone", 1, &c, err);
                if (r < 0)
                        return r;
        }
        nr = SCMP_SYS(ioctl);
        if (!seccomp_profile_rule(p, nr))
                for (size_t i = 0; i < ARRAY_SIZE(strict_ioctls); i++) {
                        struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, strict_ioctls[i]);
                        r = add(ctx, SCMP_ACT_ALLOW, nr, "ioctl", 1, &c, err);
                        if (r < 0)
                                return r;
                }
        nr = SCMP_SYS(personality);
        if (!seccomp_profile_rule(p, nr)) {
                struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_EQ, PER_LINUX);
                r = add(ctx, SCMP_ACT_ALLOW, nr, "personality", 1, &c, err);
                if (r < 0)
                        return r;
        }
        return seccomp_guard_add(p, ctx, mem_guard, err);
}

/* The profile's own lines, last one per syscall. */
static int add_profile_rules(const struct profile *p, scmp_filter_ctx ctx, bool default_allow,
                             struct sbx_error *err) {
        for (size_t i = 0; i < p->n_seccomp_rules; i++) {
                const struct seccomp_rule *rule = &p->seccomp_rules[i];
                int r;

                if (seccomp_profile_rule(p, rule->nr) != rule)
                        continue; /* overridden by a later line */
                if (rule->allow && default_allow)
                        continue; /* the built-in rules were skipped: allowed */
                if (rule->allow && p->seccomp != SECCOMP_NONE && rule->name && seccomp_guard_handles(rule->name))
                        continue; /* the setuid guard allowed the harmless calls */
                r = seccomp_rule_add(ctx, rule->allow ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(rule->errnum),
                                     rule->nr, 0);
                if (r < 0 && r != -EOPNOTSUPP)
                        return sbx_error_set(err, r, "seccomp: %s rule for %s (%s)",
                                             rule->allow ? "allow" : "deny", rule->name,
                                             rule->origin ? rule->origin : "profile");
        }
        return 0;
}

#ifndef SBX_SECCOMP_GENERATOR
/* A second, tiny filter in raw BPF: ENOSYS for every native syscall number
 * from SBX_SECCOMP_FIRST_UNREVIEWED up, except those a profile allows by
 * number. libseccomp can only name the syscalls it knows, so it cannot
 * express "everything newer". The kernel runs both filters and the most
 * restrictive answer wins. */
static int load_unreviewed_filter(const struct profile *p, struct sbx_error *err) {
        struct sock_filter prog[16 + PROFILE_MAX_SECCOMP_RULES];
        size_t n = 0;
        uint32_t arch = seccomp_arch_native();

        prog[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        prog[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 1, 0);
        prog[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
        prog[n++] = (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#ifdef __x86_64__
        /* x32 numbers: the main filter kills them too; say it here as well
         * so this filter's range check below never sees them. */
        prog[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
        prog[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
        for (size_t i = 0; i < p->n_seccomp_rules; i++) {
                const struct seccomp_rule *rule = &p->seccomp_rules[i];
                if (rule->nr < SBX_SECCOMP_FIRST_UNREVIEWED || !rule->allow || seccomp_profile_rule(p, rule->nr) != rule)
                        continue;
                prog[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t) rule->nr, 0, 1);
                prog[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        }
        prog[n++] = (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, SBX_SECCOMP_FIRST_UNREVIEWED, 0, 1);
        prog[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
        prog[n++] = (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

        struct sock_fprog fprog = { .len = (unsigned short) n, .filter = prog };
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0)
                return sbx_error_set(err, errno, "seccomp: loading the unreviewed-syscall filter");
        return 0;
}

#endif

int seccomp_policy_build(const struct profile *p, unsigned mem_guard, scmp_filter_ctx *ret_ctx,
                         struct sbx_error *err) {
        _cleanup_seccomp_ scmp_filter_ctx ctx = NULL;
        bool default_allow = p->seccomp != SECCOMP_STRICT;
        int r;

        ctx = seccomp_init(default_allow ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(ENOSYS));
        if (!ctx)
                return sbx_error_set(err, ENOMEM, "seccomp: creating the filter");
        /* Foreign ABIs (i386 via int 0x80, x32) kill the process: libseccomp
         * routes both to the bad-arch action when only the native
         * architecture is in the filter. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r < 0)
                return sbx_error_set(err, r, "seccomp: setting the bad-architecture action");
#ifdef SBX_SECCOMP_GENERATOR
        /* Built once: afford the binary-tree layout, so each of the job's
         * syscalls walks a few comparisons instead of one per rule. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        if (r < 0)
                return sbx_error_set(err, r, "seccomp: choosing the binary-tree layout");
#endif

        if (p->seccomp == SECCOMP_DEFAULT)
                r = add_builtin_default(p, ctx, mem_guard, err);
        else if (p->seccomp == SECCOMP_STRICT)
                r = add_builtin_strict(p, ctx, mem_guard, err);
        if (r < 0)
                return r;
        r = add_profile_rules(p, ctx, default_allow, err);
        if (r < 0)
                return r;
        *ret_ctx = TAKE_PTR(ctx);
        return 0;
}

#ifndef SBX_SECCOMP_GENERATOR
/* The default filter for a profile without allow/deny lines, generated at
 * build time by seccomp-gen from the very code above: loading it skips
 * building the filter with libseccomp at every launch (a third of a
 * millisecond, a tenth of a whole launch). One per set of memory guards
 * (seccomp_mem_guard): none, memfd, memfd and shmget. */
#include "seccomp-default.h"

static int load_prebuilt_default(unsigned mem_guard, struct sbx_error *err) {
        struct sock_fprog fprog;
        if (mem_guard == 0)
                fprog = (struct sock_fprog) { ARRAY_SIZE(seccomp_default_bpf), (struct sock_filter *) seccomp_default_bpf };
        else if (mem_guard == SECCOMP_GUARD_MEMFD)
                fprog = (struct sock_fprog) { ARRAY_SIZE(seccomp_default_memfd_bpf),
                                              (struct sock_filter *) seccomp_default_memfd_bpf };
        else
                fprog = (struct sock_fprog) { ARRAY_SIZE(seccomp_default_memfd_shm_bpf),
                                              (struct sock_filter *) seccomp_default_memfd_shm_bpf };
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0)
                return sbx_error_set(err, errno, "seccomp: loading the default filter");
        return 0;
}

/* What the loaded filter guards: set-id modes always (default and strict
 * build them in), memfd and shmget when a guard or the profile's own
 * lines refuse them. */
static void record_guards(const struct profile *p, unsigned mem_guard, struct protections *prot) {
        unsigned on = p->seccomp != SECCOMP_NONE ? mem_guard : 0;

        prot->setid_refused = p->seccomp != SECCOMP_NONE;
        prot->memfd_refused = seccomp_guard_refuses(p, SECCOMP_GUARD_MEMFD, on);
        prot->shmget_refused = seccomp_guard_refuses(p, SECCOMP_GUARD_SHMGET, on);
}

int seccomp_policy_apply(const struct profile *p, struct protections *prot, struct sbx_error *err) {
        _cleanup_seccomp_ scmp_filter_ctx ctx = NULL;
        unsigned mem_guard = seccomp_mem_guard(p, prot);
        int r;

        prot->seccomp_mode = p->seccomp;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return sbx_error_set(err, errno, "prctl(PR_SET_NO_NEW_PRIVS)");
        prot->no_new_privs = true;

        /* seccomp = none with no profile lines: nothing to load. */
        if (p->seccomp == SECCOMP_NONE && p->n_seccomp_rules == 0)
                return 0;

        if (p->seccomp == SECCOMP_DEFAULT && p->n_seccomp_rules == 0 &&
            seccomp_arch_native() == SECCOMP_DEFAULT_BPF_ARCH) {
                /* includes the unreviewed-syscall check */
                r = load_prebuilt_default(mem_guard, err);
                if (r < 0)
                        return r;
                prot->seccomp = true;
                record_guards(p, mem_guard, prot);
                return 0;
        }
        r = seccomp_policy_build(p, mem_guard, &ctx, err);
        if (r < 0)
                return r;
        r = seccomp_load(ctx);
        if (r < 0)
                return sbx_error_set(err, r, "seccomp: loading the filter");
        prot->seccomp = true;
        record_guards(p, mem_guard, prot);

        if (p->seccomp == SECCOMP_DEFAULT) {
                r = load_unreviewed_filter(p, err);
                if (r < 0)
                        return r;
        }
        return 0;
}
#endif
