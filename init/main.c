/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-init: the command of a session's sandbox. It holds one inherited
 * SOCK_SEQPACKET socket to the daemon and does only what the daemon asks
 * over it (lib/init-abi.h): start commands, signal them, report their end,
 * open and list files of the workspace. It runs as the sandbox's uid among
 * the processes it starts, which can stop, kill or flood it; so it keeps no
 * state worth stealing, answers every malformed datagram with an error, and
 * exits when the socket closes. The launcher's pid 1 then ends the whole
 * sandbox. With --listen-fd (a listening socket whose path only the daemon
 * can reach, outside the sandbox) it outlives the connection instead and
 * takes the next one, so a restarted daemon finds its sessions again. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "macro.h"

/* Requests taken from the socket before the loop looks at SIGCHLD again:
 * a flood of requests does not hold back exit events for long. */
#define BATCH 32
/* How long, by default, the agent waits for a connection on --listen-fd
 * before it ends the session. */
#define ORPHAN_TIMEOUT_MS 60000
#define ORPHAN_TIMEOUT_MAX_MS 86400000L

static void close_passed_fds(struct msghdr *mh) {
        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < n; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
                        close(fd);
                }
        }
}

static void dispatch(struct agent *a, const struct request *rq) {
        switch (rq->hdr.type) {
        case SBX_INIT_SPAWN:
                spawn_request(a, rq);
                break;
        case SBX_INIT_SIGNAL:
                signal_request(a, rq);
                break;
        case SBX_INIT_OPEN:
        case SBX_INIT_LIST:
        case SBX_INIT_STAT:
        case SBX_INIT_REMOVE:
        case SBX_INIT_MKDIR:
                files_request(a, rq);
                break;
        case SBX_INIT_CONNECT:
                connect_request(a, rq);
                break;
        default:
                agent_reply_error(a, rq, EOPNOTSUPP);
        }
}

/* One datagram: false when none is waiting. */
static bool take_request(struct agent *a) {
        static char buf[SBX_INIT_MSG_MAX];
        union {
                char b[CMSG_SPACE(8 * sizeof(int))];
                struct cmsghdr align;
        } cbuf;
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b,
                             .msg_controllen = sizeof(cbuf.b) };
        ssize_t n = recvmsg(a->sock, &mh, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return false;
                if (errno != ECONNRESET)
                        agent_fatal("receive", errno);
        }
        if (n <= 0) {
                agent_disconnect(a);
                return false;
        }
        /* The daemon never sends descriptors; whatever came is not kept. */
        bool had_fds = mh.msg_controllen > 0;
        close_passed_fds(&mh);

        struct request rq = { 0 };
        if ((size_t) n < sizeof(rq.hdr)) {
                agent_send(a, SBX_INIT_BAD, 0, EBADMSG, NULL, 0, NULL, 0);
                return true;
        }
        memcpy(&rq.hdr, buf, sizeof(rq.hdr));
        if ((size_t) n > sizeof(buf) || (mh.msg_flags & MSG_TRUNC))
                agent_reply_error(a, &rq, EMSGSIZE);
        else if (rq.hdr.len != (size_t) n - sizeof(rq.hdr) || rq.hdr.error != 0 || had_fds ||
                 (mh.msg_flags & MSG_CTRUNC))
                agent_reply_error(a, &rq, EBADMSG);
        else {
                rq.payload = buf + sizeof(rq.hdr);
                rq.len = rq.hdr.len;
                dispatch(a, &rq);
        }
        return true;
}

static void usage(void) {
        dprintf(STDERR_FILENO, "usage: sbx-init [--fd FD] [--listen-fd FD [--orphan-timeout MS]] [--workspace DIR]\n");
        _exit(2);
}

struct args {
        int fd;            /* -1: none (only --listen-fd) */
        int listen_fd;
        long orphan_ms;
        const char *dir;
};

static long number(const char *s, long max) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || *end || end == s || v < 0 || v > max)
                usage();
        return v;
}

static void parse_args(int argc, char **argv, struct args *ar) {
        bool fd_given = false;
        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--fd") && i + 1 < argc) {
                        ar->fd = (int) number(argv[++i], 65535);
                        fd_given = true;
                } else if (streq(argv[i], "--listen-fd") && i + 1 < argc)
                        ar->listen_fd = (int) number(argv[++i], 65535);
                else if (streq(argv[i], "--orphan-timeout") && i + 1 < argc) {
                        ar->orphan_ms = number(argv[++i], ORPHAN_TIMEOUT_MAX_MS);
                        if (ar->orphan_ms == 0)
                                usage();
                } else if (streq(argv[i], "--workspace") && i + 1 < argc)
                        ar->dir = argv[++i];
                else if (streq(argv[i], "--version")) {
                        dprintf(STDOUT_FILENO, "sbx-init %s (protocol %d)\n", PACKAGE_VERSION, SBX_INIT_VERSION);
                        _exit(0);
                } else
                        usage();
        }
        /* With a listening socket only, the first connection is accepted too. */
        if (ar->listen_fd >= 0 && !fd_given)
                ar->fd = -1;
        if (ar->fd >= 0 && ar->fd == ar->listen_fd)
                usage();
}

static void check_seqpacket(int fd, const char *what) {
        int type = 0;
        socklen_t tl = sizeof(type);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0)
                agent_fatal(what, errno);
        if (type != SOCK_SEQPACKET)
                agent_fatal(what, EPROTOTYPE); /* not a SOCK_SEQPACKET socket */
        /* Only this process may hold it: a command started here must never
         * speak to the daemon. */
        if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                agent_fatal(what, errno);
}

static int setup(struct agent *a, const struct args *ar) {
        const char *dir = ar->dir;
        if (ar->fd >= 0)
                check_seqpacket(ar->fd, "--fd");
        if (ar->listen_fd >= 0) {
                check_seqpacket(ar->listen_fd, "--listen-fd");
                int on = 0;
                socklen_t ol = sizeof(on);
                if (getsockopt(ar->listen_fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &ol) < 0 || !on)
                        agent_fatal("--listen-fd: not a listening socket", EINVAL);
                if (fcntl(ar->listen_fd, F_SETFL, O_NONBLOCK) < 0)
                        agent_fatal("--listen-fd", errno);
        }
        a->sock = ar->fd;
        a->listen = ar->listen_fd;
        a->workspace = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (a->workspace < 0)
                agent_fatal(dir, errno);
        /* The commands run as our uid: without this, any of them could
         * read our memory through /proc/PID/mem or take our descriptors. */
        prctl(PR_SET_DUMPABLE, 0);
        /* As the sandbox's pid 1 we reap orphans already; otherwise make
         * them ours rather than the launcher's, so a command's daemonised
         * descendants stay under us and are reaped here. */
        if (getpid() != 1)
                prctl(PR_SET_CHILD_SUBREAPER, 1);
        signal(SIGPIPE, SIG_IGN);

        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        sigprocmask(SIG_BLOCK, &set, NULL);
        int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0)
                agent_fatal("signalfd", errno);
        return sfd;
}

static void say_ready(struct agent *a) {
        a->connection++;
        struct sbx_init_ready ready = {
                .version = SBX_INIT_VERSION,
                .pid = getpid(),
                .procs_max = SBX_INIT_PROCS_MAX,
                .msg_max = SBX_INIT_MSG_MAX,
                .connection = a->connection,
                .running = a->n_procs,
                .ended = a->n_held,
        };
        agent_send(a, SBX_INIT_EV_READY, 0, 0, &ready, sizeof(ready), NULL, 0);
        unsigned n = a->n_held;
        a->n_held = 0;
        for (unsigned i = 0; i < n; i++)
                agent_send(a, SBX_INIT_EV_EXIT, 0, 0, &a->held[i], sizeof(a->held[i]), NULL, 0);
}

static uint64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

/* Between connections: the next one, if it is waiting. */
static void take_connection(struct agent *a) {
        int fd = accept4(a->listen, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
                if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                        return;
                agent_fatal("accept", errno);
        }
        a->sock = fd;
        say_ready(a);
}

int main(int argc, char **argv) {
        static struct agent a = { .sock = -1, .listen = -1, .workspace = -1, .next_handle = 1 };
        struct args ar = { .fd = 3, .listen_fd = -1, .orphan_ms = ORPHAN_TIMEOUT_MS, .dir = "." };

        parse_args(argc, argv, &ar);
        int sfd = setup(&a, &ar);
        if (a.sock >= 0)
                say_ready(&a);

        uint64_t alone_since = now_ms();
        for (;;) {
                /* Alone (no connection) for --orphan-timeout: the daemon is
                 * not coming back, and the session ends. */
                int wait_ms = -1;
                if (a.sock < 0) {
                        uint64_t now = now_ms();
                        if (now - alone_since >= (uint64_t) ar.orphan_ms) {
                                dprintf(STDERR_FILENO, "sbx-init: no connection for %ld ms: ending the session\n", ar.orphan_ms);
                                _exit(3);
                        }
                        wait_ms = (int) ((uint64_t) ar.orphan_ms - (now - alone_since));
                }
                struct pollfd pfd[2] = {
                        { .fd = a.sock >= 0 ? a.sock : a.listen, .events = POLLIN },
                        { .fd = sfd, .events = POLLIN },
                };
                if (poll(pfd, 2, wait_ms) < 0) {
                        if (errno == EINTR)
                                continue;
                        agent_fatal("poll", errno);
                }
                if (pfd[1].revents) {
                        struct signalfd_siginfo si;
                        while (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                                ;
                        spawn_reap(&a);
                }
                if (pfd[0].revents && a.sock < 0)
                        take_connection(&a);
                else if (pfd[0].revents)
                        for (int i = 0; i < BATCH && a.sock >= 0 && take_request(&a); i++)
                                ;
                if (a.sock < 0 && pfd[0].fd != a.listen)
                        alone_since = now_ms(); /* the connection just ended */
        }
}
