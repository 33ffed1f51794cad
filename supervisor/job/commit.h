/* SPDX-License-Identifier: Apache-2.0 */
/* The group commit: what a loop turn promised durable (accept lines in the
 * journal, ended jobs' records with their capture files, audit lines) is
 * synced by the syncer thread in one batch, and only then are the replies
 * that depend on it released and the clients told. A record that cannot be
 * written keeps its job in the journal and in memory and is retried; while
 * that lasts the daemon accepts no new work (E_STORAGE). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"
#include "loop.h"
#include "syncer.h"
#include "util.h"

struct daemon;
struct rjob;

/* A client whose replies wait for the group commit's sync (front/conn.c
 * embeds one in every connection): hold, and no reply of it goes out
 * until each hold is released. */
struct commit_holder {
        uint64_t gen; /* the last batch that holds it */
        void (*hold)(struct commit_holder *h);
        void (*release)(struct commit_holder *h);
};

struct batch {
        bool journal;          /* journal lines appended, not yet synced */
        struct commit_holder **held; /* clients whose replies wait for that sync */
        size_t n_held, cap_held;
        struct list jobs;      /* struct rjob.commit_link: records to write */
};

struct commit {
        struct batch next, inflight;
        struct sync_request sreq;  /* the inflight batch's, read by the syncer thread */
        size_t cap_files;
        bool syncing;
        struct source src;
        uint64_t gen;              /* the batch being filled: 1, 2, ... */
        struct list retry;         /* jobs whose record could not be written */
        unsigned n_retry;
        uint64_t retry_at_ms;      /* monotonic time of the next attempt */
        int storage_err;           /* the last failure while it lasts (-errno), 0 */
        char storage_what[128];    /* what failed */
        uint64_t inflight_gen;     /* the inflight batch's gen */
        bool reserve_used;         /* the journal's reserve was given up for outcomes */
        bool stop_held_said;       /* stopping, the outcomes held only in memory were logged */
};

int commit_init(struct daemon *d, struct sbx_error *err);
void commit_done(struct daemon *d);
/* A journal line was appended for a client's request: its replies wait
 * for its sync. */
void commit_hold(struct daemon *d, struct commit_holder *h);
/* Ask for a journal sync in the next batch (no client waits on it). */
void commit_journal(struct daemon *d);
/* The job ended and its record is built: write it in the next batch. */
void commit_job(struct daemon *d, struct rjob *rj);
/* At the end of every loop turn: hand the batch to the syncer if idle. */
void commit_submit(struct daemon *d);
/* Housekeeping: put failed records back into a batch when it is time. */
void commit_retry(struct daemon *d, uint64_t now_ms);
/* Is storage failing (no new work accepted)? With the reason. */
bool commit_storage_failing(const struct daemon *d, const char **what, int *err);
/* The journal's "end" line for a job whose record is pending (NULL without
 * a record or memory): journal compaction keeps it. */
json_t *commit_end_line(const struct rjob *rj);
/* Stopping: may the daemon exit now? Every job left is one whose record
 * is pending and whose outcome is durable in the journal. Jobs whose
 * outcomes are only in memory hold it (and are logged once). */
bool commit_may_stop(struct daemon *d);
/* Cluster mode (daemon.h cluster_end): a claimed job's result is in the
 * cluster's database (r 0: its clients are told) or could not be written
 * there (-EAGAIN: kept, and written again); then the batch's end, ok when
 * all of it was written everywhere. */
void commit_cluster_ended(struct daemon *d, struct rjob *rj, int r);
void commit_cluster_settled(struct daemon *d, bool ok);
/* Storage failed outside the group commit (a journal append). */
void commit_storage_failed(struct daemon *d, const char *what, int err);
