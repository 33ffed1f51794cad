/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP API's requests as the protocol's (http-internal.h): a route's
 * request built from body, query and path, sent through the gate, and the
 * daemon's reply handed back as it is, as an NDJSON stream, or as a
 * download's bytes. */
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "http-internal.h"
#include "proto.h"
#include "util.h"

#define JSON_TYPE "application/json"
#define NDJSON_TYPE "application/x-ndjson"

/* While a request waits for its reply or streams its events, the
 * connection is not idle: no timeout; idle_timeout again once it is
 * answered. */
void http_busy(struct hreq *q, bool on) {
        unsigned s = on ? 0 : (unsigned) (q->h->cfg->http_idle_timeout_ms / 1000);
        MHD_set_connection_option(q->mc, MHD_CONNECTION_OPTION_TIMEOUT, s);
}

/* ---- replies ---- */

static unsigned status_of(const char *code) {
        static const struct {
                const char *code;
                unsigned status;
        } map[] = {
                { E_BAD_REQUEST, 400 },   { E_UNAUTHORIZED, 401 },   { E_FORBIDDEN, 403 },
                { E_NOT_FOUND, 404 },     { E_NOT_DONE, 409 },       { E_CONFLICT, 409 },
                { E_SESSION_ENDED, 410 }, { E_LIMIT, 422 },          { E_NO_PROFILE, 422 },
                { E_BUNDLE_INTEGRITY, 422 }, { E_BUNDLE_SIGNATURE, 422 }, { E_BUNDLE_ROLLBACK, 422 },
                { E_BUNDLE_INVALID, 422 }, { E_CONFIG, 422 }, { E_QUEUE_FULL, 429 },    { E_TOO_MANY_CONNECTIONS, 429 },
                { E_RATE_LIMITED, 429 },  { E_INTERNAL, 500 },       { E_UNSUPPORTED, 501 },
                { E_REGISTRY_UNAVAILABLE, 502 }, { E_BUSY, 503 },    { E_SHUTTING_DOWN, 503 },
                { E_STORAGE, 503 },       { E_CACHE_FULL, 507 },     { E_OTHER_NODE, 421 },
                { E_UNAVAILABLE, 503 },
        };
        for (size_t i = 0; i < ARRAY_SIZE(map); i++)
                if (streq(map[i].code, code))
                        return map[i].status;
        return 500;
}

static enum MHD_Result queue(struct MHD_Connection *mc, unsigned status, const char *type, char *body, size_t len) {
        struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(body);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        MHD_add_response_header(resp, "Cache-Control", "no-store");
        if (status == 429 || status == 503)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
        if (status == 401)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"sbx\"");
        enum MHD_Result r = MHD_queue_response(mc, status, resp);
        MHD_destroy_response(resp);
        return r;
}

/* A reply line of the daemon as it is, with its status. */
static enum MHD_Result queue_line(struct MHD_Connection *mc, unsigned status, const char *line, size_t len) {
        char *body = malloc(len + 1);
        if (!body)
                return MHD_NO;
        memcpy(body, line, len);
        body[len] = '\n';
        return queue(mc, status, JSON_TYPE, body, len + 1);
}

enum MHD_Result http_queue_error(struct MHD_Connection *mc, const char *code, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        json_t *o = proto_error(NULL, code, "%s", msg);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!s)
                return MHD_NO;
        size_t n = strlen(s);
        char *body = realloc(s, n + 2);
        if (!body) {
                free(s);
                return MHD_NO;
        }
        body[n] = '\n';
        return queue(mc, status_of(code), JSON_TYPE, body, n + 1);
}

enum MHD_Result http_queue_not_allowed(struct MHD_Connection *mc, const char *method, const char *url, const char *allow) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s is not served for %s (allowed: %s)", method, url, allow);
        json_t *o = proto_error(NULL, E_BAD_REQUEST, "%s", msg);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        struct MHD_Response *resp = s ? MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE) : NULL;
        if (!resp) {
                free(s);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, JSON_TYPE);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
        enum MHD_Result r = MHD_queue_response(mc, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
        MHD_destroy_response(resp);
        return r;
}

enum MHD_Result http_queue_text(struct MHD_Connection *mc, unsigned status, const char *type, const char *text, size_t len) {
        char *body = malloc(len ? len : 1);
        if (!body)
                return MHD_NO;
        memcpy(body, text, len);
        return queue(mc, status, type, body, len);
}

/* ---- the request as the protocol's ---- */

struct build {
        json_t *req;
        char why[256];
};

static enum MHD_Result add_query(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        struct build *b = cls;
        (void) kind;
        if (b->why[0])
                return MHD_NO;
        if (json_object_get(b->req, key)) {
                snprintf(b->why, sizeof(b->why), "'%s' is given twice (query, body or path)", key);
                return MHD_NO;
        }
        json_t *v = http_query_value(key, value ? value : "");
        if (!v || json_object_set_new(b->req, key, v) < 0)
                snprintf(b->why, sizeof(b->why), "out of memory");
        return MHD_YES;
}

static bool set_member(struct build *b, const char *key, const char *value) {
        if (json_object_get(b->req, key)) {
                snprintf(b->why, sizeof(b->why), "'%s' is given twice (query, body or path)", key);
                return false;
        }
        json_object_set_new(b->req, key, json_string(value));
        return true;
}

/* The request's line, or NULL with b->why. */
static char *build_request(struct hreq *q, struct MHD_Connection *mc, struct build *b) {
        if (q->len) {
                json_error_t je;
                b->req = json_loadb(q->body, q->len, JSON_REJECT_DUPLICATES, &je);
                if (!b->req || !json_is_object(b->req)) {
                        snprintf(b->why, sizeof(b->why), "the body is not a JSON object%s%s", b->req ? "" : ": ", b->req ? "" : je.text);
                        return NULL;
                }
                if (json_object_get(b->req, "op")) {
                        snprintf(b->why, sizeof(b->why), "field 'op': the route names the operation (%s)", q->rt->op);
                        return NULL;
                }
        } else
                b->req = json_object();
        if (!b->req)
                return NULL;
        MHD_get_connection_values(mc, MHD_GET_ARGUMENT_KIND, add_query, b);
        if (b->why[0])
                return NULL;
        for (size_t i = 0; i < q->caps.n; i++)
                if (!set_member(b, q->caps.name[i], q->caps.value[i]))
                        return NULL;
        if (q->rt->fixed) {
                char key[32];
                const char *eq = strchr(q->rt->fixed, '=');
                snprintf(key, sizeof(key), "%.*s", (int) (eq - q->rt->fixed), q->rt->fixed);
                if (!set_member(b, key, eq + 1))
                        return NULL;
        }
        const char *idem = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Idempotency-Key");
        if (idem) {
                if (!streq(q->rt->op, "run")) {
                        snprintf(b->why, sizeof(b->why), "Idempotency-Key goes with POST /v1/jobs only");
                        return NULL;
                }
                if (!set_member(b, "idempotency_key", idem))
                        return NULL;
        }
        if (!json_object_get(b->req, "v"))
                json_object_set_new(b->req, "v", json_integer(1));
        json_object_set_new(b->req, "op", json_string(q->rt->op));
        char *line = json_dumps(b->req, JSON_COMPACT);
        if (!line)
                snprintf(b->why, sizeof(b->why), "out of memory");
        return line;
}

/* ---- streams ---- */

/* Is this event line the end of what follows a request? */
static bool is_last_event(json_t *ev) {
        const char *e = json_string_value(json_object_get(ev, "event"));
        return e && (streq(e, "end") || streq(e, "error") || streq(e, "download_end"));
}

/* Up to max of the stream's pending bytes, to MHD. */
static ssize_t hand_out(struct hreq *q, char *buf, size_t max) {
        size_t n = q->pending_len - q->pending_off;
        if (n > max)
                n = max;
        memcpy(buf, q->pending + q->pending_off, n);
        q->pending_off += n;
        return (ssize_t) n;
}

static ssize_t read_follow(void *cls, uint64_t pos, char *buf, size_t max) {
        struct hreq *q = cls;
        (void) pos;
        if (q->pending_off == q->pending_len) {
                if (q->last) {
                        http_busy(q, false);
                        return MHD_CONTENT_READER_END_OF_STREAM;
                }
                const char *line;
                size_t len;
                if (gate_read_line(&q->rd, &line, &len) < 0)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                json_t *ev = json_loadb(line, len, 0, NULL);
                q->last = ev && is_last_event(ev);
                json_decref(ev);
                char *p = realloc(q->pending, len + 1);
                if (!p)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                q->pending = p;
                memcpy(p, line, len);
                p[len] = '\n';
                q->pending_len = len + 1;
                q->pending_off = 0;
        }
        return hand_out(q, buf, max);
}

/* A download's bytes: its data events decoded, until download_end. */
static ssize_t read_bytes(void *cls, uint64_t pos, char *buf, size_t max) {
        struct hreq *q = cls;
        (void) pos;
        while (q->pending_off == q->pending_len) {
                const char *line;
                size_t len;
                if (gate_read_line(&q->rd, &line, &len) < 0)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                json_t *ev = json_loadb(line, len, 0, NULL);
                const char *e = json_string_value(json_object_get(ev, "event"));
                const char *b64 = json_string_value(json_object_get(ev, "data_b64"));
                if (e && streq(e, "download_end")) {
                        bool whole = json_integer_value(json_object_get(ev, "size")) == (json_int_t) q->sent;
                        json_decref(ev);
                        http_busy(q, false);
                        return whole && q->sent == q->size ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
                }
                if (!e || !streq(e, "data") || !b64) {
                        json_decref(ev); /* an error event: the connection is cut, short of its length */
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                }
                size_t blen = strlen(b64), n = 0;
                char *p = realloc(q->pending, blen / 4 * 3 + 3);
                if (!p || sodium_base642bin((unsigned char *) p, blen / 4 * 3 + 3, b64, blen, NULL, &n, NULL,
                                            sodium_base64_VARIANT_ORIGINAL) < 0) {
                        if (p)
                                q->pending = p;
                        json_decref(ev);
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                }
                json_decref(ev);
                q->pending = p;
                q->pending_len = n;
                q->pending_off = 0;
                q->sent += n;
                if (q->sent > q->size)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        return hand_out(q, buf, max);
}

static enum MHD_Result queue_stream(struct hreq *q, struct MHD_Connection *mc, uint64_t size, const char *type,
                                    MHD_ContentReaderCallback fn) {
        struct MHD_Response *resp = MHD_create_response_from_callback(size, 64 * 1024, fn, q, NULL);
        if (!resp)
                return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        MHD_add_response_header(resp, "Cache-Control", "no-store");
        if (fn == read_follow)
                MHD_add_response_header(resp, "X-Accel-Buffering", "no");
        enum MHD_Result r = MHD_queue_response(mc, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return r;
}

/* ---- another node's ---- */

/* s, percent-encoded but for unreserved characters (and '/' when kept). */
static void put_encoded(FILE *f, const char *s, bool slash) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-._~", *p) ||
                    (slash && *p == '/'))
                        fputc(*p, f);
                else
                        fprintf(f, "%%%02X", *p);
}

struct query_out {
        FILE *f;
        bool first;
};

static enum MHD_Result put_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
        struct query_out *o = cls;
        (void) kind;
        fputc(o->first ? '?' : '&', o->f);
        o->first = false;
        put_encoded(o->f, key, false);
        if (value) {
                fputc('=', o->f);
                put_encoded(o->f, value, false);
        }
        return MHD_YES;
}

/* E_OTHER_NODE naming the node's HTTP API: 307 to the same path and query
 * there, with the daemon's error as the body. */
static enum MHD_Result redirect(struct hreq *q, struct MHD_Connection *mc, const char *api, const char *line, size_t len) {
        char *loc = NULL, *body = malloc(len + 1);
        size_t n = 0;
        FILE *f = body ? open_memstream(&loc, &n) : NULL;
        if (!f) {
                free(body);
                return MHD_NO;
        }
        fputs(api, f);
        put_encoded(f, q->path ? q->path : "/", true);
        struct query_out o = { f, true };
        MHD_get_connection_values(mc, MHD_GET_ARGUMENT_KIND, put_arg, &o);
        memcpy(body, line, len);
        body[len] = '\n';
        struct MHD_Response *resp = fclose(f) == 0 ? MHD_create_response_from_buffer(len + 1, body, MHD_RESPMEM_MUST_FREE) : NULL;
        if (!resp) {
                free(body);
                free(loc);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, JSON_TYPE);
        MHD_add_response_header(resp, "Cache-Control", "no-store");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, loc);
        free(loc);
        enum MHD_Result r = MHD_queue_response(mc, MHD_HTTP_TEMPORARY_REDIRECT, resp);
        MHD_destroy_response(resp);
        return r;
}

/* ---- one request ---- */

/* The reply's line and its JSON. Events may come before it (a command's
 * "started" comes before its acknowledgement is durable): they are kept
 * in q->pending, for a stream. */
static int read_reply(struct hreq *q, const char **ret, size_t *ret_len, json_t **ret_o) {
        for (;;) {
                const char *line;
                size_t len;
                int r = gate_read_line(&q->rd, &line, &len);
                if (r < 0)
                        return r;
                json_t *o = json_loadb(line, len, 0, NULL);
                if (!o)
                        return -EBADMSG;
                if (json_object_get(o, "ok")) {
                        *ret = line;
                        *ret_len = len;
                        *ret_o = o;
                        return 0;
                }
                q->last |= is_last_event(o);
                json_decref(o);
                char *p = realloc(q->pending, q->pending_len + len + 1);
                if (!p)
                        return -ENOMEM;
                memcpy(p + q->pending_len, line, len);
                p[q->pending_len + len] = '\n';
                q->pending = p;
                q->pending_len += len + 1;
        }
}

enum MHD_Result http_serve(struct hreq *q, struct MHD_Connection *mc) {
        struct http_api *h = q->h;
        struct build b = { 0 };
        char *line = build_request(q, mc, &b);
        json_t *req = b.req;
        if (!line) {
                json_decref(req);
                return http_queue_error(mc, E_BAD_REQUEST, "%s", b.why);
        }
        bool follow = json_is_true(json_object_get(req, "follow"));
        json_decref(req);
        int fd = http_gate_call(h->gate, q->tok, q->peer);
        if (fd < 0) {
                free(line);
                return fd == -ESHUTDOWN ? http_queue_error(mc, E_SHUTTING_DOWN, "the daemon is stopping")
                                        : http_queue_error(mc, E_BUSY, "cannot reach the daemon's loop: %s", strerror(-fd));
        }
        q->fd = fd;
        http_busy(q, true);
        size_t n = strlen(line);
        line[n] = '\n'; /* over the NUL: the line is sent with its length */
        int r = write_all(fd, line, n + 1);
        free(line);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        gate_reader_init(&q->rd, fd, ci ? ci->connect_fd : -1, h->cfg->client_buffer + 65536);
        const char *reply = NULL;
        size_t len = 0;
        json_t *o = NULL;
        if (r == 0)
                r = read_reply(q, &reply, &len, &o);
        if (r < 0) {
                http_busy(q, false);
                return r == -EPIPE ? MHD_NO : http_queue_error(mc, E_INTERNAL, "reading the daemon's reply: %s", strerror(-r));
        }
        enum MHD_Result ret;
        bool stream = json_is_true(json_object_get(o, "ok")) &&
                      (q->rt->reply == HR_BYTES || (q->rt->reply == HR_FOLLOW && follow));
        if (!stream)
                http_busy(q, false);
        if (!json_is_true(json_object_get(o, "ok"))) {
                json_t *e = json_object_get(o, "error");
                const char *code = json_string_value(json_object_get(e, "code"));
                const char *api = json_string_value(json_object_get(e, "api"));
                if (code && streq(code, E_OTHER_NODE) && api)
                        ret = redirect(q, mc, api, reply, len);
                else
                        ret = queue_line(mc, status_of(code ? code : E_INTERNAL), reply, len);
        } else if (q->rt->reply == HR_TEXT) {
                const char *text = json_string_value(json_object_get(o, "metrics"));
                const char *type = json_string_value(json_object_get(o, "content_type"));
                ret = http_queue_text(mc, 200, type ? type : "text/plain", text ? text : "", text ? strlen(text) : 0);
        } else if (q->rt->reply == HR_BYTES) {
                q->size = (uint64_t) json_integer_value(json_object_get(o, "size"));
                ret = queue_stream(q, mc, q->size, "application/octet-stream", read_bytes);
        } else if (q->rt->reply == HR_FOLLOW && follow) {
                /* the reply first, then the events that came before it */
                char *p = malloc(len + 1 + q->pending_len);
                if (p) {
                        memcpy(p, reply, len);
                        p[len] = '\n';
                        if (q->pending_len)
                                memcpy(p + len + 1, q->pending, q->pending_len);
                        free(q->pending);
                        q->pending = p;
                        q->pending_len += len + 1;
                        q->pending_off = 0;
                }
                ret = p ? queue_stream(q, mc, MHD_SIZE_UNKNOWN, NDJSON_TYPE, read_follow) : MHD_NO;
        } else
                ret = queue_line(mc, 200, reply, len);
        json_decref(o);
        return ret;
}
