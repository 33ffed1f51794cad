/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl callbacks: the callback deliveries of the caller's jobs (ls), and
 * an operator's say on one: deliver it again now (retry) or give it up
 * (drop). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"
#include "proto.h"
#include "sbxctl.h"

void print_callback(json_t *cb) {
        printf("callback:  %s %s (delivery %s", json_string_value(json_object_get(cb, "state")) ?: "?",
               json_string_value(json_object_get(cb, "url")) ?: "?", json_string_value(json_object_get(cb, "delivery")) ?: "?");
        json_t *n = json_object_get(cb, "attempts");
        if (json_is_integer(n))
                printf(", %lld attempts", (long long) json_integer_value(n));
        const char *e = json_string_value(json_object_get(cb, "last_error"));
        if (e)
                printf(", last: %s", e);
        printf(")\n");
}

static int cmd_ls(int argc, char **argv) {
        static const struct option opts[] = { { "state", required_argument, NULL, 't' },
                                              { "limit", required_argument, NULL, 'n' },
                                              { NULL, 0, NULL, 0 } };
        const char *state = NULL;
        uint64_t limit = 0;
        int o;
        optind = 2;
        while ((o = getopt_long(argc, argv, "+:", opts, NULL)) >= 0) {
                if (o == 't' && (streq(optarg, "pending") || streq(optarg, "dead") || streq(optarg, "dropped")))
                        state = optarg;
                else if (o == 't')
                        usage_error("callbacks ls: --state: expected pending, dead or dropped, got '%s'", optarg);
                else if (o == 'n' && (parse_uint64(optarg, PROTO_MAX_LIST, &limit) < 0 || limit == 0))
                        usage_error("callbacks ls: --limit: expected a number from 1 to %d, got '%s'", PROTO_MAX_LIST, optarg);
                else if (o == 'n')
                        continue;
                else
                        usage_error("callbacks ls: unknown option '%s'", argv[optind - 1]);
        }
        if (optind < argc)
                usage_error("callbacks ls: unexpected argument '%s'", argv[optind]);
        json_t *req = new_req("callbacks.list");
        if (state)
                json_object_set_new(req, "state", json_string(state));
        if (limit)
                json_object_set_new(req, "limit", json_integer((json_int_t) limit));
        connect_daemon();
        json_t *m = request(req);
        if (json_out)
                return 0;
        printf("%-22s %-8s %-8s %-25s %s\n", "JOB", "STATE", "ATTEMPTS", "CREATED", "LAST ERROR");
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(m, "callbacks"), i, c)
                printf("%-22s %-8s %-8lld %-25s %s\n", json_string_value(json_object_get(c, "job")) ?: "?",
                       json_string_value(json_object_get(c, "state")) ?: "?", (long long) json_integer_value(json_object_get(c, "attempts")),
                       json_string_value(json_object_get(c, "created")) ?: "-", json_string_value(json_object_get(c, "last_error")) ?: "-");
        return 0;
}

int sbxctl_callbacks(int argc, char **argv) {
        if (argc < 2)
                usage_error("callbacks: expected ls, retry JOB or drop JOB");
        if (streq(argv[1], "ls"))
                return cmd_ls(argc, argv);
        if (!streq(argv[1], "retry") && !streq(argv[1], "drop"))
                usage_error("callbacks: unknown command '%s' (expected ls, retry or drop)", argv[1]);
        if (argc != 3)
                usage_error("callbacks %s: expected one job id", argv[1]);
        json_t *req = new_req(streq(argv[1], "retry") ? "callbacks.retry" : "callbacks.drop");
        json_object_set_new(req, "job", json_string(argv[2]));
        connect_daemon();
        json_t *m = request(req);
        if (!json_out)
                printf("%s: callback %s\n", argv[2], json_string_value(json_object_get(m, "state")) ?: "?");
        return 0;
}
