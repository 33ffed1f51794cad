/* SPDX-License-Identifier: Apache-2.0 */
/* The socket: taken from systemd (socket activation) or bound at the
 * configured path; accepting clients, their peer credentials to a tenant,
 * and the connection cap. */
#pragma once

#include <stdbool.h>

#include "conf.h"
#include "error.h"
#include "loop.h"

struct daemon;

struct listener {
        struct source src;
        int fd;
        bool activated;       /* passed by systemd: not ours to unlink */
        bool paused;          /* out of descriptors */
        unsigned held_at_pause; /* connections and jobs (their descriptors) then */
        bool on_loop;
};

int listener_open(struct listener *l, const struct config *cfg, struct sbx_error *err);
void listener_start(struct daemon *d);
/* Stop accepting (shutdown). */
void listener_stop(struct daemon *d);
/* Accept again after a pause for descriptors, once some are free. */
void listener_maybe_resume(struct daemon *d);
void listener_close(struct listener *l, const struct config *cfg);
struct conn;
/* A connection whose tenant is known (c->tenant set): counted against its
 * tenant's max_tenant_connections, or told it is over and closed once
 * that is out. Connections of the HTTP API come in here too. */
void listener_admit(struct daemon *d, struct conn *c);
struct http_token;
/* A request of the HTTP API on fd, handed over by its gate
 * (http_gate_admit_fn; ctx the daemon): a connection of tok's tenant
 * (NULL: the anonymous tenant, when allow_unauthenticated), then as
 * listener_admit(). */
void listener_admit_http(void *ctx, int fd, const struct http_token *tok, const char *peer);
