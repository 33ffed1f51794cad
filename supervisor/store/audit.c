/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "job.h"
#include "log.h"
#include "util.h"

/* Refusals, per caller (callers hashed into this many slots): at most
 * RATE lines a second after a burst of BURST; the lines left out are
 * counted in the next one written for that slot. A caller sending
 * thousands of bad requests cannot fill the disk or the log's readers. */
#define REFUSAL_SLOTS 256
#define REFUSAL_RATE 20
#define REFUSAL_BURST 100

struct bucket {
        uint64_t at_ms;   /* when tokens was last brought up to date */
        uint32_t tokens;
        uint64_t suppressed;
};

static int audit_fd = -1;
static char *audit_path;
static enum audit_fsync audit_policy;
static bool audit_failed;
static bool audit_pending; /* written under "always", sync left to the group commit */
static struct bucket buckets[REFUSAL_SLOTS];

static int open_log(const char *path) {
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        return fd < 0 ? -errno : fd;
}

int audit_open(const char *path, enum audit_fsync policy) {
        audit_policy = policy;
        if (!path)
                return 0;
        int fd = open_log(path);
        if (fd < 0)
                return fd;
        audit_path = strdup(path);
        if (!audit_path) {
                close(fd);
                return -ENOMEM;
        }
        audit_fd = fd;
        for (size_t i = 0; i < REFUSAL_SLOTS; i++)
                buckets[i] = (struct bucket) { .tokens = REFUSAL_BURST };
        return 0;
}

int audit_reopen(void) {
        if (!audit_path)
                return 0;
        int fd = open_log(audit_path);
        if (fd < 0)
                return fd;
        /* What was written to the old file is made durable first. */
        if (audit_pending)
                fdatasync(audit_fd);
        audit_pending = false;
        close(audit_fd);
        audit_fd = fd;
        audit_failed = false;
        return 0;
}

void audit_close(void) {
        if (audit_fd >= 0 && audit_pending)
                fdatasync(audit_fd);
        audit_pending = false;
        if (audit_fd >= 0)
                close(audit_fd);
        audit_fd = -1;
        free(audit_path);
        audit_path = NULL;
}

/* Every line is written at once; under "always" its sync is left to the
 * next group commit, which runs it before anyone hears of what the lines
 * of accepted jobs and job ends record. */
static void audit_emit(json_t *rec) {
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
        if (r == 0 && audit_policy == AUDIT_FSYNC_ALWAYS)
                audit_pending = true;
        if (r < 0 && !audit_failed) {
                audit_failed = true;
                log_error("audit log write failed: %s", strerror(-r));
        }
}

void audit_write_deferred(json_t *rec) {
        audit_emit(rec);
}

int audit_take_pending(void) {
        if (!audit_pending || audit_fd < 0)
                return -1;
        audit_pending = false;
        return audit_fd;
}

/* May a refusal for uid be written now? */
static bool refusal_allowed(uid_t uid, uint64_t *ret_suppressed) {
        struct bucket *b = &buckets[(uid * 2654435761u) % REFUSAL_SLOTS];
        uint64_t now = now_mono_ms();
        uint64_t add = (now - b->at_ms) * REFUSAL_RATE / 1000;
        if (add > 0) {
                b->tokens = b->tokens + add > REFUSAL_BURST ? REFUSAL_BURST : (uint32_t) (b->tokens + add);
                b->at_ms = now;
        }
        if (b->tokens == 0) {
                b->suppressed++;
                return false;
        }
        b->tokens--;
        *ret_suppressed = b->suppressed;
        b->suppressed = 0;
        return true;
}

void audit_request_by(const struct audit_who *who, const char *op, const char *decision, const struct job *job, const char *code,
                      const char *msg, bool refusal) {
        uint64_t suppressed = 0;
        if (refusal && !refusal_allowed(who->uid, &suppressed))
                return;
        json_t *rec = json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:o, s:o, s:o}", "event", "request", "op", op, "uid",
                                (json_int_t) who->uid, "pid", (json_int_t) who->pid, "tenant", who->tenant ?: "", "decision",
                                decision, "job", job ? json_string(job->id) : json_null(), "code",
                                code ? json_string(code) : json_null(), "message", msg ? json_string(msg) ?: json_null() : json_null());
        if (rec && job && job->req.run.traceparent)
                json_object_set_new(rec, "trace_id", json_stringn(job->req.run.traceparent + 3, 32));
        if (rec && (who->token || (who->peer && who->peer[0]))) {
                json_object_set_new(rec, "via", json_string("http"));
                json_object_set_new(rec, "uid", json_null());
                json_object_set_new(rec, "pid", json_null());
                json_object_set_new(rec, "token", who->token ? json_string(who->token) : json_null());
                json_object_set_new(rec, "peer", json_string(who->peer ?: ""));
        }
        if (rec && suppressed)
                json_object_set_new(rec, "suppressed", json_integer((json_int_t) suppressed));
        audit_emit(rec);
}
