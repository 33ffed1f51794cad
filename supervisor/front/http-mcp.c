/* SPDX-License-Identifier: Apache-2.0 */
/* POST /mcp: the Model Context Protocol's Streamable HTTP transport on
 * the HTTP API, with the API's tokens. Each request's body is one
 * JSON-RPC message, handled by the same code as sbx-mcp(1)'s
 * (supervisor/mcp), the daemon reached through the request's gate as its
 * token's tenant. A request is answered with its response as JSON (a tool
 * call once its job has ended; a caller that hangs up first has the job
 * cancelled); a notification with 202. The server keeps no MCP session
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

struct mcp_http_io {
        struct mcp_io io;
        struct hreq *q;
        json_t *reply;
        struct call one;
        struct mcp_http_io *next; /* in the calls in progress */
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
                if (x != me && streq(x->q->tok, me->q->tok) && same_client(x->q->peer, me->q->peer) && x->one.used &&
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

static void io_send(struct mcp_io *io, json_t *msg) {
        struct mcp_http_io *x = container_of(io, struct mcp_http_io, io);
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
        return http_gate_call(x->q->h->gate, x->q->tok, x->q->peer);
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
        struct mcp_http_io x = {
                .io = { .send = io_send, .connect = io_connect, .call_new = io_call_new, .call_find = io_call_find,
                        .cancel_other = io_cancel_other,
                        .where = "this daemon", .sync = true, .watch_fd = ci ? ci->connect_fd : -1 },
                .q = q,
        };
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
