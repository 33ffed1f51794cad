/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's side of unpacking in a sandboxed child (unpack.h): clone
 * it into new namespaces, execute sbx-unpack, wait for its one reply with
 * a deadline, and judge the reply as untrusted input. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "tree-check.h"
#include "unpack.h"
#include "util.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

/* Every namespace the child can be given: its own user namespace (its
 * capabilities are over nothing of the host's), mounts (its root is the
 * staging tree), pids (it can signal or trace no process of the host,
 * though it runs as the daemon's uid), network (no interface but a down
 * loopback), IPC, UTS and cgroup. */
#define UNPACK_CLONE_NS (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | \
                         CLONE_NEWCGROUP)
/* What the child cannot do without. A service manager may refuse the
 * other three (the shipped unit: RestrictNamespaces=user mnt pid net,
 * which refuses with EPERM); that unit gives the front, and so the child,
 * IPC and UTS namespaces of its own and a read-only cgroup tree. */
#define UNPACK_CLONE_NS_CORE (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET)

#define TICK_MS 100 /* how often a wait looks at the stop flag */

struct start {
        int fds[3]; /* become UNPACK_FD_ARCHIVE, _TREE, _REPLY */
        int exe;    /* sbx-unpack, O_PATH */
        int devnull;
        char uid_map[32], gid_map[32];
        char *argv[UNPACK_ARGC + 1];
        char *envp[3];
};

/* Between clone and exec the child is a copy of a threaded process: only
 * async-signal-safe calls here, no allocation, no locks. */
static bool write_proc(const char *name, const char *text) {
        int fd = open(name, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        size_t len = strlen(text);
        bool ok = write(fd, text, len) == (ssize_t) len;
        close(fd);
        return ok;
}

_noreturn_ static void child(const struct start *s) {
        int tmp[3];
        sigset_t none;
        /* A front without privilege is not dumpable, and so neither is
         * this copy of it: its /proc files are root's then, and the maps
         * below cannot be written. It has a memory of its own (no
         * CLONE_VM): this changes nothing of the daemon's; sbx-unpack makes
         * itself undumpable again once confined. */
        if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
                _exit(126);
        /* The tree's modes are the ones extraction gives (0555 and 0444:
         * every job uid reads it), whatever the daemon's umask (the
         * shipped unit's is 0077). */
        umask(022);
        /* Mapped before exec: a process whose uid has no mapping loses
         * at exec the capabilities of its namespace that sbx-unpack needs
         * to make its root. setgroups is denied first, or an unprivileged
         * daemon may not map its gid (CVE-2014-8989). */
        if (!write_proc("/proc/self/uid_map", s->uid_map) || !write_proc("/proc/self/setgroups", "deny") ||
            !write_proc("/proc/self/gid_map", s->gid_map))
                _exit(126);
        for (int i = 0; i < 3; i++)
                if ((tmp[i] = fcntl(s->fds[i], F_DUPFD, 10)) < 0)
                        _exit(127);
        int exe = fcntl(s->exe, F_DUPFD_CLOEXEC, 10);
        if (exe < 0)
                _exit(127);
        for (int i = 0; i < 3; i++)
                if (dup2(tmp[i], 3 + i) < 0)
                        _exit(127);
        if (dup3(exe, 6, O_CLOEXEC) < 0 || dup2(s->devnull, 0) < 0 || dup2(s->devnull, 1) < 0)
                _exit(127);
#ifndef __SANITIZE_ADDRESS__
        /* A sanitizer's report goes to the daemon's stderr; else nothing. */
        if (dup2(s->devnull, 2) < 0)
                _exit(127);
#endif
        if (syscall(SYS_close_range, 7u, ~0u, 0u) < 0)
                _exit(127);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        syscall(SYS_execveat, 6, "", s->argv, s->envp, AT_EMPTY_PATH);
        _exit(127);
}

/* sbx-unpack beside the daemon's executable. */
static int open_program(const char *program, struct sbx_error *err) {
        char self[PATH_MAX];
        char path[PATH_MAX + sizeof(UNPACK_PROGRAM)];
        if (!program) {
                ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
                if (n < 0)
                        return sbx_error_set(err, errno, "unpacking: cannot find the daemon's executable");
                self[n] = '\0';
                char *slash = strrchr(self, '/');
                if (slash)
                        *slash = '\0';
                snprintf(path, sizeof(path), "%s/" UNPACK_PROGRAM, self);
                program = path;
        }
        int fd = open(program, O_PATH | O_CLOEXEC);
        return fd < 0 ? sbx_error_set(err, errno, "unpacking: %s", program) : fd;
}

static void reap(int pidfd, siginfo_t *si, bool kill_it) {
        if (kill_it)
                syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        memset(si, 0, sizeof(*si));
        while (waitid((idtype_t) P_PIDFD, (id_t) pidfd, si, WEXITED) < 0 && errno == EINTR)
                ;
}

/* The reply is the child's word, and the child may be the archive's: a
 * message is printable and bounded, an outcome one extract_archive()
 * gives, figures within the limits the daemon set. */
static int judge(struct unpack_reply *rp, const struct unpack_limits *lim, struct extract_stats *st, struct sbx_error *err) {
        rp->msg[sizeof(rp->msg) - 1] = '\0';
        for (char *p = rp->msg; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        *p = '?';
        if (rp->rc > 0 || rp->rc < -4095 || rp->sandbox > 1 || rp->bytes > lim->x.max_bytes ||
            rp->entries > lim->x.max_entries + 1 /* the one past the bound, refused */)
                return sbx_error_msg(err, ECHILD, "unpacking: the sandboxed child sent a malformed reply");
        st->bytes = rp->bytes;
        st->entries = rp->entries;
        if (rp->rc == 0)
                return 0;
        /* A sandbox step that failed is the host's trouble, not the
         * archive's: never a refusal of the bundle. */
        if (rp->sandbox && (rp->rc == -EINVAL || rp->rc == -EFBIG))
                rp->rc = -EPERM;
        err->code = -rp->rc;
        snprintf(err->msg, sizeof(err->msg), "%s", rp->msg[0] ? rp->msg : "unpacking failed");
        return rp->rc;
}

static int outcome(const siginfo_t *si, size_t got, struct unpack_reply *rp, const struct unpack_limits *lim,
                   struct extract_stats *st, struct sbx_error *err) {
        if (si->si_code == CLD_KILLED || si->si_code == CLD_DUMPED) {
                const char *name = sigabbrev_np(si->si_status);
                return sbx_error_msg(err, ECHILD, "unpacking: the sandboxed child was killed by SIG%s%s", name ? name : "?",
                                     si->si_status == SIGSYS ? " (a system call its filter forbids)"
                                     : si->si_status == SIGXCPU ? " (its CPU time limit)"
                                     : si->si_status == SIGKILL ? " (its CPU time limit, or a kill from outside)"
                                                                : "");
        }
        if (si->si_code == CLD_EXITED && si->si_status == 127 && got == 0)
                return sbx_error_msg(err, ENOEXEC, "unpacking: cannot execute " UNPACK_PROGRAM);
        if (si->si_code == CLD_EXITED && si->si_status == 126 && got == 0)
                return sbx_error_msg(err, EPERM, "unpacking: cannot map the sandboxed child's uid and gid");
        if (si->si_code != CLD_EXITED || si->si_status != 0 || got != sizeof(*rp))
                return sbx_error_msg(err, ECHILD, "unpacking: the sandboxed child ended (status %d) without a reply",
                                     si->si_status);
        return judge(rp, lim, st, err);
}

/* A child in new namespaces, as fork() would return it, its pidfd in
 * *pidfd. clone3 first; a seccomp filter cannot read clone3's flags, so
 * one that restricts namespaces (systemd's RestrictNamespaces=) refuses
 * every clone3 with ENOSYS, and then clone(), whose flags it can read,
 * asks again. */
static long clone_child(uint64_t ns, int *pidfd) {
        struct clone_args args;
        memset(&args, 0, sizeof(args));
        args.flags = CLONE_PIDFD | ns;
        args.pidfd = (uint64_t) (uintptr_t) pidfd;
        args.exit_signal = SIGCHLD;
        long pid = syscall(SYS_clone3, &args, sizeof(args));
        if (pid < 0 && errno == ENOSYS)
                pid = syscall(SYS_clone, (unsigned long) (CLONE_PIDFD | ns | SIGCHLD), NULL, pidfd, NULL, 0UL);
        return pid;
}

int unpack_archive(const char *program, int fd, int tree_fd, const struct unpack_limits *lim, const atomic_bool *stop,
                   struct extract_stats *st, struct sbx_error *err) {
        _cleanup_close_ int exe = -1, devnull = -1, rfd = -1, wfd = -1, pidfd = -1;
        char a_bytes[24], a_entries[24], a_path[24], a_cpu[24];
        struct unpack_reply rp;
        char buf[sizeof(rp) + 1]; /* a byte more than a reply: a longer one is refused */
        int p[2];
        memset(st, 0, sizeof(*st));
        if ((exe = open_program(program, err)) < 0)
                return exe;
        if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
                return sbx_error_set(err, errno, "unpacking: /dev/null");
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
                return sbx_error_set(err, errno, "unpacking: pipe");
        rfd = p[0];
        wfd = p[1];
        if (lseek(fd, 0, SEEK_SET) < 0 && errno != ESPIPE) /* a pipe has no offset to rewind */
                return sbx_error_set(err, errno, "unpacking: the archive");
        /* The CPU limit is a backstop behind the wall-clock deadline. */
        snprintf(a_bytes, sizeof(a_bytes), "%" PRIu64, lim->x.max_bytes);
        snprintf(a_entries, sizeof(a_entries), "%" PRIu64, lim->x.max_entries);
        snprintf(a_path, sizeof(a_path), "%zu", lim->x.max_path);
        snprintf(a_cpu, sizeof(a_cpu), "%" PRIu64, lim->timeout_ms / 1000 + 1);
        struct start s = {
                .fds = { fd, tree_fd, wfd },
                .exe = exe,
                .devnull = devnull,
                .argv = { (char *) UNPACK_PROGRAM, a_bytes, a_entries, a_path, a_cpu, NULL },
                .envp = { NULL, NULL, NULL },
        };
        snprintf(s.uid_map, sizeof(s.uid_map), "0 %u 1\n", (unsigned) geteuid());
        snprintf(s.gid_map, sizeof(s.gid_map), "0 %u 1\n", (unsigned) getegid());
#ifdef __SANITIZE_ADDRESS__
        /* The sanitizers' settings (halt on error) hold in the child too. */
        static _Thread_local char env[2][512];
        size_t ne = 0;
        for (const char *const *v = (const char *const[]) { "ASAN_OPTIONS", "UBSAN_OPTIONS", NULL }; *v; v++)
                if (getenv(*v)) {
                        snprintf(env[ne], sizeof(env[ne]), "%s=%s", *v, getenv(*v));
                        s.envp[ne] = env[ne];
                        ne++;
                }
#endif
        uint64_t deadline = now_mono_us() + lim->timeout_ms * 1000;
        long pid = clone_child(UNPACK_CLONE_NS, &pidfd);
        if (pid < 0 && errno == EPERM)
                pid = clone_child(UNPACK_CLONE_NS_CORE, &pidfd);
        if (pid < 0)
                return sbx_error_set(err, errno, "unpacking: cannot start the sandboxed child (new namespaces)");
        if (pid == 0)
                child(&s);
        close(TAKE_FD(wfd));

        size_t got = 0;
        bool eof = false, exited = false, killed = false;
        int r = 0;
        siginfo_t si;
        while (!eof && !exited) {
                uint64_t now = now_mono_us();
                if (atomic_load(stop)) {
                        r = sbx_error_msg(err, ECANCELED, "unpacking stopped");
                        break;
                }
                if (now >= deadline) {
                        r = sbx_error_msg(err, ETIMEDOUT, "unpacking took longer than bundle_extract_timeout (%" PRIu64 " ms)",
                                          lim->timeout_ms);
                        break;
                }
                uint64_t left_ms = (deadline - now + 999) / 1000;
                struct pollfd pf[2] = { { .fd = rfd, .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };
                if (poll(pf, 2, (int) (left_ms < TICK_MS ? left_ms : TICK_MS)) < 0 && errno != EINTR) {
                        r = sbx_error_set(err, errno, "unpacking: poll");
                        break;
                }
                exited = pf[1].revents != 0;
                /* Read what there is, also after the child exited. */
                for (;;) {
                        ssize_t n = read(rfd, buf + got, sizeof(buf) - got);
                        if (n > 0 && got + (size_t) n > sizeof(rp)) {
                                r = sbx_error_msg(err, ECHILD, "unpacking: the sandboxed child sent a malformed reply");
                                break;
                        }
                        if (n > 0) {
                                got += (size_t) n;
                                continue;
                        }
                        eof = n == 0;
                        break;
                }
                if (r < 0)
                        break;
        }
        killed = r < 0;
        reap(pidfd, &si, killed);
        if (killed)
                return r;
        if (got == sizeof(rp))
                memcpy(&rp, buf, sizeof(rp));
        if ((r = outcome(&si, got, &rp, lim, st, err)) < 0)
                return r;
        /* The child's word that the tree is good is not enough. */
        return tree_check(tree_fd, &lim->x, st, err);
}
