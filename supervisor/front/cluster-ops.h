/* SPDX-License-Identifier: Apache-2.0 */
/* Cluster mode's side of the daemon (sbx-supervisord(8) RUNNING MANY
 * NODES): accepted jobs are rows in the shared database (cluster/db.h),
 * written before the client hears the job's id; this node claims queued
 * ones while it has room (role worker or both), runs them as its own jobs
 * under a lease it renews, and writes each result fenced by the claim's
 * attempt. Queries of a job this node does not hold are answered from the
 * database, and waits for one end when its "done" notification comes. */
#pragma once

#include <stdbool.h>

#include "error.h"

struct conn;
struct daemon;
struct request;
struct rjob;

/* Without [cluster] database: nothing (d->cluster stays NULL). A database
 * whose schema is newer than this daemon knows fails the start; an
 * unreachable one does not (submissions are refused until it answers). */
int cluster_init(struct daemon *d, struct sbx_error *err);
void cluster_done(struct daemon *d);
bool cluster_on(const struct daemon *d);

/* May this node take a new job now? If not, the client is told why
 * (E_UNAVAILABLE, or the node's role) and false returned. */
bool cluster_may_accept(struct conn *c, struct request *req);
/* The job (built and admitted by accept.c, not queued here; taken) as a
 * row. The client hears once the row is committed (the database's
 * writer, off the loop; no further request of it is read meanwhile):
 * the job's id, the job a retry with the same idempotency key names, or
 * why not. 0 on its way; -1 refused at once (the client was told). */
int cluster_submit(struct conn *c, struct rjob *rj);

/* Sessions (cluster-sessions.c): a session lives on the node that made
 * it. created: its row, written before the reply queued on c after this
 * goes out. elsewhere: the request is for a session this node does not
 * know; true when another node's row answered it (E_OTHER_NODE, or
 * E_SESSION_ENDED). */
void cluster_session_created(struct conn *c, const struct rjob *box);
bool cluster_session_elsewhere(struct conn *c, const struct request *req);

/* A job request (status, result, wait, cancel, logs, download) for a job
 * this node does not hold: answered from the database. */
void cluster_op_job(struct conn *c, const struct request *req);
void cluster_op_list(struct conn *c, struct request *req);
/* nodes, drain (admins only; checked by the caller) */
void cluster_op_admin(struct conn *c, struct request *req);
/* May this node make its warm pools' sandboxes now? Only a node that
 * claims jobs (not role api, not draining, connected), and only while
 * its last claim left no queued job its tenant's limit lets run. */
bool cluster_may_warm(const struct daemon *d);
/* After every loop turn: claim when there may be work and room. */
void cluster_idle(struct daemon *d);
/* The metrics' gauges and counters of cluster mode (sbx_cluster_*). */
struct metrics_gauges;
void cluster_gauges(const struct daemon *d, struct metrics_gauges *g);
