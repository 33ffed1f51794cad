/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP API ([http] listen): libmicrohttpd with a thread per
 * connection, each request authenticated by its bearer token or its TLS
 * client certificate, routed
 * (http-routes.h) to one protocol operation, and served by the daemon's
 * loop through a connection of its own (http-gate.h). The thread waits
 * for the reply, so a wait or a follow costs the loop nothing more than
 * it does on the socket. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "fileio.h"
#include "http-api.h"
#include "http-internal.h"
#include "listener.h"
#include "log.h"
#include "metrics.h"
#include "proto.h"

#define THREAD_STACK (256 * 1024)
#define MAX_PEM (64 * 1024)
#define JSON_TYPE "application/json"

/* ---- who is asking ---- */

/* A refusal is logged at most once a second: a flood of bad tokens must
 * not flood the log. */
static void log_refusal(struct http_api *h, const char *peer, const char *why) {
        uint64_t now = now_mono_ms(), last = atomic_load(&h->warned_ms);
        if (now - last < 1000 || !atomic_compare_exchange_strong(&h->warned_ms, &last, now))
                return;
        log_warning("HTTP API: refused a request from %s: %s", peer, why);
}

static const struct http_token *token_of(const struct config *cfg, const char *bearer) {
        uint8_t digest[crypto_hash_sha256_BYTES];
        crypto_hash_sha256(digest, (const unsigned char *) bearer, strlen(bearer));
        const struct http_token *found = NULL;
        /* every token compared, in constant time each */
        for (size_t i = 0; i < cfg->n_tokens; i++)
                if (cfg->tokens[i].has_sha256 && sodium_memcmp(digest, cfg->tokens[i].sha256, sizeof(digest)) == 0)
                        found = &cfg->tokens[i];
        return found;
}

/* The caller's TLS client certificate, checked against tls_client_ca:
 * its [token.NAME] of that cert_sha256 in *ret (NULL: it sent none);
 * -1 with *why when it sent one that is not good or not configured. */
static int cert_of(const struct config *cfg, struct MHD_Connection *mc, const struct http_token **ret, const char **why) {
        *ret = NULL;
        if (!cfg->http_tls_client_ca)
                return 0;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        gnutls_session_t s = ci ? (gnutls_session_t) ci->tls_session : NULL;
        unsigned n = 0;
        const gnutls_datum_t *peers = s ? gnutls_certificate_get_peers(s, &n) : NULL;
        if (!peers || n == 0)
                return 0;
        unsigned status = 0;
        if (gnutls_certificate_verify_peers2(s, &status) < 0 || status != 0) {
                *why = "the client certificate is not valid for tls_client_ca (signature, dates or issuer)";
                return -1;
        }
        uint8_t digest[crypto_hash_sha256_BYTES];
        crypto_hash_sha256(digest, peers[0].data, peers[0].size);
        for (size_t i = 0; i < cfg->n_tokens; i++)
                if (cfg->tokens[i].has_cert && sodium_memcmp(digest, cfg->tokens[i].cert_sha256, sizeof(digest)) == 0)
                        *ret = &cfg->tokens[i];
        if (!*ret) {
                *why = "the client certificate is no [token.NAME]'s cert_sha256";
                return -1;
        }
        return 0;
}

/* Under tokens_lock. */
static bool rate_allows(struct http_api *h, const struct http_token *t) {
        if (!t->rate)
                return true;
        uint64_t now = now_mono_ms();
        bool ok;
        pthread_mutex_lock(&h->lock);
        struct rate *r = &h->rates[t - h->cfg->tokens];
        r->tokens += (double) (now - r->at_ms) * (double) t->rate / 1000.0;
        if (r->tokens > (double) t->burst)
                r->tokens = (double) t->burst;
        r->at_ms = now;
        ok = r->tokens >= 1.0;
        if (ok)
                r->tokens -= 1.0;
        pthread_mutex_unlock(&h->lock);
        return ok;
}

static int check_token(struct hreq *q, struct MHD_Connection *mc, const char *bearer, enum MHD_Result *ret);
static int check_caller(struct hreq *q, struct MHD_Connection *mc, const struct http_token *t, enum MHD_Result *ret);

/* Without an Authorization header: the client certificate's token, if
 * it sent one; else anonymous where allowed. */
static int authenticate_cert(struct hreq *q, struct MHD_Connection *mc, enum MHD_Result *ret) {
        struct http_api *h = q->h;
        const struct http_token *t;
        const char *why = NULL;
        pthread_rwlock_rdlock(&h->tokens_lock);
        int r = cert_of(h->cfg, mc, &t, &why);
        if (r == 0 && t)
                r = check_caller(q, mc, t, ret);
        pthread_rwlock_unlock(&h->tokens_lock);
        if (r < 0 && why) {
                log_refusal(h, q->peer, why);
                *ret = http_queue_error(mc, E_UNAUTHORIZED, "%s", why);
        }
        if (r < 0 || t)
                return r;
        if (h->cfg->allow_unauthenticated)
                return 0;
        log_refusal(h, q->peer, "no token");
        *ret = http_queue_error(mc, E_UNAUTHORIZED, h->cfg->http_tls_client_ca
                                                            ? "no bearer token (Authorization: Bearer TOKEN) and no client certificate"
                                                            : "no bearer token (Authorization: Bearer TOKEN)");
        return -1;
}

/* 0 when the request may go on (q->tok its token's name, or "" for the
 * anonymous tenant), or a refusal queued. A bearer token, when given,
 * is what counts; without one, a client certificate. */
static int authenticate(struct hreq *q, struct MHD_Connection *mc, enum MHD_Result *ret) {
        struct http_api *h = q->h;
        const char *auth = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!auth)
                return authenticate_cert(q, mc, ret);
        if (strncasecmp(auth, "Bearer ", 7) != 0 || !auth[7]) {
                log_refusal(h, q->peer, "an Authorization header that is not a bearer token");
                *ret = http_queue_error(mc, E_UNAUTHORIZED, "the Authorization header is not 'Bearer TOKEN'");
                return -1;
        }
        pthread_rwlock_rdlock(&h->tokens_lock);
        int r = check_token(q, mc, auth + 7, ret);
        pthread_rwlock_unlock(&h->tokens_lock);
        return r;
}

/* Under tokens_lock: the configuration's tokens stay while it is held. */
static int check_token(struct hreq *q, struct MHD_Connection *mc, const char *bearer, enum MHD_Result *ret) {
        struct http_api *h = q->h;
        const struct http_token *t = token_of(h->cfg, bearer);
        if (!t) {
                log_refusal(h, q->peer, "an unknown token");
                *ret = http_queue_error(mc, E_UNAUTHORIZED, "unknown token");
                return -1;
        }
        return check_caller(q, mc, t, ret);
}

/* Under tokens_lock: its expiry, scope and rate. */
static int check_caller(struct hreq *q, struct MHD_Connection *mc, const struct http_token *t, enum MHD_Result *ret) {
        struct http_api *h = q->h;
        if (t->expires_s && (uint64_t) time(NULL) >= t->expires_s) {
                char when[32];
                time_t e = (time_t) t->expires_s;
                struct tm tm;
                strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&e, &tm));
                log_refusal(h, q->peer, "an expired token");
                *ret = http_queue_error(mc, E_UNAUTHORIZED, "token '%s' expired at %s", t->name, when);
                return -1;
        }
        if (q->rt->writes && t->read_only) {
                log_refusal(h, q->peer, "a read-only token for a change");
                *ret = http_queue_error(mc, E_FORBIDDEN, "token '%s' has scope 'read': %s %s is refused", t->name, q->rt->method,
                                   q->rt->path);
                return -1;
        }
        if (!rate_allows(h, t)) {
                *ret = http_queue_error(mc, E_RATE_LIMITED, "token '%s' is over its rate of %" PRIu64 " requests a second", t->name,
                                   t->rate);
                return -1;
        }
        snprintf(q->tok, sizeof(q->tok), "%s", t->name);
        return 0;
}

static void peer_of(struct MHD_Connection *mc, char *buf, size_t len) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        char addr[INET6_ADDRSTRLEN] = "?";
        unsigned port = 0;
        if (ci && ci->client_addr->sa_family == AF_INET) {
                const struct sockaddr_in *s = (const struct sockaddr_in *) ci->client_addr;
                inet_ntop(AF_INET, &s->sin_addr, addr, sizeof(addr));
                port = ntohs(s->sin_port);
        } else if (ci && ci->client_addr->sa_family == AF_INET6) {
                const struct sockaddr_in6 *s = (const struct sockaddr_in6 *) ci->client_addr;
                inet_ntop(AF_INET6, &s->sin6_addr, addr, sizeof(addr));
                port = ntohs(s->sin6_port);
        }
        snprintf(buf, len, strchr(addr, ':') ? "[%s]:%u" : "%s:%u", addr, port);
}


/* The routes that are not operations. */
static enum MHD_Result serve_own(struct hreq *q, struct MHD_Connection *mc) {
        struct http_api *h = q->h;
        if (streq(q->rt->path, "/healthz"))
                return http_queue_text(mc, 200, "text/plain", "ok\n", 3);
        if (streq(q->rt->path, "/readyz"))
                return atomic_load(&h->ready) ? http_queue_text(mc, 200, "text/plain", "ready\n", 6)
                                              : http_queue_text(mc, 503, "text/plain", "stopping\n", 9);
        return http_queue_text(mc, 200, JSON_TYPE, http_openapi, http_openapi_len);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *mc, const char *url, const char *method, const char *version,
                              const char *upload, size_t *upload_len, void **ctx) {
        struct http_api *h = cls;
        struct hreq *q = *ctx;
        (void) version;
        if (!q) {
                q = calloc(1, sizeof(*q));
                if (!q)
                        return MHD_NO;
                q->h = h;
                q->mc = mc;
                q->fd = -1;
                *ctx = q;
                peer_of(mc, q->peer, sizeof(q->peer));
                char allow[128];
                enum MHD_Result ret = MHD_YES;
                int r = http_route_find(method, url, &q->rt, &q->caps, allow, sizeof(allow));
                q->answered = true;
                if (r == -ENOENT)
                        return http_queue_error(mc, E_NOT_FOUND, "no such route: %s (the API is described at /v1/openapi.json)", url);
                if (r == -EBADRQC)
                        return http_queue_not_allowed(mc, method, url, allow);
                if (!q->rt->op)
                        return serve_own(q, mc);
                if (authenticate(q, mc, &ret) < 0)
                        return ret;
                if (!(q->path = strdup(url)))
                        return MHD_NO;
                q->answered = false;
                return MHD_YES;
        }
        if (q->answered) {
                *upload_len = 0;
                return MHD_YES;
        }
        if (*upload_len) {
                size_t n = *upload_len;
                *upload_len = 0;
                if (q->too_big || q->len + n > h->cfg->max_request) {
                        q->too_big = true;
                        return MHD_YES;
                }
                char *b = realloc(q->body, q->len + n);
                if (!b)
                        return MHD_NO;
                memcpy(b + q->len, upload, n);
                q->body = b;
                q->len += n;
                return MHD_YES;
        }
        q->answered = true;
        if (q->too_big)
                return http_queue_error(mc, E_BAD_REQUEST, "the body is larger than max_request (%" PRIu64 " bytes)", h->cfg->max_request);
        return q->rt->reply == HR_MCP ? http_mcp_serve(q, mc) : http_serve(q, mc);
}

static void completed(void *cls, struct MHD_Connection *mc, void **ctx, enum MHD_RequestTerminationCode why) {
        struct hreq *q = *ctx;
        (void) cls;
        (void) mc;
        (void) why;
        if (!q)
                return;
        if (q->fd >= 0)
                close(q->fd);
        gate_reader_done(&q->rd);
        free(q->pending);
        free(q->body);
        free(q->path);
        free(q);
        *ctx = NULL;
}

/* ---- the listeners ---- */

static int read_pem(const char *path, char **ret, struct sbx_error *err) {
        size_t len;
        int r = read_file_at(AT_FDCWD, path, MAX_PEM, ret, &len);
        if (r < 0)
                return sbx_error_msg(err, -r, "[http] cannot read %s: %s", path, r == -EFBIG ? "larger than 64 KiB" : strerror(-r));
        return 0;
}

int http_api_prepare(struct daemon *d, struct sbx_error *err) {
        const struct config *cfg = d->cfg;
        d->api = NULL;
        if (!cfg->n_http_listen)
                return 0;
        struct http_api *h = calloc(1, sizeof(*h));
        if (!h)
                return sbx_error_msg(err, ENOMEM, "out of memory");
        d->api = h;
        h->d = d;
        h->cfg = cfg;
        pthread_mutex_init(&h->lock, NULL);
        pthread_rwlock_init(&h->tokens_lock, NULL);
        h->n_rates = cfg->n_tokens ? cfg->n_tokens : 1;
        h->rates = calloc(h->n_rates, sizeof(*h->rates));
        if (!h->rates)
                return sbx_error_msg(err, ENOMEM, "out of memory");
        uint64_t now = now_mono_ms();
        for (size_t i = 0; i < cfg->n_tokens; i++)
                h->rates[i] = (struct rate){ .tokens = (double) cfg->tokens[i].burst, .at_ms = now };
        if (cfg->http_tls_cert) {
                if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
                        return sbx_error_msg(err, ENOTSUP, "[http] tls_cert: this libmicrohttpd is built without TLS");
                int r = read_pem(cfg->http_tls_cert, &h->cert, err);
                if (r < 0 || (r = read_pem(cfg->http_tls_key, &h->key, err)) < 0)
                        return r;
                if (cfg->http_tls_client_ca && (r = read_pem(cfg->http_tls_client_ca, &h->client_ca, err)) < 0)
                        return r;
        }
        return 0;
}

int http_api_start(struct daemon *d, struct sbx_error *err) {
        struct http_api *h = d->api;
        const struct config *cfg = d->cfg;
        if (!h)
                return 0;
        int r = http_gate_open(cfg, listener_admit_http, d, &h->gate);
        if (r < 0)
                return sbx_error_set(err, r, "[http] gate");
        for (size_t i = 0; i < cfg->n_http_listen; i++) {
                const char *addr = cfg->http_listen[i];
                struct sockaddr_storage ss;
                socklen_t sl;
                if (metrics_parse_listen(addr, &ss, &sl) < 0)
                        return sbx_error_msg(err, EINVAL, "[http] listen: invalid address '%s'", addr);
                unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL |
                                 (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0) | (cfg->http_listen_tls[i] ? MHD_USE_TLS : 0);
                /* with a client CA, MHD asks for a certificate (optional:
                 * cert_of() checks it) */
                struct MHD_OptionItem tls[] = {
                        { MHD_OPTION_HTTPS_MEM_CERT, 0, h->cert },
                        { MHD_OPTION_HTTPS_MEM_KEY, 0, h->key },
                        { h->client_ca ? MHD_OPTION_HTTPS_MEM_TRUST : MHD_OPTION_END, 0, h->client_ca },
                        { MHD_OPTION_END, 0, NULL },
                };
                h->mhd[i] = MHD_start_daemon(
                        flags, 0, NULL, NULL, answer, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &ss, MHD_OPTION_CONNECTION_LIMIT,
                        (unsigned) cfg->http_max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned) cfg->http_ip_connections,
                        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) (cfg->http_idle_timeout_ms / 1000),
                        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) cfg->http_max_headers, MHD_OPTION_THREAD_STACK_SIZE,
                        (size_t) THREAD_STACK, MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_ARRAY,
                        cfg->http_listen_tls[i] ? tls : tls + 3, MHD_OPTION_END);
                if (!h->mhd[i])
                        return sbx_error_msg(err, EADDRNOTAVAIL,
                                             "[http] listen: cannot listen on %s (in use, not an address of this host, a port below "
                                             "1024 for a daemon with user set, or a TLS certificate or key libmicrohttpd refused)",
                                             addr);
                h->n_mhd++;
                log_info("HTTP API on %s://%s/v1/", cfg->http_listen_tls[i] ? "https" : "http", addr);
        }
        atomic_store(&h->ready, true);
        return 0;
}

int http_api_reserve(struct daemon *d, size_t n_tokens) {
        struct http_api *h = d->api;
        int r = 0;
        if (!h)
                return 0;
        pthread_mutex_lock(&h->lock);
        if (n_tokens > h->n_rates) {
                struct rate *n = realloc(h->rates, n_tokens * sizeof(*n));
                if (n) {
                        h->rates = n;
                        h->n_rates = n_tokens;
                } else
                        r = -ENOMEM;
        }
        pthread_mutex_unlock(&h->lock);
        return r;
}

void http_api_reload_begin(struct daemon *d) {
        if (d->api)
                pthread_rwlock_wrlock(&d->api->tokens_lock);
}

void http_api_reload_end(struct daemon *d) {
        struct http_api *h = d->api;
        if (!h)
                return;
        uint64_t now = now_mono_ms();
        pthread_mutex_lock(&h->lock);
        for (size_t i = 0; i < h->cfg->n_tokens && i < h->n_rates; i++)
                h->rates[i] = (struct rate){ .tokens = (double) h->cfg->tokens[i].burst, .at_ms = now };
        pthread_mutex_unlock(&h->lock);
        pthread_rwlock_unlock(&h->tokens_lock);
}

void http_api_stopping(struct daemon *d) {
        struct http_api *h = d->api;
        if (!h)
                return;
        atomic_store(&h->ready, false);
        if (h->gate)
                http_gate_stopping(h->gate);
}

void http_api_stop(struct daemon *d) {
        struct http_api *h = d->api;
        if (!h)
                return;
        atomic_store(&h->ready, false);
        /* Requests in flight see their streams end; then the threads are
         * joined. */
        if (h->gate)
                http_gate_close(h->gate);
        for (size_t i = 0; i < h->n_mhd; i++)
                MHD_stop_daemon(h->mhd[i]);
        http_gate_free(h->gate);
        pthread_mutex_destroy(&h->lock);
        pthread_rwlock_destroy(&h->tokens_lock);
        if (h->key)
                explicit_bzero(h->key, strlen(h->key));
        free(h->key);
        free(h->cert);
        free(h->client_ca);
        free(h->rates);
        free(h);
        d->api = NULL;
}
