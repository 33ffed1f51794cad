/* SPDX-License-Identifier: Apache-2.0 */
/* The status record on --json-status-fd: one JSON object per line, written
 * with a single write() so a reader never sees half a line. The keys are
 * those of lib/launch-abi.h, documented in sbx-launch(1) and read by
 * sbx-supervisord. */
#include <stdio.h>
#include <string.h>

#include "fd-util.h"
#include "json-string.h"
#include "launch-abi.h"
#include "launch.h"

/* An object key: "\"name\": ". */
#define K(name) "\"" name "\": "

static void emit(int fd, const char *line, int len) {
        /* A reader that went away loses the record; the exit status is
         * still the caller's to see. */
        if (len > 0)
                (void) fd_write_all(fd, line, (size_t) len);
}

void status_start(int fd, pid_t command_pid) {
        char line[64];
        if (fd < 0)
                return;
        int n = snprintf(line, sizeof(line), "{" K(SBX_STATUS_CHILD_PID) "%d}\n", (int) command_pid);
        if (n > 0 && (size_t) n < sizeof(line))
                emit(fd, line, n);
}

static const char *json_bool(bool b) {
        return b ? "true" : "false";
}

void status_end(int fd, const struct profile *p, const struct run_result *r) {
        char line[2048], sig[16], secc[16];
        if (fd < 0)
                return;
        static const struct protections none = { 0 };
        const struct protections *pr = r->have_prot ? &r->prot : &none;
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
                         "{" K(SBX_STATUS_EXIT_CODE) "%d, " K(SBX_STATUS_SIGNAL) "%s, " K(SBX_STATUS_TIMED_OUT) "%s, "
                         K(SBX_STATUS_WALL_MS) "%llu, " K(SBX_STATUS_CPU_MS) "%llu, " K(SBX_STATUS_PEAK_RSS_KB) "%llu, "
                         K(SBX_STATUS_LIMITS_BY) "\"" SBX_LIMITS_BY_RLIMIT "\", "
                         K(SBX_STATUS_PROTECTIONS) "{" K(SBX_PROT_NO_NEW_PRIVS) "%s, " K(SBX_PROT_SECCOMP) "%s, "
                         K(SBX_PROT_LANDLOCK_ABI) "%d, " K(SBX_PROT_LANDLOCK_FS) "%s, " K(SBX_PROT_LANDLOCK_NET) "%s, "
                         K(SBX_PROT_LANDLOCK_SCOPED) "%s, " K(SBX_PROT_CAPS_DROPPED) "%s, "
                         K(SBX_PROT_NESTED_USERNS_BLOCKED) "%s, " K(SBX_PROT_PROC_MASKED) "%s, "
                         K(SBX_PROT_OPENAT2) "%s}}\n",
                         r->exit_code, sig, json_bool(r->timed_out), (unsigned long long) r->wall_ms,
                         (unsigned long long) r->cpu_ms, (unsigned long long) r->peak_rss_kb,
                         json_bool(pr->no_new_privs), secc, pr->landlock_abi, json_bool(pr->landlock_fs),
                         json_bool(pr->landlock_net), json_bool(pr->landlock_scoped),
                         json_bool(pr->caps_dropped), json_bool(pr->nested_userns_blocked),
                         json_bool(pr->proc_masked), json_bool(pr->openat2));
        if (n > 0 && (size_t) n < sizeof(line))
                emit(fd, line, n);
}

void status_error(int fd, const char *step, const char *message) {
        /* Sized so that nothing is cut: any byte may take six. */
        char s[JSON_STRING_MAX(STATUS_STEP_MAX)], m[JSON_STRING_MAX(SBX_ERROR_MAX)];
        char line[sizeof(s) + sizeof(m) + 64];
        if (fd < 0)
                return;
        json_string_escape(s, sizeof(s), step);
        json_string_escape(m, sizeof(m), message);
        int n = snprintf(line, sizeof(line),
                         "{" K(SBX_STATUS_EXIT_CODE) "%d, " K(SBX_STATUS_ERROR) "{" K(SBX_STATUS_ERROR_STEP) "%s, "
                         K(SBX_STATUS_ERROR_MESSAGE) "%s}}\n",
                         SBX_EXIT_SETUP, s, m);
        if (n > 0 && (size_t) n < sizeof(line))
                emit(fd, line, n);
}
