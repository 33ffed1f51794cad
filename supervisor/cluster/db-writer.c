/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "db-internal.h"
#include "db-writer.h"
#include "log.h"
#include "util.h"

/* The batch's writes in one transaction; r of each in *rs (in order). */
static void run_batch(struct cdb_writer *w, int *rs, size_t n) {
        struct cdb *db = &w->db;
        struct cdb_write *x;
        size_t i = 0;
        if (cdb_ensure(db, now_mono_ms()) < 0) {
                for (i = 0; i < n; i++)
                        rs[i] = -EAGAIN;
                return;
        }
        int e = n > 1 ? pg_exec0(db, "BEGIN", -1, NULL, "a batch of writes") : 0;
        for (x = w->batch, i = 0; x && e == 0; x = x->next, i++)
                e = rs[i] = x->run(db, x);
        if (e == 0 && n > 1)
                e = pg_exec0(db, "COMMIT", -1, NULL, "a batch of writes");
        if (e == 0)
                return;
        if (e == -EAGAIN && !cdb_up(db)) {
                for (i = 0; i < n; i++)
                        rs[i] = -EAGAIN;
                return;
        }
        /* A statement failed, and with it the transaction: each write on
         * its own, to find which. (A write alone has had its answer.) */
        if (n == 1)
                return;
        pg_rollback(db);
        for (x = w->batch, i = 0; x; x = x->next, i++)
                rs[i] = cdb_up(db) ? x->run(db, x) : -EAGAIN;
}

static void batch_run(struct work *wk) {
        struct cdb_writer *w = container_of(wk, struct cdb_writer, work);
        size_t n = 0;
        for (struct cdb_write *x = w->batch; x; x = x->next)
                n++;
        int rs_small[32];
        int *rs = n <= 32 ? rs_small : calloc(n, sizeof(*rs));
        struct cdb_write *x;
        size_t i;
        if (!rs) {
                for (x = w->batch; x; x = x->next)
                        x->status = -EAGAIN;
                snprintf(w->err, sizeof(w->err), "out of memory");
                return;
        }
        memset(rs, 0, n * sizeof(*rs));
        run_batch(w, rs, n);
        /* Kept with each write for the loop: -EAGAIN only when the
         * connection failed under it; a write's own verdicts (-EIO among
         * them) are its results. */
        for (x = w->batch, i = 0; x; x = x->next, i++)
                x->status = rs[i] == -EAGAIN ? -EAGAIN : 0;
        snprintf(w->err, sizeof(w->err), "%s", w->db.err);
        if (rs != rs_small)
                free(rs);
}

static void send_batch(struct cdb_writer *w) {
        if (w->busy || !w->queue || w->stopping)
                return;
        w->batch = w->queue;
        w->queue = NULL;
        w->queue_tail = &w->queue;
        w->busy = true;
        w->batches++;
        pool_submit(&w->pool, &w->work);
}

static void batch_done(struct work *wk) {
        struct cdb_writer *w = container_of(wk, struct cdb_writer, work);
        struct cdb_write *x = w->batch;
        w->batch = NULL;
        w->busy = false;
        while (x) {
                struct cdb_write *next = x->next;
                w->writes += x->items ?: 1;
                x->next = NULL;
                x->done(x, w->stopping ? -ECANCELED : x->status);
                x = next;
        }
        send_batch(w);
}

int cdb_writer_start(struct cdb_writer *w, const char *conninfo, const char *node, unsigned timeout_ms, unsigned backoff_max_ms) {
        memset(w, 0, sizeof(*w));
        cdb_init(&w->db, conninfo, node, timeout_ms, backoff_max_ms);
        w->db.listen = false;
        w->queue_tail = &w->queue;
        w->work.run = batch_run;
        w->work.done = batch_done;
        return pool_start(&w->pool, 1);
}

void cdb_writer_submit(struct cdb_writer *w, struct cdb_write *x) {
        if (w->stopping) {
                x->done(x, -ECANCELED);
                return;
        }
        x->next = NULL;
        *w->queue_tail = x;
        w->queue_tail = &x->next;
        send_batch(w);
}

void cdb_writer_complete(struct cdb_writer *w) {
        pool_complete(&w->pool);
}

void cdb_writer_stop(struct cdb_writer *w) {
        w->stopping = true;
        pool_stop(&w->pool);
        struct cdb_write *x = w->queue;
        w->queue = NULL;
        w->queue_tail = &w->queue;
        while (x) {
                struct cdb_write *next = x->next;
                x->next = NULL;
                x->done(x, -ECANCELED);
                x = next;
        }
        cdb_close(&w->db);
}
