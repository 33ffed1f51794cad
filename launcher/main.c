/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-launch: the top level. Parses the command line into a profile, clones
 * pid 1 of the new namespaces, then waits for it with the timeout while
 * forwarding signals, and finally reports how the command ended. Only this
 * layer prints and exits; the modules below return errors. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/sched.h>

#include "launch.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

int launch_status_fd = -1;
struct launch *launch_current;

void die(const char *step, const char *fmt, ...) {
        char msg[SBX_ERROR_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (launch_current)
                pty_restore(&launch_current->pty);
        fprintf(stderr, "sbx-launch: %s: %s\n", step, msg);
        status_error(launch_status_fd, step, msg);
        /* Freed so that a sanitizer build reports real leaks only. */
        if (launch_current)
                profile_free(&launch_current->profile);
        exit(SBX_EXIT_SETUP);
}

void die_error(const char *step, const struct sbx_error *err) {
        die(step, "%s", err->msg);
}

static uint64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* clone3 with CLONE_PIDFD gives us the pidfd without a race; fall back to
 * clone + pidfd_open where clone3 is filtered (e.g. inside another sandbox
 * whose seccomp policy answers ENOSYS so that libc falls back). */
static pid_t clone_sandbox(unsigned long flags, int *ret_pidfd) {
        int pidfd = -1;
        struct clone_args args = {
                .flags = flags | CLONE_PIDFD,
                .pidfd = (uint64_t) (uintptr_t) &pidfd,
                .exit_signal = SIGCHLD,
        };
        long pid = syscall(SYS_clone3, &args, sizeof(args));
        if (pid >= 0 || errno != ENOSYS) {
                *ret_pidfd = pidfd;
                return (pid_t) pid;
        }
        pid = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
        if (pid <= 0) {
                *ret_pidfd = -1;
                return (pid_t) pid;
        }
        *ret_pidfd = (int) syscall(SYS_pidfd_open, (pid_t) pid, 0);
        if (*ret_pidfd < 0) {
                int e = errno;
                kill((pid_t) pid, SIGKILL);
                waitpid((pid_t) pid, NULL, 0);
                errno = e;
                return -1;
        }
        return (pid_t) pid;
}

struct watch {
        bool ready;              /* REPORT_READY received */
        bool exec_failed;
        bool started;            /* start record written */
        bool setup_failed;
        bool sock_open;
        pid_t command_pid;
        struct report last_error;
        struct protections prot;
        uint64_t limits[LIMIT_COUNT];
};

/* Read every message queued on the report socket without blocking. */
static void drain_reports(struct launch *l, int sock, struct watch *w) {
        while (w->sock_open) {
                struct report r;
                char cbuf[CMSG_SPACE(sizeof(struct ucred))];
                struct iovec iov = { .iov_base = &r, .iov_len = sizeof(r) };
                struct msghdr mh = {
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = cbuf,
                        .msg_controllen = sizeof(cbuf),
                };
                ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return;
                        n = 0; /* treat errors like the sandbox going away */
                }
                if (n == 0) {
                        /* Every copy is closed: pid 1 has forked the command
                         * and the command's copy closed on a successful exec. */
                        w->sock_open = false;
                        if (w->ready && !w->exec_failed && !w->started) {
                                status_start(l->status_fd, w->command_pid, &l->profile, &w->prot);
                                w->started = true;
                        }
                        return;
                }
                if ((size_t) n != sizeof(r))
                        continue;
                r.step[sizeof(r.step) - 1] = '\0';
                r.msg[sizeof(r.msg) - 1] = '\0';
                switch (r.type) {
                case REPORT_ERROR:
                        if (!w->setup_failed) {
                                w->setup_failed = true;
                                w->last_error = r;
                        }
                        break;
                case REPORT_READY:
                        w->ready = true;
                        w->prot = r.prot;
                        memcpy(w->limits, r.limits, sizeof(w->limits));
                        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                                        struct ucred uc;
                                        memcpy(&uc, CMSG_DATA(c), sizeof(uc));
                                        w->command_pid = uc.pid;
                                }
                        break;
                case REPORT_EXEC_FAILED:
                        w->exec_failed = true;
                        w->last_error = r;
                        break;
                default:
                        break;
                }
        }
}

/* The launcher's side of one sandbox. */
struct sandbox {
        pid_t pid;                 /* pid 1 of the sandbox, as seen from here */
        int pidfd;
        int report;                /* our end of the report socket */
        int exit_pipe;             /* pid 1 writes the command's wait status here */
        int sigfd;                 /* forwarded signals, and SIGWINCH with a pty */
        int info_pipe[2];          /* --info-fd: holds pid 1 until the record is written */
        uint64_t start_ms;
        uint64_t deadline_ms;      /* 0: no timeout */
};

/* The report socket and exit pipe (the sandbox's ends in ret_child), the
 * signal descriptor and, with --info-fd, the pipe that holds pid 1. */
static void open_channels(struct launch *l, struct sandbox *sb, int ret_child[2]) {
        int sv[2], ep[2], one = 1;
        sigset_t set;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                die("socketpair", "%s", strerror(errno));
        /* The kernel then attaches the sender's pid, translated into our pid
         * namespace: that is how we learn the command's pid as seen outside. */
        if (setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
                die("socketpair", "SO_PASSCRED: %s", strerror(errno));
        if (pipe2(ep, O_CLOEXEC) < 0)
                die("pipe", "%s", strerror(errno));
        sb->report = sv[0];
        sb->exit_pipe = ep[0];
        ret_child[0] = sv[1];
        ret_child[1] = ep[1];

        sigemptyset(&set);
        init_add_forwarded(&set);
        if (l->pty.master >= 0)
                sigaddset(&set, SIGWINCH);
        /* Blocked before clone so that pid 1 inherits the block and queues
         * anything sent before its loop runs. */
        if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
                die("signals", "%s", strerror(errno));
        sb->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sb->sigfd < 0)
                die("signalfd", "%s", strerror(errno));

        /* With --info-fd, pid 1 waits until the record is written: the
         * namespace ids are read from /proc/PID/ns, which stops answering
         * once pid 1 makes itself non-dumpable. */
        sb->info_pipe[0] = sb->info_pipe[1] = -1;
        if (l->info_fd >= 0 && pipe2(sb->info_pipe, O_CLOEXEC) < 0)
                die("pipe", "%s", strerror(errno));
}

/* In the clone: drop the launcher's ends, wait for --info-fd, build the
 * sandbox. */
static _noreturn_ void enter_sandbox(struct launch *l, struct sandbox *sb, const int child[2]) {
        close(sb->report);
        close(sb->exit_pipe);
        close(sb->sigfd);
        closep(&l->pty.master);
        if (sb->info_pipe[0] >= 0) {
                char c;
                close(sb->info_pipe[1]);
                while (read(sb->info_pipe[0], &c, 1) < 0 && errno == EINTR)
                        ;
                close(sb->info_pipe[0]);
        }
        l->report_fd = child[0];
        l->exit_fd = child[1];
        sandbox_main(l);
}

static void start_sandbox(struct launch *l, struct sandbox *sb) {
        struct sbx_error err = { 0 };
        int child[2];

        if (pty_wanted(&l->profile)) {
                if (pty_open(&l->pty, &err) < 0)
                        die_error("terminal", &err);
        } else
                pty_save_caller(&l->pty);
        open_channels(l, sb, child);
        sb->start_ms = now_ms();
        if (l->profile.limits.timeout_ms != PROFILE_UNSET && l->profile.limits.timeout_ms > 0)
                sb->deadline_ms = sb->start_ms + l->profile.limits.timeout_ms;

        fflush(NULL);
        sb->pid = clone_sandbox(ns_clone_flags(&l->profile), &sb->pidfd);
        if (sb->pid < 0) {
                int e = errno;
                sbx_error_set(&err, e, "clone");
                if (e == EPERM || e == ENOSPC || e == EINVAL)
                        sbx_error_wrap(&err, "namespaces (are unprivileged user namespaces enabled?)");
                die_error("namespaces", &err);
        }
        if (sb->pid == 0)
                enter_sandbox(l, sb, child);

        close(child[0]);
        close(child[1]);
        /* pid 1 holds these now; our copies must go so that the other end
         * sees end-of-file exactly when the sandbox ends. */
        if (l->sync_fd > 2)
                close(l->sync_fd);
        if (l->block_fd > 2)
                close(l->block_fd);
        if (l->info_fd >= 0) {
                close(sb->info_pipe[0]);
                ns_write_info(l->info_fd, sb->pid);
                if (l->info_fd > 2)
                        close(l->info_fd);
                close(sb->info_pipe[1]);
        }
        if (l->pty.master >= 0 && pty_start(&l->pty, &err) < 0) {
                syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
                die_error("terminal", &err);
        }
}

static void take_signals(struct launch *l, struct sandbox *sb) {
        struct signalfd_siginfo si;
        while (read(sb->sigfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                if (si.ssi_signo == SIGWINCH)
                        pty_resize(&l->pty);
                else
                        syscall(SYS_pidfd_send_signal, sb->pidfd, (int) si.ssi_signo, NULL, 0);
        }
}

/* Until pid 1 exits: reports, signals, the timeout and the terminal. */
static void watch_sandbox(struct launch *l, struct sandbox *sb, struct watch *w, struct run_result *res) {
        enum { P_REPORT, P_PID, P_SIGNAL, P_PTY };
        struct pollfd pfd[P_PTY + PTY_POLL_COUNT];

        for (;;) {
                int timeout_ms = -1;
                if (sb->deadline_ms) {
                        uint64_t t = now_ms();
                        uint64_t left_ms = t >= sb->deadline_ms ? 0 : sb->deadline_ms - t;
                        timeout_ms = left_ms > INT32_MAX ? INT32_MAX : (int) left_ms;
                }
                pfd[P_REPORT] = (struct pollfd) { .fd = w->sock_open ? sb->report : -1, .events = POLLIN };
                pfd[P_PID] = (struct pollfd) { .fd = sb->pidfd, .events = POLLIN };
                pfd[P_SIGNAL] = (struct pollfd) { .fd = sb->sigfd, .events = POLLIN };
                size_t n_pfd = P_PTY + pty_poll_set(&l->pty, pfd + P_PTY);
                int n = poll(pfd, n_pfd, timeout_ms);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        die("wait", "poll: %s", strerror(errno));
                }
                if (n == 0) {
                        /* Killing pid 1 makes the kernel kill every process of
                         * its pid namespace, double-forked and setsid'd ones
                         * included. */
                        syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
                        res->timed_out = true;
                        sb->deadline_ms = 0;
                        continue;
                }
                if (pfd[P_REPORT].revents)
                        drain_reports(l, sb->report, w);
                if (pfd[P_SIGNAL].revents & POLLIN)
                        take_signals(l, sb);
                if (n_pfd > P_PTY)
                        pty_pump(&l->pty, pfd + P_PTY);
                if (pfd[P_PID].revents)
                        return;
        }
}

static uint64_t timeval_ms(struct timeval tv) {
        return (uint64_t) tv.tv_sec * 1000 + (uint64_t) tv.tv_usec / 1000;
}

/* Reap pid 1 and decide how the command ended. */
static int sandbox_result(struct launch *l, struct sandbox *sb, struct watch *w, struct run_result *res) {
        int st;
        struct rusage ru;
        while (wait4(sb->pid, &st, 0, &ru) < 0)
                if (errno != EINTR)
                        die("wait", "%s", strerror(errno));
        res->wall_ms = now_ms() - sb->start_ms;
        res->cpu_ms = timeval_ms(ru.ru_utime) + timeval_ms(ru.ru_stime);
        res->peak_rss_kb = (uint64_t) ru.ru_maxrss;
        drain_reports(l, sb->report, w);

        struct init_exit ex = { 0 };
        bool have_cmd_status = read(sb->exit_pipe, &ex, sizeof(ex)) == (ssize_t) sizeof(ex);
        int cmd_status = ex.status;
        res->peak_vm_kb = ex.peak_vm_kb;

        res->have_prot = w->ready;
        res->prot = w->prot;
        memcpy(res->limits, w->limits, sizeof(res->limits));
        res->outer_uid = l->outer_uid;
        if (res->timed_out) {
                res->exit_code = SBX_EXIT_TIMEOUT;
                res->signal = SIGKILL;
        } else if (w->setup_failed) {
                fprintf(stderr, "sbx-launch: %s: %s\n", w->last_error.step, w->last_error.msg);
                status_error(l->status_fd, w->last_error.step, w->last_error.msg);
                return SBX_EXIT_SETUP;
        } else if (have_cmd_status) {
                if (WIFSIGNALED(cmd_status)) {
                        res->signal = WTERMSIG(cmd_status);
                        res->exit_code = SBX_EXIT_FOR_SIGNAL(res->signal);
                } else {
                        res->exit_code = WEXITSTATUS(cmd_status);
                }
        } else if (WIFSIGNALED(st)) {
                /* pid 1 itself was killed from outside (OOM killer, an
                 * administrator): the command went with it. */
                res->signal = WTERMSIG(st);
                res->exit_code = SBX_EXIT_FOR_SIGNAL(res->signal);
        } else {
                res->exit_code = WEXITSTATUS(st);
                if (!w->ready && res->exit_code == SBX_EXIT_SETUP) {
                        const char *m = "sandbox ended during setup without a report";
                        fprintf(stderr, "sbx-launch: setup: %s\n", m);
                        status_error(l->status_fd, "setup", m);
                        return SBX_EXIT_SETUP;
                }
        }
        if (w->exec_failed)
                fprintf(stderr, "sbx-launch: %s: %s\n", w->last_error.step, w->last_error.msg);
        if (w->ready && !w->exec_failed && !w->started)
                status_start(l->status_fd, w->command_pid, &l->profile, &w->prot);
        status_end(l->status_fd, &l->profile, res);
        return res->exit_code;
}

static int run(struct launch *l) {
        struct sandbox sb = { .pid = -1 };
        struct watch w = { .sock_open = true };
        struct run_result res = { 0 };

        l->outer_uid = getuid();
        l->outer_gid = getgid();
        start_sandbox(l, &sb);
        watch_sandbox(l, &sb, &w, &res);
        /* The terminal first: messages below go to the caller's own. */
        pty_finish(&l->pty);
        return sandbox_result(l, &sb, &w, &res);
}

int main(int argc, char **argv) {
        struct launch l = {
                .status_fd = -1,
                .info_fd = -1,
                .block_fd = -1,
                .sync_fd = -1,
                .report_fd = -1,
                .exit_fd = -1,
        };

        /* A caller that ignores SIGCHLD would make the kernel reap pid 1
         * for us and lose its status; one that ignores SIGPIPE is what we
         * want for writes to a closed status fd anyway. */
        signal(SIGCHLD, SIG_DFL);
        signal(SIGPIPE, SIG_IGN);

        /* sbx-launch is built to be run by the user it sandboxes; a setuid
         * or setgid install would hand every caller its privileges during
         * setup (profiles from any path, mounts of any source). */
        if (geteuid() != getuid() || getegid() != getgid()) {
                fprintf(stderr, "sbx-launch: refusing to run setuid or setgid\n");
                return SBX_EXIT_SETUP;
        }

        pty_init(&l.pty);
        launch_current = &l;
        cli_parse(&l, argc, argv);

        int r = 0;
        if (l.print_profile) {
                /* profile_write flushes and answers -errno itself. */
                r = profile_write(&l.profile, stdout);
                if (r < 0)
                        die("print-profile", "%s", strerror(-r));
        } else if (!l.check)
                r = run(&l);
        profile_free(&l.profile);
        return r;
}
