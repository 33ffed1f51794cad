/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP API's routes: each names the protocol operation it is
 * (sbx-protocol(7)), where its ids come from in the path, and how its
 * reply goes back. A request becomes the operation's JSON request: the
 * body's members, the query's parameters, the path's ids. Nothing here
 * knows HTTP's library: the table is what the OpenAPI document is checked
 * against (t/unit/http-routes-test.c). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

enum http_reply {
        HR_JSON,   /* the reply's line */
        HR_FOLLOW, /* with "follow": true, the reply then its events, as NDJSON */
        HR_BYTES,  /* a download: the file's bytes */
        HR_TEXT,   /* the metrics' text */
        HR_MCP,    /* the Model Context Protocol (http-mcp.c): op is "mcp" */
};

struct http_route {
        const char *method;
        const char *path;  /* "/v1/jobs/{job}/artifacts/{artifact}": an {artifact} at the end takes the rest */
        const char *op;    /* NULL: not an operation (served by http-api.c) */
        enum http_reply reply;
        bool writes;       /* refused to a token of scope "read" */
        const char *fixed; /* a member the route sets, "key=value" */
};

extern const struct http_route http_routes[];
extern const size_t http_n_routes;

#define HTTP_MAX_CAPTURES 2

/* The ids a path gave: {job} is name "job". */
struct http_captures {
        size_t n;
        char name[HTTP_MAX_CAPTURES][16];
        char value[HTTP_MAX_CAPTURES][4096];
};

/* The route of method and path: 0 with *ret and the path's ids; -ENOENT
 * when no route has the path; -EBADRQC when some has it for other methods
 * (allow then lists them, comma-separated). */
int http_route_find(const char *method, const char *path, const struct http_route **ret, struct http_captures *caps, char *allow,
                    size_t allow_len);

/* Query parameter key=v as a JSON value: the protocol's boolean
 * parameters (follow, all) take true and false, its integer ones (offset,
 * max_bytes, limit) digits; everything else is a string (a file named
 * "123" stays one), and so is a value of the wrong kind, for the daemon
 * to refuse naming the field. */
json_t *http_query_value(const char *key, const char *v);
