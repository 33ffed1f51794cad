/* SPDX-License-Identifier: Apache-2.0 */
/* The hardening hooks the core launcher calls (harden.h): each delegates
 * to one module (procmask, landlock, caps, seccomp) and records in struct
 * protections only what was really enforced. The nested user namespace
 * lock-out lives here because it spans two hooks. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "caps.h"
#include "fd-util.h"
#include "harden.h"
#include "landlock.h"
#include "procmask.h"
#include "seccomp-policy.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Nested user namespaces (the way into most kernel exploits reachable
 * without privilege) are refused twice: by the seccomp filter's clone
 * flags, and by the kernel's per-namespace counter, which holds even with
 * seccomp = none:
 *
 *   1. harden_proc, in the sandbox's user namespace U1 with its full
 *      capabilities, opens U1's max_user_namespaces for writing before
 *      /proc/sys turns read-only (the open fd stays writable: it belongs
 *      to the procfs mount underneath the read-only one);
 *   2. harden_sandbox, still in pid 1 and U1, writes the limit: 0, so
 *      that any unshare(CLONE_NEWUSER) from inside fails with ENOSPC.
 *      Raising it needs CAP_SYS_RESOURCE over U1, which the job lacks
 *      once its capabilities are dropped.
 *   3. When the profile keeps capabilities, that is not enough (a kept
 *      CAP_SYS_RESOURCE could raise the limit, a kept CAP_SYS_ADMIN could
 *      unmount the /proc masks). Then the limit is 1 and pid 1 creates one
 *      more user namespace U2 (an identity map of its own ids) and moves
 *      into it, using up U1's single slot; the command is forked there.
 *      Creating a user namespace from U2 is charged against U1's counter
 *      too, and nothing in U2 can ever hold a capability over U1 (or over
 *      the mount, network and pid namespaces U1 owns), so kept
 *      capabilities only act inside U2.
 * U2 is only made when needed because it changes what the job sees: its
 * uid_map is relative to U1 and its user namespace is not the one the
 * launcher reports on --info-fd. */
#define USERNS_LIMIT_FILE "sys/user/max_user_namespaces"

/* Step 1's fd, kept by pid 1 (which builds the root file system) until
 * harden_sandbox. */
static int userns_limit_fd = -1;

/* SysV shared memory outlives every mapping of it: a job can create a
 * segment, touch it through a short attach, detach and keep it, memory
 * that no address-space rlimit sees. In the sandbox's own IPC namespace
 * the total (kernel.shmall, in pages) is set to the memory limit; the fd
 * is opened, like step 1's, before /proc/sys turns read-only. */
#define SHMALL_FILE "sys/kernel/shmall"
static int shmall_fd = -1;

int harden_proc(int proc_dirfd, struct protections *prot, struct sbx_error *err) {
        int r;

        /* Step 1 of the nested user namespace lock-out. Failure is not
         * fatal: the status record will then rely on the filter alone. */
        if (userns_limit_fd < 0)
                userns_limit_fd = openat(proc_dirfd, USERNS_LIMIT_FILE, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (shmall_fd < 0)
                shmall_fd = openat(proc_dirfd, SHMALL_FILE, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);

        r = procmask_apply(proc_dirfd, err);
        if (r < 0)
                return r;
        prot->proc_masked = true;
        return 0;
}

/* Step 3: move pid 1 into a fresh user namespace that maps its own ids. */
static int enter_nested_userns(int proc_dirfd, struct sbx_error *err) {
        uid_t uid = geteuid();
        gid_t gid = getegid();
        char map[64];
        int dumpable, r;

        if (unshare(CLONE_NEWUSER) < 0)
                return sbx_error_set(err, errno, "nested user namespace: unshare");

        /* The map files of a non-dumpable process belong to root; make
         * sure ours are writable by us for these three writes. */
        dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
        if (dumpable == 0 && prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
                return sbx_error_set(err, errno, "nested user namespace: prctl(PR_SET_DUMPABLE)");

        r = fd_write_at(proc_dirfd, "self/setgroups", "deny");
        if (r < 0 && r != -EPERM)
                return sbx_error_set(err, r, "nested user namespace: writing setgroups");
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned) uid, (unsigned) uid);
        r = fd_write_at(proc_dirfd, "self/uid_map", map);
        if (r < 0)
                return sbx_error_set(err, r, "nested user namespace: writing uid_map");
        snprintf(map, sizeof(map), "%u %u 1\n", (unsigned) gid, (unsigned) gid);
        r = fd_write_at(proc_dirfd, "self/gid_map", map);
        if (r < 0)
                return sbx_error_set(err, r, "nested user namespace: writing gid_map");
        return 0;
}

static int find_proc(const struct profile *p) {
        for (size_t i = 0; i < p->n_fs; i++) {
                if (p->fs[i].type != FS_PROC)
                        continue;
                int fd = open(p->fs[i].dest, O_PATH | O_DIRECTORY | O_CLOEXEC);
                struct statfs sf;
                /* Only a real procfs gets our id maps (SECURITY.md 15): a
                 * later operation may have mounted something over it. */
                if (fd >= 0 && fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC)
                        return fd;
                if (fd >= 0)
                        close(fd);
        }
        return -1;
}

/* The SysV shared memory of the sandbox's own IPC namespace, capped at
 * the memory limit. Where it cannot be (the file opens for uid 0 inside
 * only), the command's filter refuses shmget instead (seccomp-guard.c). */
static void cap_sysv_shm(const struct profile *p, int fd, struct protections *prot) {
        char pages[32];
        long page = sysconf(_SC_PAGESIZE);

        if (fd < 0 || !limits_memory_rlimited(p) || !(p->namespaces & PROFILE_NS_IPC) || page <= 0)
                return;
        int n = snprintf(pages, sizeof(pages), "%llu", (unsigned long long) (p->limits.memory_bytes / (uint64_t) page));
        prot->sysv_shm_capped = write(fd, pages, (size_t) n) == n;
}

int harden_sandbox(const struct profile *p, struct protections *prot, struct sbx_error *err) {
        _cleanup_close_ int limit_fd = TAKE_FD(userns_limit_fd);
        _cleanup_close_ int shm_fd = TAKE_FD(shmall_fd);
        bool nest = p->n_caps > 0;
        int r;

        cap_sysv_shm(p, shm_fd, prot);

        /* Step 2, or step 3 when the job keeps capabilities. */
        if (limit_fd >= 0) {
                const char *limit = nest ? "1" : "0";
                if (write(limit_fd, limit, 1) != 1)
                        return sbx_error_set(err, errno, "writing max_user_namespaces");
                if (nest) {
                        _cleanup_close_ int proc = find_proc(p);

                        if (proc < 0)
                                return sbx_error_set(err, errno, "nested user namespace: no /proc to write maps");
                        r = enter_nested_userns(proc, err);
                        if (r < 0)
                                return r;
                }
                prot->nested_userns_blocked = true;
        } else if (nest) {
                /* Without the counter, kept capabilities would be held over
                 * the sandbox's own namespaces; refuse rather than weaken. */
                return sbx_error_msg(err, EPERM,
                                     "keeping capabilities needs a proc in the profile (to lock out nested user namespaces)");
        }

        /* pid 1 is a copy of the launcher: a non-dumpable pid 1 keeps the
         * job out of /proc/1/exe, /proc/1/fd and /proc/1/root
         * (CVE-2019-5736 and kin). Children regain dumpability at exec. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return sbx_error_set(err, errno, "prctl(PR_SET_DUMPABLE, 0)");
        return 0;
}

/* Only 0, 1, 2 and the fds passed on purpose survive execve()
 * (CVE-2024-21626: a leaked directory fd is a way out of the root). The
 * others are marked close-on-exec rather than closed, because the report
 * socket must live until execve() succeeds (its end-of-file tells the
 * launcher that exec worked). */
static int fd_census(const int *keep_fds, size_t n_keep_fds, struct sbx_error *err) {
        if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
                if (errno != ENOSYS && errno != EINVAL)
                        return sbx_error_set(err, errno, "close_range(CLOSE_RANGE_CLOEXEC)");
                /* Pre-5.11 kernels: walk the table. */
                long max = sysconf(_SC_OPEN_MAX);
                if (max < 0 || max > 1 << 20)
                        max = 1 << 20;
                for (int fd = 3; fd < max; fd++)
                        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
        for (size_t i = 0; i < n_keep_fds; i++) {
                int flags = fcntl(keep_fds[i], F_GETFD);
                if (flags < 0 || fcntl(keep_fds[i], F_SETFD, flags & ~FD_CLOEXEC) < 0)
                        return sbx_error_set(err, errno, "passing fd %d to the command", keep_fds[i]);
        }
        return 0;
}

/* The command's standard streams are the caller's, handed over as they
 * are; two kinds would reach outside the sandbox (issue 9):
 *   - a directory: fchdir(0) or openat(0, "..") walks the host's tree
 *     from there, past the new root (CVE-2024-21626 is the same escape
 *     through a leaked fd); refused whatever else applies;
 *   - a file or block device opened without write access (a "< FILE"
 *     stdin): /proc/self/fd/N opens the same inode again, for writing,
 *     with the job's uid, which is the caller's. Landlock refuses that
 *     second open (the host file is under no rule that grants write), so
 *     only a job without Landlock's file rules is refused such a stream;
 *     a pipe (cat FILE | sbx-launch ...) carries the same data safely. */
static int check_stdio(bool landlock_fs, struct sbx_error *err) {
        static const char *const names[] = { "stdin", "stdout", "stderr" };

        for (int fd = 0; fd <= 2; fd++) {
                struct stat st;
                int fl = fcntl(fd, F_GETFL);
                if (fl < 0 || fstat(fd, &st) < 0)
                        continue; /* closed: nothing handed over */
                if (S_ISDIR(st.st_mode))
                        return sbx_error_msg(err, EISDIR,
                                             "%s (fd %d) is a directory: a job is never handed a directory of the host",
                                             names[fd], fd);
                bool lacks_write = (fl & O_PATH) || (fl & O_ACCMODE) == O_RDONLY;
                if (!landlock_fs && lacks_write && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)))
                        return sbx_error_msg(err, EPERM,
                                             "%s (fd %d) is a read-only file of the host and Landlock is not applied: "
                                             "the job could open it again for writing through /proc/self/fd/%d; "
                                             "pass it through a pipe instead",
                                             names[fd], fd, fd);
        }
        return 0;
}

/* The working directory must be inside the new root: getcwd() prefixes
 * "(unreachable)" or fails when it is not (CVE-2024-21626). */
static int check_cwd(struct sbx_error *err) {
        char buf[PATH_MAX];

        if (!getcwd(buf, sizeof(buf)))
                return sbx_error_set(err, errno, "working directory is not inside the sandbox");
        if (buf[0] != '/')
                return sbx_error_msg(err, EPERM, "working directory %s is not inside the sandbox", buf);
        return 0;
}

/* Whether the syscall filter refuses every way to make a user namespace. */
static bool seccomp_blocks_userns(const struct profile *p, const struct protections *prot) {
        static const char *const ways[] = { "clone", "clone3", "unshare" };

        if (!prot->seccomp || p->seccomp == SECCOMP_NONE)
                return false;
        for (size_t i = 0; i < p->n_seccomp_rules; i++)
                for (size_t j = 0; j < ARRAY_SIZE(ways); j++)
                        if (p->seccomp_rules[i].allow && p->seccomp_rules[i].name &&
                            streq(p->seccomp_rules[i].name, ways[j]))
                                return false;
        return true;
}

int harden_exec(const struct profile *p, const int *keep_fds, size_t n_keep_fds,
                struct protections *prot, struct sbx_error *err) {
        int r;

        /* First: Landlock needs it, and nothing from here on may gain
         * privileges through execve() of a setuid or file-capability
         * binary. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return sbx_error_set(err, errno, "prctl(PR_SET_NO_NEW_PRIVS)");
        prot->no_new_privs = true;

        r = landlock_apply(p, prot, err);
        if (r < 0)
                return r;
        r = check_stdio(prot->landlock_fs, err);
        if (r < 0)
                return r;
        r = caps_drop(p, prot, err);
        if (r < 0)
                return r;
        r = fd_census(keep_fds, n_keep_fds, err);
        if (r < 0)
                return r;
        r = check_cwd(err);
        if (r < 0)
                return r;
        /* Last: after the filter only execve() follows. */
        r = seccomp_policy_apply(p, prot, err);
        if (r < 0)
                return r;
        if (seccomp_blocks_userns(p, prot))
                prot->nested_userns_blocked = true;
        return 0;
}
