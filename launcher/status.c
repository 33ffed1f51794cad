/* SPDX-License-Identifier: Apache-2.0 */
/* The status record on --json-status-fd: one JSON object per line, written
 * with a single write() so a reader never sees half a line. The keys are
 * those of lib/launch-abi.h, documented in sbx-launch(1) and read by
 * sbx-supervisord. */
#include <stdarg.h>
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

static const char *json_bool(bool b) {
        return b ? "true" : "false";
}

/* Append to buf at *n, never past size (a cut line is then not written). */
static void append(char *buf, size_t size, size_t *n, const char *fmt, ...) _printf_(4, 5);
static void append(char *buf, size_t size, size_t *n, const char *fmt, ...) {
        va_list ap;
        if (*n >= size)
                return;
        va_start(ap, fmt);
        int k = vsnprintf(buf + *n, size - *n, fmt, ap);
        va_end(ap);
        *n = k < 0 ? size : *n + (size_t) k;
}

/* Every tmpfs the profile mounts has a size (the minimal /dev's always
 * has one; the root is read-only). */
static bool tmpfs_all_sized(const struct profile *p) {
        for (size_t i = 0; i < p->n_fs; i++)
                if (p->fs[i].type == FS_TMPFS && p->fs[i].size_bytes == PROFILE_UNSET)
                        return false;
        return true;
}

/* Whether the kernel enforces a limit the command's process holds. */
static bool enforced(const struct run_result *r, enum limit_id id) {
        if (!r->have_prot || r->limits[id] == LIMIT_NONE)
                return false;
        /* The kernel never holds processes of host root to RLIMIT_NPROC
         * (copy_process: INIT_USER is exempt), whatever the namespace. */
        if (id == LIMIT_PROCESSES && r->outer_uid == 0)
                return false;
        return true;
}

static void limits_json(char *buf, size_t size, size_t *n, const struct profile *p, const struct run_result *r) {
        uint64_t t = p->limits.timeout_ms;
        if (t != PROFILE_UNSET && t > 0)
                append(buf, size, n, K(SBX_STATUS_LIMITS) "{\"timeout\": {" K(SBX_LIMIT_VALUE) "%llu, " K(SBX_LIMIT_BY) "\"%s\"}",
                       (unsigned long long) t, SBX_LIMIT_BY_LAUNCHER);
        else
                append(buf, size, n, K(SBX_STATUS_LIMITS) "{\"timeout\": {" K(SBX_LIMIT_VALUE) "null, " K(SBX_LIMIT_BY) "\"%s\"}",
                       SBX_LIMIT_BY_NONE);
        for (int id = 0; id < LIMIT_COUNT; id++) {
                const char *key = limits_key((enum limit_id) id);
                if (!r->have_prot || r->limits[id] == LIMIT_NONE) {
                        append(buf, size, n, ", \"%s\": {" K(SBX_LIMIT_VALUE) "null, " K(SBX_LIMIT_BY) "\"%s\"}", key,
                               SBX_LIMIT_BY_NONE);
                        continue;
                }
                append(buf, size, n, ", \"%s\": {" K(SBX_LIMIT_VALUE) "%llu, " K(SBX_LIMIT_BY) "\"%s\"", key,
                       (unsigned long long) r->limits[id],
                       enforced(r, (enum limit_id) id) ? SBX_LIMIT_BY_RLIMIT : SBX_LIMIT_BY_NONE);
                if (enforced(r, (enum limit_id) id))
                        append(buf, size, n, ", " K(SBX_LIMIT_PER) "\"%s\"", limits_per((enum limit_id) id));
                if (id == LIMIT_MEMORY && enforced(r, LIMIT_MEMORY))
                        append(buf, size, n, ", " K(SBX_LIMIT_COVERS) "[\"%s\"%s%s%s]", SBX_COVERS_ADDRESS_SPACE,
                               r->prot.memfd_refused ? ", \"" SBX_COVERS_MEMFD "\"" : "",
                               r->prot.sysv_shm_capped || r->prot.shmget_refused ? ", \"" SBX_COVERS_SYSV_SHM "\"" : "",
                               tmpfs_all_sized(p) ? ", \"" SBX_COVERS_TMPFS "\"" : "");
                append(buf, size, n, "}");
        }
        append(buf, size, n, "}, ");
}

/* The protections object (pr NULL: none were reported). */
static void protections_json(char *buf, size_t size, size_t *n, const struct profile *p, const struct protections *pr) {
        static const struct protections none = { 0 };
        char secc[16];
        bool have = pr != NULL;
        if (!pr)
                pr = &none;
        /* "none" only when the profile asked for no filter; null when a
         * filter was wanted but none was loaded. */
        if (pr->seccomp)
                snprintf(secc, sizeof(secc), "\"%s\"", seccomp_mode_name(pr->seccomp_mode));
        else if (have && p->seccomp == SECCOMP_NONE)
                snprintf(secc, sizeof(secc), "\"none\"");
        else
                snprintf(secc, sizeof(secc), "null");
        append(buf, size, n,
               K(SBX_STATUS_PROTECTIONS) "{" K(SBX_PROT_NO_NEW_PRIVS) "%s, " K(SBX_PROT_SECCOMP) "%s, "
               K(SBX_PROT_LANDLOCK_ABI) "%d, " K(SBX_PROT_LANDLOCK_FS) "%s, " K(SBX_PROT_LANDLOCK_NET) "%s, "
               K(SBX_PROT_LANDLOCK_SCOPED) "%s, " K(SBX_PROT_CAPS_DROPPED) "%s, "
               K(SBX_PROT_NESTED_USERNS_BLOCKED) "%s, " K(SBX_PROT_PROC_MASKED) "%s, "
               K(SBX_PROT_OPENAT2) "%s, " K(SBX_PROT_SETID_REFUSED) "%s, " K(SBX_PROT_MEMFD_REFUSED) "%s}",
               json_bool(pr->no_new_privs), secc, pr->landlock_abi, json_bool(pr->landlock_fs),
               json_bool(pr->landlock_net), json_bool(pr->landlock_scoped),
               json_bool(pr->caps_dropped), json_bool(pr->nested_userns_blocked),
               json_bool(pr->proc_masked), json_bool(pr->openat2), json_bool(pr->setid_refused),
               json_bool(pr->memfd_refused));
}

void status_start(int fd, pid_t command_pid, const struct profile *p, const struct protections *pr) {
        char line[1024];
        size_t n = 0;
        if (fd < 0)
                return;
        append(line, sizeof(line), &n, "{" K(SBX_STATUS_CHILD_PID) "%d, ", (int) command_pid);
        protections_json(line, sizeof(line), &n, p, pr);
        append(line, sizeof(line), &n, "}\n");
        if (n < sizeof(line))
                emit(fd, line, (int) n);
}

void status_end(int fd, const struct profile *p, const struct run_result *r) {
        char line[4096], sig[16];
        size_t n = 0;
        if (fd < 0)
                return;
        if (r->signal)
                snprintf(sig, sizeof(sig), "%d", r->signal);
        else
                snprintf(sig, sizeof(sig), "null");
        append(line, sizeof(line), &n,
               "{" K(SBX_STATUS_EXIT_CODE) "%d, " K(SBX_STATUS_SIGNAL) "%s, " K(SBX_STATUS_TIMED_OUT) "%s, "
               K(SBX_STATUS_WALL_MS) "%llu, " K(SBX_STATUS_CPU_MS) "%llu, " K(SBX_STATUS_PEAK_RSS_KB) "%llu, ",
               r->exit_code, sig, json_bool(r->timed_out), (unsigned long long) r->wall_ms,
               (unsigned long long) r->cpu_ms, (unsigned long long) r->peak_rss_kb);
        if (r->peak_vm_kb)
                append(line, sizeof(line), &n, K(SBX_STATUS_PEAK_VM_KB) "%llu, ", (unsigned long long) r->peak_vm_kb);
        else
                append(line, sizeof(line), &n, K(SBX_STATUS_PEAK_VM_KB) "null, ");
        limits_json(line, sizeof(line), &n, p, r);
        protections_json(line, sizeof(line), &n, p, r->have_prot ? &r->prot : NULL);
        append(line, sizeof(line), &n, "}\n");
        if (n < sizeof(line))
                emit(fd, line, (int) n);
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
