/* SPDX-License-Identifier: Apache-2.0 */
/* How a request of the HTTP API reaches the daemon: each one gets a
 * connection of its own, exactly as a client of the socket does (its
 * tenant's bounds, its replies' back-pressure, its events), made from a
 * socket pair whose far end is handed to the event loop over a gate
 * socket with the caller's token. The HTTP thread then writes the
 * request's line to its end and reads the reply's lines from it.
 *
 * The gate carries the descriptor in SCM_RIGHTS: one the loop never
 * takes (it stopped) is closed with the gate, so an HTTP thread waiting
 * on its end sees the end of the stream and is never stranded. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct http_gate;
struct http_token;

struct config;

/* Bytes of a token's name (name_valid()). */
#define HTTP_TOKEN_NAME_MAX 64

/* On the loop: a socket handed over by an HTTP thread, for a caller of
 * tok's tenant (NULL: the anonymous one) at peer. It takes the socket. */
typedef void (*http_gate_admit_fn)(void *ctx, int fd, const struct http_token *tok, const char *peer);

/* On the loop: the gate, its receiving end on the loop; messages name
 * tokens, found in cfg's as the loop has them then (a reload may have
 * withdrawn one since the request was authenticated: it is refused). */
int http_gate_open(const struct config *cfg, http_gate_admit_fn admit, void *ctx, struct http_gate **ret);
/* Refuse every request from now on (the daemon stops): they hear
 * E_SHUTTING_DOWN. */
void http_gate_stopping(struct http_gate *g);
/* Close the loop's end: requests in flight see their stream end. */
void http_gate_close(struct http_gate *g);
void http_gate_free(struct http_gate *g);

/* From an HTTP thread: a blocking socket on which the daemon serves one
 * caller of the tenant of the token called tok ("": the anonymous tenant)
 * from peer; or -errno. */
int http_gate_call(struct http_gate *g, const char *tok, const char *peer);

/* Reading a reply's lines from a gate socket, in an HTTP thread. A line
 * is at most max bytes; client_fd, the HTTP client's socket, is watched
 * so that a client that went away does not keep the thread waiting. */
struct gate_reader {
        int fd;
        int client_fd;
        size_t max;
        char *buf;
        size_t len, cap, start;
};
void gate_reader_init(struct gate_reader *r, int fd, int client_fd, size_t max);
void gate_reader_done(struct gate_reader *r);
/* The next line (without its newline, NUL-terminated, valid until the
 * next call) in *ret and its length; -EPIPE at the end of the stream or
 * when the client went away, -E2BIG for a line over max. */
int gate_read_line(struct gate_reader *r, const char **ret, size_t *ret_len);
