/* SPDX-License-Identifier: Apache-2.0 */
/* JSON-RPC 2.0 for the Model Context Protocol, in two revisions chosen by
 * what each request carries: 2026-07-28 (every request names its version
 * in _meta; server/discover; results say resultType; lists their cache
 * lifetime) and the revisions of the initialize handshake (2025-11-25
 * and the two before it). Messages go out through mcp_io. */
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "mcp.h"

#define MODERN "2026-07-28"

static const char *const legacy_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26" };

__thread struct mcp_io *mcp_io;

void mcp_send(json_t *msg) {
        if (msg)
                mcp_io->send(mcp_io, msg);
}

void mcp_result(json_t *id, json_t *result, bool modern) {
        if (!result)
                result = json_object();
        if (modern)
                json_object_set_new(result, "resultType", json_string("complete"));
        mcp_send(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

static void error_data(json_t *id, int code, json_t *data, const char *fmt, va_list ap) {
        char msg[512];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        json_t *e = json_pack("{s:i, s:s}", "code", code, "message", msg);
        if (e && data)
                json_object_set_new(e, "data", data);
        else
                json_decref(data);
        mcp_send(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", e));
}

void mcp_error(json_t *id, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        error_data(id, code, NULL, fmt, ap);
        va_end(ap);
}

static void mcp_error_data(json_t *id, int code, json_t *data, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void mcp_error_data(json_t *id, int code, json_t *data, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        error_data(id, code, data, fmt, ap);
        va_end(ap);
}

void mcp_notify(const char *method, json_t *params) {
        mcp_send(json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params ? params : json_object()));
}

void mcp_call_free(struct call *c) {
        dconn_close(&c->conn);
        json_decref(c->id);
        json_decref(c->progress);
        free(c->out[0]);
        free(c->out[1]);
        memset(c, 0, sizeof(*c));
        c->conn.fd = -1;
}

int mcp_call_feed(struct call *c) {
        struct pollfd p[2] = { { .fd = c->conn.fd, .events = POLLIN }, { .fd = mcp_io->watch_fd, .events = POLLRDHUP } };
        if (poll(p, mcp_io->watch_fd >= 0 && !c->cancelled ? 2 : 1, -1) < 0)
                return 0;
        if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
                /* the caller went away: its job is not left to run */
                mcp_call_cancel(c);
                return 0;
        }
        if (!p[0].revents)
                return 0;
        if (dconn_fill(&c->conn) < 0) {
                mcp_call_lost(c);
                return 1;
        }
        json_t *m;
        while ((m = dconn_next(&c->conn))) {
                int done = mcp_call_event(c, m);
                json_decref(m);
                if (done)
                        return 1;
        }
        return 0;
}

static json_t *server_info(void) {
        return json_pack("{s:s, s:s, s:s}", "name", "sbx-mcp", "title", "sbx sandboxes", "version", PACKAGE_VERSION);
}

static const char instructions[] =
        "Runs code in sbx sandboxes: run_code runs a program in a fresh sandbox and returns its output, exit status and "
        "artifacts; sessions keep one sandbox and its files across calls. Sandboxes have no network unless the tenant's "
        "policy allows it and the call asks.";

static json_t *capabilities(void) {
        return json_pack("{s:{s:b}}", "tools", "listChanged", 0);
}

static void on_initialize(json_t *id, json_t *params) {
        const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
        const char *v = legacy_versions[0];
        for (size_t i = 0; asked && i < sizeof(legacy_versions) / sizeof(legacy_versions[0]); i++)
                if (!strcmp(asked, legacy_versions[i]))
                        v = asked;
        mcp_result(id,
                   json_pack("{s:s, s:o, s:o, s:s}", "protocolVersion", v, "capabilities", capabilities(), "serverInfo",
                             server_info(), "instructions", instructions),
                   false);
}

static void on_discover(json_t *id) {
        mcp_result(id,
                   json_pack("{s:[s], s:o, s:o, s:s, s:i, s:s}", "supportedVersions", MODERN, "capabilities", capabilities(),
                             "serverInfo", server_info(), "instructions", instructions, "ttlMs", 3600000, "cacheScope", "public"),
                   true);
}

void mcp_handle(json_t *m) {
        json_t *id = json_object_get(m, "id");
        const char *method = json_string_value(json_object_get(m, "method"));
        json_t *params = json_object_get(m, "params");
        if (!method) {
                /* a response to us (we send no requests) or junk */
                if (!json_object_get(m, "result") && !json_object_get(m, "error"))
                        mcp_error(NULL, -32600, "not a JSON-RPC request: no method");
                return;
        }
        if (params && !json_is_object(params)) {
                if (id)
                        mcp_error(id, JSONRPC_INVALID_PARAMS, "params must be an object");
                return;
        }
        /* The 2026-07-28 revision: the version in every request's _meta. */
        json_t *meta = json_object_get(params, "_meta");
        const char *version = json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));
        bool modern = version != NULL;
        if (!id) { /* notifications */
                if (!strcmp(method, "notifications/cancelled")) {
                        json_t *rid = json_object_get(params, "requestId");
                        struct call *c = mcp_io->call_find(mcp_io, rid);
                        if (c)
                                mcp_call_cancel(c);
                        else if (rid && mcp_io->cancel_other)
                                mcp_io->cancel_other(mcp_io, rid);
                }
                return; /* notifications/initialized and any other: nothing to do */
        }
        if (modern && strcmp(version, MODERN) != 0) {
                mcp_error_data(id, -32022, json_pack("{s:[s], s:s}", "supported", MODERN, "requested", version),
                               "unsupported protocol version '%s' (this server speaks %s, or the initialize handshake)", version,
                               MODERN);
                return;
        }
        if (!strcmp(method, "initialize"))
                on_initialize(id, params);
        else if (!strcmp(method, "server/discover"))
                on_discover(id);
        else if (!strcmp(method, "ping"))
                mcp_result(id, NULL, modern);
        else if (!strcmp(method, "tools/list")) {
                json_t *r = json_pack("{s:o}", "tools", mcp_tools_list());
                if (modern) {
                        json_object_set_new(r, "ttlMs", json_integer(3600000));
                        json_object_set_new(r, "cacheScope", json_string("public"));
                }
                mcp_result(id, r, modern);
        } else if (!strcmp(method, "tools/call")) {
                if (mcp_io->call_find(mcp_io, id))
                        mcp_error(id, -32600, "a request with this id is still in progress");
                else
                        mcp_tools_call(id, params ? params : json_object(), modern);
        } else
                mcp_error(id, -32601, "method not found: %s", method);
}

