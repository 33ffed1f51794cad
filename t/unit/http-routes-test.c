/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for supervisor/front/http-routes.c and the OpenAPI document
 * that describes it (supervisor/front/openapi.json): every route of
 * http_routes[] is in the document's paths, with its method, and the
 * document has no path or method the table does not serve; the routes are
 * found from concrete paths, and query values are typed as the API says. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <jansson.h>

#include "http-routes.h"

#ifndef OPENAPI_JSON
#error "OPENAPI_JSON: the path of supervisor/front/openapi.json (t/unit/local.mk sets it)"
#endif

static json_t *doc;      /* the whole document */
static json_t *paths;    /* its "paths" */
static char where[4096]; /* the file it was read from */

/* The members of a Path Item object that are not operations. */
static bool path_item_field(const char *key) {
        return strcmp(key, "$ref") == 0 || strcmp(key, "summary") == 0 || strcmp(key, "description") == 0 ||
               strcmp(key, "servers") == 0 || strcmp(key, "parameters") == 0;
}

static void lower(const char *s, char *buf, size_t len) {
        size_t i = 0;
        for (; s[i] && i + 1 < len; i++)
                buf[i] = (char) (s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
        buf[i] = '\0';
}

/* The operation of the document for a route, or NULL. */
static json_t *operation_of(const struct http_route *rt) {
        char m[16];
        lower(rt->method, m, sizeof(m));
        return json_object_get(json_object_get(paths, rt->path), m);
}

/* One problem found, as a TAP diagnostic on stdout: under `make check` it
 * goes to the test's .log, next to the result it explains. */
static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void problem(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fputs("# ", stdout);
        vprintf(fmt, ap);
        va_end(ap);
        fflush(stdout);
}

static int load(void **state) {
        (void) state;
        const char *src = getenv("SBX_SRCDIR");
        if (src && *src)
                snprintf(where, sizeof(where), "%s/supervisor/front/openapi.json", src);
        else
                snprintf(where, sizeof(where), "%s", OPENAPI_JSON);
        json_error_t je;
        doc = json_load_file(where, JSON_REJECT_DUPLICATES, &je);
        if (!doc) {
                problem("%s:%d:%d: %s\n", where, je.line, je.column, je.text);
                return -1;
        }
        paths = json_object_get(doc, "paths");
        if (!json_is_object(paths)) {
                problem("%s: no \"paths\" object\n", where);
                return -1;
        }
        return 0;
}

static int unload(void **state) {
        (void) state;
        json_decref(doc);
        return 0;
}

static void test_document(void **state) {
        (void) state;
        const char *v = json_string_value(json_object_get(doc, "openapi"));
        if (!v || strcmp(v, "3.1.0") != 0)
                fail_msg("%s: \"openapi\" is %s, not \"3.1.0\"", where, v ? v : "missing");
        json_t *info = json_object_get(doc, "info");
        assert_string_equal(json_string_value(json_object_get(info, "title")), "sbx-supervisord HTTP API");
        assert_string_equal(json_string_value(json_object_get(info, "version")), "1");
        json_t *scheme = json_object_get(json_object_get(json_object_get(doc, "components"), "securitySchemes"), "bearerAuth");
        assert_string_equal(json_string_value(json_object_get(scheme, "type")), "http");
        assert_string_equal(json_string_value(json_object_get(scheme, "scheme")), "bearer");
        /* a bearer token, or a TLS client certificate: either will do */
        scheme = json_object_get(json_object_get(json_object_get(doc, "components"), "securitySchemes"), "mutualTLS");
        assert_string_equal(json_string_value(json_object_get(scheme, "type")), "mutualTLS");
        json_t *sec = json_object_get(doc, "security");
        assert_int_equal(json_array_size(sec), 2);
        assert_non_null(json_object_get(json_array_get(sec, 0), "bearerAuth"));
        assert_non_null(json_object_get(json_array_get(sec, 1), "mutualTLS"));
}

/* (a) Every route of the table is in the document. */
static void test_routes_documented(void **state) {
        (void) state;
        unsigned missing = 0;
        for (size_t i = 0; i < http_n_routes; i++) {
                const struct http_route *rt = &http_routes[i];
                if (!json_object_get(paths, rt->path)) {
                        problem("%s: route %s %s: its path is not in \"paths\"\n", where, rt->method, rt->path);
                        missing++;
                } else if (!json_is_object(operation_of(rt))) {
                        problem("%s: route %s %s: the path has no \"%s\" operation\n", where, rt->method, rt->path, rt->method);
                        missing++;
                }
        }
        if (missing)
                fail_msg("%u route(s) of http_routes[] missing from %s", missing, where);
}

/* (b) Every path and method of the document is a route of the table. */
static void test_document_routes_exist(void **state) {
        (void) state;
        unsigned extra = 0;
        const char *path;
        json_t *item;
        json_object_foreach(paths, path, item) {
                const char *key;
                json_t *o;
                bool any = false;
                json_object_foreach(item, key, o) {
                        if (path_item_field(key))
                                continue;
                        bool found = false;
                        for (size_t i = 0; i < http_n_routes && !found; i++)
                                found = strcmp(http_routes[i].path, path) == 0 && strcasecmp(http_routes[i].method, key) == 0;
                        if (!found) {
                                problem("%s: %s %s is not a route of http_routes[]\n", where, key, path);
                                extra++;
                        }
                        any = true;
                }
                if (!any) {
                        problem("%s: %s has no operation\n", where, path);
                        extra++;
                }
        }
        if (extra)
                fail_msg("%u path(s) or method(s) of %s not in http_routes[]", extra, where);
}

static json_t *resolve(json_t *o) {
        const char *r = json_string_value(json_object_get(o, "$ref"));
        const char *prefix = "#/components/parameters/";
        if (!r || strncmp(r, prefix, strlen(prefix)) != 0)
                return o;
        return json_object_get(json_object_get(json_object_get(doc, "components"), "parameters"), r + strlen(prefix));
}

/* Each operation: a unique operationId, a path parameter for each id of
 * the route's path, no authentication for the routes that are not
 * operations, and a 403 for those a read-only token is refused. */
static void test_operations(void **state) {
        (void) state;
        unsigned bad = 0;
        for (size_t i = 0; i < http_n_routes; i++) {
                const struct http_route *rt = &http_routes[i];
                json_t *o = operation_of(rt);
                if (!o)
                        continue; /* test_routes_documented says so */
                const char *id = json_string_value(json_object_get(o, "operationId"));
                if (!id) {
                        problem("%s: %s %s: no operationId\n", where, rt->method, rt->path);
                        bad++;
                } else
                        for (size_t j = 0; j < i; j++) {
                                json_t *other = operation_of(&http_routes[j]);
                                const char *oid = json_string_value(json_object_get(other, "operationId"));
                                if (oid && strcmp(oid, id) == 0) {
                                        problem("%s: %s %s: operationId '%s' is also %s %s's\n", where, rt->method, rt->path, id,
                                                    http_routes[j].method, http_routes[j].path);
                                        bad++;
                                }
                        }
                for (const char *p = strchr(rt->path, '{'); p; p = strchr(p + 1, '{')) {
                        char name[32];
                        const char *close = strchr(p, '}');
                        assert_non_null(close);
                        snprintf(name, sizeof(name), "%.*s", (int) (close - p - 1), p + 1);
                        bool found = false;
                        size_t k;
                        json_t *prm;
                        json_array_foreach(json_object_get(o, "parameters"), k, prm) {
                                json_t *r = resolve(prm);
                                const char *n = json_string_value(json_object_get(r, "name"));
                                const char *in = json_string_value(json_object_get(r, "in"));
                                if (n && in && strcmp(n, name) == 0 && strcmp(in, "path") == 0 && json_is_true(json_object_get(r, "required")))
                                        found = true;
                        }
                        if (!found) {
                                problem("%s: %s %s: no required path parameter '%s'\n", where, rt->method, rt->path, name);
                                bad++;
                        }
                }
                json_t *sec = json_object_get(o, "security");
                if (!rt->op && !(json_is_array(sec) && json_array_size(sec) == 0)) {
                        problem("%s: %s %s needs no token: its operation should say \"security\": []\n", where, rt->method, rt->path);
                        bad++;
                }
                if (rt->op && sec && json_array_size(sec) == 0) {
                        problem("%s: %s %s takes a token, but its operation says \"security\": []\n", where, rt->method, rt->path);
                        bad++;
                }
                json_t *responses = json_object_get(o, "responses");
                if (!json_object_get(responses, "200")) {
                        problem("%s: %s %s: no 200 response\n", where, rt->method, rt->path);
                        bad++;
                }
                if (rt->writes && !json_object_get(responses, "403")) {
                        problem("%s: %s %s is refused to read-only tokens but has no 403 response\n", where, rt->method, rt->path);
                        bad++;
                }
        }
        if (bad)
                fail_msg("%u problem(s) with the operations of %s", bad, where);
}

/* The route of method and path, which must be found; its captures. */
static const struct http_route *find(const char *method, const char *path, struct http_captures *caps) {
        const struct http_route *rt = NULL;
        char allow[128];
        int r = http_route_find(method, path, &rt, caps, allow, sizeof(allow));
        if (r != 0)
                fail_msg("%s %s: not found (%d, allow '%s')", method, path, r, allow);
        return rt;
}

static void assert_capture(const struct http_captures *caps, size_t i, const char *name, const char *value) {
        assert_true(i < caps->n);
        assert_string_equal(caps->name[i], name);
        assert_string_equal(caps->value[i], value);
}

/* (c) Concrete paths find their routes. */
static void test_route_find(void **state) {
        (void) state;
        struct http_captures caps;
        const struct http_route *rt;
        char allow[128];

        rt = find("GET", "/v1/jobs/j0123/artifacts/out/a.txt", &caps);
        assert_string_equal(rt->path, "/v1/jobs/{job}/artifacts/{artifact}");
        assert_string_equal(rt->op, "download");
        assert_int_equal(caps.n, 2);
        assert_capture(&caps, 0, "job", "j0123");
        assert_capture(&caps, 1, "artifact", "out/a.txt");

        rt = find("GET", "/v1/jobs/j0123/stdout", &caps);
        assert_string_equal(rt->path, "/v1/jobs/{job}/stdout");
        assert_string_equal(rt->fixed, "stream=stdout");
        assert_int_equal(caps.n, 1);
        assert_capture(&caps, 0, "job", "j0123");

        rt = find("GET", "/v1/jobs/j0123", &caps);
        assert_string_equal(rt->op, "status");
        rt = find("POST", "/v1/jobs", &caps);
        assert_string_equal(rt->op, "run");
        assert_int_equal(caps.n, 0);
        rt = find("DELETE", "/v1/sessions/0123abcd", &caps);
        assert_string_equal(rt->op, "session.close");
        assert_capture(&caps, 0, "session", "0123abcd");
        rt = find("POST", "/v1/callbacks/j0123/retry", &caps);
        assert_string_equal(rt->op, "callbacks.retry");
        assert_capture(&caps, 0, "job", "j0123");
        rt = find("GET", "/v1/bundles/tool@sha256:ab12", &caps);
        assert_string_equal(rt->op, "bundle.show");
        assert_capture(&caps, 0, "bundle", "tool@sha256:ab12");
        /* HEAD: the routes that are not operations only */
        rt = find("HEAD", "/healthz", &caps);
        assert_string_equal(rt->path, "/healthz");
        assert_int_equal(http_route_find("HEAD", "/v1/ping", &rt, &caps, allow, sizeof(allow)), -EBADRQC);
        assert_string_equal(allow, "GET");

        assert_int_equal(http_route_find("GET", "/v1/nothing", &rt, &caps, allow, sizeof(allow)), -ENOENT);
        assert_string_equal(allow, "");
        /* an id is never empty, and only {artifact} takes slashes */
        assert_int_equal(http_route_find("GET", "/v1/jobs/", &rt, &caps, allow, sizeof(allow)), -ENOENT);
        assert_int_equal(http_route_find("GET", "/v1/jobs/j0123/artifacts/", &rt, &caps, allow, sizeof(allow)), -ENOENT);
        assert_int_equal(http_route_find("GET", "/v1/jobs/a/b", &rt, &caps, allow, sizeof(allow)), -ENOENT);
        assert_int_equal(http_route_find("GET", "/v1/jobs/j0123/result/", &rt, &caps, allow, sizeof(allow)), -ENOENT);

        assert_int_equal(http_route_find("PUT", "/v1/jobs", &rt, &caps, allow, sizeof(allow)), -EBADRQC);
        if (!strstr(allow, "GET") || !strstr(allow, "POST"))
                fail_msg("PUT /v1/jobs: allow is '%s', not GET and POST", allow);
        assert_int_equal(http_route_find("POST", "/v1/jobs/j0123", &rt, &caps, allow, sizeof(allow)), -EBADRQC);
        assert_string_equal(allow, "GET");
        assert_int_equal(http_route_find("GET", "/v1/sessions/s1", &rt, &caps, allow, sizeof(allow)), 0);
        assert_int_equal(http_route_find("PATCH", "/v1/sessions/s1", &rt, &caps, allow, sizeof(allow)), -EBADRQC);
        if (!strstr(allow, "GET") || !strstr(allow, "DELETE"))
                fail_msg("PATCH /v1/sessions/s1: allow is '%s', not GET and DELETE", allow);
}

/* Every route is found from its own path, its ids filled in: no route
 * hides another. */
static void test_every_route_reachable(void **state) {
        (void) state;
        for (size_t i = 0; i < http_n_routes; i++) {
                const struct http_route *rt = &http_routes[i];
                char path[512];
                size_t n = 0;
                for (const char *p = rt->path; *p && n + 16 < sizeof(path);) {
                        if (*p != '{') {
                                path[n++] = *p++;
                                continue;
                        }
                        const char *close = strchr(p, '}');
                        assert_non_null(close);
                        const char *value = strncmp(p, "{artifact}", 10) == 0 ? "d/x.bin" : "id7";
                        n += (size_t) snprintf(path + n, sizeof(path) - n, "%s", value);
                        p = close + 1;
                }
                path[n] = '\0';
                struct http_captures caps;
                const struct http_route *got = find(rt->method, path, &caps);
                if (got != rt)
                        fail_msg("%s %s (route %s %s) found route %s %s", rt->method, path, rt->method, rt->path, got->method, got->path);
        }
}

/* (d) Query values as JSON. */
static void test_query_value(void **state) {
        (void) state;
        json_t *v;
        assert_true(json_is_true(v = http_query_value("follow", "true")));
        json_decref(v);
        assert_true(json_is_false(v = http_query_value("follow", "false")));
        json_decref(v);
        v = http_query_value("limit", "12");
        assert_true(json_is_integer(v));
        assert_int_equal(json_integer_value(v), 12);
        json_decref(v);
        v = http_query_value("offset", "0012");
        assert_int_equal(json_integer_value(v), 12);
        json_decref(v);
        /* strings: anything of another field, and a value of the wrong
         * kind (the daemon then refuses it naming the field) */
        const char *strings[][2] = { { "path", "123" }, { "path", "true" }, { "state", "12" }, { "limit", "1x" }, { "limit", "" },
                                     { "offset", "-1" }, { "max_bytes", "1.5" }, { "follow", "True" }, { "follow", "1" },
                                     { "limit", "1234567890123456789" } };
        for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
                v = http_query_value(strings[i][0], strings[i][1]);
                if (!json_is_string(v))
                        fail_msg("%s=%s is not a string", strings[i][0], strings[i][1]);
                assert_string_equal(json_string_value(v), strings[i][1]);
                json_decref(v);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_document),
                cmocka_unit_test(test_routes_documented),
                cmocka_unit_test(test_document_routes_exist),
                cmocka_unit_test(test_operations),
                cmocka_unit_test(test_route_find),
                cmocka_unit_test(test_every_route_reachable),
                cmocka_unit_test(test_query_value),
        };
        return cmocka_run_group_tests(tests, load, unload);
}
