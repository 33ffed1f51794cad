/* SPDX-License-Identifier: Apache-2.0 */
/* The sessions' service proxy (service.c; sbx-supervisord(8), SERVICES):
 * a listener on service_listen that reaches the ports sessions exposed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "jobevents.h"

struct daemon;

/* Listen when service_listen is set (0 without it). */
int service_start(struct daemon *d, struct sbx_error *err);
void service_stop(struct daemon *d);
bool service_on(const struct daemon *d);
/* End the proxied connections to a session (port -1: all of its ports). */
void service_close_session(struct daemon *d, const char *session, int port);
/* session.forward: the client's socket (cfd, taken from its connection
 * with the bytes it sent past the request in extra) joined to the
 * agent's connection to port in the session (ufd, connected or still
 * connecting); both are taken, and closed if it cannot be done. */
struct service_forward {
        int cfd, ufd;
        bool connected;
        const char *extra;
        size_t extra_len;
        const char *session, *tenant;
        uint16_t port;
        uid_t uid;
        uint64_t rate; /* the tenant's service_bandwidth, or CONFIG_UNSET */
};
void service_forward(struct daemon *d, const struct service_forward *f);
/* The proxied connections (HTTP and forwards) of a session. */
unsigned service_connections(struct daemon *d, const char *session);
/* The signed URL's signature for session's port until expires_s (Unix
 * time), hex: HMAC-SHA-256 with a key made at the daemon's start. */
void service_sign(struct daemon *d, const char *session, uint16_t port, uint64_t expires_s, char out[static 65]);

/* service-http.c: the value of header name (lowercase, with its colon)
 * in head, or NULL (*ret_len its length, blanks trimmed); the query
 * parameter name (with its "=") of a request target into out; the port
 * and session of a Host PORT-SESSION.DOMAIN[:N]; the head less its
 * X-Sbx-Token line, with what followed it, into out (its length). */
const char *http_header(const char *head, size_t len, const char *name, size_t *ret_len);
bool http_query_param(const char *target, size_t tlen, const char *name, char *out, size_t out_len);
bool service_parse_host(const char *v, size_t len, const char *domain, uint16_t *ret_port, char *sid);
size_t service_strip_token(const char *head, size_t head_end, size_t len, char *out);

/* Ends a session's connections with its sandbox. */
extern const struct job_listener service_listener;
