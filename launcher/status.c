/* SPDX-License-Identifier: Apache-2.0 */
/* The status record on --json-status-fd: one JSON object per line, written
 * with a single write() so a reader never sees half a line. The schema is
 * documented in sbx-launch(1) and relied on by sbx-supervisord. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"

size_t json_escape(char *buf, size_t size, const char *s) {
        size_t n = 0;
#define PUT(c) do { if (n + 1 < size) buf[n] = (c); n++; } while (0)
        PUT('"');
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                switch (*p) {
                case '"': PUT('\\'); PUT('"'); break;
                case '\\': PUT('\\'); PUT('\\'); break;
                case '\n': PUT('\\'); PUT('n'); break;
                case '\t': PUT('\\'); PUT('t'); break;
                case '\r': PUT('\\'); PUT('r'); break;
                default:
                        if (*p < 0x20) {
                                char u[8];
                                snprintf(u, sizeof(u), "\\u%04x", *p);
                                for (char *c = u; *c; c++)
                                        PUT(*c);
                        } else
                                PUT((char) *p);
                }
        }
        PUT('"');
#undef PUT
        if (size)
                buf[n < size ? n : size - 1] = '\0';
        return n;
}

static void emit(int fd, const char *line, size_t len) {
        while (len > 0) {
                ssize_t w = write(fd, line, len);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return;
                line += w;
                len -= (size_t) w;
        }
}

void status_start(int fd, pid_t command_pid) {
        char line[64];
        if (fd < 0)
                return;
        int n = snprintf(line, sizeof(line), "{\"child-pid\": %d}\n", (int) command_pid);
        emit(fd, line, (size_t) n);
}

static const char *json_bool(bool b) {
        return b ? "true" : "false";
}

void status_end(int fd, const struct profile *p, const struct run_result *r) {
        char line[2048], sig[16], secc[16];
        if (fd < 0)
                return;
        const struct protections *pr = &r->prot;
        static const struct protections none = { 0 };
        if (!r->have_prot)
                pr = &none;
        if (r->signal)
                snprintf(sig, sizeof(sig), "%d", r->signal);
        else
                snprintf(sig, sizeof(sig), "null");
        /* "none" only when the profile asked for no filter; null when a
         * filter was wanted but none was loaded. */
        if (pr->seccomp)
                snprintf(secc, sizeof(secc), "\"%s\"", seccomp_mode_name(pr->seccomp_mode));
        else if (r->have_prot && p->seccomp == SECCOMP_NONE)
                snprintf(secc, sizeof(secc), "\"none\"");
        else
                snprintf(secc, sizeof(secc), "null");
        int n = snprintf(line, sizeof(line),
                         "{\"exit-code\": %d, \"signal\": %s, \"timed-out\": %s, \"wall-ms\": %llu, "
                         "\"cpu-ms\": %llu, \"peak-rss-kb\": %llu, \"limits-by\": \"rlimit\", "
                         "\"protections\": {\"no-new-privs\": %s, \"seccomp\": %s, \"landlock-abi\": %d, "
                         "\"landlock-fs\": %s, \"landlock-net\": %s, \"landlock-scoped\": %s, "
                         "\"caps-dropped\": %s, \"nested-userns-blocked\": %s, \"proc-masked\": %s, "
                         "\"openat2\": %s}}\n",
                         r->exit_code, sig, json_bool(r->timed_out), (unsigned long long) r->wall_ms,
                         (unsigned long long) r->cpu_ms, (unsigned long long) r->peak_rss_kb,
                         json_bool(pr->no_new_privs), secc, pr->landlock_abi, json_bool(pr->landlock_fs),
                         json_bool(pr->landlock_net), json_bool(pr->landlock_scoped),
                         json_bool(pr->caps_dropped), json_bool(pr->nested_userns_blocked),
                         json_bool(pr->proc_masked), json_bool(pr->openat2));
        if (n > 0 && (size_t) n < sizeof(line))
                emit(fd, line, (size_t) n);
}

void status_error(int fd, const char *step, const char *message) {
        char line[3 * SBX_ERROR_MAX], s[128], m[2 * SBX_ERROR_MAX + 8];
        if (fd < 0)
                return;
        json_escape(s, sizeof(s), step);
        json_escape(m, sizeof(m), message);
        int n = snprintf(line, sizeof(line), "{\"exit-code\": 125, \"error\": {\"step\": %s, \"message\": %s}}\n", s, m);
        if (n > 0 && (size_t) n < sizeof(line))
                emit(fd, line, (size_t) n);
}
