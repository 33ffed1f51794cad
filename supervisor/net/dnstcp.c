/* SPDX-License-Identifier: Apache-2.0 */
/* The DNS proxy over TCP (RFC 7766: each message after its length in two
 * bytes, several on one connection), on the daemon's event loop, never
 * blocking: the job's 127.0.0.1:53 accepts at most DNSTCP_CONNS
 * connections at once (more are closed at once). A connection's queries
 * are taken one at a time, in order: the next is not read before the
 * answer to the last is written (so the proxy holds at most one query and
 * one answer per connection; a client that never reads its answers only
 * stops itself). Each query is treated as over UDP (the same policy,
 * events, metrics, rate and count of queries out upstream) and forwarded
 * over a TCP connection of its own to the upstream resolver, whose answer
 * (at most 65535 bytes, as its length prefix says) is checked and admitted
 * as over UDP. A connection that completes no query and no answer in
 * dns_tcp_idle_timeout (its query upstream aside) is closed; an upstream that
 * has not answered in dns_upstream_timeout gets the job a SERVFAIL (the
 * proxy's timer, dnstcp_expire()). */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "dnsproxy-internal.h"
#include "log.h"

/* Bytes the kernel holds of the answers to one connection (doubled by it). */
#define DNSTCP_SNDBUF 16384

struct dnstcp_up;

struct dnstcp_conn {
        struct list link;        /* in its proxy's conns */
        struct dnsproxy *px;
        int fd;
        struct source src;
        uint32_t events;         /* what src is watched for */
        uint64_t since_ms;       /* accepted, or its last query read or answer written */
        bool rate_paused;        /* its query waits for the job's rate */
        uint8_t in[2 + DNSMSG_MAX]; /* the query being read, after its length */
        size_t in_len;
        uint8_t *out;            /* the answer being written, after its length */
        size_t out_len, out_off;
        struct dnstcp_up *up;    /* its query out upstream, or NULL */
};

/* A query out to the upstream resolver, over a connection of its own. */
struct dnstcp_up {
        struct dnstcp_conn *c;
        int fd;
        struct source src;
        struct dns_query q;
        uint64_t since_ms;
        bool connected;
        uint8_t query[2 + DNSMSG_MAX]; /* with its length */
        size_t q_len, q_off;
        uint8_t hdr[2];          /* the answer's length */
        size_t hdr_len;
        uint8_t *ans;
        size_t ans_len, ans_got;
};

static void tconn_free(void *p) {
        free(p);
}

static void up_free(void *p) {
        struct dnstcp_up *up = p;
        free(up->ans);
        free(up);
}

static void tconn_watch(struct dnstcp_conn *c) {
        uint32_t ev = (c->out ? EPOLLOUT : 0) | (!c->out && !c->up && !c->rate_paused ? EPOLLIN : 0);
        if (ev != c->events && loop_mod(&c->src, ev) == 0)
                c->events = ev;
}

static void list_proxy(struct dnsproxy *px) {
        if (!px->tcp_listed) {
                list_add_tail(&px->rj->d->dns_tcp, &px->tcp_link);
                px->tcp_listed = true;
        }
}

/* The query upstream is done with: counted by what came of it. */
static void up_end(struct dnstcp_up *up, enum metrics_dns_outcome o) {
        struct dnsproxy *px = up->c->px;
        metrics_dns(&px->rj->d->metrics, o, 1);
        loop_del(&up->src);
        close(up->fd);
        up->c->up = NULL;
        px->n_pending--;
        loop_defer_free(up_free, up);
}

static void tconn_close(struct dnstcp_conn *c, enum metrics_dnstcp_outcome o) {
        struct dnsproxy *px = c->px;
        if (c->up)
                up_end(c->up, MDNS_UNANSWERED);
        metrics_dnstcp(&px->rj->d->metrics, o);
        loop_del(&c->src);
        close(c->fd);
        free(c->out);
        list_del(&c->link);
        px->n_conns--;
        loop_defer_free(tconn_free, c);
}

static void tconn_flush(struct dnstcp_conn *c);

/* The answer to the connection's query: after its length, written as the
 * job reads it. */
static void tconn_answer(struct dnstcp_conn *c, const uint8_t *buf, size_t len) {
        if (len > UINT16_MAX || !(c->out = malloc(2 + len))) {
                tconn_close(c, MDNSTCP_ENDED);
                return;
        }
        c->out[0] = (uint8_t) (len >> 8);
        c->out[1] = (uint8_t) len;
        memcpy(c->out + 2, buf, len);
        c->out_len = 2 + len;
        c->out_off = 0;
        tconn_flush(c);
}

static void tconn_error(struct dnstcp_conn *c, const uint8_t *q, size_t len, int rcode) {
        uint8_t out[DNSMSG_MAX];
        size_t n;
        if (dnsmsg_error(q, len, rcode, out, sizeof(out), &n) == 0)
                tconn_answer(c, out, n);
        else
                tconn_close(c, MDNSTCP_MALFORMED);
}

static void up_answered(struct dnstcp_up *up) {
        struct dnstcp_conn *c = up->c;
        enum metrics_dns_outcome o = dnsproxy_admit(c->px, &up->q, IPPROTO_TCP, up->ans, up->ans_len);
        uint8_t *ans = up->ans;
        size_t len = up->ans_len;
        up->ans = NULL;
        /* its query, for an error answer: up is gone after up_end() */
        uint8_t q[DNSMSG_MAX];
        size_t ql = up->q_len - 2;
        memcpy(q, up->query + 2, ql);
        up_end(up, o);
        if (o == MDNS_ANSWERED)
                tconn_answer(c, ans, len);
        else
                tconn_error(c, q, ql, o == MDNS_WITHHELD ? DNSMSG_REFUSED : DNSMSG_SERVFAIL);
        free(ans);
}

static void up_failed(struct dnstcp_up *up, enum metrics_dns_outcome o) {
        struct dnstcp_conn *c = up->c;
        uint8_t q[DNSMSG_MAX];
        size_t ql = up->q_len - 2;
        memcpy(q, up->query + 2, ql);
        if (o == MDNS_TIMED_OUT)
                dnsproxy_note_timeout(c->px, &up->q);
        up_end(up, o);
        tconn_error(c, q, ql, DNSMSG_SERVFAIL);
}

/* Reads what the upstream has of its answer: 0 while more is to come, 1
 * when it is whole, -errno. */
static int up_read(struct dnstcp_up *up) {
        for (;;) {
                uint8_t *to = up->hdr_len < 2 ? up->hdr + up->hdr_len : up->ans + up->ans_got;
                size_t want = up->hdr_len < 2 ? 2 - up->hdr_len : up->ans_len - up->ans_got;
                ssize_t k = recv(up->fd, to, want, MSG_DONTWAIT);
                if (k < 0)
                        return errno == EAGAIN || errno == EINTR ? 0 : -errno;
                if (k == 0)
                        return -EPIPE; /* closed before its answer was whole */
                if (up->hdr_len < 2) {
                        up->hdr_len += (size_t) k;
                        if (up->hdr_len < 2)
                                continue;
                        up->ans_len = (size_t) up->hdr[0] << 8 | up->hdr[1];
                        if (up->ans_len == 0)
                                return -EBADMSG;
                        if (!(up->ans = malloc(up->ans_len)))
                                return -ENOMEM;
                        continue;
                }
                up->ans_got += (size_t) k;
                if (up->ans_got == up->ans_len)
                        return 1;
        }
}

static void on_upstream(struct source *s, uint32_t events) {
        struct dnstcp_up *up = container_of(s, struct dnstcp_up, src);
        if (!up->connected) {
                int err = 0;
                socklen_t l = sizeof(err);
                if (getsockopt(up->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0 || err) {
                        up_failed(up, MDNS_UPSTREAM_FAILED);
                        return;
                }
                up->connected = true;
        }
        if (up->q_off < up->q_len) {
                ssize_t k = send(up->fd, up->query + up->q_off, up->q_len - up->q_off, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (k < 0 && errno != EAGAIN && errno != EINTR) {
                        up_failed(up, MDNS_UPSTREAM_FAILED);
                        return;
                }
                if (k > 0)
                        up->q_off += (size_t) k;
                if (up->q_off < up->q_len)
                        return;
                if (loop_mod(&up->src, EPOLLIN) < 0) {
                        up_failed(up, MDNS_UPSTREAM_FAILED);
                        return;
                }
        }
        int r = up_read(up);
        if (r > 0)
                up_answered(up);
        else if (r < 0)
                up_failed(up, MDNS_UPSTREAM_FAILED);
}

static int up_start(struct dnstcp_conn *c, const struct dns_query *q, const uint8_t *buf, size_t len) {
        struct dnsproxy *px = c->px;
        const struct sockaddr_in6 *ua = &px->rj->d->dns_upstream;
        socklen_t ul = ua->sin6_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        struct dnstcp_up *up = calloc(1, sizeof(*up));
        if (!up)
                return -ENOMEM;
        up->fd = socket(ua->sin6_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (up->fd < 0 || (connect(up->fd, (const struct sockaddr *) ua, ul) < 0 && errno != EINPROGRESS)) {
                int r = -errno;
                if (up->fd >= 0)
                        close(up->fd);
                free(up);
                return r;
        }
        int r = loop_add(&up->src, up->fd, EPOLLOUT, on_upstream);
        if (r < 0) {
                close(up->fd);
                free(up);
                return r;
        }
        up->c = c;
        up->q = *q;
        up->since_ms = now_mono_ms();
        up->query[0] = (uint8_t) (len >> 8);
        up->query[1] = (uint8_t) len;
        memcpy(up->query + 2, buf, len);
        up->q_len = 2 + len;
        c->up = up;
        px->n_pending++;
        return 0;
}

/* The connection's query is whole in c->in: answered at once (REFUSED),
 * or forwarded. */
static void tconn_query(struct dnstcp_conn *c) {
        struct dnsproxy *px = c->px;
        const uint8_t *buf = c->in + 2;
        size_t len = c->in_len - 2;
        struct dns_query q;
        c->in_len = 0;
        c->since_ms = now_mono_ms();
        if (dnsmsg_parse_query(buf, len, &q) < 0) {
                /* the stream may be anything: not read further */
                metrics_dns(&px->rj->d->metrics, MDNS_MALFORMED, 1);
                tconn_close(c, MDNSTCP_MALFORMED);
                return;
        }
        if (dnsproxy_local(px, &q, IPPROTO_TCP)) {
                uint8_t out[DNSMSG_MAX];
                size_t n;
                if (dnsmsg_loopback(buf, len, out, sizeof(out), &n) == 0)
                        tconn_answer(c, out, n);
                else
                        tconn_close(c, MDNSTCP_MALFORMED);
                return;
        }
        enum metrics_dns_outcome o = dnsproxy_vet(px, &q, IPPROTO_TCP);
        if (o == MDNS_ANSWERED && up_start(c, &q, buf, len) == 0) {
                tconn_watch(c);
                dnsproxy_arm(px);
                return; /* its outcome is counted when it is done with */
        }
        metrics_dns(&px->rj->d->metrics, o == MDNS_ANSWERED ? MDNS_UPSTREAM_FAILED : o, 1);
        if (o == MDNS_TIMED_OUT) {
                tconn_error(c, buf, len, DNSMSG_SERVFAIL);
                return;
        }
        tconn_error(c, buf, len, DNSMSG_REFUSED);
}

/* Reads the connection's next query: 0 while more is to come (or it waits
 * for its turn), 1 when it is whole, -errno (-EPIPE: the job closed it;
 * -EBADMSG: a length of 0 or past DNSMSG_MAX). */
static int tconn_read(struct dnstcp_conn *c) {
        for (;;) {
                size_t want = c->in_len < 2 ? 2 - c->in_len : 2 + ((size_t) c->in[0] << 8 | c->in[1]) - c->in_len;
                ssize_t k = recv(c->fd, c->in + c->in_len, want, MSG_DONTWAIT);
                if (k < 0)
                        return errno == EAGAIN || errno == EINTR ? 0 : -errno;
                if (k == 0)
                        return -EPIPE;
                c->in_len += (size_t) k;
                if (c->in_len < 2)
                        continue;
                size_t len = (size_t) c->in[0] << 8 | c->in[1];
                if (len == 0 || len > DNSMSG_MAX)
                        return -EBADMSG;
                if (c->in_len == 2 + len)
                        return 1;
        }
}

/* Takes the connection's queries while it may: one at a time, each after
 * the answer to the last is written, each with a token of the job's rate. */
static void tconn_serve(struct dnstcp_conn *c) {
        /* at most one query per wakeup: it waits for its answer anyway */
        while (!c->out && !c->up) {
                if (c->in_len < 2 || c->in_len < 2 + ((size_t) c->in[0] << 8 | c->in[1])) {
                        int r = tconn_read(c);
                        if (r == -EBADMSG) {
                                metrics_dns(&c->px->rj->d->metrics, MDNS_MALFORMED, 1);
                                tconn_close(c, MDNSTCP_MALFORMED);
                                return;
                        }
                        if (r < 0) {
                                tconn_close(c, r == -EPIPE && c->in_len == 0 ? MDNSTCP_CLOSED : MDNSTCP_ENDED);
                                return;
                        }
                        if (r == 0)
                                break;
                }
                if (!dnsproxy_take_token(c->px)) {
                        c->rate_paused = true;
                        c->px->rj->d->metrics.net.dns_pauses++;
                        list_proxy(c->px);
                        break;
                }
                tconn_query(c);
                return; /* c may be gone */
        }
        tconn_watch(c);
}

static void tconn_flush(struct dnstcp_conn *c) {
        while (c->out_off < c->out_len) {
                ssize_t k = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
                        tconn_watch(c);
                        return;
                }
                if (k < 0) {
                        tconn_close(c, MDNSTCP_ENDED);
                        return;
                }
                c->out_off += (size_t) k;
        }
        free(c->out);
        c->out = NULL;
        c->since_ms = now_mono_ms();
        tconn_watch(c);
}

static void on_tconn(struct source *s, uint32_t events) {
        struct dnstcp_conn *c = container_of(s, struct dnstcp_conn, src);
        if (events & EPOLLERR) {
                tconn_close(c, MDNSTCP_ENDED);
                return;
        }
        if (c->out) {
                tconn_flush(c);
                return;
        }
        if (!c->up && !c->rate_paused) {
                tconn_serve(c);
                return;
        }
        if (events & EPOLLHUP) /* gone while its query is out */
                tconn_close(c, MDNSTCP_ENDED);
}

static void on_accept(struct source *s, uint32_t events) {
        struct dnsproxy *px = container_of(s, struct dnsproxy, tcp_src);
        /* a bounded batch per wakeup; each connection a token of the job's
         * rate, so that a flood of them costs no more than one of queries */
        for (int i = 0; i < 16; i++) {
                if (!dnsproxy_take_token(px)) {
                        if (loop_mod(&px->tcp_src, 0) == 0) {
                                px->tcp_paused = true;
                                px->rj->d->metrics.net.dns_pauses++;
                                list_proxy(px);
                        }
                        return;
                }
                int fd = accept4(px->tcp_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0)
                        return;
                struct dnstcp_conn *c = px->n_conns < DNSTCP_CONNS ? calloc(1, sizeof(*c)) : NULL;
                if (!c || loop_add(&c->src, fd, EPOLLIN, on_tconn) < 0) {
                        free(c);
                        close(fd);
                        metrics_dnstcp(&px->rj->d->metrics, MDNSTCP_REFUSED);
                        continue;
                }
                /* the kernel's share of an answer a job does not read: fixed,
                 * not grown */
                int sndbuf = DNSTCP_SNDBUF;
                if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) < 0)
                        log_debug(JOB_LOG ": DNS proxy: SO_SNDBUF: %s", JOB_LOG_ARGS(&px->rj->j), strerror(errno));
                c->px = px;
                c->fd = fd;
                c->events = EPOLLIN;
                c->since_ms = now_mono_ms();
                list_add_tail(&px->conns, &c->link);
                px->n_conns++;
                list_proxy(px);
        }
}

int dnstcp_start(struct dnsproxy *px, int fd) {
        if (fd < 0)
                return 0;
        int r = listen(fd, DNSTCP_CONNS) < 0 ? -errno : loop_add(&px->tcp_src, fd, EPOLLIN, on_accept);
        if (r < 0) {
                close(fd);
                return r;
        }
        px->tcp_fd = fd;
        return 0;
}

void dnstcp_stop(struct dnsproxy *px) {
        while (!list_empty(&px->conns))
                tconn_close(list_entry(px->conns.next, struct dnstcp_conn, link), MDNSTCP_ENDED);
        if (px->tcp_listed)
                list_del(&px->tcp_link);
        px->tcp_listed = false;
        if (px->tcp_fd >= 0) {
                loop_del(&px->tcp_src);
                close(px->tcp_fd);
                px->tcp_fd = -1;
        }
}

/* Once a second: what waited for the job's rate goes on; stalled
 * connections and upstreams end. */
static void tick_proxy(struct dnsproxy *px, uint64_t now) {
        struct list *pos, *tmp;
        uint64_t idle_ms = px->rj->d->cfg->dns_tcp_idle_ms;
        if (px->tcp_paused && loop_mod(&px->tcp_src, EPOLLIN) == 0)
                px->tcp_paused = false;
        list_for_each_safe(pos, tmp, &px->conns) {
                struct dnstcp_conn *c = list_entry(pos, struct dnstcp_conn, link);
                if (!c->up && !c->rate_paused && now - c->since_ms >= idle_ms)
                        tconn_close(c, MDNSTCP_TIMED_OUT);
                else if (c->rate_paused) {
                        c->rate_paused = false;
                        tconn_serve(c);
                }
        }
}

uint64_t dnstcp_expire(struct dnsproxy *px, uint64_t now) {
        struct list *pos, *tmp;
        uint64_t t = dnsproxy_timeout_ms(px), next = UINT64_MAX;
        list_for_each_safe(pos, tmp, &px->conns) {
                struct dnstcp_conn *c = list_entry(pos, struct dnstcp_conn, link);
                if (!c->up)
                        continue;
                if (now - c->up->since_ms >= t)
                        up_failed(c->up, MDNS_TIMED_OUT); /* may close c */
                else if (c->up->since_ms + t < next)
                        next = c->up->since_ms + t;
        }
        return next;
}

void dnstcp_tick(struct daemon *d) {
        struct list *pos, *tmp;
        uint64_t now = now_mono_ms();
        list_for_each_safe(pos, tmp, &d->dns_tcp) {
                struct dnsproxy *px = list_entry(pos, struct dnsproxy, tcp_link);
                tick_proxy(px, now);
                if (list_empty(&px->conns) && !px->tcp_paused) {
                        list_del(&px->tcp_link);
                        px->tcp_listed = false;
                }
        }
}
