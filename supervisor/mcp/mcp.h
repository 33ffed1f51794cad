/* SPDX-License-Identifier: Apache-2.0 */
/* The Model Context Protocol server of sbx: its tools run code in
 * sbx-supervisord's sandboxes. mcp-rpc.c: JSON-RPC and the protocol's
 * revisions; mcp-tools.c: the tools; mcp-daemon.c: a connection to the
 * daemon. Two programs use them through struct mcp_io: sbx-mcp(1)
 * (mcp-main.c: stdio, the daemon's socket as the user who started it) and
 * the daemon's HTTP API at /mcp (front/http-mcp.c: a request's body and
 * reply, the daemon reached through the request's gate as its token's
 * tenant). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define MCP_MAX_CALLS 64

struct call;

/* Where messages go and how the daemon is reached, for the thread that
 * handles a message (mcp_io, set by the program). */
struct mcp_io {
        void (*send)(struct mcp_io *io, json_t *msg);      /* msg stolen */
        int (*connect)(struct mcp_io *io);                 /* a connected socket, or -errno */
        struct call *(*call_new)(struct mcp_io *io);       /* room for a call, or NULL */
        struct call *(*call_find)(struct mcp_io *io, json_t *request_id);
        /* notifications/cancelled for a call call_find does not know (it
         * runs elsewhere); NULL: nothing to do */
        void (*cancel_other)(struct mcp_io *io, json_t *request_id);
        const char *where;                                 /* the daemon, for messages */
        int watch_fd;   /* the caller's connection: its hangup cancels a sync call; -1 */
        /* with sync, a call that follows a job runs to its end in
         * mcp_handle() (the HTTP API); without, the program's loop feeds it */
        bool sync;
};
extern __thread struct mcp_io *mcp_io;

/* mcp-daemon.c: one connection to the daemon, its reply lines read as
 * they come. */
struct dconn {
        int fd;
        char *buf;
        size_t len, cap;
};
/* Connect to the daemon (mcp_io->connect): 0, or -errno. */
int dconn_open(struct dconn *c);
void dconn_close(struct dconn *c);
/* Send one request (req stolen). */
int dconn_send(struct dconn *c, json_t *req);
/* The next whole message read so far, or NULL (then read more: dconn_fill). */
json_t *dconn_next(struct dconn *c);
/* Read what the socket has: 0, or -EPIPE at its end. */
int dconn_fill(struct dconn *c);
/* One request and its reply, blocking (for the short operations). */
json_t *dconn_call(json_t *req, char *why, size_t why_len);

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

/* mcp-rpc.c */
/* One message of the client (a JSON object): answered through mcp_io. */
void mcp_handle(json_t *m);
void mcp_send(json_t *msg);                /* one message (stolen) */
void mcp_result(json_t *id, json_t *result, bool modern);
void mcp_error(json_t *id, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void mcp_notify(const char *method, json_t *params);
void mcp_call_free(struct call *c);
/* Feed a call what its connection has: 1 when it is over (freed). */
int mcp_call_feed(struct call *c);

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
