/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "conn.h"
#include "log.h"
#include "util.h"

static int audit_fd = -1;
static enum audit_fsync audit_policy;
static bool audit_failed;
static bool audit_pending; /* written under "always", sync left to the group commit */

int audit_open(const char *path, enum audit_fsync policy) {
        audit_policy = policy;
        if (!path)
                return 0;
        audit_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        return audit_fd < 0 ? -errno : 0;
}

void audit_close(void) {
        if (audit_fd >= 0 && audit_pending)
                fdatasync(audit_fd);
        audit_pending = false;
        if (audit_fd >= 0)
                close(audit_fd);
        audit_fd = -1;
}

static void audit_emit(json_t *rec, bool deferred) {
        char ts[64];
        if (audit_fd < 0 || !rec) {
                json_decref(rec);
                return;
        }
        json_object_set_new(rec, "time", json_string(format_rfc3339(now_real_ms(), ts, sizeof(ts))));
        size_t n;
        char *s = json_line(rec, &n);
        json_decref(rec);
        if (!s)
                return;
        int r = write_all(audit_fd, s, n);
        free(s);
        if (r == 0 && audit_policy == AUDIT_FSYNC_ALWAYS) {
                if (deferred)
                        audit_pending = true;
                else if (fdatasync(audit_fd) < 0)
                        r = -errno;
        }
        if (r < 0 && !audit_failed) {
                audit_failed = true;
                log_error("audit log write failed: %s", strerror(-r));
        }
}

void audit_write(json_t *rec) {
        audit_emit(rec, false);
}

void audit_write_deferred(json_t *rec) {
        audit_emit(rec, true);
}

int audit_take_pending(void) {
        if (!audit_pending || audit_fd < 0)
                return -1;
        audit_pending = false;
        return audit_fd;
}

void audit_request(const struct conn *c, const char *op, const char *decision, const char *job, const char *code,
                   const char *msg, bool deferred) {
        audit_emit(json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:o, s:o, s:o}", "event", "request", "op", op, "uid",
                             (json_int_t) c->cred.uid, "pid", (json_int_t) c->cred.pid, "tenant",
                             c->tenant ? c->tenant->name : "", "decision", decision, "job", job ? json_string(job) : json_null(),
                             "code", code ? json_string(code) : json_null(), "message",
                             msg ? json_string(msg) ?: json_null() : json_null()),
                   deferred);
}
