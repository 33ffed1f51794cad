/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-mcp(1): a Model Context Protocol server on stdio whose tools run
 * code in sbx-supervisord's sandboxes, over the daemon's socket as the
 * user who started it. mcp-main.c: the loop, JSON-RPC, the protocol's
 * revisions; mcp-tools.c: the tools; mcp-daemon.c: the daemon's socket. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define MCP_MAX_CALLS 64

/* mcp-daemon.c: one connection to the daemon, its reply lines read as
 * they come. */
struct dconn {
        int fd;
        char *buf;
        size_t len, cap;
};
/* Connect to the daemon's socket: 0, or -errno (*why says where). */
int dconn_open(struct dconn *c, const char *socket_path);
void dconn_close(struct dconn *c);
/* Send one request (req stolen). */
int dconn_send(struct dconn *c, json_t *req);
/* The next whole message read so far, or NULL (then read more: dconn_fill). */
json_t *dconn_next(struct dconn *c);
/* Read what the socket has: 0, or -EPIPE at its end. */
int dconn_fill(struct dconn *c);
/* One request and its reply, blocking (for the short operations). */
json_t *dconn_call(const char *socket_path, json_t *req, char *why, size_t why_len);

/* A tools/call in progress: a job followed on its own connection. */
struct call {
        bool used;
        json_t *id;            /* the JSON-RPC id */
        json_t *progress;      /* the caller's progressToken, or NULL */
        bool modern;           /* the 2026-07-28 revision: resultType */
        struct dconn conn;
        char job[32];
        bool cancelled;        /* no response goes out */
        unsigned progress_n;
        char *out[2];          /* what the model sees of stdout, stderr */
        size_t out_len[2];
        size_t out_seen[2];    /* all the bytes the job wrote */
};

/* mcp-main.c */
extern const char *mcp_socket;
void mcp_send(json_t *msg);                /* one message to stdout (stolen) */
void mcp_result(json_t *id, json_t *result, bool modern);
void mcp_error(json_t *id, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void mcp_notify(const char *method, json_t *params);
struct call *mcp_call_new(void);
void mcp_call_free(struct call *c);

#define JSONRPC_INVALID_PARAMS -32602
#define JSONRPC_INTERNAL -32603

/* mcp-tools.c */
json_t *mcp_tools_list(void);
/* Start tools/call: a response now (through mcp_result or mcp_error),
 * or a call that mcp_call_event() finishes. */
void mcp_tools_call(json_t *id, json_t *params, bool modern);
/* A message of a call's job: 1 when the call is over (freed). */
int mcp_call_event(struct call *c, json_t *msg);
/* The daemon went away under a call. */
void mcp_call_lost(struct call *c);
/* notifications/cancelled for the call: its job is cancelled. */
void mcp_call_cancel(struct call *c);
