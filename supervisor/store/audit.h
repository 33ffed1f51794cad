/* SPDX-License-Identifier: Apache-2.0 */
/* The audit log: one JSON line per request decision and per job end (who:
 * uid and tenant; what ran; a digest of the inputs; the outcome and the
 * resources used), appended and synced per the audit_fsync setting. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "conf.h"

struct job;

int audit_open(const char *path, enum audit_fsync policy);
/* Open the path again (after logrotate moved the file: SIGHUP). */
int audit_reopen(void);
void audit_close(void);
/* Adds "time" and writes rec at once; steals the reference. Under
 * audit_fsync = always its sync is left to the caller's group commit,
 * which must run it before anyone hears of what the line records.
 * Failures are logged once, never fatal: the job's result is the record
 * of truth. */
void audit_write_deferred(json_t *rec);
/* Who made a request: the socket's peer, or over the HTTP API its token
 * and address (then uid and pid are not said). */
struct audit_who {
        uid_t uid;
        pid_t pid;
        const char *tenant; /* NULL: none yet */
        const char *token;  /* the HTTP API's token's name, or NULL */
        const char *peer;   /* the HTTP client's address, or NULL */
};
/* A decision on a client's request: who, which operation, accepted or
 * refused with which code. A refusal is rate-limited per caller uid (20 a
 * second after a burst of 100); the next line written for that caller
 * says how many were left out. A line about a job names it and its trace
 * id. (front/conn.h's audit_request() says who from a connection.) */
void audit_request_by(const struct audit_who *who, const char *op, const char *decision, const struct job *job, const char *code,
                      const char *msg, bool refusal);
/* The descriptor to fdatasync for the lines written since the last call,
 * or -1 if there are none (or the policy is "never"). */
int audit_take_pending(void);
