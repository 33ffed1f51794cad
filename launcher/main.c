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

static const int forwarded_signals[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

void die(const char *step, const char *fmt, ...) {
        int saved = errno;
        char msg[SBX_ERROR_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        (void) saved;
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
                                status_start(l->status_fd, w->command_pid);
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

static int run(struct launch *l) {
        int sv[2], ep[2];
        sigset_t fwd;

        l->outer_uid = getuid();
        l->outer_gid = getgid();

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                die("socketpair", "%s", strerror(errno));
        int one = 1;
        /* The kernel then attaches the sender's pid, translated into our pid
         * namespace: that is how we learn the command's pid as seen outside. */
        if (setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
                die("socketpair", "SO_PASSCRED: %s", strerror(errno));
        if (pipe2(ep, O_CLOEXEC) < 0)
                die("pipe", "%s", strerror(errno));

        sigemptyset(&fwd);
        for (size_t i = 0; i < ARRAY_SIZE(forwarded_signals); i++)
                sigaddset(&fwd, forwarded_signals[i]);
        /* Blocked before clone so that pid 1 inherits the block and queues
         * anything sent before its loop runs. */
        if (sigprocmask(SIG_BLOCK, &fwd, NULL) < 0)
                die("signals", "%s", strerror(errno));
        int sigfd = signalfd(-1, &fwd, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sigfd < 0)
                die("signalfd", "%s", strerror(errno));

        const struct profile *p = &l->profile;
        uint64_t start = now_ms();
        uint64_t deadline = p->limits.timeout_ms != PROFILE_UNSET && p->limits.timeout_ms > 0
                ? start + p->limits.timeout_ms : 0;

        /* With --info-fd, pid 1 waits until the record is written: the
         * namespace ids are read from /proc/PID/ns, which stops answering
         * once pid 1 makes itself non-dumpable. */
        int ip[2] = { -1, -1 };
        if (l->info_fd >= 0 && pipe2(ip, O_CLOEXEC) < 0)
                die("pipe", "%s", strerror(errno));

        int pidfd;
        fflush(NULL);
        pid_t pid = clone_sandbox(ns_clone_flags(p), &pidfd);
        if (pid < 0) {
                int e = errno;
                struct sbx_error err;
                sbx_error_set(&err, e, "clone");
                if (e == EPERM || e == ENOSPC || e == EINVAL)
                        sbx_error_wrap(&err, "namespaces (are unprivileged user namespaces enabled?)");
                die_error("namespaces", &err);
        }
        if (pid == 0) {
                close(sv[0]);
                close(ep[0]);
                close(sigfd);
                if (ip[0] >= 0) {
                        char c;
                        close(ip[1]);
                        while (read(ip[0], &c, 1) < 0 && errno == EINTR)
                                ;
                        close(ip[0]);
                }
                l->report_fd = sv[1];
                l->exit_fd = ep[1];
                sandbox_main(l);
        }

        close(sv[1]);
        close(ep[1]);
        /* pid 1 holds these now; our copies must go so that the other end
         * sees end-of-file exactly when the sandbox ends. */
        if (l->sync_fd > 2)
                close(l->sync_fd);
        if (l->block_fd > 2)
                close(l->block_fd);
        if (l->info_fd >= 0) {
                close(ip[0]);
                ns_write_info(l->info_fd, pid);
                if (l->info_fd > 2)
                        close(l->info_fd);
                close(ip[1]);
        }

        struct watch w = { .sock_open = true };
        struct run_result res = { 0 };
        struct pollfd pfd[3] = {
                { .fd = sv[0], .events = POLLIN },
                { .fd = pidfd, .events = POLLIN },
                { .fd = sigfd, .events = POLLIN },
        };

        for (;;) {
                int ms = -1;
                if (deadline) {
                        uint64_t t = now_ms();
                        ms = t >= deadline ? 0 : (int) (deadline - t > INT32_MAX ? INT32_MAX : deadline - t);
                }
                pfd[0].fd = w.sock_open ? sv[0] : -1;
                int n = poll(pfd, 3, ms);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        die("wait", "poll: %s", strerror(errno));
                }
                if (n == 0) {
                        /* Killing pid 1 makes the kernel kill every process of
                         * its pid namespace, double-forked and setsid'd ones
                         * included. */
                        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                        res.timed_out = true;
                        deadline = 0;
                        continue;
                }
                if (pfd[0].revents)
                        drain_reports(l, sv[0], &w);
                if (pfd[2].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        while (read(sigfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                syscall(SYS_pidfd_send_signal, pidfd, (int) si.ssi_signo, NULL, 0);
                }
                if (pfd[1].revents)
                        break;
        }

        int st;
        struct rusage ru;
        while (wait4(pid, &st, 0, &ru) < 0)
                if (errno != EINTR)
                        die("wait", "%s", strerror(errno));
        res.wall_ms = now_ms() - start;
        res.cpu_ms = (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
                     (uint64_t) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
        res.peak_rss_kb = (uint64_t) ru.ru_maxrss;
        drain_reports(l, sv[0], &w);

        int cmd_status = 0;
        bool have_cmd_status = read(ep[0], &cmd_status, sizeof(cmd_status)) == (ssize_t) sizeof(cmd_status);

        res.have_prot = w.ready;
        res.prot = w.prot;
        if (res.timed_out) {
                res.exit_code = SBX_EXIT_TIMEOUT;
                res.signal = SIGKILL;
        } else if (w.setup_failed) {
                fprintf(stderr, "sbx-launch: %s: %s\n", w.last_error.step, w.last_error.msg);
                status_error(l->status_fd, w.last_error.step, w.last_error.msg);
                return SBX_EXIT_SETUP;
        } else if (have_cmd_status) {
                if (WIFSIGNALED(cmd_status)) {
                        res.signal = WTERMSIG(cmd_status);
                        res.exit_code = SBX_EXIT_FOR_SIGNAL(res.signal);
                } else {
                        res.exit_code = WEXITSTATUS(cmd_status);
                }
        } else if (WIFSIGNALED(st)) {
                /* pid 1 itself was killed from outside (OOM killer, an
                 * administrator): the command went with it. */
                res.signal = WTERMSIG(st);
                res.exit_code = SBX_EXIT_FOR_SIGNAL(res.signal);
        } else {
                res.exit_code = WEXITSTATUS(st);
                if (!w.ready && res.exit_code == SBX_EXIT_SETUP) {
                        const char *m = "sandbox ended during setup without a report";
                        fprintf(stderr, "sbx-launch: setup: %s\n", m);
                        status_error(l->status_fd, "setup", m);
                        return SBX_EXIT_SETUP;
                }
        }
        if (w.exec_failed)
                fprintf(stderr, "sbx-launch: %s: %s\n", w.last_error.step, w.last_error.msg);
        if (w.ready && !w.exec_failed && !w.started)
                status_start(l->status_fd, w.command_pid);
        status_end(l->status_fd, p, &res);
        return res.exit_code;
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

        launch_current = &l;
        cli_parse(&l, argc, argv);

        int r = 0;
        if (l.print_profile) {
                if (profile_write(&l.profile, stdout) < 0 || fflush(stdout) != 0)
                        die("print-profile", "%s", strerror(errno));
        } else if (!l.check)
                r = run(&l);
        profile_free(&l.profile);
        return r;
}
