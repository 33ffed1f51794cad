/* SPDX-License-Identifier: Apache-2.0 */
/* Warm pools (sbx-supervisord(8), WARM POOLS): for a tenant with warm = N,
 * N sandboxes made ahead (a session's box: uid, cgroup, workspace and
 * sbx-init running), each taken by one job that asks for nothing a cold
 * start would do differently, then ended. Made again after every use
 * while the tenant submits; left to end by warm_idle when it does not. */
#pragma once

#include <stdbool.h>

struct daemon;
struct policy_decision;
struct request;
struct rjob;
struct session;
struct tenant;

int warm_init(struct daemon *d);
void warm_done(struct daemon *d);
/* The configuration was reloaded: every pool it has is made again (the
 * sessions' reload flushed the old ones). */
void warm_reloaded(struct daemon *d);
/* Make what the pools lack now (from the loop's idle hook, when
 * d->warm_wanted). */
void warm_fill(struct daemon *d);
/* A run request of t, admitted: a warm sandbox it may run in (taken), or
 * NULL to start it cold. profile_path: the profile it resolved to. */
struct session *warm_take(struct daemon *d, const struct tenant *t, const struct request *req, const struct policy_decision *pol,
                          const char *profile_path);
/* A job of t was queued: when it waits for a place that a warm sandbox
 * holds (of its tenant's max_jobs: one of t's pool; of the daemon's: one
 * of t's pool, else of another tenant's), that sandbox ends (yielded). */
void warm_queued(struct daemon *d, const struct tenant *t);
/* Cluster mode: a job this node claimed, admitted and journaled (the take
 * of recover_claim()): started in a warm sandbox of its tenant's when it
 * may run in one (as warm_take decides); false: it queues. */
bool warm_claimed(struct rjob *rj);
/* The places the daemon's warm sandboxes hold (every untaken one): a
 * claim may count them free, as a job queued for one makes it end. */
unsigned warm_places(const struct daemon *d);
/* Every untaken warm sandbox ends, with reason in its record (a drained
 * node: they would hold places no job comes for). */
void warm_end_all(struct daemon *d, const char *reason);
