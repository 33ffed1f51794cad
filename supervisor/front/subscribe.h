/* SPDX-License-Identifier: Apache-2.0 */
/* Clients waiting for a job (wait: one response with the result) or
 * following it (run or logs with follow: events, then the end). Live
 * output is not worth a client: one that lags behind misses output, told
 * by a "lagged" event once it catches up, and can read the capture with
 * logs. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util.h"

struct conn;
struct job_listener;
struct rjob;

/* Waiters and followers hear of their jobs through this (jobevents.h). */
extern const struct job_listener subscribe_listener;

#define SUBSCRIBE_MAX_PER_CONN 1024

enum watch_kind {
        W_WAIT,   /* one response with the result when the job ends */
        W_FOLLOW, /* output events, then an end event */
};

struct job_watch {
        struct list job_link, conn_link;
        struct conn *c;
        struct rjob *rj;          /* NULL: a job another node runs (cluster mode) */
        char job[24];             /* ... that job's id */
        enum watch_kind kind;
        unsigned streams;
        json_t *tag;
        uint64_t skipped[2];   /* output not sent: the client lagged behind */
};

/* Has c room for another watch? If not, it is told (E_LIMIT, tag). */
bool subscribe_room(struct conn *c, json_t *tag);
struct job_watch *subscribe_add(struct conn *c, struct rjob *rj, enum watch_kind kind, unsigned streams, json_t *tag);
/* Send ev (stolen) to every follower of rj; stream (STREAM_STDOUT or
 * STREAM_STDERR, 0 for others) selects followers and lets lagging ones
 * skip len bytes. */
void subscribe_event(struct rjob *rj, json_t *ev, unsigned stream, size_t len);
/* The job's record is durable: tell every waiter and follower (rec
 * borrowed) and drop their watches. */
void subscribe_end(struct rjob *rj, json_t *rec);
/* The job ended but its record cannot be written: tell every waiter and
 * follower the truth and drop their watches. */
void subscribe_fail(struct rjob *rj, const char *code, const char *msg);
/* Cluster mode: a wait or follow of a job that another node may run, kept
 * on the list `on` (cluster-ops.c) until the job's end is known. */
struct job_watch *subscribe_add_remote(struct conn *c, struct list *on, const char *job, enum watch_kind kind, json_t *tag);
/* That job ended: its followers get its output (out, err: what the
 * database kept of it), then every watcher its record (borrowed). */
void subscribe_remote_end(struct list *on, const char *job, json_t *rec, const char *out, size_t out_len, const char *err,
                          size_t err_len);
/* The job came to run on this node: its waits and follows on `on` become
 * the job's own (live output, and its end from here). */
void subscribe_adopt_remote(struct list *on, const char *job, struct rjob *rj);
/* ... and back: the job's waits and follows go to `on`, for its end as
 * the cluster has it (the node's own was refused by the fence). */
void subscribe_release_remote(struct rjob *rj, struct list *on);
/* A closing connection's watches go. */
void subscribe_conn_closed(struct conn *c);
