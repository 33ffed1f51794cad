/* SPDX-License-Identifier: Apache-2.0 */
/* The sessions' service proxy (service_listen; sbx-supervisord(8),
 * SERVICES). A connection sends an HTTP/1.x request head naming
 * PORT-SESSION.DOMAIN in its Host header and proving access with the
 * session's token (X-Sbx-Token) or a signed, expiring URL (sbx_exp and
 * sbx_sig in its query). The session's agent connects to that port on the
 * sandbox's loopback and hands the socket over (sbx-init(8), CONNECT); the
 * head goes on (less the token's header) and from then on bytes are moved
 * both ways as they come, so keep-alive, streaming and WebSocket upgrades
 * pass unchanged. Everything a client sends before that is bounded (a
 * head of HEAD_MAX bytes within service_timeout); connections are capped
 * per session and daemon-wide; each one ends with an audit line (who, when,
 * bytes each way, how long, and why it ended). On the event loop, never
 * blocking: a slow end only fills its buffer, and then the other end is
 * not read. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "audit.h"
#include "daemon.h"
#include "jobevents.h"
#include "log.h"
#include "metrics.h"
#include "service-conn.h"
#include "service.h"
#include "session.h"

static struct services *sv_of(struct daemon *d) {
        return d->services;
}

static void on_client(struct source *s, uint32_t events);

/* ---- the request's head ----------------------------------------------------- */

void service_sign(struct daemon *d, const char *session, uint16_t port, uint64_t expires_s, char out[static 65]) {
        char msg[96];
        uint8_t mac[crypto_auth_hmacsha256_BYTES];
        int n = snprintf(msg, sizeof(msg), "%s:%u:%" PRIu64, session, (unsigned) port, expires_s);
        crypto_auth_hmacsha256(mac, (const unsigned char *) msg, (unsigned long long) n, sv_of(d)->key);
        sodium_bin2hex(out, 65, mac, sizeof(mac));
}

/* Access: the session's token in X-Sbx-Token, or a signed URL that has
 * not expired. Compared in constant time. */
static bool allowed(struct svc_conn *sc, struct session *s, const char *target, size_t tlen) {
        size_t tl;
        const char *tok = http_header(sc->head, sc->head_len, "x-sbx-token:", &tl);
        const char *want = session_token(s);
        if (tok && want[0] && tl == strlen(want) && sodium_memcmp(tok, want, tl) == 0)
                return true;
        char exp[24], sig[80], good[65];
        if (!http_query_param(target, tlen, "sbx_exp=", exp, sizeof(exp)) || !http_query_param(target, tlen, "sbx_sig=", sig, sizeof(sig)))
                return false;
        char *e;
        unsigned long long x = strtoull(exp, &e, 10);
        if (*e || !exp[0] || x < (unsigned long long) time(NULL) || strlen(sig) != 64)
                return false;
        service_sign(sc->sv->d, sc->session, sc->port, x, good);
        if (sodium_memcmp(sig, good, 64) != 0)
                return false;
        sc->by_url = true;
        return true;
}

/* The session's bucket, shared by its connections (made at the first). */
static unsigned conns_of(const struct services *sv, const char *session) {
        if (!sv)
                return 0;
        unsigned n = 0;
        for (const struct list *p = sv->conns.next; p != &sv->conns; p = p->next) {
                const struct svc_conn *o = list_entry(p, struct svc_conn, link);
                if (o->state != SC_HEAD && streq(o->session, session))
                        n++;
        }
        return n;
}

unsigned service_connections(struct daemon *d, const char *session) {
        return conns_of(sv_of(d), session);
}

static int conn_timer(struct svc_conn *sc);
static void on_timeout(struct source *s, uint32_t events);

void service_forward(struct daemon *d, const struct service_forward *f) {
        struct services *sv = sv_of(d);
        struct svc_conn *sc = sv && sv->n < CONNS_MAX ? calloc(1, sizeof(*sc)) : NULL;
        size_t cap = f->extra_len > BUF_SIZE ? f->extra_len : BUF_SIZE;
        if (!sc || !(sc->buf[0] = malloc(cap)) || !(sc->buf[1] = malloc(BUF_SIZE))) {
                if (sc)
                        sc_free(sc);
                log_warning("session %s: a forward to port %u dropped: %s", f->session, (unsigned) f->port,
                            sv ? "out of memory or connections" : "no service proxy");
                close(f->cfd);
                close(f->ufd);
                return;
        }
        sc->sv = sv;
        sc->raw = true;
        sc->cfd = f->cfd;
        sc->ufd = f->ufd;
        sc->tfd = -1;
        sc->port = f->port;
        sc->started_ms = now_real_ms();
        snprintf(sc->session, sizeof(sc->session), "%s", f->session);
        snprintf(sc->tenant, sizeof(sc->tenant), "%s", f->tenant);
        snprintf(sc->peer, sizeof(sc->peer), "uid %u", (unsigned) f->uid);
        if (f->extra_len)
                memcpy(sc->buf[0], f->extra, f->extra_len);
        sc->len[0] = f->extra_len;
        list_add_tail(&sv->conns, &sc->link);
        sv->n++;
        sc->state = f->connected ? SC_PIPE : SC_CONNECTING;
        if (f->rate != CONFIG_UNSET && !(sc->bucket = sv_bucket_get(sv, sc->session, f->rate))) {
                close(sc->ufd);
                sc->ufd = -1;
                sc_refuse(sc, 503, "out of memory");
                return;
        }
        int one = 1;
        (void) setsockopt(sc->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (loop_add(&sc->usrc, sc->ufd, 0, sc_on_upstream) < 0) {
                close(sc->ufd);
                sc->ufd = -1;
                sc_refuse(sc, 503, "out of resources");
                return;
        }
        if (loop_add(&sc->csrc, sc->cfd, 0, on_client) < 0) {
                close(sc->cfd);
                sc->cfd = -1;
                sc_refuse(sc, 503, "out of resources");
                return;
        }
        if (!f->connected) {
                if (conn_timer(sc) < 0)
                        sc_refuse(sc, 503, "out of resources");
                else
                        sc_update_interest(sc);
                return;
        }
        sc_pump_both(sc);
}

static void head_done(struct svc_conn *sc, size_t head_end) {
        struct services *sv = sc->sv;
        struct daemon *d = sv->d;
        const char *sp1 = memchr(sc->head, ' ', head_end);
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t) (sc->head + head_end - sp1 - 1)) : NULL;
        if (!sp1 || !sp2 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
                sc_refuse(sc, 400, "not an HTTP/1.x request");
                return;
        }
        size_t hl;
        const char *host = http_header(sc->head, head_end, "host:", &hl);
        const char *domain = d->cfg->service_domain ? d->cfg->service_domain : "localhost";
        if (!host || !service_parse_host(host, hl, domain, &sc->port, sc->session)) {
                char why[300];
                snprintf(why, sizeof(why), "the Host header must be PORT-SESSION.%s", domain);
                sc_refuse(sc, 400, why);
                return;
        }
        struct session *s = session_by_id(&d->sessions, sc->session);
        if (!s || !session_exposes(s, sc->port)) {
                sc_refuse(sc, 404, "no such service: the session has ended, is not ready, or does not expose that port");
                return;
        }
        snprintf(sc->tenant, sizeof(sc->tenant), "%s", session_tenant(s)->name);
        if (!allowed(sc, s, sp1 + 1, (size_t) (sp2 - sp1 - 1))) {
                sc_refuse(sc, 401, "the session's token (X-Sbx-Token) or a signed URL that has not expired is needed");
                return;
        }
        if (conns_of(sv, sc->session) >= session_tenant(s)->service_connections) {
                sc_refuse(sc, 503, "the session has as many service connections as its tenant's service_connections");
                return;
        }
        int r = session_connect_port(s, sc->port, &sc->ufd);
        if (r < 0) {
                char why[160];
                snprintf(why, sizeof(why), "the session's agent could not connect to port %u: %s", sc->port, strerror(-r));
                sc_refuse(sc, 502, why);
                return;
        }
        int one = 1;
        (void) setsockopt(sc->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (loop_add(&sc->usrc, sc->ufd, EPOLLOUT, sc_on_upstream) < 0) {
                close(sc->ufd);
                sc->ufd = -1;
                sc_refuse(sc, 503, "out of resources");
                return;
        }
        sc->buf[0] = malloc(BUF_SIZE);
        sc->buf[1] = malloc(BUF_SIZE);
        if (!sc->buf[0] || !sc->buf[1]) {
                sc_refuse(sc, 503, "out of memory");
                return;
        }
        uint64_t rate = session_tenant(s)->service_bandwidth;
        if (rate != CONFIG_UNSET && !(sc->bucket = sv_bucket_get(sv, sc->session, rate))) {
                sc_refuse(sc, 503, "out of memory");
                return;
        }
        sc->len[0] = service_strip_token(sc->head, head_end, sc->head_len, sc->buf[0]);
        sc->off[0] = 0;
        sc->state = SC_CONNECTING;
        sc_update_interest(sc);
}

static void on_client(struct source *s, uint32_t events) {
        struct svc_conn *sc = container_of(s, struct svc_conn, csrc);
        if (sc->state != SC_HEAD) {
                sc_pump_both(sc);
                return;
        }
        ssize_t n = recv(sc->cfd, sc->head + sc->head_len, HEAD_MAX - sc->head_len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                sc_end(sc, 400, "the client went away before its request's head ended");
                return;
        }
        sc->head_len += (size_t) n;
        const char *e = NULL;
        for (size_t i = 3; i < sc->head_len && !e; i++)
                if (sc->head[i] == '\n' && sc->head[i - 1] == '\r' && sc->head[i - 2] == '\n' && sc->head[i - 3] == '\r')
                        e = sc->head + i + 1;
        if (e) {
                head_done(sc, (size_t) (e - sc->head));
                return;
        }
        if (sc->head_len == HEAD_MAX)
                sc_refuse(sc, 431, "the request's head is larger than 16 KiB");
}

/* service_timeout from now, for the head or the connect. */
static int conn_timer(struct svc_conn *sc) {
        uint64_t ms = sc->sv->d->cfg->service_timeout_ms;
        struct itimerspec its = { .it_value = { .tv_sec = (time_t) (ms / 1000), .tv_nsec = (long) (ms % 1000) * 1000000 } };
        sc->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (sc->tfd < 0 || timerfd_settime(sc->tfd, 0, &its, NULL) < 0 || loop_add(&sc->tsrc, sc->tfd, EPOLLIN, on_timeout) < 0) {
                if (sc->tfd >= 0)
                        close(sc->tfd);
                sc->tfd = -1;
                return -1;
        }
        return 0;
}

static void on_timeout(struct source *s, uint32_t events) {
        struct svc_conn *sc = container_of(s, struct svc_conn, tsrc);
        if (sc->state == SC_HEAD)
                sc_refuse(sc, 408, "the request's head did not come within service_timeout");
        else if (sc->state == SC_CONNECTING)
                sc_refuse(sc, 502, "the service did not accept the connection within service_timeout");
}

/* ---- the listener -------------------------------------------------------- */

static void peer_name(int fd, char *out, size_t len) {
        struct sockaddr_storage ss;
        socklen_t l = sizeof(ss);
        char a[INET6_ADDRSTRLEN] = "?";
        unsigned port = 0;
        if (getpeername(fd, (struct sockaddr *) &ss, &l) == 0) {
                if (ss.ss_family == AF_INET) {
                        inet_ntop(AF_INET, &((struct sockaddr_in *) &ss)->sin_addr, a, sizeof(a));
                        port = ntohs(((struct sockaddr_in *) &ss)->sin_port);
                } else if (ss.ss_family == AF_INET6) {
                        inet_ntop(AF_INET6, &((struct sockaddr_in6 *) &ss)->sin6_addr, a, sizeof(a));
                        port = ntohs(((struct sockaddr_in6 *) &ss)->sin6_port);
                }
        }
        snprintf(out, len, ss.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", a, port);
}

static void on_accept(struct source *s, uint32_t events) {
        struct services *sv = container_of(s, struct services, src);
        for (int i = 0; i < 64; i++) {
                int fd = accept4(sv->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0)
                        return;
                if (sv->n >= CONNS_MAX) {
                        static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                        (void) !send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                        close(fd);
                        if (sv_refusal_logged(sv))
                                log_warning("service proxy: %u connections open, the most: one refused", sv->n);
                        continue;
                }
                struct svc_conn *sc = calloc(1, sizeof(*sc));
                if (!sc) {
                        close(fd);
                        return;
                }
                /* Bytes go on as they come: no wait for more to fill a segment. */
                int one = 1;
                (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                sc->sv = sv;
                sc->cfd = fd;
                sc->ufd = sc->tfd = -1;
                sc->started_ms = now_real_ms();
                peer_name(fd, sc->peer, sizeof(sc->peer));
                list_add_tail(&sv->conns, &sc->link);
                sv->n++;
                if (conn_timer(sc) < 0) {
                        sc_end(sc, 503, "out of resources");
                        continue;
                }
                if (loop_add(&sc->csrc, fd, EPOLLIN, on_client) < 0) {
                        close(fd);
                        sc->cfd = -1;
                        sc_end(sc, 503, "out of resources");
                }
        }
}

int service_start(struct daemon *d, struct sbx_error *err) {
        const char *addr = d->cfg->service_listen;
        struct sockaddr_storage ss;
        socklen_t sl;
        if (!addr)
                return 0;
        if (metrics_parse_listen(addr, &ss, &sl) < 0)
                return sbx_error_msg(err, EINVAL, "service_listen: invalid address '%s'", addr);
        struct services *sv = calloc(1, sizeof(*sv));
        if (!sv)
                return sbx_error_set(err, ENOMEM, "service_listen");
        sv->d = d;
        list_init(&sv->conns);
        list_init(&sv->buckets);
        sv->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (sv->tick_fd < 0 || loop_add(&sv->tick_src, sv->tick_fd, EPOLLIN, sv_on_tick) < 0) {
                int e = errno;
                if (sv->tick_fd >= 0)
                        close(sv->tick_fd);
                free(sv);
                return sbx_error_set(err, e, "service_listen: a timer");
        }
        /* Signed URLs hold for this daemon's life only. */
        crypto_auth_hmacsha256_keygen(sv->key);
        sv->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        if (sv->fd < 0 || setsockopt(sv->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(sv->fd, (struct sockaddr *) &ss, sl) < 0 || listen(sv->fd, 128) < 0 ||
            loop_add(&sv->src, sv->fd, EPOLLIN, on_accept) < 0) {
                int e = errno;
                if (sv->fd >= 0)
                        close(sv->fd);
                svc_close_src(&sv->tick_src, &sv->tick_fd);
                free(sv);
                return sbx_error_set(err, e, "service_listen %s", addr);
        }
        d->services = sv;
        log_info("session services on %s (hosts PORT-SESSION.%s)", addr, d->cfg->service_domain ? d->cfg->service_domain : "localhost");
        return 0;
}

bool service_on(const struct daemon *d) {
        return d->services != NULL;
}

void service_close_session(struct daemon *d, const char *session, int port) {
        struct services *sv = sv_of(d);
        if (!sv)
                return;
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &sv->conns) {
                struct svc_conn *sc = list_entry(pos, struct svc_conn, link);
                if (sc->state != SC_HEAD && streq(sc->session, session) && (port < 0 || sc->port == port))
                        sc_end(sc, 0, port < 0 ? "the session ended" : "the port was unexposed");
        }
}

void service_stop(struct daemon *d) {
        struct services *sv = sv_of(d);
        if (!sv)
                return;
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &sv->conns) sc_end(list_entry(pos, struct svc_conn, link), 0, "the daemon stopped");
        svc_close_src(&sv->src, &sv->fd);
        svc_close_src(&sv->tick_src, &sv->tick_fd);
        free(sv);
        d->services = NULL;
}

/* A session's sandbox ended: its services with it. */
static void on_job_end(struct rjob *rj, json_t *rec) {
        if (rj->session_box && rj->session_id[0])
                service_close_session(rj->d, rj->session_id, -1);
}

static void on_job_fail(struct rjob *rj, const char *code, const char *msg) {
        on_job_end(rj, NULL);
}

const struct job_listener service_listener = { .end = on_job_end, .fail = on_job_fail };
