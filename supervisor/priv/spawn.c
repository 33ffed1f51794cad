/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch-abi.h"
#include "spawn.h"
#include "util.h"

/* Where the child keeps the report pipe, next to the launcher's 0..4. */
#define SPAWN_ERR_FD SPAWN_FDS

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* The child shares the daemon's memory (CLONE_VM, as posix_spawn(3)
 * does) on a stack of its own until it execs, with the daemon's thread
 * suspended (CLONE_VFORK): so raw system calls only, no library state (no
 * errno of its own, no locks, no sanitizer's interceptors), and nothing
 * written but its own stack and the report. A fork of the daemon instead
 * copied its page tables and made all its memory copy-on-write once per
 * job (about 5 ms of the loop's time, and faults after). */
#define SPAWN_STACK (64 * 1024)

struct spawn_child {
        const struct spawn_params *p;
        pid_t parent;
};

/* The report is two ints, written with one write(). */
_noreturn_ static void fail(const struct spawn_params *p, enum spawn_step step, long err, int code) {
        struct spawn_report r = { .step = step, .err = (int) -err };
        if (p->err_fd >= 0)
                (void) syscall(SYS_write, SPAWN_ERR_FD, &r, sizeof(r));
        syscall(SYS_exit, code);
        __builtin_unreachable();
}

/* The same before the descriptors are moved: the report pipe is still
 * where the daemon has it. */
_noreturn_ static void fail_early(const struct spawn_params *p, enum spawn_step step, long err) {
        struct spawn_report r = { .step = step, .err = (int) -err };
        if (p->err_fd >= 0)
                (void) syscall(SYS_write, p->err_fd, &r, sizeof(r));
        syscall(SYS_exit, SBX_EXIT_SETUP);
        __builtin_unreachable();
}

/* A raw call's result: -errno on failure (syscall() sets errno, which here
 * is the daemon thread's: read at once, before anything else can). */
static long sys(long r) {
        return r < 0 ? -errno : r;
}

/* The kernel's struct sigaction for rt_sigaction(2). */
struct ksigaction {
        void (*handler)(int);
        unsigned long flags;
        void (*restorer)(void);
        uint64_t mask;
};

static int child(void *arg) {
        const struct spawn_child *c = arg;
        const struct spawn_params *p = c->p;
        int hi[SPAWN_FDS];
        long r;

        /* The daemon blocks signals for its signalfd and ignores SIGPIPE;
         * the launcher must start with the defaults. (Without
         * CLONE_SIGHAND the child has its own copy of the dispositions.) */
        for (int sig = 1; sig < 65; sig++) {
                struct ksigaction sa = { .handler = SIG_DFL };
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void) syscall(SYS_rt_sigaction, sig, &sa, NULL, sizeof(uint64_t));
        }
        uint64_t none = 0;
        (void) syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(none));

        /* Into the job's cgroup first (its descriptor is closed below) and
         * before anything of the job runs: writing 0 to cgroup.procs moves
         * the writer. (clone(2) cannot take CLONE_INTO_CGROUP; clone3
         * cannot start a function on a stack of its own without assembly.) */
        if (p->cgroup_fd >= 0) {
                long fd = sys(syscall(SYS_openat, p->cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC));
                if (fd < 0)
                        fail_early(p, SPAWN_STEP_CGROUP, fd);
                r = sys(syscall(SYS_write, (int) fd, "0", 1));
                (void) syscall(SYS_close, (int) fd);
                if (r < 0)
                        fail_early(p, SPAWN_STEP_CGROUP, r);
        }

        /* Move sources out of 0..SPAWN_FDS first so no dup clobbers
         * another; the report pipe lands on SPAWN_FDS, close-on-exec. */
        for (int i = 0; i < SPAWN_FDS; i++)
                hi[i] = p->fds[i] >= 0 ? (int) syscall(SYS_fcntl, p->fds[i], F_DUPFD_CLOEXEC, 64) : -1;
        if (p->err_fd >= 0) {
                long e = syscall(SYS_fcntl, p->err_fd, F_DUPFD_CLOEXEC, 64);
                if (e < 0 || syscall(SYS_dup3, (int) e, SPAWN_ERR_FD, O_CLOEXEC) < 0)
                        syscall(SYS_exit, SBX_EXIT_SETUP);
        }
        for (int i = 0; i < SPAWN_FDS; i++) {
                if (hi[i] >= 0) {
                        if ((r = sys(syscall(SYS_dup3, hi[i], i, 0))) < 0)
                                fail(p, SPAWN_STEP_FDS, r, SBX_EXIT_SETUP);
                } else if (i < 3) {
                        long n = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDWR);
                        if (n >= 0 && n != i) {
                                (void) syscall(SYS_dup3, (int) n, i, 0);
                                (void) syscall(SYS_close, (int) n);
                        }
                } else
                        (void) syscall(SYS_close, i);
        }
        (void) syscall(SYS_close_range, p->err_fd >= 0 ? SPAWN_ERR_FD + 1U : (unsigned) SPAWN_FDS, ~0U, 0U);

        (void) syscall(SYS_setsid);
        /* Raw system calls, not glibc's setgroups/setresgid/setresuid: in a
         * multithreaded process those broadcast the change to every thread
         * glibc knows of (the daemon's syncer thread), which are not ours
         * to signal. The kernel changes this task only. */
        if (syscall(SYS_geteuid) == 0) {
                if ((r = sys(syscall(SYS_setgroups, 1, &p->gid))) < 0 || (r = sys(syscall(SYS_setresgid, p->gid, p->gid, p->gid))) < 0 ||
                    (r = sys(syscall(SYS_setresuid, p->uid, p->uid, p->uid))) < 0)
                        fail(p, SPAWN_STEP_IDS, r, SBX_EXIT_SETUP);
                if (p->uid == 0)
                        fail(p, SPAWN_STEP_IDS, -EPERM, SBX_EXIT_SETUP);
        } else if (p->uid != (uid_t) syscall(SYS_geteuid)) {
                /* An unprivileged daemon (a developer trying it out) can
                 * only run jobs as itself. */
                fail(p, SPAWN_STEP_IDS, -EPERM, SBX_EXIT_SETUP);
        }
        /* Credential changes clear the parent-death signal, so set it now;
         * then make sure the daemon did not die before we asked. A
         * session's box goes on without the daemon, which finds it again
         * after a restart (its agent's socket, the journal's pid). */
        if (!p->outlive)
                (void) syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (syscall(SYS_getppid) != c->parent)
                fail(p, SPAWN_STEP_PARENT, -ESRCH, SBX_EXIT_SETUP);
        if ((r = sys(syscall(SYS_chdir, "/"))) < 0)
                fail(p, SPAWN_STEP_FDS, r, SBX_EXIT_SETUP);
        r = sys(syscall(SYS_execve, p->path, p->argv, p->envp));
        fail(p, SPAWN_STEP_EXEC, r, r == -ENOENT ? SBX_EXIT_NOTFOUND : SBX_EXIT_NOEXEC);
}

void spawn_report_format(const struct spawn_report *r, char *buf, size_t len) {
        static const char *const what[] = {
                [SPAWN_STEP_FDS] = "cannot set up the launcher's descriptors",
                [SPAWN_STEP_IDS] = "cannot switch to the job uid",
                [SPAWN_STEP_PARENT] = "the daemon went away before the launcher started",
                [SPAWN_STEP_EXEC] = "cannot execute the launcher",
                [SPAWN_STEP_CGROUP] = "cannot enter the job's cgroup",
        };
        const char *w = r->step > 0 && (size_t) r->step < ARRAY_SIZE(what) ? what[r->step] : "cannot start the launcher";
        snprintf(buf, len, "%s: %s", w, strerror(r->err));
}

int spawn_launcher(const struct spawn_params *p, pid_t *ret_pid, int *ret_pidfd) {
        int pidfd = -1;
        struct spawn_child c = { .p = p, .parent = getpid() };
        void *stack = mmap(NULL, SPAWN_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED)
                return -errno;
        /* The calling thread waits until the child has exec'd or exited;
         * the pidfd (close-on-exec) is stored at the parent_tid pointer. */
        pid_t pid = clone(child, (char *) stack + SPAWN_STACK, CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &c, &pidfd);
        int r = pid < 0 ? -errno : 0;
        munmap(stack, SPAWN_STACK);
        if (r < 0)
                return r;
        *ret_pid = pid;
        *ret_pidfd = pidfd;
        return 0;
}

/* Rounds of kill(-1) before giving up, with a pause between them that
 * grows from 1 ms to KILL_UID_PAUSE_MAX_MS (about 2 s in all): a killed
 * process counts until its parent (or the daemon, its subreaper) has
 * reaped it. RLIMIT_NPROC bounds how many a job can fork in between. */
#define KILL_UID_ROUNDS 80
#define KILL_UID_PAUSE_MAX_MS 32

#define KILL_UID_STACK (64 * 1024)
#define KILL_UID_PROBE_STACK (8 * 1024) /* the probe's, at the bottom of the child's mapping */

struct kill_uid {
        uid_t uid;
        gid_t gid;
        pid_t parent; /* the daemon */
        char *stack;  /* KILL_UID_STACK bytes */
};

static int probe_child(void *arg) {
        (void) arg;
        syscall(SYS_exit, 0);
        return 0;
}

/* Is the caller the only task of its real uid? kill(-1) cannot tell: Linux
 * answers 0 whenever any other process exists, even one the caller may not
 * signal, and ESRCH only when there is none at all. The kernel's count of a
 * real uid's tasks can (it holds zombies until they are reaped, and the
 * tasks of user namespaces the uid created): a fork that would take it
 * above RLIMIT_NPROC fails with EAGAIN for a caller without
 * CAP_SYS_RESOURCE, so with the limit at 2 the caller's fork succeeds only
 * while it is the uid's one task. */
static bool uid_alone(const struct kill_uid *k) {
        struct rlimit rl = { .rlim_cur = 2, .rlim_max = 2 };
        if (syscall(SYS_prlimit64, 0, RLIMIT_NPROC, &rl, NULL) < 0)
                return false;
        pid_t pid = clone(probe_child, k->stack + KILL_UID_PROBE_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
        if (pid < 0)
                return false;
        while (syscall(SYS_wait4, pid, NULL, 0, NULL) < 0 && errno == EINTR)
                ;
        return true;
}

/* The child of spawn_kill_uid(): it shares the daemon's memory, on a
 * stack of its own, so raw system calls only (no library state, no
 * sanitizer's interceptor), as in child(), and clone(2)'s own wrapper for
 * the probe, which keeps no state either; the daemon has no signal
 * handlers (its signals arrive on a signalfd), so nothing else runs here.
 * Switching to the uid drops every capability, which uid_alone() needs. */
static int kill_uid_child(void *arg) {
        const struct kill_uid *k = arg;
        if (syscall(SYS_setgroups, 1, &k->gid) < 0 || syscall(SYS_setresgid, k->gid, k->gid, k->gid) < 0 ||
            syscall(SYS_setresuid, k->uid, k->uid, k->uid) < 0)
                syscall(SYS_exit, 2);
        /* It ends with the daemon: it holds a copy of every descriptor,
         * the state directory's lock among them, and a daemon restarted
         * at once would find it taken for up to two seconds. (Set after
         * the uid change, which clears it; the parent may be gone
         * already.) */
        if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || syscall(SYS_getppid) != k->parent)
                syscall(SYS_exit, 1);
        long pause_ms = 1;
        for (int i = 0; i < KILL_UID_ROUNDS; i++) {
                syscall(SYS_kill, -1, SIGKILL);
                if (uid_alone(k))
                        syscall(SYS_exit, 0);
                struct timespec ts = { .tv_sec = 0, .tv_nsec = pause_ms * 1000000L };
                syscall(SYS_nanosleep, &ts, NULL);
                if (pause_ms < KILL_UID_PAUSE_MAX_MS)
                        pause_ms *= 2;
        }
        syscall(SYS_exit, 1);
        return 1;
}

int spawn_kill_uid(uid_t uid, gid_t gid) {
        if (uid == 0 || geteuid() != 0)
                return -EPERM;
        /* CLONE_VM | CLONE_VFORK, as posix_spawn(3) does: a fork() of the
         * daemon copied its page tables and made every page copy-on-write
         * (faults and TLB shootdowns for all its threads) once per job, for
         * a child that only makes a few system calls. The calling thread
         * waits until the child exits. */
        void *stack = mmap(NULL, KILL_UID_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED)
                return -errno;
        struct kill_uid k = { .uid = uid, .gid = gid, .parent = getpid(), .stack = stack };
        pid_t pid = clone(kill_uid_child, k.stack + KILL_UID_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, &k);
        int r = pid < 0 ? -errno : 0;
        munmap(stack, KILL_UID_STACK);
        if (r < 0)
                return r;
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (!WIFEXITED(st))
                return -EIO;
        return WEXITSTATUS(st) == 0 ? 0 : WEXITSTATUS(st) == 2 ? -EPERM : -EAGAIN;
}
