/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl's bundle and cache commands: bundle show (the manifest, the
 * profile a job of the bundle gets, and whether the caller's policy lets
 * it run), cache ls, cache gc. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"
#include "sbxctl.h"

void print_bundle(json_t *b) {
        if (!json_is_object(b))
                return;
        const char *v = json_string_value(json_object_get(b, "version"));
        printf("bundle:    %s %s", json_string_value(json_object_get(b, "name")) ?: "?", v ? v : "(not resolved)");
        if (v)
                printf(" (sha256:%s, from the %s%s)", json_string_value(json_object_get(b, "sha256")) ?: "?",
                       json_string_value(json_object_get(b, "source")) ?: "?",
                       json_is_true(json_object_get(b, "stale")) ? ", stale: the registry could not be asked" : "");
        printf("\n");
}

static void print_strings(const char *label, json_t *a) {
        size_t i;
        json_t *s;
        printf("%-14s", label);
        if (json_array_size(a) == 0)
                printf(" -");
        json_array_foreach(a, i, s)
                printf(" %s", json_string_value(s) ?: "?");
        printf("\n");
}

static void print_limit(const char *label, json_t *v) {
        if (json_is_integer(v))
                printf("  %-12s %lld\n", label, (long long) json_integer_value(v));
}

static void print_show(json_t *m) {
        json_t *b = json_object_get(m, "bundle"), *man = json_object_get(m, "manifest"), *v = json_object_get(m, "verdict");
        json_t *caps = json_object_get(man, "capabilities"), *lim = json_object_get(man, "limits");
        printf("bundle:        %s %s (registry %s)\n", json_string_value(json_object_get(b, "name")) ?: "?",
               json_string_value(json_object_get(b, "version")) ?: "?", json_string_value(json_object_get(b, "registry")) ?: "?");
        printf("sha256:        %s\n", json_string_value(json_object_get(b, "sha256")) ?: "?");
        json_t *serial = json_object_get(b, "serial");
        if (json_is_integer(serial))
                printf("index serial:  %lld\n", (long long) json_integer_value(serial));
        if (json_is_true(json_object_get(b, "stale")))
                printf("stale:         the registry could not be asked; this is the newest cached version\n");
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(b, "versions"), i, e)
                printf("published:     %s sha256:%s (%lld bytes)\n", json_string_value(json_object_get(e, "version")) ?: "?",
                       json_string_value(json_object_get(e, "sha256")) ?: "?", (long long) json_integer_value(json_object_get(e, "size")));
        printf("description:   %s\n", json_string_value(json_object_get(man, "description")) ?: "");
        print_strings("command:", json_object_get(man, "command"));
        printf("profile:       %s\n", json_string_value(json_object_get(man, "profile")) ?: "?");
        printf("network:       %s\n", json_string_value(json_object_get(caps, "network")) ?: "?");
        print_strings("connect:", json_object_get(caps, "connect"));
        print_strings("read-only:", json_object_get(caps, "read_only"));
        print_strings("env:", json_object_get(caps, "env"));
        printf("limits:\n");
        print_limit("timeout_ms", json_object_get(lim, "timeout_ms"));
        print_limit("memory", json_object_get(lim, "memory"));
        print_limit("cpu_s", json_object_get(lim, "cpu_s"));
        print_limit("processes", json_object_get(lim, "processes"));
        print_limit("output", json_object_get(lim, "output"));
        if (json_is_true(json_object_get(v, "allowed")))
                printf("verdict:       allowed by your policy\n");
        else
                printf("verdict:       refused: %s: %s\n", json_string_value(json_object_get(v, "code")) ?: "?",
                       json_string_value(json_object_get(v, "message")) ?: "");
        const char *gen = json_string_value(json_object_get(json_object_get(m, "profile"), "generated"));
        if (gen)
                printf("derived profile (on top of profile %s):\n%s",
                       json_string_value(json_object_get(json_object_get(m, "profile"), "profile")) ?: "?", gen);
}

static void print_cache(json_t *m) {
        size_t i;
        json_t *e;
        printf("%-20s %-12s %-12s %-10s %-4s %s\n", "BUNDLE", "VERSION", "SHA256", "BYTES", "JOBS", "LAST USED");
        json_array_foreach(json_object_get(m, "bundles"), i, e)
                printf("%-20s %-12s %-12.12s %-10lld %-4lld %s\n", json_string_value(json_object_get(e, "name")) ?: "?",
                       json_string_value(json_object_get(e, "version")) ?: "?", json_string_value(json_object_get(e, "sha256")) ?: "?",
                       (long long) json_integer_value(json_object_get(e, "bytes")),
                       (long long) json_integer_value(json_object_get(e, "jobs")),
                       json_string_value(json_object_get(e, "last_used")) ?: "-");
        printf("cache: %lld bytes of a %lld-byte budget\n", (long long) json_integer_value(json_object_get(m, "bytes")),
               (long long) json_integer_value(json_object_get(m, "budget")));
}

int sbxctl_bundle(int argc, char **argv) {
        const char *what = argv[0], *sub = argc > 1 ? argv[1] : NULL;
        if (!sub)
                usage_error("%s: expected a command (%s)", what, streq(what, "bundle") ? "show NAME" : "ls or gc");
        if (streq(what, "bundle") && streq(sub, "show")) {
                if (argc != 3)
                        usage_error("bundle show: expected one bundle (NAME, NAME@VERSION or NAME@sha256:HEX)");
                json_t *req = new_req("bundle.show");
                json_object_set_new(req, "bundle", json_string(argv[2]));
                connect_daemon();
                json_t *m = request(req);
                if (!json_out)
                        print_show(m);
                return 0;
        }
        if (streq(what, "cache") && streq(sub, "ls") && argc == 2) {
                connect_daemon();
                json_t *m = request(new_req("cache.list"));
                if (!json_out)
                        print_cache(m);
                return 0;
        }
        if (streq(what, "cache") && streq(sub, "gc")) {
                bool all = argc == 3 && streq(argv[2], "--all");
                if (argc > 3 || (argc == 3 && !all))
                        usage_error("cache gc: expected no argument or --all");
                json_t *req = new_req("cache.gc");
                if (all)
                        json_object_set_new(req, "all", json_true());
                connect_daemon();
                json_t *m = request(req);
                if (!json_out) {
                        size_t i;
                        json_t *e;
                        json_array_foreach(json_object_get(m, "removed"), i, e)
                                printf("removed %s %s (%lld bytes)\n", json_string_value(json_object_get(e, "name")) ?: "?",
                                       json_string_value(json_object_get(e, "version")) ?: "?",
                                       (long long) json_integer_value(json_object_get(e, "bytes")));
                        printf("freed %lld bytes; the cache holds %lld\n", (long long) json_integer_value(json_object_get(m, "freed")),
                               (long long) json_integer_value(json_object_get(m, "bytes")));
                }
                return 0;
        }
        usage_error("unknown command '%s %s'", what, sub);
}
