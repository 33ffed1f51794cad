/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http-routes.h"
#include "util.h"

const struct http_route http_routes[] = {
        { "GET", "/healthz", NULL, HR_TEXT, false, NULL },
        { "GET", "/readyz", NULL, HR_TEXT, false, NULL },
        { "GET", "/v1/openapi.json", NULL, HR_JSON, false, NULL },
        { "GET", "/v1/ping", "ping", HR_JSON, false, NULL },
        { "POST", "/mcp", "mcp", HR_MCP, true, NULL },
        { "POST", "/v1/jobs", "run", HR_FOLLOW, true, NULL },
        { "GET", "/v1/jobs", "list", HR_JSON, false, NULL },
        { "GET", "/v1/jobs/{job}", "status", HR_JSON, false, NULL },
        { "GET", "/v1/jobs/{job}/result", "result", HR_JSON, false, NULL },
        { "GET", "/v1/jobs/{job}/wait", "wait", HR_JSON, false, NULL },
        { "POST", "/v1/jobs/{job}/cancel", "cancel", HR_JSON, true, NULL },
        { "GET", "/v1/jobs/{job}/logs", "logs", HR_FOLLOW, false, NULL },
        { "GET", "/v1/jobs/{job}/stdout", "download", HR_BYTES, false, "stream=stdout" },
        { "GET", "/v1/jobs/{job}/stderr", "download", HR_BYTES, false, "stream=stderr" },
        { "GET", "/v1/jobs/{job}/artifacts/{artifact}", "download", HR_BYTES, false, NULL },
        { "GET", "/v1/bundles/{bundle}", "bundle.show", HR_JSON, false, NULL },
        { "GET", "/v1/cache", "cache.list", HR_JSON, false, NULL },
        { "POST", "/v1/cache/gc", "cache.gc", HR_JSON, true, NULL },
        { "GET", "/v1/callbacks", "callbacks.list", HR_JSON, false, NULL },
        { "POST", "/v1/callbacks/{job}/retry", "callbacks.retry", HR_JSON, true, NULL },
        { "POST", "/v1/callbacks/{job}/drop", "callbacks.drop", HR_JSON, true, NULL },
        { "GET", "/v1/metrics", "metrics", HR_TEXT, false, NULL },
        { "POST", "/v1/sessions", "session.create", HR_JSON, true, NULL },
        { "GET", "/v1/sessions", "session.list", HR_JSON, false, NULL },
        { "GET", "/v1/sessions/{session}", "session.show", HR_JSON, false, NULL },
        { "DELETE", "/v1/sessions/{session}", "session.close", HR_JSON, true, NULL },
        { "POST", "/v1/sessions/{session}/exec", "session.exec", HR_FOLLOW, true, NULL },
        { "POST", "/v1/sessions/{session}/stdin", "session.stdin", HR_JSON, true, NULL },
        { "POST", "/v1/sessions/{session}/resize", "session.resize", HR_JSON, true, NULL },
        { "POST", "/v1/sessions/{session}/signal", "session.signal", HR_JSON, true, NULL },
        { "POST", "/v1/sessions/{session}/extend", "session.extend", HR_JSON, true, NULL },
        { "POST", "/v1/sessions/{session}/put", "session.put", HR_JSON, true, NULL },
        { "GET", "/v1/sessions/{session}/get", "session.get", HR_JSON, false, NULL },
        { "GET", "/v1/sessions/{session}/ls", "session.ls", HR_JSON, false, NULL },
        { "POST", "/v1/sessions/{session}/expose", "session.expose", HR_JSON, true, NULL },
        { "POST", "/v1/sessions/{session}/unexpose", "session.unexpose", HR_JSON, true, NULL },
        { "POST", "/v1/reload", "reload", HR_JSON, true, NULL },
        { "GET", "/v1/policies/{tenant}", "policy.show", HR_JSON, false, NULL },
        { "POST", "/v1/policies/{tenant}", "policy.set", HR_JSON, true, NULL },
        { "GET", "/v1/policies/{tenant}/history", "policy.history", HR_JSON, false, NULL },
        { "GET", "/v1/secrets/{tenant}", "secret.ls", HR_JSON, false, NULL },
        { "PUT", "/v1/secrets/{tenant}/{name}", "secret.set", HR_JSON, true, NULL },
        { "DELETE", "/v1/secrets/{tenant}/{name}", "secret.rm", HR_JSON, true, NULL },
};
const size_t http_n_routes = ARRAY_SIZE(http_routes);

/* Does path match pattern? Its ids into caps, their names into names.
 * The last id of a pattern, when it is {artifact}, takes the rest of the
 * path, slashes and all. */
static bool match(const char *pattern, const char *path, struct http_captures *c) {
        size_t n = 0;
        const char *p = pattern, *s = path;
        while (*p) {
                if (*p != '{') {
                        if (*p != *s)
                                return false;
                        p++;
                        s++;
                        continue;
                }
                const char *close = strchr(p, '}');
                size_t name_len = close ? (size_t) (close - p - 1) : 0;
                if (!close || n >= HTTP_MAX_CAPTURES || name_len >= sizeof(c->name[0]))
                        return false;
                memcpy(c->name[n], p + 1, name_len);
                c->name[n][name_len] = '\0';
                bool rest = close[1] == '\0' && streq(c->name[n], "artifact");
                size_t len = rest ? strlen(s) : strcspn(s, "/");
                if (len == 0 || len >= sizeof(c->value[0]))
                        return false;
                memcpy(c->value[n], s, len);
                c->value[n][len] = '\0';
                n++;
                s += len;
                p = close + 1;
        }
        if (*s)
                return false;
        c->n = n;
        return true;
}

int http_route_find(const char *method, const char *path, const struct http_route **ret, struct http_captures *caps, char *allow,
                    size_t allow_len) {
        bool path_known = false;
        char none[1];
        if (!allow_len) {
                allow = none;
                allow_len = sizeof(none);
        }
        allow[0] = '\0';
        for (size_t i = 0; i < http_n_routes; i++) {
                const struct http_route *rt = &http_routes[i];
                if (!match(rt->path, path, caps))
                        continue;
                if (streq(rt->method, method) || (streq(method, "HEAD") && streq(rt->method, "GET") && !rt->op)) {
                        *ret = rt;
                        return 0;
                }
                path_known = true;
                size_t used = strlen(allow);
                snprintf(allow + used, allow_len - used, "%s%s", used ? ", " : "", rt->method);
        }
        return path_known ? -EBADRQC : -ENOENT;
}

json_t *http_query_value(const char *key, const char *v) {
        /* the query parameters of the protocol that are not strings */
        static const char *const bools[] = { "follow", "all" };
        static const char *const ints[] = { "offset", "max_bytes", "limit" };
        for (size_t i = 0; i < ARRAY_SIZE(bools); i++)
                if (streq(key, bools[i]) && (streq(v, "true") || streq(v, "false")))
                        return json_boolean(streq(v, "true"));
        size_t n = strlen(v);
        for (size_t i = 0; i < ARRAY_SIZE(ints); i++)
                if (streq(key, ints[i]) && n > 0 && n <= 18 && strspn(v, "0123456789") == n)
                        return json_integer((json_int_t) strtoll(v, NULL, 10));
        return json_string(v);
}
