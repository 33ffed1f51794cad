/* SPDX-License-Identifier: Apache-2.0 */
/* The audit log: one JSON line per request decision and per job end (who:
 * uid and tenant; what ran; a digest of the inputs; the outcome and the
 * resources used), appended and synced per the audit_fsync setting. */
#pragma once

#include <jansson.h>

#include "conf.h"

struct conn;

int audit_open(const char *path, enum audit_fsync policy);
void audit_close(void);
/* Adds "time" and writes rec; steals the reference. Failures are logged
 * once, never fatal: the job's result is the record of truth. */
void audit_write(json_t *rec);
/* The same, leaving the sync (under "always") to the caller's group commit,
 * which must run it before anyone hears of what the line records. */
void audit_write_deferred(json_t *rec);
/* A decision on a client's request: who (the connection's peer and
 * tenant), which operation, accepted or refused with which code. deferred:
 * the group commit syncs it (the reply is held for it). */
void audit_request(const struct conn *c, const char *op, const char *decision, const char *job, const char *code,
                   const char *msg, bool deferred);
/* The descriptor to fdatasync for the deferred lines written since the last
 * call, or -1 if there are none (or the policy is "never"). */
int audit_take_pending(void);
