/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "privc.h"

static void hdr(struct privc *c, struct privd_hdr *h, uint16_t type, uint32_t len) {
        *h = (struct privd_hdr){ .magic = PRIVD_MAGIC, .version = PRIVD_VERSION, .type = type, .seq = ++c->seq, .len = len };
}

/* The reply to request seq, with at most max_fds descriptors (any more
 * are closed: the helper never sends more than its reply carries). */
static int recv_reply(int fd, uint32_t seq, void *rep, size_t len, int *fds, unsigned max_fds, unsigned *ret_n) {
        union {
                char buf[CMSG_SPACE(PRIVD_FDS_MAX * sizeof(int))];
                struct cmsghdr align;
        } u;
        struct iovec iov = { .iov_base = rep, .iov_len = len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
        ssize_t n;
        unsigned k = 0;
        while ((n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC)) < 0)
                if (errno != EINTR)
                        return -errno;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                unsigned m = (unsigned) ((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                for (unsigned i = 0; i < m; i++) {
                        int x;
                        memcpy(&x, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
                        if (k < max_fds)
                                fds[k++] = x;
                        else
                                close(x);
                }
        }
        const struct privd_hdr *h = rep;
        if (n == 0)
                return -EPIPE;
        if ((size_t) n != len || h->magic != PRIVD_MAGIC || h->seq != seq || !(h->type & PRIVD_REPLY)) {
                for (unsigned i = 0; i < k; i++)
                        close(fds[i]);
                return -EPROTO;
        }
        *ret_n = k;
        return 0;
}

/* One request and its reply; *ret_n descriptors came with it. */
static int call(struct privc *c, struct privd_hdr *req, uint16_t type, uint32_t len, const int *fds, unsigned n_fds,
                struct privd_reply *rep, int *rfds, unsigned max_rfds, unsigned *ret_n) {
        unsigned n = 0;
        if (c->fd < 0)
                return -ENOTCONN;
        pthread_mutex_lock(&c->lock);
        hdr(c, req, type, len);
        int r = fd_send_with(c->fd, req, len, fds, n_fds);
        if (r == 0)
                r = recv_reply(c->fd, req->seq, rep, sizeof(*rep), rfds, max_rfds, &n);
        pthread_mutex_unlock(&c->lock);
        if (r == 0 && rep->err < 0) {
                for (unsigned i = 0; i < n; i++)
                        close(rfds[i]);
                n = 0;
                r = rep->err;
        }
        if (ret_n)
                *ret_n = n;
        return r;
}

int privc_open(struct privc *c, int fd, pid_t pid, struct sbx_error *err) {
        *c = (struct privc){ .fd = fd, .pid = pid };
        pthread_mutex_init(&c->lock, NULL);
        struct privd_hello m = { .version = PRIVD_VERSION };
        struct privd_hello_reply rep;
        unsigned n;
        hdr(c, &m.h, PRIVD_HELLO, sizeof(m));
        int r = fd_send_with(fd, &m, sizeof(m), NULL, 0);
        if (r == 0)
                r = recv_reply(fd, m.h.seq, &rep, sizeof(rep), NULL, 0, &n);
        if (r == 0 && rep.err < 0)
                r = rep.err;
        if (r < 0)
                return sbx_error_set(err, r, "sbx-privd: HELLO");
        c->uid_first = rep.uid_first;
        c->uid_count = rep.uid_count;
        c->max_jobs = rep.max_jobs;
        c->limits = rep.limits;
        c->net_slots = rep.net_slots;
        return 0;
}

void privc_close(struct privc *c) {
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
        pthread_mutex_destroy(&c->lock);
}

int privc_uid_take(struct privc *c, uid_t *ret_uid) {
        struct privd_hdr m;
        struct privd_reply rep;
        int r = call(c, &m, PRIVD_UID_TAKE, sizeof(m), NULL, 0, &rep, NULL, 0, NULL);
        if (r == 0)
                *ret_uid = (uid_t) rep.uid;
        return r;
}

int privc_uid_release(struct privc *c, uid_t uid) {
        struct privd_uid m = { .uid = (uint32_t) uid };
        struct privd_reply rep;
        return call(c, &m.h, PRIVD_UID_RELEASE, sizeof(m), NULL, 0, &rep, NULL, 0, NULL);
}

int privc_job_open(struct privc *c, struct privd_job_open *m, struct privd_handle *ret_job, unsigned *ret_limits,
                   int *ret_cgroup_fd, int *ret_workspace_fd) {
        struct privd_reply rep;
        int fds[2];
        unsigned n;
        int r = call(c, &m->h, PRIVD_JOB_OPEN, sizeof(*m), NULL, 0, &rep, fds, 2, &n);
        if (r < 0)
                return r;
        if (n != 2) {
                for (unsigned i = 0; i < n; i++)
                        close(fds[i]);
                return -EPROTO;
        }
        *ret_job = rep.job;
        *ret_limits = rep.limits;
        *ret_cgroup_fd = fds[0];
        *ret_workspace_fd = fds[1];
        return 0;
}

int privc_job_adopt(struct privc *c, uid_t uid, pid_t pid, struct privd_handle *ret_job, unsigned *ret_limits, int ret_fds[3]) {
        struct privd_job_adopt m = { .uid = (uint32_t) uid, .pid = (int32_t) pid };
        struct privd_reply rep;
        unsigned n;
        int r = call(c, &m.h, PRIVD_JOB_ADOPT, sizeof(m), NULL, 0, &rep, ret_fds, 3, &n);
        if (r < 0)
                return r;
        if (n != 3) {
                for (unsigned i = 0; i < n; i++)
                        close(ret_fds[i]);
                return -EPROTO;
        }
        *ret_job = rep.job;
        *ret_limits = rep.limits;
        return 0;
}

static int job_call(struct privc *c, uint16_t type, struct privd_handle job, struct privd_reply *rep) {
        struct privd_job m = { .job = job };
        return call(c, &m.h, type, sizeof(m), NULL, 0, rep, NULL, 0, NULL);
}

int privc_ws_handover(struct privc *c, struct privd_handle job) {
        struct privd_reply rep;
        return job_call(c, PRIVD_WS_HANDOVER, job, &rep);
}

int privc_ws_reclaim(struct privc *c, struct privd_handle job) {
        struct privd_reply rep;
        return job_call(c, PRIVD_WS_RECLAIM, job, &rep);
}

int privc_job_term(struct privc *c, struct privd_handle job) {
        struct privd_reply rep;
        return job_call(c, PRIVD_JOB_TERM, job, &rep);
}

int privc_job_wait(struct privc *c, struct privd_handle job, int *ret_status) {
        struct privd_reply rep;
        int r = job_call(c, PRIVD_JOB_WAIT, job, &rep);
        if (r == 0)
                *ret_status = rep.status;
        return r;
}

int privc_job_kill(struct privc *c, struct privd_handle job) {
        struct privd_job m = { .job = job };
        struct privd_reply rep;
        return call(c, &m.h, PRIVD_JOB_KILL, sizeof(m), NULL, 0, &rep, NULL, 0, NULL);
}

int privc_job_close(struct privc *c, struct privd_handle job) {
        struct privd_job m = { .job = job };
        struct privd_reply rep;
        return call(c, &m.h, PRIVD_JOB_CLOSE, sizeof(m), NULL, 0, &rep, NULL, 0, NULL);
}

int privc_spawn(struct privc *c, struct privd_handle job, const int fds[PRIVD_FD_COUNT], uint32_t flags, pid_t *ret_pid,
                int *ret_pidfd) {
        struct privd_spawn m = { .job = job, .flags = flags };
        struct privd_reply rep;
        int sent[PRIVD_FD_COUNT], pidfd;
        unsigned k = 0, n;
        for (unsigned i = 0; i < PRIVD_FD_COUNT; i++)
                if (fds[i] >= 0) {
                        m.fds |= PRIVD_FD_BIT(i);
                        sent[k++] = fds[i];
                }
        int r = call(c, &m.h, PRIVD_SPAWN, sizeof(m), sent, k, &rep, &pidfd, 1, &n);
        if (r < 0)
                return r;
        if (n != 1)
                return -EPROTO;
        *ret_pid = rep.pid;
        *ret_pidfd = pidfd;
        return 0;
}

/* ---- the job's network and its audit ---- */

int privc_net_open(struct privc *c, struct privd_handle job, pid_t pid, uint64_t netns_ino, bool v6, struct privd_net_reply *ret,
                   int *ret_dns_fd, int *ret_dns_tcp_fd, int *ret_proxy_fd) {
        struct privd_net_open m = { .job = job, .pid = (int32_t) pid, .flags = v6 ? PRIVD_NET_V6 : 0, .netns_ino = netns_ino };
        int fds[3];
        unsigned n = 0;
        if (c->fd < 0)
                return -ENOTCONN;
        /* Its reply is a struct of its own: call() reads a privd_reply. */
        pthread_mutex_lock(&c->lock);
        hdr(c, &m.h, PRIVD_NET_OPEN, sizeof(m));
        int r = fd_send_with(c->fd, &m, sizeof(m), NULL, 0);
        if (r == 0)
                r = recv_reply(c->fd, m.h.seq, ret, sizeof(*ret), fds, 3, &n);
        pthread_mutex_unlock(&c->lock);
        if (r == 0 && ret->err < 0)
                r = ret->err;
        if (r == 0 && n != 3)
                r = -EPROTO;
        if (r < 0) {
                for (unsigned i = 0; i < n; i++)
                        close(fds[i]);
                return r;
        }
        *ret_dns_fd = fds[0];
        *ret_dns_tcp_fd = fds[1];
        *ret_proxy_fd = fds[2];
        return 0;
}

int privc_net_close(struct privc *c, struct privd_handle job) {
        struct privd_reply rep;
        return job_call(c, PRIVD_NET_CLOSE, job, &rep);
}

int privc_net_ring(struct privc *c, int *ret_fd, uint32_t *ret_bytes) {
        struct privd_hdr m;
        struct privd_reply rep;
        int fd;
        unsigned n;
        int r = call(c, &m, PRIVD_NET_RING, sizeof(m), NULL, 0, &rep, &fd, 1, &n);
        if (r < 0)
                return r;
        if (n != 1)
                return -EPROTO;
        *ret_fd = fd;
        *ret_bytes = rep.ring_bytes;
        return 0;
}

int privc_net_audit(struct privc *c, struct privd_net_audit *m) {
        struct privd_reply rep;
        return call(c, &m->h, PRIVD_NET_AUDIT, sizeof(*m), NULL, 0, &rep, NULL, 0, NULL);
}

int privc_net_allow(struct privc *c, struct privd_net_allow *m) {
        struct privd_reply rep;
        return call(c, &m->h, PRIVD_NET_ALLOW, sizeof(*m), NULL, 0, &rep, NULL, 0, NULL);
}

int privc_net_deny(struct privc *c, struct privd_net_deny *m) {
        struct privd_reply rep;
        return call(c, &m->h, PRIVD_NET_DENY, sizeof(*m), NULL, 0, &rep, NULL, 0, NULL);
}

int privc_host_addr(struct privc *c, uint32_t index, uint8_t ret_addr[16], uint32_t *ret_count) {
        struct privd_host_addr m = { .index = index };
        struct privd_reply rep;
        int r = call(c, &m.h, PRIVD_HOST_ADDR, sizeof(m), NULL, 0, &rep, NULL, 0, NULL);
        if (r < 0)
                return r;
        if (rep.count > PRIVD_HOST_ADDRS_MAX || index >= rep.count)
                return -EPROTO;
        memcpy(ret_addr, rep.addr, 16);
        *ret_count = rep.count;
        return 0;
}

int privc_net_unaudit(struct privc *c, struct privd_handle job, uint64_t *ret_lost, uint64_t *ret_dropped) {
        struct privd_job m = { .job = job };
        struct privd_audit_reply rep;
        unsigned n;
        if (c->fd < 0)
                return -ENOTCONN;
        pthread_mutex_lock(&c->lock);
        hdr(c, &m.h, PRIVD_NET_UNAUDIT, sizeof(m));
        int r = fd_send_with(c->fd, &m, sizeof(m), NULL, 0);
        if (r == 0)
                r = recv_reply(c->fd, m.h.seq, &rep, sizeof(rep), NULL, 0, &n);
        pthread_mutex_unlock(&c->lock);
        if (r == 0 && rep.err < 0)
                r = rep.err;
        if (r == 0) {
                *ret_lost = rep.lost;
                *ret_dropped = rep.dropped;
        }
        return r;
}
