/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP API of [http] (sbx-supervisord.conf(5)); the routes are in
 * http-routes.h, the way to the loop in http-gate.h. */
#pragma once

#include <stddef.h>

#include "error.h"

struct daemon;

/* The OpenAPI document of the API (openapi.json, built in). */
extern const char http_openapi[];
extern const size_t http_openapi_len;

/* Before the privilege line: the TLS certificate and key, root's files,
 * are read. Nothing to do without [http] listen. */
int http_api_prepare(struct daemon *d, struct sbx_error *err);
/* Listen, once the daemon serves. */
int http_api_start(struct daemon *d, struct sbx_error *err);
/* The daemon stops: /readyz says so, new requests are E_SHUTTING_DOWN. */
void http_api_stopping(struct daemon *d);
/* After the daemon's connections are closed: the threads are joined. */
void http_api_stop(struct daemon *d);
/* Room for the rates of n_tokens tokens, before a reload: -ENOMEM. */
int http_api_reserve(struct daemon *d, size_t n_tokens);
/* A reload swaps the configuration's tokens between these two, while no
 * request is being authenticated; every token's rate starts full again. */
void http_api_reload_begin(struct daemon *d);
void http_api_reload_end(struct daemon *d);
