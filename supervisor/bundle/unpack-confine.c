/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-unpack's confinement (unpack.h). The process arrives as the only
 * one of new user, mount, pid, network, IPC and UTS namespaces, holding
 * every capability of its own user namespace and none of the host's. It
 * leaves with the staging tree as its whole filesystem, no capability,
 * no_new_privs, rlimits and a seccomp allow list. It runs as the daemon's
 * uid (mapped to 0 inside), so what stops it from touching the daemon's
 * other files is that it cannot see them (its root is the tree), and from
 * signalling or tracing the daemon's processes that it cannot see those
 * either (its pid namespace). */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <limits.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "unpack.h"

#define UNPACK_MAX_AS (512ull << 20) /* libarchive reads a tar.gz in a few MB */
#define UNPACK_MAX_FILES 64          /* extract.c holds a few directories open at once */

/* The staging tree, bound onto itself, becomes the root; the old root is
 * detached whole. The tree's fd is then reopened from the new root: the
 * old fd's mount is the host's, and ".." from it would climb the host's
 * tree. */
static int root_tree(struct sbx_error *err) {
        char link[64], path[PATH_MAX];
        struct stat want, got;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", UNPACK_FD_TREE);
        ssize_t n = readlink(link, path, sizeof(path) - 1);
        if (n < 0)
                return sbx_error_set(err, errno, "unpacking sandbox: the staging tree's path");
        path[n] = '\0';
        if (path[0] != '/')
                return sbx_error_msg(err, EINVAL, "unpacking sandbox: the staging tree has no path");
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return sbx_error_set(err, errno, "unpacking sandbox: making mounts private");
        if (mount(path, path, NULL, MS_BIND, NULL) < 0)
                return sbx_error_set(err, errno, "unpacking sandbox: binding %s", path);
        if (chdir(path) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 || umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
                return sbx_error_set(err, errno, "unpacking sandbox: pivot_root to the staging tree");
        int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return sbx_error_set(err, errno, "unpacking sandbox: the new root");
        if (fstat(fd, &got) < 0 || fstat(UNPACK_FD_TREE, &want) < 0 || got.st_dev != want.st_dev || got.st_ino != want.st_ino) {
                close(fd);
                return sbx_error_msg(err, EXDEV, "unpacking sandbox: the new root is not the staging tree");
        }
        int r = dup2(fd, UNPACK_FD_TREE) < 0 ? -errno : 0;
        close(fd);
        return r < 0 ? sbx_error_set(err, r, "unpacking sandbox: the new root") : 0;
}

static int drop_caps(struct sbx_error *err) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2];
        for (int c = 0; c <= 63; c++)
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        return sbx_error_set(err, errno, "unpacking sandbox: bounding set");
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
                return sbx_error_set(err, errno, "unpacking sandbox: ambient capabilities");
        memset(d, 0, sizeof(d));
        if (syscall(SYS_capset, &h, d) < 0)
                return sbx_error_set(err, errno, "unpacking sandbox: capset");
        /* No core dump: it would hold the archive's and the tree's data. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return sbx_error_set(err, errno, "unpacking sandbox: no_new_privs");
        return 0;
}

static int limit(int res, uint64_t v, const char *what, struct sbx_error *err) {
        struct rlimit rl = { .rlim_cur = v, .rlim_max = v };
        return setrlimit(res, &rl) < 0 ? sbx_error_set(err, errno, "unpacking sandbox: %s", what) : 0;
}

/* A bomb stops at a bound even where extract.c's own count would not
 * see it (a bug in the count, or in libarchive): CPU seconds (SIGKILL at
 * the hard limit), file size (EFBIG), memory, open files. */
static int limits(const struct unpack_args *a, struct sbx_error *err) {
        int r;
        uint64_t fsize = a->lim.x.max_bytes < RLIM_INFINITY - 1 ? a->lim.x.max_bytes + 1 : RLIM_INFINITY;
        if ((r = limit(RLIMIT_CPU, a->cpu_seconds, "RLIMIT_CPU", err)) < 0 ||
            (r = limit(RLIMIT_FSIZE, fsize, "RLIMIT_FSIZE", err)) < 0 ||
            (r = limit(RLIMIT_NOFILE, UNPACK_MAX_FILES, "RLIMIT_NOFILE", err)) < 0 ||
            (r = limit(RLIMIT_CORE, 0, "RLIMIT_CORE", err)) < 0)
                return r;
#ifndef __SANITIZE_ADDRESS__
        /* AddressSanitizer reserves terabytes of address space. */
        if ((r = limit(RLIMIT_AS, UNPACK_MAX_AS, "RLIMIT_AS", err)) < 0)
                return r;
#endif
        return 0;
}

static void seccomp_releasep(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}

/* What extract.c and libarchive do to unpack a tar.gz from an open fd
 * into an open directory, and what malloc and the sanitizers need;
 * anything else kills the process. No socket, no exec, no clone, no
 * mount, no chmod but to 0555, no mode with setuid, setgid or sticky
 * bits, no executable memory. */
static int filter(struct sbx_error *err) {
        static const int plain[] = {
                SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(writev), SCMP_SYS(close), SCMP_SYS(lseek),
                SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(statx), SCMP_SYS(openat2), SCMP_SYS(symlinkat),
                SCMP_SYS(fcntl), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(brk), SCMP_SYS(madvise),
                SCMP_SYS(exit), SCMP_SYS(exit_group), SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask),
                SCMP_SYS(rt_sigaction), SCMP_SYS(sigaltstack), SCMP_SYS(clock_gettime), SCMP_SYS(getpid),
                SCMP_SYS(gettid), SCMP_SYS(tgkill), SCMP_SYS(futex), SCMP_SYS(getrandom), SCMP_SYS(sched_yield),
                SCMP_SYS(prlimit64), SCMP_SYS(getrlimit),
        };
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
        int r = 0;
        if (!ctx)
                return sbx_error_msg(err, ENOMEM, "unpacking sandbox: seccomp_init");
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        for (size_t i = 0; r == 0 && i < ARRAY_SIZE(plain); i++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, plain[i], 0);
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1, SCMP_A3(SCMP_CMP_MASKED_EQ, 07000, 0));
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mkdirat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, 07000, 0));
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fchmodat), 1, SCMP_A2(SCMP_CMP_EQ, 0555));
        if (r == 0) /* no AT_SYMLINK_FOLLOW: a hard link is made to the link, never through it */
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(linkat), 1, SCMP_A4(SCMP_CMP_EQ, 0));
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
        if (r == 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
        if (r == 0)
                r = seccomp_load(ctx);
        return r < 0 ? sbx_error_set(err, r, "unpacking sandbox: seccomp") : 0;
}

int unpack_confine(const struct unpack_args *a, struct sbx_error *err) {
        int r;
        if ((r = root_tree(err)) < 0 || (r = drop_caps(err)) < 0 || (r = limits(a, err)) < 0)
                return r;
        return filter(err);
}
