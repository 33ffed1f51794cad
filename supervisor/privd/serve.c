/* SPDX-License-Identifier: Apache-2.0 */
/* The helper's side of the socket: receive one message, check its framing
 * (size, magic, version, type, sequence, descriptors), hand it to the job
 * state machine, answer. Nothing a message says makes the helper exit:
 * the only way out is the front hanging up. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "privd.h"

/* Refusal lines per second: a front sending 10,000 bad requests a second
 * must not flood the journal, yet every one is counted. */
#define PRIVD_LOG_BURST 100

static const char *const type_names[PRIVD_TYPE_MAX] = {
        [PRIVD_HELLO] = "HELLO",         [PRIVD_UID_TAKE] = "UID_TAKE",   [PRIVD_UID_RELEASE] = "UID_RELEASE",
        [PRIVD_JOB_OPEN] = "JOB_OPEN",   [PRIVD_JOB_KILL] = "JOB_KILL",   [PRIVD_JOB_CLOSE] = "JOB_CLOSE",
        [PRIVD_SPAWN] = "SPAWN",         [PRIVD_NET_OPEN] = "NET_OPEN",   [PRIVD_NET_CLOSE] = "NET_CLOSE",
        [PRIVD_WS_HANDOVER] = "WS_HANDOVER", [PRIVD_WS_RECLAIM] = "WS_RECLAIM",
        [PRIVD_NET_RING] = "NET_RING",   [PRIVD_NET_AUDIT] = "NET_AUDIT", [PRIVD_NET_ALLOW] = "NET_ALLOW",
        [PRIVD_NET_DENY] = "NET_DENY",   [PRIVD_NET_UNAUDIT] = "NET_UNAUDIT",
        [PRIVD_JOB_TERM] = "JOB_TERM",   [PRIVD_JOB_WAIT] = "JOB_WAIT",   [PRIVD_HOST_ADDR] = "HOST_ADDR",
        [PRIVD_JOB_ADOPT] = "JOB_ADOPT",
};

/* The exact size of each request. */
static const uint32_t type_sizes[PRIVD_TYPE_MAX] = {
        [PRIVD_HELLO] = sizeof(struct privd_hello),       [PRIVD_UID_TAKE] = sizeof(struct privd_hdr),
        [PRIVD_UID_RELEASE] = sizeof(struct privd_uid),   [PRIVD_JOB_OPEN] = sizeof(struct privd_job_open),
        [PRIVD_JOB_KILL] = sizeof(struct privd_job),      [PRIVD_JOB_CLOSE] = sizeof(struct privd_job),
        [PRIVD_SPAWN] = sizeof(struct privd_spawn),       [PRIVD_NET_OPEN] = sizeof(struct privd_net_open),
        [PRIVD_NET_CLOSE] = sizeof(struct privd_job),    [PRIVD_WS_HANDOVER] = sizeof(struct privd_job),
        [PRIVD_WS_RECLAIM] = sizeof(struct privd_job),
        [PRIVD_NET_RING] = sizeof(struct privd_hdr),     [PRIVD_NET_AUDIT] = sizeof(struct privd_net_audit),
        [PRIVD_NET_ALLOW] = sizeof(struct privd_net_allow), [PRIVD_NET_DENY] = sizeof(struct privd_net_deny),
        [PRIVD_NET_UNAUDIT] = sizeof(struct privd_job),
        [PRIVD_JOB_TERM] = sizeof(struct privd_job),     [PRIVD_JOB_WAIT] = sizeof(struct privd_job),
        [PRIVD_HOST_ADDR] = sizeof(struct privd_host_addr), [PRIVD_JOB_ADOPT] = sizeof(struct privd_job_adopt),
};

_Static_assert(sizeof(struct privd_job_open) <= PRIVD_MSG_MAX, "PRIVD_MSG_MAX");
_Static_assert(sizeof(struct privd_reply) <= PRIVD_MSG_MAX, "PRIVD_MSG_MAX");
_Static_assert(sizeof(struct privd_hello_reply) <= PRIVD_MSG_MAX, "PRIVD_MSG_MAX");
_Static_assert(sizeof(struct privd_net_open) <= PRIVD_MSG_MAX, "PRIVD_MSG_MAX");
_Static_assert(sizeof(struct privd_net_reply) <= PRIVD_MSG_MAX, "PRIVD_MSG_MAX");
_Static_assert(sizeof(struct privd_net_audit) <= PRIVD_MSG_MAX, "PRIVD_MSG_MAX");
_Static_assert(sizeof(struct privd_net_allow) <= PRIVD_MSG_MAX, "PRIVD_MSG_MAX");
_Static_assert(sizeof(struct privd_net_deny) <= PRIVD_MSG_MAX, "PRIVD_MSG_MAX");
_Static_assert(sizeof(struct privd_audit_reply) <= PRIVD_MSG_MAX, "PRIVD_MSG_MAX");

static struct {
        time_t second;
        unsigned lines, dropped;
} rate;

static bool log_allowed(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if (ts.tv_sec != rate.second) {
                if (rate.dropped)
                        fprintf(stderr, "sbx-privd: %u more refusals in one second not logged\n", rate.dropped);
                rate.second = ts.tv_sec;
                rate.lines = rate.dropped = 0;
        }
        if (rate.lines >= PRIVD_LOG_BURST) {
                rate.dropped++;
                return false;
        }
        rate.lines++;
        return true;
}

void privd_log_flush(void) {
        if (rate.dropped)
                fprintf(stderr, "sbx-privd: %u more refusals not logged\n", rate.dropped);
        rate.dropped = 0;
}

void privd_log(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fputs("sbx-privd: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

int privd_refuse(const struct privd_hdr *h, int err, const char *fmt, ...) {
        if (!log_allowed())
                return err;
        char what[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        const char *t = h && h->type < PRIVD_TYPE_MAX && type_names[h->type] ? type_names[h->type] : "message";
        fprintf(stderr, "sbx-privd: refused %s (seq %u): %s: %s\n", t, h ? h->seq : 0, what, strerror(-err));
        return err;
}

static void close_fds(int *fds, unsigned n) {
        for (unsigned i = 0; i < n; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
}

static void reply_header(struct privd_hdr *out, const struct privd_hdr *req, size_t len) {
        *out = (struct privd_hdr){
                .magic = PRIVD_MAGIC,
                .version = PRIVD_VERSION,
                .type = (uint16_t) ((req ? req->type : 0) | PRIVD_REPLY),
                .seq = req ? req->seq : 0,
                .len = (uint32_t) len,
        };
}

/* Framing: everything that can be checked without knowing the state. A
 * refused message still answers; its sequence number is not spent. */
static int check_frame(struct privd *p, const struct privd_hdr *h, ssize_t n, int flags, unsigned n_fds) {
        if (flags & MSG_TRUNC)
                return privd_refuse(NULL, -EMSGSIZE, "message larger than %u bytes", PRIVD_MSG_MAX);
        /* The kernel drops what does not fit the control buffer (and says
         * MSG_CTRUNC); what fits beyond the limit was closed on receipt. */
        if ((flags & MSG_CTRUNC) || n_fds > PRIVD_FDS_MAX)
                return privd_refuse(NULL, -EMSGSIZE, "more than %u descriptors", PRIVD_FDS_MAX);
        if ((size_t) n < sizeof(*h))
                return privd_refuse(NULL, -EBADMSG, "truncated: %zd bytes, no header", n);
        if (h->magic != PRIVD_MAGIC || h->version != PRIVD_VERSION)
                return privd_refuse(NULL, -EPROTO, "bad magic or version");
        if (h->type == 0 || h->type >= PRIVD_TYPE_MAX)
                return privd_refuse(h, -EBADRQC, "unknown type %u", h->type);
        if (h->len != (uint32_t) n || h->len != type_sizes[h->type])
                return privd_refuse(h, -EBADMSG, "%zd bytes received, header says %u, %s is %u", n, h->len,
                                    type_names[h->type], type_sizes[h->type]);
        if (h->seq != p->expect_seq)
                return privd_refuse(h, -EPROTO, "sequence %u out of order (expected %u)", h->seq, p->expect_seq);
        if (!p->hello && h->type != PRIVD_HELLO)
                return privd_refuse(h, -EPROTO, "no HELLO yet");
        if (p->hello && h->type == PRIVD_HELLO)
                return privd_refuse(h, -EPROTO, "HELLO repeated");
        if (n_fds && h->type != PRIVD_SPAWN)
                return privd_refuse(h, -EBADF, "%u descriptors sent with a message that takes none", n_fds);
        return 0;
}

static int hello(struct privd *p, const struct privd_hello *m, struct privd_hello_reply *rep) {
        if (m->version != PRIVD_VERSION || m->reserved)
                return privd_refuse(&m->h, -EPROTONOSUPPORT, "version %u (this helper speaks %u)", m->version, PRIVD_VERSION);
        p->hello = true;
        rep->version = PRIVD_VERSION;
        rep->uid_first = p->conf->uid_first;
        rep->uid_count = p->conf->uid_count;
        rep->max_jobs = p->conf->max_jobs;
        rep->net_slots = privd_net_slots(p);
        rep->limits = p->cg_have;
        return 0;
}

/* One request and its reply. */
static int serve_one(struct privd *p, short revents) {
        union {
                struct privd_hdr h;
                struct privd_hello hello;
                struct privd_uid uid;
                struct privd_job_open open;
                struct privd_job job;
                struct privd_spawn spawn;
                struct privd_net_open net;
                struct privd_net_audit audit;
                struct privd_net_allow allow;
                struct privd_net_deny deny;
                struct privd_host_addr host;
                struct privd_job_adopt adopt;
                char raw[PRIVD_MSG_MAX];
        } m;
        union {
                char buf[CMSG_SPACE(PRIVD_FDS_MAX * sizeof(int))];
                struct cmsghdr align;
        } u;
        struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        int fds[PRIVD_FDS_MAX];
        unsigned n_fds = 0, n_recv = 0;

        memset(&m, 0, sizeof(m));
        ssize_t n = recvmsg(p->fd, &mh, MSG_CMSG_CLOEXEC);
        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? 0 : -errno;
        /* A SOCK_SEQPACKET peer's close reads as a message of 0 bytes; an
         * empty message sent while the peer is there is refused below. */
        if (n == 0 && mh.msg_controllen == 0 && (revents & POLLHUP))
                return -EPIPE;
        /* Take every descriptor first, whatever the message: each is
         * closed on every path that does not hand it on. */
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                unsigned k = (unsigned) ((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                for (unsigned i = 0; i < k; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        n_recv++;
                        if (n_fds < PRIVD_FDS_MAX)
                                fds[n_fds++] = fd;
                        else
                                close(fd);
                }
        }

        const struct privd_hdr *h = (size_t) n >= sizeof(m.h) ? &m.h : NULL;
        struct privd_reply rep;
        struct privd_hello_reply hrep;
        struct privd_net_reply nrep;
        struct privd_audit_reply arep;
        memset(&arep, 0, sizeof(arep));
        memset(&rep, 0, sizeof(rep));
        memset(&hrep, 0, sizeof(hrep));
        memset(&nrep, 0, sizeof(nrep));
        int out[PRIVD_REPLY_FDS_MAX] = { -1, -1, -1 };
        unsigned n_out = 0;
        int r = check_frame(p, &m.h, n, mh.msg_flags, n_recv);
        if (r == 0) {
                p->expect_seq++;
                switch (m.h.type) {
                case PRIVD_HELLO:
                        r = hello(p, &m.hello, &hrep);
                        break;
                case PRIVD_UID_TAKE:
                        r = privd_uid_take(p, &m.h, &rep.uid);
                        break;
                case PRIVD_UID_RELEASE:
                        r = privd_uid_release(p, &m.uid);
                        break;
                case PRIVD_JOB_OPEN:
                        r = privd_job_open(p, &m.open, &rep, out);
                        n_out = r == 0 ? 2 : 0;
                        break;
                case PRIVD_JOB_WAIT:
                        r = privd_job_wait(p, &m.job, &rep);
                        break;
                case PRIVD_JOB_TERM:
                        r = privd_job_term(p, &m.job);
                        break;
                case PRIVD_JOB_KILL:
                        r = privd_job_kill(p, &m.job);
                        break;
                case PRIVD_JOB_CLOSE:
                        r = privd_job_close(p, &m.job);
                        break;
                case PRIVD_WS_HANDOVER:
                        r = privd_ws_handover(p, &m.job);
                        break;
                case PRIVD_WS_RECLAIM:
                        r = privd_ws_reclaim(p, &m.job);
                        break;
                case PRIVD_SPAWN:
                        r = privd_spawn(p, &m.spawn, fds, n_fds, &rep, &out[0]);
                        n_fds = 0; /* taken */
                        n_out = r == 0 ? 1 : 0;
                        break;
                case PRIVD_NET_OPEN:
                        r = privd_net_open(p, &m.net, &nrep, out);
                        n_out = r == 0 ? 3 : 0;
                        break;
                case PRIVD_NET_CLOSE:
                        r = privd_net_close(p, &m.job);
                        break;
                case PRIVD_NET_RING:
                        r = privd_net_ring(p, &m.h, &rep, &out[0]);
                        n_out = r == 0 ? 1 : 0;
                        break;
                case PRIVD_NET_AUDIT:
                        r = privd_net_audit(p, &m.audit);
                        break;
                case PRIVD_NET_ALLOW:
                        r = privd_net_allow(p, &m.allow);
                        break;
                case PRIVD_NET_DENY:
                        r = privd_net_deny(p, &m.deny);
                        break;
                case PRIVD_NET_UNAUDIT:
                        r = privd_net_unaudit(p, &m.job, &arep);
                        break;
                case PRIVD_HOST_ADDR:
                        r = privd_host_addr(&m.host, &rep);
                        break;
                case PRIVD_JOB_ADOPT:
                        r = privd_job_adopt(p, &m.adopt, &rep, out);
                        n_out = r == 0 ? 3 : 0;
                        break;
                default:
                        r = privd_refuse(&m.h, -EOPNOTSUPP, "not implemented by this helper");
                        break;
                }
        }
        close_fds(fds, n_fds);

        int s;
        if (h && h->type == PRIVD_HELLO) {
                reply_header(&hrep.h, h, sizeof(hrep));
                hrep.err = r;
                s = fd_send_with(p->fd, &hrep, sizeof(hrep), NULL, 0);
        } else if (h && h->type == PRIVD_NET_OPEN) {
                reply_header(&nrep.h, h, sizeof(nrep));
                nrep.err = r;
                s = fd_send_with(p->fd, &nrep, sizeof(nrep), out, n_out);
        } else if (h && h->type == PRIVD_NET_UNAUDIT) {
                reply_header(&arep.h, h, sizeof(arep));
                arep.err = r;
                s = fd_send_with(p->fd, &arep, sizeof(arep), NULL, 0);
        } else {
                reply_header(&rep.h, h && h->type < PRIVD_TYPE_MAX ? h : NULL, sizeof(rep));
                rep.err = r;
                s = fd_send_with(p->fd, &rep, sizeof(rep), out, n_out);
        }
        close_fds(out, PRIVD_REPLY_FDS_MAX);
        return s == -EPIPE || s == -ECONNRESET ? s : 0;
}

int privd_signals(struct privd *p) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigprocmask(SIG_BLOCK, &set, NULL);
        p->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
        return p->sig_fd < 0 ? -errno : 0;
}

int privd_signal_read(struct privd *p) {
        struct signalfd_siginfo si;
        bool stop = false;
        while (read(p->sig_fd, &si, sizeof(si)) == (ssize_t) sizeof(si))
                if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
                        stop = true;
        privd_reap(p);
        return stop ? -ECANCELED : 0;
}

int privd_serve(struct privd *p) {
        p->expect_seq = 1;
        p->hello = false;
        for (;;) {
                struct pollfd pf[3] = { { .fd = p->fd, .events = POLLIN },
                                        { .fd = p->sig_fd, .events = POLLIN },
                                        { .fd = p->conf->listen_fd, .events = POLLIN } };
                if (poll(pf, p->conf->listen_fd >= 0 ? 3 : 2, privd_park_timeout(p)) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                privd_park_expire(p);
                if (pf[1].revents && privd_signal_read(p) == -ECANCELED)
                        return -ECANCELED;
                if (p->conf->listen_fd >= 0 && pf[2].revents)
                        privd_refuse_second(p);
                if (pf[0].revents) {
                        int r = serve_one(p, pf[0].revents);
                        if (r < 0)
                                return r == -EPIPE || r == -ECONNRESET ? 0 : r;
                }
        }
}
