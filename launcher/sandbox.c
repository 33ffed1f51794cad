/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the new namespaces: pid 1 builds the sandbox (id maps, hostname,
 * root filesystem, loopback, hardening), then starts the command's process
 * and becomes its init. The command's process sets limits, environment
 * and working directory, applies the last hardening step, reports what was
 * applied and executes the command. Errors travel to the launcher over the
 * report socket; only the launcher prints them. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "launch.h"

extern char **environ;

static void report(int fd, int type, const char *step, const struct sbx_error *err,
                   const struct protections *prot, const uint64_t *limits) {
        struct report r = { .type = type };
        if (step)
                snprintf(r.step, sizeof(r.step), "%s", step);
        if (err)
                snprintf(r.msg, sizeof(r.msg), "%s", err->msg);
        if (prot)
                r.prot = *prot;
        if (limits)
                memcpy(r.limits, limits, sizeof(r.limits));
        /* write(), not send(): it is the one call every seccomp policy
         * allows right before execve. */
        if (write(fd, &r, sizeof(r)) != (ssize_t) sizeof(r) && type != REPORT_READY)
                dprintf(STDERR_FILENO, "sbx-launch: %s: %s\n", r.step, r.msg);
}

static _noreturn_ void fail(struct launch *l, const char *step, const struct sbx_error *err) {
        report(l->report_fd, REPORT_ERROR, step, err, NULL, NULL);
        _exit(SBX_EXIT_SETUP);
}

static void reset_signals(void) {
        sigset_t none;
        /* The kernel's struct: glibc's sigaction() refuses the two
         * real-time signals it reserves for itself (32 and 33), yet a
         * caller may have left them ignored and that would survive exec. */
        struct {
                void *handler;
                unsigned long flags;
                void *restorer;
                uint64_t mask;
        } ksa = { .handler = SIG_DFL };
        /* Ignored signals survive execve; a job must start from defaults
         * whatever its caller ignored or blocked. */
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        syscall(SYS_rt_sigaction, sig, &ksa, NULL, sizeof(ksa.mask));
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
}

/* die-with-parent: the death signal must be set after the last credential
 * change (a change clears it), and the parent may already be gone by the
 * time it is set, so look again afterwards. */
static void die_with_parent(pid_t expected_ppid, int parent_sock) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                _exit(SBX_EXIT_SETUP);
        if (expected_ppid > 0) {
                if (getppid() != expected_ppid)
                        _exit(SBX_EXIT_SETUP);
                return;
        }
        /* Our parent is outside our pid namespace, where getppid() says 0:
         * the launcher's end of the report socket tells us instead. */
        struct pollfd pfd = { .fd = parent_sock, .events = POLLRDHUP };
        if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLRDHUP)))
                _exit(SBX_EXIT_SETUP);
}

static _noreturn_ void command_main(struct launch *l, struct protections *prot, pid_t init_pid) {
        const struct profile *p = &l->profile;
        struct sbx_error err = { 0 };

        close(l->exit_fd);
        if (l->sync_fd >= 0)
                close(l->sync_fd);
        reset_signals();
        if (p->new_session && setsid() < 0) {
                sbx_error_set(&err, errno, "setsid");
                fail(l, "session", &err);
        }
        if (l->pty.slave >= 0 && pty_attach(&l->pty, &err) < 0)
                fail(l, "terminal", &err);
        if (p->die_with_parent)
                die_with_parent(init_pid, -1);
        if (limits_apply(p, &err) < 0)
                fail(l, "limits", &err);
        uint64_t limits[LIMIT_COUNT];
        limits_read_back(limits);
        char **envp = env_build(p, environ, &err);
        if (!envp)
                fail(l, "env", &err);
        const char *dir = rootfs_chdir(p);
        if (chdir(dir) < 0) {
                sbx_error_set(&err, errno, "%s", dir);
                fail(l, "chdir", &err);
        }
        if (harden_exec(p, l->pass_fds, l->n_pass_fds, prot, &err) < 0)
                fail(l, "harden", &err);

        report(l->report_fd, REPORT_READY, NULL, NULL, prot, limits);
        environ = envp;
        execvp(l->argv[0], l->argv);
        int e = errno;
        sbx_error_set(&err, e, "%s", l->argv[0]);
        report(l->report_fd, REPORT_EXEC_FAILED, "exec", &err, prot, limits);
        _exit(e == ENOENT ? SBX_EXIT_NOTFOUND : SBX_EXIT_NOEXEC);
}

/* The command's process gets a stack of its own, with a page below it
 * that faults instead of running into other memory: this much for our
 * own frames, plus a pointer per argument, which execvp(3) copies onto
 * the stack when it runs a file without "#!" through /bin/sh. */
#define COMMAND_STACK_BASE (1024 * 1024)

struct command_start {
        struct launch *l;
        struct protections *prot;
        pid_t init_pid;
};

static int command_entry(void *arg) {
        struct command_start *c = arg;
        command_main(c->l, c->prot, c->init_pid);
}

/* The command's process shares pid 1's memory until it executes the
 * command (clone with CLONE_VM | CLONE_VFORK, as posix_spawn(3) starts a
 * program): nothing of pid 1's address space is copied or made
 * copy-on-write, and the exec has no copy to tear down. pid 1 sleeps
 * until that exec (or the process's exit), so the two never run on the
 * shared memory at once; what the child leaves there (its allocations,
 * errno) pid 1 never reads. Everything the child changes about itself
 * (credentials, limits, Landlock, the filter, its descriptors, its
 * working directory, its signal actions) belongs to its own task: none
 * of CLONE_FILES, CLONE_FS, CLONE_SIGHAND or CLONE_THREAD is set. */
static pid_t spawn_command(struct launch *l, struct protections *prot) {
        struct command_start c = { .l = l, .prot = prot, .init_pid = getpid() };
#ifdef __SANITIZE_ADDRESS__
        /* AddressSanitizer knows one stack per thread and cannot follow a
         * process that runs on another in the same memory: a sanitizer
         * build forks, and runs the same command_main. */
        pid_t child = fork();
        if (child == 0)
                command_entry(&c);
        return child;
#else
        size_t guard = (size_t) sysconf(_SC_PAGESIZE), argc = 0;
        while (l->argv[argc])
                argc++;
        size_t size = COMMAND_STACK_BASE + (argc + 3) * sizeof(char *);
        size = (size + guard - 1) / guard * guard;
        char *stack = mmap(NULL, size + guard, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
        if (stack == MAP_FAILED)
                return -1;
        if (mprotect(stack, guard, PROT_NONE) < 0) {
                int e = errno;
                munmap(stack, size + guard);
                errno = e;
                return -1;
        }
        pid_t pid = clone(command_entry, stack + guard + size, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
        int e = errno;
        munmap(stack, size + guard);
        errno = e;
        return pid;
#endif
}

void sandbox_main(struct launch *l) {
        const struct profile *p = &l->profile;
        struct protections prot = { 0 };
        struct sbx_error err = { 0 };
        const char *step;
        sigset_t chld;

        /* Only the launcher writes these; a copy held here would keep a
         * reader waiting for end-of-file until the sandbox ends. */
        if (l->info_fd > 2)
                close(l->info_fd);
        if (l->status_fd > 2 && l->status_fd != l->sync_fd && l->status_fd != l->block_fd)
                close(l->status_fd);
        /* Blocked from the start so that no SIGCHLD is lost before the
         * init loop waits for it. */
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &chld, NULL);

        uid_t uid = p->uid == PROFILE_ID_SAME ? l->outer_uid : p->uid;
        gid_t gid = p->gid == (gid_t) PROFILE_ID_SAME ? l->outer_gid : p->gid;
        if (ns_write_maps(uid, l->outer_uid, gid, l->outer_gid, &err) < 0)
                fail(l, "uid-map", &err);
        if (p->die_with_parent)
                die_with_parent(0, l->report_fd);

        if (p->namespaces & PROFILE_NS_UTS) {
                const char *h = p->hostname ? p->hostname : "sbx";
                if (sethostname(h, strlen(h)) < 0) {
                        sbx_error_set(&err, errno, "%s", h);
                        fail(l, "hostname", &err);
                }
        }
        if (rootfs_setup(p, &l->pty, &prot, &step, &err) < 0)
                fail(l, step, &err);
        if ((p->namespaces & PROFILE_NS_NET) && net_loopback_up(&err) < 0)
                fail(l, "network", &err);
        if (harden_sandbox(p, &prot, &err) < 0)
                fail(l, "harden", &err);

        if (l->block_fd >= 0) {
                char c;
                ssize_t n;
                while ((n = read(l->block_fd, &c, 1)) < 0 && errno == EINTR)
                        ;
                if (n != 1) {
                        sbx_error_msg(&err, n < 0 ? errno : EPIPE, "block-fd %d: %s", l->block_fd,
                                      n < 0 ? strerror(errno) : "closed before a byte was written");
                        fail(l, "block-fd", &err);
                }
                close(l->block_fd);
                l->block_fd = -1;
        }

        pid_t pid = spawn_command(l, &prot);
        if (pid < 0) {
                sbx_error_set(&err, errno, "clone");
                fail(l, "fork", &err);
        }
        close(l->report_fd);
        closep(&l->pty.slave);
        /* With a memory rlimit, the record gets the processes' peak
         * address space: what that limit counts. */
        init_run(pid, l->exit_fd, p->namespaces & PROFILE_NS_PID, limits_memory_rlimited(p));
}
