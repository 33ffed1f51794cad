/* SPDX-License-Identifier: Apache-2.0 */
/* The audit log: one JSON line per request decision and per job end (who:
 * uid and tenant; what ran; a digest of the inputs; the outcome and the
 * resources used), appended and synced per the audit_fsync setting. */
#pragma once

#include <jansson.h>

#include "conf.h"

struct conn;
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
/* A decision on a client's request: who (the connection's peer and
 * tenant), which operation, accepted or refused with which code. A
 * refusal is rate-limited per caller (20 a second after a burst of 100);
 * the next line written for that caller says how many were left out. A
 * line about a job names it and its trace id. */
void audit_request(const struct conn *c, const char *op, const char *decision, const struct job *job, const char *code,
                   const char *msg, bool refusal);
/* The descriptor to fdatasync for the lines written since the last call,
 * or -1 if there are none (or the policy is "never"). */
int audit_take_pending(void);
