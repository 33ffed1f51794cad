/* SPDX-License-Identifier: Apache-2.0 */
/* Writes off the event loop: the statements whose answers only their
 * callers wait for (a job's row before its acknowledgement, a result
 * before its clients hear it) run on a thread of their own, over a
 * connection of their own, so that the loop goes on serving while the
 * database commits. What is submitted while one batch is at the database
 * goes in the next, all of it in one transaction: one commit (one flush
 * of the database's log) for every job accepted or ended meanwhile, as the
 * daemon's group commit does for its own files.
 *
 * A statement that fails in a batch's transaction fails the whole
 * transaction; then each write of the batch runs again alone, so that
 * only the one that failed hears so. A connection lost mid-batch fails
 * every write of it (-EAGAIN): none of it was committed, or the caller
 * cannot know, as with one statement. */
#pragma once

#include <stdbool.h>

#include "db.h"
#include "pool.h"

struct cdb_write {
        /* On the writer's thread: the write's statements, on db, in the
         * batch's transaction or alone. It keeps its own results (its
         * struct, through container_of) and returns 0, -EIO when a
         * statement failed, or -EAGAIN when the connection did. It reads
         * nothing the loop may change meanwhile. */
        int (*run)(struct cdb *db, struct cdb_write *w);
        /* On the event loop, once the batch is over, in order of
         * submission. r: 0 (its own results hold), -EAGAIN (nothing of it
         * is known written: the database is down, or went down), or
         * -ECANCELED (the daemon stops: never sent). The write is the
         * caller's to free. */
        void (*done)(struct cdb_write *w, int r);
        int status;               /* the writer's verdict for done() */
        unsigned items;           /* rows or results it holds (counted; 0: one) */
        struct cdb_write *next;
};

struct cdb_writer {
        struct pool pool;         /* one thread */
        struct work work;         /* the batch at the database */
        struct cdb db;            /* the thread's, while a batch is out */
        struct cdb_write *batch;  /* at the database */
        struct cdb_write *queue, **queue_tail; /* for the next batch */
        char err[256];            /* why the last batch failed (db.err, read after it) */
        bool busy, stopping;
        unsigned long batches, writes;
};

/* The writer's thread and its connection (made at its first batch).
 * Returns the eventfd that is readable when a batch is over (then call
 * cdb_writer_complete()), or -errno. */
int cdb_writer_start(struct cdb_writer *w, const char *conninfo, const char *node, unsigned timeout_ms, unsigned backoff_max_ms);
/* Queue a write: it goes at once when no batch is out, else in the next. */
void cdb_writer_submit(struct cdb_writer *w, struct cdb_write *x);
/* The eventfd fired: the batch's done() calls, then the next batch. */
void cdb_writer_complete(struct cdb_writer *w);
/* Wait for the batch at the database, stop the thread and close the
 * connection; every write not yet done hears -ECANCELED (a job's result
 * among them is written again at the next start: recover.c). */
void cdb_writer_stop(struct cdb_writer *w);
