/* SPDX-License-Identifier: Apache-2.0 */
/* One request line of a client: parsed (proto), then one handler per
 * operation. Handlers reply on the connection; the run operation is in
 * accept.c, logs in logs.c, download in download.c. */
#pragma once

#include <stddef.h>

#include "proto.h"

struct conn;
struct rjob;
struct done_entry;
struct daemon;

void dispatch_line(struct conn *c, const char *line, size_t len);

/* accept.c: a run request. */
void accept_run(struct conn *c, struct request *req);
/* A job the daemon runs for a tenant itself (a package install), from a
 * request as a client would send it and the decision it runs with:
 * queued and journaled like any job, or NULL with err. */
struct policy_decision;
struct tenant;
struct rjob *accept_internal(struct daemon *d, const struct tenant *t, json_t *request, const struct policy_decision *pol,
                             struct sbx_error *err);
/* A sandbox of t's warm pool (warm.c), queued and journaled; NULL with err. */
struct rjob *accept_warm(struct daemon *d, const struct tenant *t, struct sbx_error *err);
/* session-ops.c: every session.* request. */
void session_op(struct conn *c, struct request *req);
/* The journal's accept line for a job (also rewritten by compaction). */
/* logs.c: the captured output of a job of c's tenant (live or finished). */
void logs_serve(struct conn *c, struct request *req, struct rjob *rj, const char *id);
/* Up to max bytes of a job's captured stream i (0 stdout, 1 stderr) from
 * off, in *ret (free() it; NULL when nothing was captured there); *ret_size
 * is the stream's size. 0 or -errno. */
int logs_read_stream(int results_fd, const char *id, int i, uint64_t off, uint64_t max, char **ret, size_t *ret_len,
                     uint64_t *ret_size);
/* download.c: one file of a finished job of c's tenant, in bounded pieces
 * with its SHA-256 at the end. */
void download_serve(struct conn *c, struct request *req, struct rjob *rj, const char *id);
