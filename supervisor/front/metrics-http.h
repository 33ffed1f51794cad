/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's side of the metrics (metrics.h): counting finished jobs,
 * the metrics operation, and the HTTP listener of metrics_listen. */
#pragma once

#include "error.h"
#include "proto.h"

struct conn;
struct daemon;
struct job_listener;

/* Finished jobs are counted through this (jobevents.h). */
extern const struct job_listener metrics_listener;
/* The metrics operation: the exposition, with the caller's tenant's
 * series only. */
void metrics_op(struct conn *c, struct request *req);
/* Listen on metrics_listen, if set; an error if it cannot. */
int metrics_http_start(struct daemon *d, struct sbx_error *err);
/* Housekeeping: let the listener expire idle connections. */
void metrics_http_tick(struct daemon *d);
void metrics_http_stop(struct daemon *d);
