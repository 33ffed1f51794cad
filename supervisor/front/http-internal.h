/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the HTTP API (http-api.h): the listeners' state, one request's,
 * and what http-api.c (who asks, the listeners) and http-serve.c (the
 * request as the protocol's, its reply and streams) share. */
#pragma once

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "http-gate.h"
#include "http-routes.h"

struct rate {
        double tokens;
        uint64_t at_ms;
};

struct http_api {
        struct daemon *d;
        const struct config *cfg;
        struct http_gate *gate;
        struct MHD_Daemon *mhd[CONFIG_HTTP_MAX_LISTEN];
        size_t n_mhd;
        char *cert, *key, *client_ca;
        pthread_mutex_t lock; /* rates */
        /* cfg's tokens and rates: read by each request's authentication,
         * written by a reload (http_api_reload) */
        pthread_rwlock_t tokens_lock;
        struct rate *rates;   /* one per token (room for n_rates) */
        size_t n_rates;
        atomic_bool ready;
        atomic_uint_fast64_t warned_ms; /* the last refusal logged */
};

/* One HTTP request, from its head to the end of its reply. */
struct hreq {
        struct http_api *h;
        const struct http_route *rt;
        struct http_captures caps;
        char tok[HTTP_TOKEN_NAME_MAX + 1]; /* its token's name; "": anonymous */
        char peer[56];
        bool answered; /* refused at its head: its body is skipped */
        char *body;
        size_t len;
        bool too_big;
        int fd; /* the gate socket, or -1 */
        struct gate_reader rd;
        char *pending; /* a stream's bytes not yet handed to MHD */
        size_t pending_len, pending_off;
        bool last; /* pending is the stream's last piece */
        uint64_t size, sent; /* a download's */
        struct MHD_Connection *mc;
        char *path; /* the request's path, for a redirect to another node */
};

/* While a request waits for its reply or streams its events, the
 * connection is not idle: no timeout; idle_timeout again once it is
 * answered. */
void http_busy(struct hreq *q, bool on);

/* Replies made here, not by the daemon: an error of the protocol's shape
 * with the status of its code, a text, a 405 naming what is allowed. */
enum MHD_Result http_queue_error(struct MHD_Connection *mc, const char *code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
enum MHD_Result http_queue_text(struct MHD_Connection *mc, unsigned status, const char *type, const char *text, size_t len);
enum MHD_Result http_queue_not_allowed(struct MHD_Connection *mc, const char *method, const char *url, const char *allow);
/* The request's operation, served by the daemon through the gate: its
 * reply, or its stream. */
enum MHD_Result http_serve(struct hreq *q, struct MHD_Connection *mc);
/* POST /mcp: one message of the Model Context Protocol (http-mcp.c). */
enum MHD_Result http_mcp_serve(struct hreq *q, struct MHD_Connection *mc);
