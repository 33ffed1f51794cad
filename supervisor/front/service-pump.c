/* SPDX-License-Identifier: Apache-2.0 */
/* The service proxy's connections once they are set up (service-conn.h):
 * bytes moved both ways as they come, each session's bandwidth bucket,
 * a connection's end and its audit line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "audit.h"
#include "log.h"
#include "service-conn.h"

/* ---- audit --------------------------------------------------------------- */

bool sv_refusal_logged(struct services *sv) {
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
        if (status && !sv_refusal_logged(sc->sv))
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
                json_object_set_new(o, "access", json_string(sc->raw ? "forward" : sc->by_url ? "signed_url" : "token"));
        audit_write_deferred(o);
}

/* ---- a connection's end ----------------------------------------------------- */

void sc_free(void *p) {
        struct svc_conn *sc = p;
        free(sc->buf[0]);
        free(sc->buf[1]);
        free(sc);
}

void svc_close_src(struct source *s, int *fd) {
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

void sc_end(struct svc_conn *sc, int status, const char *why) {
        audit_conn(sc, status, why);
        bucket_put(sc->bucket);
        sc->bucket = NULL;
        svc_close_src(&sc->csrc, &sc->cfd);
        svc_close_src(&sc->usrc, &sc->ufd);
        svc_close_src(&sc->tsrc, &sc->tfd);
        list_del(&sc->link);
        sc->sv->n--;
        loop_defer_free(sc_free, sc);
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
void sc_refuse(struct svc_conn *sc, int status, const char *why) {
        char msg[512];
        if (sc->raw) {
                /* A forward's client reads the service's bytes: it sees
                 * the end only (the audit line says why). */
                sc_end(sc, status, why);
                return;
        }
        int n = snprintf(msg, sizeof(msg),
                         "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s\n", status,
                         reason_phrase(status), strlen(why) + 1, why);
        if (n > 0 && sc->cfd >= 0)
                (void) !send(sc->cfd, msg, (size_t) n < sizeof(msg) ? (size_t) n : sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        sc_end(sc, status, why);
}

/* ---- moving bytes ------------------------------------------------------------ */

void sc_update_interest(struct svc_conn *sc) {
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
void sv_on_tick(struct source *s, uint32_t events) {
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
                sc_pump_both(sc);
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

void sc_pump_both(struct svc_conn *sc) {
        if (!pump(sc, 0) || !pump(sc, 1)) {
                sc_end(sc, 0, "reset");
                return;
        }
        if (sc->eof[0] && sc->eof[1] && !sc->len[0] && !sc->len[1]) {
                sc_end(sc, 0, "closed");
                return;
        }
        sc_update_interest(sc);
}

void sc_on_upstream(struct source *s, uint32_t events) {
        struct svc_conn *sc = container_of(s, struct svc_conn, usrc);
        if (sc->state == SC_CONNECTING) {
                int err = 0;
                socklen_t l = sizeof(err);
                if (getsockopt(sc->ufd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
                        err = errno;
                if (err) {
                        char why[128];
                        snprintf(why, sizeof(why), "nothing answers on port %u in the session (%s)", sc->port, strerror(err));
                        sc_refuse(sc, 502, why);
                        return;
                }
                sc->state = SC_PIPE;
                svc_close_src(&sc->tsrc, &sc->tfd);
        }
        sc_pump_both(sc);
}


struct bucket *sv_bucket_get(struct services *sv, const char *session, uint64_t rate) {
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
