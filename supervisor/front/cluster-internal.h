/* SPDX-License-Identifier: Apache-2.0 */
/* What cluster-ops.c (claims, leases, the connection) and cluster-query.c
 * (clients' requests) share. Not for use outside them. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "db-writer.h"
#include "db.h"
#include "loop.h"
#include "util.h"

struct daemon;

/* A delivery that settled, for the database (cluster-callbacks.c). */
struct cl_settle {
        char job[24];
        char state[12];
};

struct cluster {
        struct daemon *d;
        struct cdb db;            /* the loop's: claims, leases, notifications, queries */
        struct cdb_writer writer; /* rows and results, off the loop (db-writer.h) */
        struct source writer_src; /* its eventfd */
        bool writer_on;
        struct list inserting;    /* rows this node writes, not yet answered (cluster-query.c) */
        size_t n_inserting;
        struct source db_src;     /* the connection's socket: notifications */
        bool db_src_on;
        unsigned db_src_gen;      /* the connection it is of (cdb.gen) */
        struct source tick_src;   /* a timerfd */
        int tick_fd;
        struct list waits;        /* struct job_watch.job_link of jobs held elsewhere */
        bool claim_wanted;
        bool queue_left;          /* the last claim saw jobs queued that it did not take */
        unsigned runnable_left;   /* and how many of them their tenants' limits let run */
        bool queue_seen;          /* a claim answered since the connection was made */
        bool draining;            /* told so by the database (sbxctl drain) */
        bool released;            /* this node's leases of before its start are given back */
        bool refused_schema;
        uint64_t next_beat_ms, next_prune_ms;
        uint64_t claimed, fenced, unavailable, requeued, expired;
        struct cl_settle *settle; /* waiting for the next tick */
        size_t n_settle, cap_settle;
        uint64_t cb_adopted;      /* callbacks taken over from stopped nodes */
};

/* Connected now, if it is time to try (and what a new connection needs
 * done). */
void cluster_ensure(struct cluster *cl);
/* The end of a job some of this node's clients wait for (cl->waits). */
void cluster_deliver(struct cluster *cl, const char *id);
void cluster_set_draining(struct cluster *cl, bool draining);
/* E_OTHER_NODE: what (a job's files, a session) is on node; ask there,
 * at its API when it advertises one; after ends the message. */
json_t *cluster_other_node(struct cluster *cl, json_t *tag, const char *node, const char *what, const char *after);
/* cluster-sessions.c: hears the ends of sessions' boxes. */
extern const struct job_listener cluster_session_listener;
/* The job id of an entry of cl->inserting. */
const char *cluster_inserting_id(const struct list *pos);

/* cluster-callbacks.c: callbacks as rows of the database. start/stop: the
 * callbacks' settled hook. flush: the settled ones written (each tick).
 * adopt: the pending callbacks of nodes whose heartbeat stopped, taken
 * over. taken: those taken from this node while it was away, dropped
 * here (once connected). */
void cluster_cb_start(struct cluster *cl);
void cluster_cb_stop(struct cluster *cl);
void cluster_cb_flush(struct cluster *cl);
void cluster_cb_adopt(struct cluster *cl);
void cluster_cb_taken(struct cluster *cl);
