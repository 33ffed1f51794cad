/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-mcp: JSON-RPC 2.0 messages, one a line, on stdin and stdout (the
 * MCP stdio transport); diagnostics on stderr. Two revisions of the
 * protocol are spoken, chosen by what each request carries: 2026-07-28
 * (every request names its version in _meta; server/discover; results
 * say resultType) and the revisions with the initialize handshake
 * (2025-11-25 and the two before it). Tool calls that run a job go on
 * while other requests are served: one poll() over stdin and each call's
 * connection to the daemon. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "mcp.h"

#define MODERN "2026-07-28"
#define MAX_MESSAGE (16u << 20)
#define DEFAULT_SOCKET SBX_RUNSTATEDIR "/sbx/sbx-supervisord.sock"

static const char *const legacy_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26" };

const char *mcp_socket;
static struct call calls[MCP_MAX_CALLS];

void mcp_send(json_t *msg) {
        char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
        json_decref(msg);
        if (!s)
                return;
        /* one line each; a message never holds a raw newline (JSON escapes it) */
        fputs(s, stdout);
        fputc('\n', stdout);
        fflush(stdout);
        free(s);
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

struct call *mcp_call_new(void) {
        for (size_t i = 0; i < MCP_MAX_CALLS; i++)
                if (!calls[i].used) {
                        memset(&calls[i], 0, sizeof(calls[i]));
                        calls[i].used = true;
                        calls[i].conn.fd = -1;
                        return &calls[i];
                }
        return NULL;
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

static struct call *call_of(json_t *request_id) {
        for (size_t i = 0; i < MCP_MAX_CALLS; i++)
                if (calls[i].used && request_id && json_equal(calls[i].id, request_id))
                        return &calls[i];
        return NULL;
}

static void on_message(json_t *m) {
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
                        struct call *c = call_of(json_object_get(params, "requestId"));
                        if (c)
                                mcp_call_cancel(c);
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
                if (call_of(id))
                        mcp_error(id, -32600, "a request with this id is still in progress");
                else
                        mcp_tools_call(id, params ? params : json_object(), modern);
        } else
                mcp_error(id, -32601, "method not found: %s", method);
}

/* Lines of stdin, each a message (a batch, an array, is not part of MCP). */
static int read_stdin(char **buf, size_t *len, size_t *cap) {
        if (*cap - *len < 65536) {
                size_t c = *cap ? *cap * 2 : 131072;
                if (c > MAX_MESSAGE * 2)
                        return -E2BIG;
                char *b = realloc(*buf, c);
                if (!b)
                        return -ENOMEM;
                *buf = b;
                *cap = c;
        }
        ssize_t n = read(STDIN_FILENO, *buf + *len, *cap - *len);
        if (n < 0)
                return errno == EINTR ? 0 : -errno;
        if (n == 0)
                return -EPIPE;
        *len += (size_t) n;
        char *start = *buf, *nl;
        while ((nl = memchr(start, '\n', (size_t) (*buf + *len - start)))) {
                size_t l = (size_t) (nl - start);
                if (l) {
                        json_error_t je;
                        json_t *m = json_loadb(start, l, JSON_REJECT_DUPLICATES, &je);
                        if (!m)
                                mcp_error(NULL, -32700, "parse error: %s (line %d column %d)", je.text, je.line, je.column);
                        else if (!json_is_object(m))
                                mcp_error(NULL, -32600, "a message must be a JSON object");
                        else
                                on_message(m);
                        json_decref(m);
                }
                start = nl + 1;
        }
        size_t rest = (size_t) (*buf + *len - start);
        if (rest > MAX_MESSAGE)
                return -E2BIG;
        memmove(*buf, start, rest);
        *len = rest;
        return 0;
}

static void usage(FILE *f) {
        fprintf(f, "Usage: sbx-mcp [--socket PATH]\n"
                   "A Model Context Protocol server on stdin and stdout whose tools run code in\n"
                   "sbx-supervisord's sandboxes, as the user who starts it (see sbx-mcp(1)).\n");
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "socket", required_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { NULL, 0, NULL, 0 },
        };
        int o;
        mcp_socket = getenv("SBX_SOCKET") ? getenv("SBX_SOCKET") : DEFAULT_SOCKET;
        while ((o = getopt_long(argc, argv, "s:hV", opts, NULL)) >= 0) {
                switch (o) {
                case 's':
                        mcp_socket = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("sbx-mcp %s\n", PACKAGE_VERSION);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "sbx-mcp: unexpected argument '%s'\n", argv[optind]);
                usage(stderr);
                return 2;
        }
        signal(SIGPIPE, SIG_IGN);
        char *buf = NULL;
        size_t len = 0, cap = 0;
        bool in_open = true;
        for (;;) {
                struct pollfd p[1 + MCP_MAX_CALLS];
                struct call *of[1 + MCP_MAX_CALLS];
                nfds_t n = 0;
                if (in_open)
                        p[n++] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
                for (size_t i = 0; i < MCP_MAX_CALLS; i++)
                        if (calls[i].used) {
                                of[n] = &calls[i];
                                p[n++] = (struct pollfd){ .fd = calls[i].conn.fd, .events = POLLIN };
                        }
                if (n == 0)
                        break; /* stdin closed and no call left */
                if (poll(p, n, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                for (nfds_t i = 0; i < n; i++) {
                        if (!p[i].revents)
                                continue;
                        if (in_open && i == 0) {
                                int r = read_stdin(&buf, &len, &cap);
                                if (r == -E2BIG)
                                        fprintf(stderr, "sbx-mcp: a message longer than %u bytes; stopping\n", MAX_MESSAGE);
                                if (r < 0)
                                        in_open = false;
                                continue;
                        }
                        struct call *c = of[i];
                        if (!c->used)
                                continue;
                        if (dconn_fill(&c->conn) < 0) {
                                mcp_call_lost(c);
                                continue;
                        }
                        json_t *m;
                        while (c->used && (m = dconn_next(&c->conn))) {
                                int done = mcp_call_event(c, m);
                                json_decref(m);
                                if (done)
                                        break;
                        }
                }
        }
        free(buf);
        return 0;
}
