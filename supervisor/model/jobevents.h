/* SPDX-License-Identifier: Apache-2.0 */
/* What a live job tells the rest of the daemon: an event for its followers
 * (its start, its output, its network), its durable end, or an end whose
 * record cannot be written yet. The job and network code tell; the
 * subsystems above them that care (followers and waiters, the metrics)
 * listen, registered once at start. So no call runs from a job back up
 * into the connection layer (HACKING.md: the one-way rule). On the event
 * loop only. */
#pragma once

#include <jansson.h>
#include <stddef.h>

struct rjob;

/* Any member may be NULL. */
struct job_listener {
        /* ev borrowed; stream: STREAM_STDOUT or STREAM_STDERR for len
         * bytes of output, 0 for any other event. */
        void (*event)(struct rjob *rj, json_t *ev, unsigned stream, size_t len);
        /* The job's record is durable (rec borrowed). */
        void (*end)(struct rjob *rj, json_t *rec);
        /* The job ended but its record cannot be written (code, msg). */
        void (*fail)(struct rjob *rj, const char *code, const char *msg);
};

/* Listeners hear in the order they registered; registering one twice
 * changes nothing. -ENOSPC past JOB_LISTENERS_MAX. */
#define JOB_LISTENERS_MAX 8
int job_listen(const struct job_listener *l);
/* ev stolen (NULL: nothing to tell). */
void job_tell_event(struct rjob *rj, json_t *ev, unsigned stream, size_t len);
void job_tell_end(struct rjob *rj, json_t *rec);
void job_tell_fail(struct rjob *rj, const char *code, const char *msg);
