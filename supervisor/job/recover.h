/* SPDX-License-Identifier: Apache-2.0 */
/* At start, after a crash: every job the journal accepted and no record
 * ended gets one. A job that never started runs now (it cannot have had
 * side effects); one that was running ends E_RESTARTED, or runs again if
 * its request asked for retries. Nothing it started is left running, and
 * no journal entry is dropped before its record is durable: the records
 * go through the group commit like any other job's. */
#pragma once

#include <jansson.h>

#include "error.h"

struct daemon;
struct rjob;

int recover_run(struct daemon *d, struct sbx_error *err);

/* The accept line: everything needed to run the job again after a crash
 * (the request as validated), and what its record needs if it cannot. */
json_t *accept_record(const struct rjob *rj);

/* Cluster mode: a job claimed from the database (its accept line, the
 * attempt that fences its result): queued here as a job of this node, or
 * with interrupted (why) recorded as interrupted at once (E_RESTARTED).
 * take, when not NULL, is offered the job first, admitted and journaled:
 * true when it started it elsewhere than in the queue (a warm sandbox).
 * NULL when it cannot be rebuilt or is here already. */
struct rjob *recover_claim(struct daemon *d, json_t *accept, unsigned attempt, const char *interrupted,
                           bool (*take)(struct rjob *rj));
