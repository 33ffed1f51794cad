/* SPDX-License-Identifier: Apache-2.0 */
/* POST /mcp: the Model Context Protocol's Streamable HTTP transport on
 * the HTTP API, with the API's tokens. Each request's body is one
 * JSON-RPC message, handled by the same code as sbx-mcp(1)'s
 * (supervisor/mcp), the daemon reached through the request's gate as its
 * token's tenant. A request is answered with its response as JSON (a tool
 * call once its job has ended; a caller that hangs up first has the job
 * cancelled); a notification with 202. A tool call that asks for progress
 * (a progressToken) from a client that accepts text/event-stream is
 * answered as a stream instead: its progress notifications as they come,
 * then its response, each an SSE event; the call then runs on a thread of
 * its own while the connection's thread hands out what it sent. The server keeps no MCP session
 * (no Mcp-Session-Id), offers no stream on GET, and answers a browser's
 * request only from an origin of [http] mcp_origin: a page on another
 * site cannot make a browser on this host call it (DNS rebinding). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "http-internal.h"
#include "mcp.h"
#include "proto.h"
#include "util.h"

#define JSON_TYPE "application/json"

struct mcp_sse;

struct mcp_http_io {
        struct mcp_io io;
        struct http_gate *gate;
        char tok[HTTP_TOKEN_NAME_MAX + 1], peer[56]; /* the request's (it may end before a streamed call) */
        json_t *reply;
        struct call one;
        struct mcp_sse *sse;      /* a streamed call's, or NULL */
        struct mcp_http_io *next; /* in the calls in progress */
};

/* A streamed call: what it sent and the connection's thread has not
 * handed out yet. */
struct mcp_sse {
        struct mcp_http_io x;
        struct hreq *q;
        json_t *msg;
        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t more;
        char *buf;
        size_t len, off;
        bool done, failed;
};

/* The tool calls in progress, each in its own request: a cancellation
 * comes in another request of the same client (the same token). */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mcp_http_io *live;

static void live_add(struct mcp_http_io *x) {
        pthread_mutex_lock(&live_lock);
        x->next = live;
        live = x;
        pthread_mutex_unlock(&live_lock);
}

static void live_remove(struct mcp_http_io *x) {
        pthread_mutex_lock(&live_lock);
        for (struct mcp_http_io **p = &live; *p; p = &(*p)->next)
                if (*p == x) {
                        *p = x->next;
                        break;
                }
        pthread_mutex_unlock(&live_lock);
}

/* The client's address without its port: a client's notification may
 * come on another connection than its call. */
static bool same_client(const char *a, const char *b) {
        const char *ea = strrchr(a, ':'), *eb = strrchr(b, ':');
        return ea && eb && ea - a == eb - b && !strncmp(a, b, (size_t) (ea - a));
}

/* notifications/cancelled for a call of another request of the same
 * client (its token and address): its job is cancelled here, and that
 * request answers nothing. */
static void cancel_elsewhere(struct mcp_http_io *me, json_t *id) {
        char job[32] = "";
        pthread_mutex_lock(&live_lock);
        for (struct mcp_http_io *x = live; x; x = x->next)
                if (x != me && streq(x->tok, me->tok) && same_client(x->peer, me->peer) && x->one.used &&
                    json_equal(x->one.id, id)) {
                        x->one.cancelled = true;
                        snprintf(job, sizeof(job), "%s", x->one.job);
                }
        pthread_mutex_unlock(&live_lock);
        if (!job[0])
                return;
        char why[256];
        json_t *m = dconn_call(json_pack("{s:i, s:s, s:s}", "v", 1, "op", "cancel", "job", job), why, sizeof(why));
        json_decref(m);
}

/* One SSE event of msg (stolen) for the connection's thread. */
static void sse_push(struct mcp_sse *s, json_t *msg) {
        char *data = json_dumps(msg, JSON_COMPACT);
        json_decref(msg);
        pthread_mutex_lock(&s->lock);
        size_t n = data ? strlen(data) + 24 : 0;
        char *b = data ? realloc(s->buf, s->len + n) : NULL;
        if (b) {
                s->buf = b;
                s->len += (size_t) snprintf(b + s->len, n, "event: message\ndata: %s\n\n", data);
        } else
                s->failed = true;
        pthread_cond_signal(&s->more);
        pthread_mutex_unlock(&s->lock);
        free(data);
}

static void io_send(struct mcp_io *io, json_t *msg) {
        struct mcp_http_io *x = container_of(io, struct mcp_http_io, io);
        if (x->sse)
                return sse_push(x->sse, msg);
        /* the response to the request; notifications (progress) have no
         * way back in a JSON answer and are dropped */
        if (json_object_get(msg, "id") && !json_object_get(msg, "method") && !x->reply) {
                x->reply = msg;
                return;
        }
        json_decref(msg);
}

static int io_connect(struct mcp_io *io) {
        struct mcp_http_io *x = container_of(io, struct mcp_http_io, io);
        return http_gate_call(x->gate, x->tok, x->peer);
}

static struct call *io_call_new(struct mcp_io *io) {
        struct mcp_http_io *x = container_of(io, struct mcp_http_io, io);
        if (x->one.used)
                return NULL;
        memset(&x->one, 0, sizeof(x->one));
        x->one.used = true;
        x->one.conn.fd = -1;
        return &x->one;
}

static struct call *io_call_find(struct mcp_io *io, json_t *id) {
        struct mcp_http_io *x = container_of(io, struct mcp_http_io, io);
        return x->one.used && id && json_equal(x->one.id, id) ? &x->one : NULL;
}

static void io_cancel_other(struct mcp_io *io, json_t *id) {
        cancel_elsewhere(container_of(io, struct mcp_http_io, io), id);
}

static bool origin_allowed(const struct config *cfg, const char *origin) {
        for (size_t i = 0; i < cfg->n_http_mcp_origins; i++)
                if (streq(cfg->http_mcp_origins[i], origin))
                        return true;
        return false;
}

static enum MHD_Result rpc_error(struct MHD_Connection *mc, unsigned status, int code, const char *msg) {
        json_t *o = json_pack("{s:s, s:n, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", "error", "code", code, "message", msg);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!s)
                return MHD_NO;
        enum MHD_Result r = http_queue_text(mc, status, JSON_TYPE, s, strlen(s));
        free(s);
        return r;
}

static void *sse_run(void *arg) {
        struct mcp_sse *s = arg;
        mcp_io = &s->x.io;
        live_add(&s->x);
        mcp_handle(s->msg);
        live_remove(&s->x);
        pthread_mutex_lock(&s->lock);
        s->done = true;
        pthread_cond_signal(&s->more);
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

/* The connection's thread: what the call sent so far, waiting for more. */
static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max) {
        struct mcp_sse *s = cls;
        (void) pos;
        pthread_mutex_lock(&s->lock);
        while (s->off == s->len && !s->done && !s->failed)
                pthread_cond_wait(&s->more, &s->lock);
        size_t n = s->len - s->off;
        bool end = n == 0;
        if (n > max)
                n = max;
        memcpy(out, s->buf + s->off, n);
        s->off += n;
        bool failed = s->failed;
        pthread_mutex_unlock(&s->lock);
        if (failed)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        if (end) {
                http_busy(s->q, false);
                return MHD_CONTENT_READER_END_OF_STREAM;
        }
        return (ssize_t) n;
}

/* When the response goes (sent, or its client gone): the call is waited
 * for (a client that hung up has had its job cancelled: the call ends). */
static void sse_free(void *cls) {
        struct mcp_sse *s = cls;
        if (s->started)
                pthread_join(s->thread, NULL);
        json_decref(s->msg);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->more);
        free(s->buf);
        free(s);
}

/* A tool call with a progressToken from a client that takes a stream. */
static bool wants_stream(struct MHD_Connection *mc, json_t *m) {
        const char *accept = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
        const char *method = json_string_value(json_object_get(m, "method"));
        return accept && strstr(accept, "text/event-stream") && method && streq(method, "tools/call") &&
               json_object_get(m, "id") && json_object_get(json_object_get(json_object_get(m, "params"), "_meta"), "progressToken");
}

static enum MHD_Result serve_stream(struct hreq *q, struct MHD_Connection *mc, json_t *m, int watch_fd) {
        struct mcp_sse *s = calloc(1, sizeof(*s));
        if (!s) {
                json_decref(m);
                return MHD_NO;
        }
        s->q = q;
        s->msg = m;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->more, NULL);
        s->x = (struct mcp_http_io){
                .io = { .send = io_send, .connect = io_connect, .call_new = io_call_new, .call_find = io_call_find,
                        .cancel_other = io_cancel_other, .where = "this daemon", .sync = true, .watch_fd = watch_fd },
                .gate = q->h->gate,
                .sse = s,
        };
        snprintf(s->x.tok, sizeof(s->x.tok), "%s", q->tok);
        snprintf(s->x.peer, sizeof(s->x.peer), "%s", q->peer);
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, s, sse_free);
        if (!resp) {
                sse_free(s); /* no thread yet */
                return MHD_NO;
        }
        http_busy(q, true); /* until the stream's end */
        s->started = pthread_create(&s->thread, NULL, sse_run, s) == 0;
        if (!s->started)
                s->failed = true; /* the reader sees it: no other thread yet */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(resp, "Cache-Control", "no-store");
        MHD_add_response_header(resp, "X-Accel-Buffering", "no");
        enum MHD_Result r = MHD_queue_response(mc, 200, resp);
        MHD_destroy_response(resp);
        return r;
}

enum MHD_Result http_mcp_serve(struct hreq *q, struct MHD_Connection *mc) {
        const struct config *cfg = q->h->cfg;
        const char *origin = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, "Origin");
        if (origin && !origin_allowed(cfg, origin))
                return http_queue_error(mc, E_FORBIDDEN, "Origin '%s' is not an mcp_origin of [http]", origin);
        json_error_t je;
        json_t *m = q->len ? json_loadb(q->body, q->len, JSON_REJECT_DUPLICATES, &je) : NULL;
        if (!m)
                return rpc_error(mc, 400, -32700, q->len ? je.text : "an empty body: one JSON-RPC message was expected");
        if (!json_is_object(m)) {
                json_decref(m);
                return rpc_error(mc, 400, -32600, "one JSON-RPC message (an object) was expected; batches are not part of MCP");
        }
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (wants_stream(mc, m))
                return serve_stream(q, mc, m, ci ? ci->connect_fd : -1);
        struct mcp_http_io x = {
                .io = { .send = io_send, .connect = io_connect, .call_new = io_call_new, .call_find = io_call_find,
                        .cancel_other = io_cancel_other,
                        .where = "this daemon", .sync = true, .watch_fd = ci ? ci->connect_fd : -1 },
                .gate = q->h->gate,
        };
        snprintf(x.tok, sizeof(x.tok), "%s", q->tok);
        snprintf(x.peer, sizeof(x.peer), "%s", q->peer);
        struct mcp_io *saved = mcp_io;
        mcp_io = &x.io;
        http_busy(q, true); /* a tool call waits for its job */
        live_add(&x);
        mcp_handle(m);
        live_remove(&x);
        http_busy(q, false);
        mcp_io = saved;
        bool request = json_object_get(m, "id") && json_object_get(m, "method");
        json_decref(m);
        if (!request || !x.reply) { /* a notification, a response, or a call cancelled */
                json_decref(x.reply);
                return http_queue_text(mc, 202, JSON_TYPE, "", 0);
        }
        char *s = json_dumps(x.reply, JSON_COMPACT);
        json_decref(x.reply);
        if (!s)
                return MHD_NO;
        enum MHD_Result r = http_queue_text(mc, 200, JSON_TYPE, s, strlen(s));
        free(s);
        return r;
}
