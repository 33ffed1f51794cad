/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl nodes and sbxctl drain: the nodes of a cluster (sbx-supervisord
 * in cluster mode), and taking one out of it. */
#include <stdio.h>
#include <string.h>

#include "sbxctl.h"
#include "util.h"

int sbxctl_nodes(int argc, char **argv) {
        if (argc != 1)
                usage_error("nodes: unexpected argument '%s'", argv[1]);
        connect_daemon();
        json_t *m = request(new_req("nodes"));
        if (json_out)
                return 0;
        const char *me = json_string_value(json_object_get(m, "this")) ?: "";
        printf("%-24s %-7s %7s %8s %-9s %s\n", "NODE", "ROLE", "RUNNING", "MAX_JOBS", "STATE", "SEEN");
        size_t i;
        json_t *n;
        json_array_foreach (json_object_get(m, "nodes"), i, n) {
                const char *name = json_string_value(json_object_get(n, "node")) ?: "?";
                double seen = json_real_value(json_object_get(n, "seen_s"));
                char seen_s[32];
                snprintf(seen_s, sizeof(seen_s), "%.1fs ago", seen);
                printf("%-24s %-7s %7lld %8lld %-9s %s%s\n", name, json_string_value(json_object_get(n, "role")) ?: "?",
                       (long long) json_integer_value(json_object_get(n, "running")),
                       (long long) json_integer_value(json_object_get(n, "max_jobs")),
                       json_is_true(json_object_get(n, "draining")) ? "draining" : "active", seen_s,
                       streq(name, me) ? " (this node)" : "");
        }
        return 0;
}

int sbxctl_drain(int argc, char **argv) {
        bool undo = false;
        const char *node = NULL;
        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--undo"))
                        undo = true;
                else if (argv[i][0] == '-')
                        usage_error("drain: unknown option '%s'", argv[i]);
                else if (!node)
                        node = argv[i];
                else
                        usage_error("drain: unexpected argument '%s'", argv[i]);
        }
        connect_daemon();
        json_t *req = new_req("drain");
        if (node)
                json_object_set_new(req, "node", json_string(node));
        if (undo)
                json_object_set_new(req, "undo", json_true());
        json_t *m = request(req);
        if (!json_out)
                printf("node %s: %s\n", json_string_value(json_object_get(m, "node")) ?: "?",
                       undo ? "claims jobs again" : "draining: it finishes its jobs and claims no more");
        return 0;
}
