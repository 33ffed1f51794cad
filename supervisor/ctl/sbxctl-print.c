/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl(1)'s human output: a result record, its network events, a
 * stream's data, and the exit status a finished job gives sbxctl. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "parse.h"
#include "proto.h"
#include "sbxctl.h"

void sbxctl_write_data(FILE *f, json_t *ev) {
        json_t *d = json_object_get(ev, "data");
        if (json_is_string(d)) {
                fwrite(json_string_value(d), 1, json_string_length(d), f);
        } else {
                const char *b = json_string_value(json_object_get(ev, "data_b64"));
                if (!b)
                        return;
                size_t bl = strlen(b), n = 0;
                unsigned char *buf = malloc(bl);
                if (buf && sodium_base642bin(buf, bl, b, bl, NULL, &n, NULL, sodium_base64_VARIANT_ORIGINAL) == 0)
                        fwrite(buf, 1, n, f);
                free(buf);
        }
        fflush(f);
}

/* The exit status that tells a shell what happened to the job, with the
 * launcher's conventions: 124 timed out, 125 could not run, 128+N signal. */
int sbxctl_exit_status(json_t *res) {
        const char *state = json_string_value(json_object_get(res, "state"));
        json_t *ec = json_object_get(res, "exit_code"), *sig = json_object_get(res, "signal");
        if (!state)
                return 125;
        if (streq(state, "succeeded"))
                return 0;
        if (streq(state, "timed_out"))
                return 124;
        if (streq(state, "error") || streq(state, "rejected"))
                return 125;
        if (json_is_integer(sig) && json_integer_value(sig) > 0)
                return 128 + (int) json_integer_value(sig);
        if (json_is_integer(ec))
                return (int) json_integer_value(ec);
        return 125;
}

/* One network event on a line: "connect tcp 127.0.0.1:8080 allow pid 42
 * (curl) TIME", or for a query to the DNS proxy "dns A db.internal allow
 * TIME". */
void sbxctl_print_net_event(FILE *f, const char *prefix, json_t *e) {
        const char *kind = json_string_value(json_object_get(e, "kind"));
        if (kind && streq(kind, "dns")) {
                fprintf(f, "%sdns %s %s %s %s\n", prefix, json_string_value(json_object_get(e, "qtype")) ?: "?",
                        json_string_value(json_object_get(e, "hostname")) ?: "?", json_string_value(json_object_get(e, "verdict")) ?: "?",
                        json_string_value(json_object_get(e, "time")) ?: "");
                return;
        }
        json_t *port = json_object_get(e, "port");
        const char *fam = json_string_value(json_object_get(e, "family"));
        const char *addr = json_string_value(json_object_get(e, "address"));
        const char *host = json_string_value(json_object_get(e, "hostname"));
        bool v6 = fam && streq(fam, "ipv6");
        fprintf(f, "%s%s %s ", prefix, json_string_value(json_object_get(e, "kind")) ?: "?",
                json_string_value(json_object_get(e, "protocol")) ?: "?");
        if (addr && json_is_integer(port))
                fprintf(f, v6 ? "[%s]:%lld" : "%s:%lld", addr, (long long) json_integer_value(port));
        else
                fprintf(f, "-");
        if (host)
                fprintf(f, " (%s)", host);
        fprintf(f, " %s pid %lld (%s) %s\n", json_string_value(json_object_get(e, "verdict")) ?: "?",
                (long long) json_integer_value(json_object_get(e, "pid")), json_string_value(json_object_get(e, "comm")) ?: "?",
                json_string_value(json_object_get(e, "time")) ?: "");
}

static void print_network(json_t *res) {
        json_t *net = json_object_get(res, "network"), *e;
        size_t i;
        if (!json_is_true(json_object_get(net, "audit")))
                return;
        json_t *drop = json_object_get(net, "events_dropped"), *lost = json_object_get(net, "events_lost");
        printf("network:   %s, audited: %zu events", json_string_value(json_object_get(net, "mode")) ?: "?",
               json_array_size(json_object_get(res, "network_events")));
        if (json_is_integer(drop) && json_integer_value(drop))
                printf(", %lld more not kept", (long long) json_integer_value(drop));
        if (json_is_integer(lost) && json_integer_value(lost))
                printf(", %lld lost (ring buffer full)", (long long) json_integer_value(lost));
        if (json_is_null(lost))
                printf(" (the daemon restarted: what happened before is not known)");
        printf("\n");
        json_array_foreach(json_object_get(res, "network_events"), i, e)
                sbxctl_print_net_event(stdout, "net:       ", e);
}

void sbxctl_print_result(json_t *res) {
        json_t *err = json_object_get(res, "error");
        printf("job:       %s\n", json_string_value(json_object_get(res, "job")) ?: "?");
        printf("state:     %s\n", json_string_value(json_object_get(res, "state")) ?: "?");
        json_t *ec = json_object_get(res, "exit_code"), *sig = json_object_get(res, "signal");
        if (json_is_integer(ec))
                printf("exit code: %lld\n", (long long) json_integer_value(ec));
        if (json_is_integer(sig))
                printf("signal:    %lld\n", (long long) json_integer_value(sig));
        if (json_is_object(err))
                printf("error:     %s: %s\n", json_string_value(json_object_get(err, "code")) ?: "",
                       json_string_value(json_object_get(err, "message")) ?: "");
        print_bundle(json_object_get(res, "bundle"));
        if (json_is_string(json_object_get(res, "trace_id")))
                printf("trace id:  %s\n", json_string_value(json_object_get(res, "trace_id")));
        printf("created:   %s\n", json_string_value(json_object_get(res, "created")) ?: "-");
        printf("ended:     %s\n", json_string_value(json_object_get(res, "ended")) ?: "-");
        json_t *w = json_object_get(res, "wall_ms"), *cpu = json_object_get(res, "cpu_ms");
        if (json_is_integer(w))
                printf("wall:      %lld ms\n", (long long) json_integer_value(w));
        if (json_is_integer(cpu))
                printf("cpu:       %lld ms\n", (long long) json_integer_value(cpu));
        for (int i = 0; i < 2; i++) {
                json_t *s = json_object_get(res, i ? "stderr" : "stdout");
                if (json_is_object(s))
                        printf("%s:    %lld bytes%s\n", i ? "stderr" : "stdout", (long long) json_integer_value(json_object_get(s, "size")),
                               json_is_true(json_object_get(s, "truncated")) ? " (truncated)" : "");
        }
        /* Each limit that was set, and what enforced it. */
        const char *k;
        json_t *l;
        json_object_foreach(json_object_get(res, "limits"), k, l) {
                json_t *v = json_object_get(l, "value");
                if (json_is_integer(v))
                        printf("limit:     %s %lld (%s)\n", k, (long long) json_integer_value(v),
                               json_string_value(json_object_get(l, "by")) ?: "?");
                else if (json_is_real(v))
                        printf("limit:     %s %g (%s)\n", k, json_real_value(v), json_string_value(json_object_get(l, "by")) ?: "?");
        }
        size_t i;
        json_t *a;
        json_array_foreach(json_object_get(res, "artifacts"), i, a)
                printf("artifact:  %s %lld bytes sha256:%s\n", json_string_value(json_object_get(a, "path")) ?: "?",
                       (long long) json_integer_value(json_object_get(a, "size")),
                       json_string_value(json_object_get(a, "sha256")) ?: "?");
        print_network(res);
}

/* Print output events until the end event; return the job's status. */
int sbxctl_follow_to_end(bool show_result) {
        for (;;) {
                json_t *m = recv_message();
                const char *ev = json_string_value(json_object_get(m, "event"));
                if (!ev) {
                        expect_ok(m);
                        json_decref(m);
                        continue;
                }
                if (streq(ev, "lagged") && !json_out) {
                        fprintf(stderr, "sbxctl: %lld bytes of %s not shown (this client fell behind); "
                                        "sbxctl logs %s has all of it\n",
                                (long long) json_integer_value(json_object_get(m, "skipped")),
                                json_string_value(json_object_get(m, "stream")) ?: "output",
                                json_string_value(json_object_get(m, "job")) ?: "JOB");
                } else if (streq(ev, "network") && !json_out) {
                        sbxctl_print_net_event(stderr, "sbxctl: network: ", m);
                } else if (streq(ev, "output") && !json_out) {
                        const char *s = json_string_value(json_object_get(m, "stream"));
                        sbxctl_write_data(s && streq(s, "stderr") ? stderr : stdout, m);
                } else if (streq(ev, "end")) {
                        json_t *res = json_object_get(m, "result");
                        int st = sbxctl_exit_status(res);
                        if (!json_out && show_result) {
                                json_t *err = json_object_get(res, "error");
                                if (json_is_object(err))
                                        fprintf(stderr, "sbxctl: job %s: %s: %s\n", json_string_value(json_object_get(m, "job")) ?: "",
                                                json_string_value(json_object_get(err, "code")) ?: "",
                                                json_string_value(json_object_get(err, "message")) ?: "");
                                for (int i = 0; i < 2; i++)
                                        if (json_is_true(json_object_get(json_object_get(res, i ? "stderr" : "stdout"), "truncated")))
                                                fprintf(stderr, "sbxctl: job %s: %s was truncated at the output limit\n",
                                                        json_string_value(json_object_get(m, "job")) ?: "", i ? "stderr" : "stdout");
                                size_t i;
                                json_t *a;
                                json_array_foreach(json_object_get(res, "artifacts"), i, a)
                                        fprintf(stderr, "sbxctl: artifact %s (%lld bytes, sha256 %s)\n",
                                                json_string_value(json_object_get(a, "path")) ?: "?",
                                                (long long) json_integer_value(json_object_get(a, "size")),
                                                json_string_value(json_object_get(a, "sha256")) ?: "?");
                        }
                        json_decref(m);
                        return st;
                }
                json_decref(m);
        }
}
