/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl reload and sbxctl policy: the daemon's configuration read again,
 * and one tenant's policy shown, changed or its changes listed. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "proto.h"
#include "sbxctl.h"

static void print_names(const char *what, json_t *a) {
        if (!json_array_size(a))
                return;
        size_t i;
        json_t *v;
        printf("%s:", what);
        json_array_foreach (a, i, v)
                printf(" %s", json_is_string(v) ? json_string_value(v)
                                                : json_string_value(json_object_get(v, "session")) ?: "?");
        printf("\n");
}

void sbxctl_print_reload(json_t *r) {
        printf("reloaded: %lld tenants, %lld tokens\n", (long long) json_integer_value(json_object_get(r, "tenants")),
               (long long) json_integer_value(json_object_get(r, "tokens")));
        print_names("added", json_object_get(r, "added"));
        print_names("removed", json_object_get(r, "removed"));
        print_names("changed", json_object_get(r, "changed"));
        print_names("sessions ended", json_object_get(r, "sessions_ended"));
        print_names("services withdrawn", json_object_get(r, "services_withdrawn"));
        size_t closed = json_array_size(json_object_get(r, "connections_closed"));
        if (closed)
                printf("connections closed: %zu\n", closed);
}

int sbxctl_reload(int argc, char **argv) {
        if (argc != 1)
                usage_error("reload: unexpected argument '%s'", argv[1]);
        connect_daemon();
        json_t *m = request(new_req("reload"));
        if (!json_out)
                sbxctl_print_reload(json_object_get(m, "reload"));
        return 0;
}

static void print_keys(const char *title, json_t *o) {
        const char *k;
        json_t *v;
        printf("%s\n", title);
        json_object_foreach (o, k, v) {
                if (json_is_array(v)) {
                        size_t i;
                        json_t *x;
                        json_array_foreach (v, i, x)
                                printf("  %s = %s\n", k, json_string_value(x) ?: "?");
                } else if (json_is_string(v))
                        printf("  %s = %s\n", k, json_string_value(v));
                else if (json_is_null(v))
                        printf("  %s = (the file's)\n", k);
                else {
                        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
                        printf("  %s = %s\n", k, s ? s : "?");
                        free(s);
                }
        }
}

static int cmd_show(int argc, char **argv) {
        if (argc > 3)
                usage_error("policy show: expected at most one tenant");
        json_t *req = new_req("policy.show");
        if (argc == 3)
                json_object_set_new(req, "tenant", json_string(argv[2]));
        connect_daemon();
        json_t *p = json_object_get(request(req), "policy");
        if (json_out)
                return 0;
        printf("tenant %s (%s), policy version %lld\n", json_string_value(json_object_get(p, "tenant")) ?: "?",
               json_string_value(json_object_get(p, "origin")) ?: "no section", (long long) json_integer_value(json_object_get(p, "version")));
        print_keys("keys:", json_object_get(p, "keys"));
        if (json_object_size(json_object_get(p, "set")))
                print_keys("of which set by policy set:", json_object_get(p, "set"));
        print_keys("in effect:", json_object_get(p, "effective"));
        return 0;
}

static int cmd_set(int argc, char **argv, bool reset) {
        static const struct option opts[] = { { "reason", required_argument, NULL, 'r' }, { NULL, 0, NULL, 0 } };
        const char *reason = NULL, *what = reset ? "policy reset" : "policy set";
        int o;
        /* options anywhere after the command: argv[1] is getopt's "program" */
        optind = 0;
        while ((o = getopt_long(argc - 1, argv + 1, ":", opts, NULL)) >= 0) {
                if (o == 'r')
                        reason = optarg;
                else
                        usage_error("%s: unknown option '%s'", what, argv[optind]);
        }
        optind++; /* an index of argv again */
        if (argc - optind < 2)
                usage_error(reset ? "policy reset: expected TENANT KEY..." : "policy set: expected TENANT KEY=VALUE...");
        json_t *set = json_object();
        for (int i = optind + 1; i < argc; i++) {
                char *eq = strchr(argv[i], '=');
                if (reset ? eq != NULL : eq == NULL || eq == argv[i])
                        usage_error(reset ? "policy reset: '%s': expected a key's name" : "policy set: '%s': expected KEY=VALUE",
                                    argv[i]);
                if (reset)
                        json_object_set_new(set, argv[i], json_null());
                else {
                        *eq = '\0';
                        json_object_set_new(set, argv[i], json_string(eq + 1));
                }
        }
        json_t *req = new_req("policy.set");
        json_object_set_new(req, "tenant", json_string(argv[optind]));
        json_object_set_new(req, "set", set);
        if (reason)
                json_object_set_new(req, "reason", json_string(reason));
        connect_daemon();
        json_t *m = request(req);
        if (!json_out) {
                printf("policy version %lld\n", (long long) json_integer_value(json_object_get(json_object_get(m, "change"), "version")));
                sbxctl_print_reload(json_object_get(m, "reload"));
        }
        return 0;
}

static int cmd_history(int argc, char **argv) {
        static const struct option opts[] = { { "limit", required_argument, NULL, 'n' }, { NULL, 0, NULL, 0 } };
        uint64_t limit = 0;
        int o;
        optind = 0;
        while ((o = getopt_long(argc - 1, argv + 1, ":", opts, NULL)) >= 0) {
                if (o == 'n' && (parse_uint64(optarg, PROTO_MAX_LIST, &limit) < 0 || limit == 0))
                        usage_error("policy history: --limit: expected a number from 1 to %d, got '%s'", PROTO_MAX_LIST, optarg);
                else if (o != 'n')
                        usage_error("policy history: unknown option '%s'", argv[optind]);
        }
        optind++;
        if (argc - optind > 1)
                usage_error("policy history: expected at most one tenant");
        json_t *req = new_req("policy.history");
        if (optind < argc)
                json_object_set_new(req, "tenant", json_string(argv[optind]));
        if (limit)
                json_object_set_new(req, "limit", json_integer((json_int_t) limit));
        connect_daemon();
        json_t *m = request(req);
        if (json_out)
                return 0;
        size_t i;
        json_t *e;
        json_array_foreach (json_object_get(m, "history"), i, e) {
                printf("version %lld  %s  by %s", (long long) json_integer_value(json_object_get(e, "version")),
                       json_string_value(json_object_get(e, "time")) ?: "?", json_string_value(json_object_get(e, "by")) ?: "?");
                const char *why = json_string_value(json_object_get(e, "reason"));
                printf(why ? "  (%s)\n" : "\n", why);
                const char *k;
                json_t *v;
                json_object_foreach (json_object_get(e, "set"), k, v) {
                        json_t *b = json_object_get(json_object_get(e, "before"), k);
                        printf("  %s: %s -> %s\n", k, json_string_value(b) ?: "(the file's)", json_string_value(v) ?: "(the file's)");
                }
        }
        return 0;
}

int sbxctl_policy(int argc, char **argv) {
        if (argc < 2)
                usage_error("policy: expected show, set, reset or history");
        if (streq(argv[1], "show"))
                return cmd_show(argc, argv);
        if (streq(argv[1], "set") || streq(argv[1], "reset"))
                return cmd_set(argc, argv, streq(argv[1], "reset"));
        if (streq(argv[1], "history"))
                return cmd_history(argc, argv);
        usage_error("policy: unknown command '%s' (expected show, set, reset or history)", argv[1]);
}
