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
#include "service.h"
#include "session.h"

#define HEAD_MAX 16384
#define BUF_SIZE 65536
#define CONNS_MAX 1024
/* Audit lines for refused connections, a second (the rest are counted). */
#define REFUSALS_LOGGED 100

enum sc_state { SC_HEAD, SC_CONNECTING, SC_PIPE };

/* A session's bandwidth (its tenant's service_bandwidth, both ways
 * together): a bucket of a second's worth of bytes, refilled as time
 * passes; a connection that finds it empty stops reading until the
 * proxy's tick refills it. */
#define TICK_MS 50
struct bucket {
        struct list link;
        char session[PROTO_SESSION_ID_LEN + 1];
        uint64_t rate;            /* bytes a second */
        uint64_t tokens;
        uint64_t at_ms;           /* last refill */
        unsigned users;           /* connections that use it */
};

struct svc_conn {
        struct list link;
        struct services *sv;
        struct source csrc, usrc, tsrc;
        int cfd, ufd, tfd;
        enum sc_state state;
        char head[HEAD_MAX];
        size_t head_len;
        char *buf[2];             /* [0] client to service, [1] service to client */
        size_t len[2], off[2];
        bool eof[2];              /* [0] the client, [1] the service stopped sending */
        char session[PROTO_SESSION_ID_LEN + 1];
        char tenant[64];
        uint16_t port;
        char peer[64];
        uint64_t started_ms;
        uint64_t bytes[2];        /* [0] to the service, [1] to the client */
        bool by_url;              /* let in by a signed URL, not the token */
        struct bucket *bucket;    /* its session's bandwidth, or NULL: none */
        bool starved;             /* the bucket was empty: waiting for the tick */
};

struct services {
        struct daemon *d;
        int fd;
        struct source src;
        struct list conns;
        unsigned n;
        uint8_t key[crypto_auth_hmacsha256_KEYBYTES];
        time_t refusal_second;
        unsigned refusals, refusals_dropped;
        struct list buckets;
        int tick_fd;              /* refills buckets while a connection is starved */
        struct source tick_src;
        bool ticking;
};

static struct services *sv_of(struct daemon *d) {
        return d->services;
}

/* ---- audit --------------------------------------------------------------- */

static bool refusal_logged(struct services *sv) {
        time_t now = time(NULL);
        if (now != sv->refusal_second) {
                if (sv->refusals_dropped)
                        log_warning("service proxy: %u more refused connections in one second not audited", sv->refusals_dropped);
                sv->refusal_second = now;
                sv->refusals = sv->refusals_dropped = 0;
        }
        if (sv->refusals >= REFUSALS_LOGGED) {
                sv->refusals_dropped++;
                return false;
        }
        sv->refusals++;
        return true;
}

static void audit_conn(struct svc_conn *sc, int status, const char *why) {
        if (status && !refusal_logged(sc->sv))
                return;
        json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:s}", "ev", "service", "peer", sc->peer, "decision",
                              status ? "refused" : "proxied", "started", proto_time(sc->started_ms), "duration_ms",
                              (json_int_t) (now_real_ms() - sc->started_ms), "bytes_in", (json_int_t) sc->bytes[0], "bytes_out",
                              (json_int_t) sc->bytes[1], "end", why);
        if (!o)
                return;
        if (sc->session[0]) {
                json_object_set_new(o, "session", json_string(sc->session));
                json_object_set_new(o, "port", json_integer(sc->port));
        }
        if (sc->tenant[0])
                json_object_set_new(o, "tenant", json_string(sc->tenant));
        if (status)
                json_object_set_new(o, "status", json_integer(status));
        if (!status)
                json_object_set_new(o, "access", json_string(sc->by_url ? "signed_url" : "token"));
        audit_write_deferred(o);
}

/* ---- a connection's end ----------------------------------------------------- */

static void conn_free(void *p) {
        struct svc_conn *sc = p;
        free(sc->buf[0]);
        free(sc->buf[1]);
        free(sc);
}

static void close_src(struct source *s, int *fd) {
        if (*fd < 0)
                return;
        loop_del(s);
        close(*fd);
        *fd = -1;
}

static void bucket_put(struct bucket *b) {
        if (b && --b->users == 0) {
                list_del(&b->link);
                free(b);
        }
}

static void conn_end(struct svc_conn *sc, int status, const char *why) {
        audit_conn(sc, status, why);
        bucket_put(sc->bucket);
        sc->bucket = NULL;
        close_src(&sc->csrc, &sc->cfd);
        close_src(&sc->usrc, &sc->ufd);
        close_src(&sc->tsrc, &sc->tfd);
        list_del(&sc->link);
        sc->sv->n--;
        loop_defer_free(conn_free, sc);
}

static const char *reason_phrase(int status) {
        switch (status) {
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 404: return "Not Found";
        case 408: return "Request Timeout";
        case 431: return "Request Header Fields Too Large";
        case 502: return "Bad Gateway";
        default: return "Service Unavailable";
        }
}

/* A refusal, as an HTTP answer the client can read (best effort: the
 * socket is non-blocking and the answer short), then the end. */
static void refuse(struct svc_conn *sc, int status, const char *why) {
        char msg[512];
        int n = snprintf(msg, sizeof(msg),
                         "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s\n", status,
                         reason_phrase(status), strlen(why) + 1, why);
        if (n > 0 && sc->cfd >= 0)
                (void) !send(sc->cfd, msg, (size_t) n < sizeof(msg) ? (size_t) n : sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        conn_end(sc, status, why);
}

/* ---- moving bytes ------------------------------------------------------------ */

static void update_interest(struct svc_conn *sc) {
        uint32_t c = 0, u = 0;
        if (!sc->len[0] && !sc->eof[0] && !sc->starved)
                c |= EPOLLIN;
        if (sc->len[1])
                c |= EPOLLOUT;
        if (sc->state == SC_CONNECTING)
                u = EPOLLOUT;
        else {
                if (!sc->len[1] && !sc->eof[1] && !sc->starved)
                        u |= EPOLLIN;
                if (sc->len[0])
                        u |= EPOLLOUT;
        }
        if (sc->cfd >= 0)
                loop_mod(&sc->csrc, c);
        if (sc->ufd >= 0)
                loop_mod(&sc->usrc, u);
}

static void pump_both(struct svc_conn *sc);

static void bucket_refill(struct bucket *b) {
        uint64_t now = now_mono_us() / 1000;
        if (now > b->at_ms) {
                uint64_t add = (now - b->at_ms) * b->rate / 1000;
                b->tokens = b->tokens + add > b->rate ? b->rate : b->tokens + add;
                b->at_ms = now;
        }
}

static void starve(struct svc_conn *sc) {
        struct services *sv = sc->sv;
        sc->starved = true;
        if (!sv->ticking) {
                struct itimerspec its = { .it_value = { .tv_nsec = TICK_MS * 1000000L }, .it_interval = { .tv_nsec = TICK_MS * 1000000L } };
                if (timerfd_settime(sv->tick_fd, 0, &its, NULL) == 0)
                        sv->ticking = true;
        }
}

/* Every tick while some connection is starved: those whose bucket has
 * refilled read again. */
static void on_tick(struct source *s, uint32_t events) {
        struct services *sv = container_of(s, struct services, tick_src);
        uint64_t n;
        (void) !read(sv->tick_fd, &n, sizeof(n));
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &sv->conns) {
                struct svc_conn *sc = list_entry(pos, struct svc_conn, link);
                if (!sc->starved)
                        continue;
                bucket_refill(sc->bucket);
                if (sc->bucket->tokens == 0)
                        continue;
                sc->starved = false;
                pump_both(sc);
        }
        /* (one that read again may have emptied its bucket again) */
        bool any = false;
        for (struct list *p = sv->conns.next; p != &sv->conns && !any; p = p->next)
                any = list_entry(p, struct svc_conn, link)->starved;
        if (!any) {
                struct itimerspec off = { 0 };
                timerfd_settime(sv->tick_fd, 0, &off, NULL);
                sv->ticking = false;
        }
}

/* One direction: read from `from` while its buffer is empty, write what it
 * holds to `to`. false: the connection ended (an error). */
static bool pump(struct svc_conn *sc, int dir) {
        int from = dir == 0 ? sc->cfd : sc->ufd, to = dir == 0 ? sc->ufd : sc->cfd;
        for (int rounds = 0; rounds < 16; rounds++) {
                if (!sc->len[dir] && !sc->eof[dir]) {
                        size_t want = BUF_SIZE;
                        if (sc->bucket) {
                                bucket_refill(sc->bucket);
                                if (sc->bucket->tokens == 0) {
                                        starve(sc);
                                        return true;
                                }
                                if (want > sc->bucket->tokens)
                                        want = (size_t) sc->bucket->tokens;
                        }
                        ssize_t n = recv(from, sc->buf[dir], want, MSG_DONTWAIT);
                        if (n > 0 && sc->bucket)
                                sc->bucket->tokens -= (uint64_t) n;
                        if (n < 0)
                                return errno == EAGAIN || errno == EINTR;
                        if (n == 0) {
                                sc->eof[dir] = true;
                                /* Half-close on: the other end sees it. */
                                shutdown(to, SHUT_WR);
                                return true;
                        }
                        sc->len[dir] = (size_t) n;
                        sc->off[dir] = 0;
                }
                if (!sc->len[dir])
                        return true;
                ssize_t w = send(to, sc->buf[dir] + sc->off[dir], sc->len[dir], MSG_DONTWAIT | MSG_NOSIGNAL);
                if (w < 0)
                        return errno == EAGAIN || errno == EINTR;
                sc->bytes[dir] += (uint64_t) w;
                sc->off[dir] += (size_t) w;
                sc->len[dir] -= (size_t) w;
                if (sc->len[dir])
                        return true;
                if (sc->eof[dir])
                        shutdown(to, SHUT_WR);
        }
        return true;
}

static void pump_both(struct svc_conn *sc) {
        if (!pump(sc, 0) || !pump(sc, 1)) {
                conn_end(sc, 0, "reset");
                return;
        }
        if (sc->eof[0] && sc->eof[1] && !sc->len[0] && !sc->len[1]) {
                conn_end(sc, 0, "closed");
                return;
        }
        update_interest(sc);
}

static void on_upstream(struct source *s, uint32_t events) {
        struct svc_conn *sc = container_of(s, struct svc_conn, usrc);
        if (sc->state == SC_CONNECTING) {
                int err = 0;
                socklen_t l = sizeof(err);
                if (getsockopt(sc->ufd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
                        err = errno;
                if (err) {
                        char why[128];
                        snprintf(why, sizeof(why), "nothing answers on port %u in the session (%s)", sc->port, strerror(err));
                        refuse(sc, 502, why);
                        return;
                }
                sc->state = SC_PIPE;
                close_src(&sc->tsrc, &sc->tfd);
        }
        pump_both(sc);
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
static struct bucket *bucket_get(struct services *sv, const char *session, uint64_t rate) {
        for (struct list *p = sv->buckets.next; p != &sv->buckets; p = p->next) {
                struct bucket *b = list_entry(p, struct bucket, link);
                if (streq(b->session, session)) {
                        b->users++;
                        return b;
                }
        }
        struct bucket *b = calloc(1, sizeof(*b));
        if (!b)
                return NULL;
        snprintf(b->session, sizeof(b->session), "%s", session);
        b->rate = b->tokens = rate;
        b->at_ms = now_mono_us() / 1000;
        b->users = 1;
        list_add_tail(&sv->buckets, &b->link);
        return b;
}

static unsigned conns_of(const struct services *sv, const char *session) {
        unsigned n = 0;
        for (const struct list *p = sv->conns.next; p != &sv->conns; p = p->next) {
                const struct svc_conn *o = list_entry(p, struct svc_conn, link);
                if (o->state != SC_HEAD && streq(o->session, session))
                        n++;
        }
        return n;
}

static void head_done(struct svc_conn *sc, size_t head_end) {
        struct services *sv = sc->sv;
        struct daemon *d = sv->d;
        const char *sp1 = memchr(sc->head, ' ', head_end);
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t) (sc->head + head_end - sp1 - 1)) : NULL;
        if (!sp1 || !sp2 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
                refuse(sc, 400, "not an HTTP/1.x request");
                return;
        }
        size_t hl;
        const char *host = http_header(sc->head, head_end, "host:", &hl);
        const char *domain = d->cfg->service_domain ? d->cfg->service_domain : "localhost";
        if (!host || !service_parse_host(host, hl, domain, &sc->port, sc->session)) {
                char why[300];
                snprintf(why, sizeof(why), "the Host header must be PORT-SESSION.%s", domain);
                refuse(sc, 400, why);
                return;
        }
        struct session *s = session_by_id(&d->sessions, sc->session);
        if (!s || !session_exposes(s, sc->port)) {
                refuse(sc, 404, "no such service: the session has ended, is not ready, or does not expose that port");
                return;
        }
        snprintf(sc->tenant, sizeof(sc->tenant), "%s", session_tenant(s)->name);
        if (!allowed(sc, s, sp1 + 1, (size_t) (sp2 - sp1 - 1))) {
                refuse(sc, 401, "the session's token (X-Sbx-Token) or a signed URL that has not expired is needed");
                return;
        }
        if (conns_of(sv, sc->session) >= session_tenant(s)->service_connections) {
                refuse(sc, 503, "the session has as many service connections as its tenant's service_connections");
                return;
        }
        int r = session_connect_port(s, sc->port, &sc->ufd);
        if (r < 0) {
                char why[160];
                snprintf(why, sizeof(why), "the session's agent could not connect to port %u: %s", sc->port, strerror(-r));
                refuse(sc, 502, why);
                return;
        }
        int one = 1;
        (void) setsockopt(sc->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (loop_add(&sc->usrc, sc->ufd, EPOLLOUT, on_upstream) < 0) {
                close(sc->ufd);
                sc->ufd = -1;
                refuse(sc, 503, "out of resources");
                return;
        }
        sc->buf[0] = malloc(BUF_SIZE);
        sc->buf[1] = malloc(BUF_SIZE);
        if (!sc->buf[0] || !sc->buf[1]) {
                refuse(sc, 503, "out of memory");
                return;
        }
        uint64_t rate = session_tenant(s)->service_bandwidth;
        if (rate != CONFIG_UNSET && !(sc->bucket = bucket_get(sv, sc->session, rate))) {
                refuse(sc, 503, "out of memory");
                return;
        }
        sc->len[0] = service_strip_token(sc->head, head_end, sc->head_len, sc->buf[0]);
        sc->off[0] = 0;
        sc->state = SC_CONNECTING;
        update_interest(sc);
}

static void on_client(struct source *s, uint32_t events) {
        struct svc_conn *sc = container_of(s, struct svc_conn, csrc);
        if (sc->state != SC_HEAD) {
                pump_both(sc);
                return;
        }
        ssize_t n = recv(sc->cfd, sc->head + sc->head_len, HEAD_MAX - sc->head_len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                conn_end(sc, 400, "the client went away before its request's head ended");
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
                refuse(sc, 431, "the request's head is larger than 16 KiB");
}

static void on_timeout(struct source *s, uint32_t events) {
        struct svc_conn *sc = container_of(s, struct svc_conn, tsrc);
        if (sc->state == SC_HEAD)
                refuse(sc, 408, "the request's head did not come within service_timeout");
        else if (sc->state == SC_CONNECTING)
                refuse(sc, 502, "the service did not accept the connection within service_timeout");
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
                        if (refusal_logged(sv))
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
                struct itimerspec its = { .it_value = { .tv_sec = (time_t) (sv->d->cfg->service_timeout_ms / 1000),
                                                        .tv_nsec = (long) (sv->d->cfg->service_timeout_ms % 1000) * 1000000 } };
                sc->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
                if (sc->tfd < 0 || timerfd_settime(sc->tfd, 0, &its, NULL) < 0 ||
                    loop_add(&sc->tsrc, sc->tfd, EPOLLIN, on_timeout) < 0) {
                        if (sc->tfd >= 0)
                                close(sc->tfd);
                        sc->tfd = -1;
                        conn_end(sc, 503, "out of resources");
                        continue;
                }
                if (loop_add(&sc->csrc, fd, EPOLLIN, on_client) < 0) {
                        close(fd);
                        sc->cfd = -1;
                        conn_end(sc, 503, "out of resources");
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
        if (sv->tick_fd < 0 || loop_add(&sv->tick_src, sv->tick_fd, EPOLLIN, on_tick) < 0) {
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
                close_src(&sv->tick_src, &sv->tick_fd);
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
                        conn_end(sc, 0, port < 0 ? "the session ended" : "the port was unexposed");
        }
}

void service_stop(struct daemon *d) {
        struct services *sv = sv_of(d);
        if (!sv)
                return;
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &sv->conns) conn_end(list_entry(pos, struct svc_conn, link), 0, "the daemon stopped");
        close_src(&sv->src, &sv->fd);
        close_src(&sv->tick_src, &sv->tick_fd);
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
