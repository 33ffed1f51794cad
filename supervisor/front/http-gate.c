/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf.h"
#include "http-gate.h"
#include "loop.h"
#include "proto.h"
#include "util.h"

/* What the gate carries with each descriptor. */
struct gate_msg {
        char token[HTTP_TOKEN_NAME_MAX + 1]; /* its name; "": anonymous */
        char peer[56];
};

struct http_gate {
        const struct config *cfg; /* the live one, whose tokens messages name */
        http_gate_admit_fn admit;
        void *admit_ctx;
        struct source src;
        int fds[2]; /* [0] the loop's, [1] the HTTP threads' */
        atomic_bool stopping;
};

#define GATE_PER_WAKEUP 64

/* Said on a socket the loop will not serve, which is then closed. */
static void refuse(int fd, const char *code, const char *msg) {
        char line[256];
        int n = snprintf(line, sizeof(line), "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n", code, msg);
        (void) !send(fd, line, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
}

static void on_gate(struct source *s, uint32_t events) {
        struct http_gate *g = container_of(s, struct http_gate, src);
        (void) events;
        for (int i = 0; i < GATE_PER_WAKEUP; i++) {
                struct gate_msg m;
                union {
                        struct cmsghdr h;
                        char buf[CMSG_SPACE(sizeof(int))];
                } cm;
                struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
                ssize_t n = recvmsg(s->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                if (n < 0)
                        return;
                int fd = -1;
                struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
                if (h && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS && h->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&fd, CMSG_DATA(h), sizeof(int));
                if (fd < 0)
                        continue;
                if ((size_t) n != sizeof(m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
                        close(fd);
                        continue;
                }
                if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
                        close(fd);
                        continue;
                }
                if (atomic_load(&g->stopping)) {
                        refuse(fd, E_SHUTTING_DOWN, "the daemon is stopping");
                        continue;
                }
                m.peer[sizeof(m.peer) - 1] = '\0';
                m.token[sizeof(m.token) - 1] = '\0';
                const struct http_token *tok = NULL;
                for (size_t k = 0; m.token[0] && k < g->cfg->n_tokens; k++)
                        if (streq(g->cfg->tokens[k].name, m.token))
                                tok = &g->cfg->tokens[k];
                if (m.token[0] && !tok) {
                        refuse(fd, E_UNAUTHORIZED, "the token was withdrawn by a reload of the configuration");
                        continue;
                }
                g->admit(g->admit_ctx, fd, tok, m.peer);
        }
}

int http_gate_open(const struct config *cfg, http_gate_admit_fn admit, void *ctx, struct http_gate **ret) {
        struct http_gate *g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->cfg = cfg;
        g->admit = admit;
        g->admit_ctx = ctx;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, g->fds) < 0) {
                int r = -errno;
                free(g);
                return r;
        }
        int r = loop_add(&g->src, g->fds[0], EPOLLIN, on_gate);
        if (r < 0) {
                close(g->fds[0]);
                close(g->fds[1]);
                free(g);
                return r;
        }
        *ret = g;
        return 0;
}

void http_gate_stopping(struct http_gate *g) {
        atomic_store(&g->stopping, true);
}

void http_gate_close(struct http_gate *g) {
        if (g->fds[0] < 0)
                return;
        atomic_store(&g->stopping, true);
        loop_del(&g->src);
        close(g->fds[0]);
        g->fds[0] = -1;
}

void http_gate_free(struct http_gate *g) {
        if (!g)
                return;
        http_gate_close(g);
        close(g->fds[1]);
        free(g);
}

int http_gate_call(struct http_gate *g, const char *tok, const char *peer) {
        if (atomic_load(&g->stopping))
                return -ESHUTDOWN;
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        struct gate_msg m;
        memset(&m, 0, sizeof(m));
        snprintf(m.token, sizeof(m.token), "%s", tok);
        snprintf(m.peer, sizeof(m.peer), "%s", peer);
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } cm;
        memset(&cm, 0, sizeof(cm));
        struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
        struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &sv[1], sizeof(int));
        ssize_t n = sendmsg(g->fds[1], &mh, MSG_NOSIGNAL);
        int r = n < 0 ? -errno : 0;
        close(sv[1]);
        if (r < 0) {
                close(sv[0]);
                return r == -EPIPE || r == -ECONNRESET ? -ESHUTDOWN : r;
        }
        return sv[0];
}

void gate_reader_init(struct gate_reader *r, int fd, int client_fd, size_t max) {
        memset(r, 0, sizeof(*r));
        r->fd = fd;
        r->client_fd = client_fd;
        r->max = max;
}

void gate_reader_done(struct gate_reader *r) {
        free(r->buf);
        r->buf = NULL;
}

/* Wait until fd is readable; -EPIPE when the client went away first. */
static int wait_readable(struct gate_reader *r) {
        struct pollfd p[2] = { { .fd = r->fd, .events = POLLIN }, { .fd = r->client_fd, .events = POLLRDHUP } };
        for (;;) {
                int n = poll(p, r->client_fd >= 0 ? 2 : 1, -1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (p[0].revents)
                        return 0;
                if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
                        return -EPIPE;
        }
}

int gate_read_line(struct gate_reader *r, const char **ret, size_t *ret_len) {
        size_t scanned = r->start;
        for (;;) {
                char *nl = r->len > scanned ? memchr(r->buf + scanned, '\n', r->len - scanned) : NULL;
                if (nl) {
                        *nl = '\0';
                        *ret = r->buf + r->start;
                        *ret_len = (size_t) (nl - (r->buf + r->start));
                        r->start = (size_t) (nl - r->buf) + 1;
                        return 0;
                }
                scanned = r->len;
                if (r->len - r->start > r->max)
                        return -E2BIG;
                if (r->start > 0) { /* what was handed out before is done with */
                        memmove(r->buf, r->buf + r->start, r->len - r->start);
                        r->len -= r->start;
                        scanned -= r->start;
                        r->start = 0;
                }
                if (r->cap - r->len < 65536) {
                        size_t cap = r->cap ? r->cap * 2 : 131072;
                        char *b = realloc(r->buf, cap + 1);
                        if (!b)
                                return -ENOMEM;
                        r->buf = b;
                        r->cap = cap;
                }
                int w = wait_readable(r);
                if (w < 0)
                        return w;
                ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EPIPE;
                r->len += (size_t) n;
        }
}
