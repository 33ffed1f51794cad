/* SPDX-License-Identifier: Apache-2.0 */
/* W3C trace context (https://www.w3.org/TR/trace-context/): the
 * traceparent a run request may carry, and the one the daemon gives the
 * job. A job keeps its caller's trace id (or starts a trace when the
 * caller sent none) with a span id of its own, so a control plane can
 * find every log line, audit line, record and callback of one job by the
 * trace it started. Pure: the unit tests drive it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* "00-" 32 hex "-" 16 hex "-" 2 hex */
#define TRACEPARENT_LEN 55
#define TRACE_ID_LEN 32

/* Is s a traceparent this daemon accepts: version 00 in exactly that
 * form, or a later version (not ff) whose first four fields have that
 * form (the specification's rule for versions it does not know), with a
 * trace id and a parent id that are not all zeros, lowercase hex only. */
bool trace_valid(const char *s);

/* The job's traceparent: the caller's trace id and flags with a new span
 * id, or (parent NULL) a new trace, sampled. out gets TRACEPARENT_LEN
 * characters and a NUL. Returns 0, or -EINVAL for an invalid parent. */
int trace_child(const char *parent, char out[static TRACEPARENT_LEN + 1]);

/* The trace id of a valid traceparent (32 characters and a NUL). */
void trace_id_of(const char *traceparent, char out[static TRACE_ID_LEN + 1]);
