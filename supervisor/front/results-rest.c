/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "dispatch.h"
#include "log.h"
#include "results-rest.h"
#include "util.h"
#include "worker.h"

/* A request that waits for the index. */
struct waiter {
        struct list link;
        struct conn *c;
        size_t len;
        char line[];
};

static void read_batch(struct work *w) {
        struct daemon *d = container_of(w, struct daemon, results_work);
        result_rest_read(d->results_rest);
}

static void wake_waiters(struct daemon *d) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &d->results_waiters) {
                struct waiter *q = list_entry(pos, struct waiter, link);
                list_del(&q->link);
                if (!q->c->closed)
                        dispatch_line(q->c, q->line, q->len);
                conn_unbusy(q->c);
                free(q);
        }
}

static void batch_done(struct work *w) {
        struct daemon *d = container_of(w, struct daemon, results_work);
        bool all = false;
        int r = result_rest_merge(&d->done, d->results_rest, &all);
        if (r < 0) {
                /* Out of memory: what could not be indexed is not listed,
                 * as for a record that cannot be read. */
                log_error("results: indexing the records the index file lacked: %s", strerror(-r));
                all = true;
        }
        if (!all && !d->results_abandoned) {
                worker_submit(&d->results_work);
                return;
        }
        if (all)
                log_info("results: %zu records the index file lacked read in %" PRIu64 " ms (worker time) while serving",
                         result_rest_total(d->results_rest), result_rest_read_ms(d->results_rest));
        result_rest_free(d->results_rest);
        d->results_rest = NULL;
        if (all && !d->results_abandoned) {
                unsigned removed = result_sweep(&d->done, d->dirs.results_fd, d->cfg->retention_ms, now_real_ms());
                if (removed)
                        log_info("retention: removed %u old results", removed);
        }
        wake_waiters(d);
}

int results_open(struct daemon *d) {
        int r = result_index_open(&d->done, d->dirs.results_fd, &d->results_rest);
        if (r < 0)
                return r;
        if (d->results_rest)
                log_notice("results: the index file lacks %zu records; reading them while serving (listing, keyed "
                           "submits and finished jobs not yet read wait for it)",
                           result_rest_total(d->results_rest));
        return 0;
}

void results_rest_start(struct daemon *d) {
        if (!d->results_rest)
                return;
        d->results_work = (struct work){ .run = read_batch, .done = batch_done };
        worker_submit(&d->results_work);
}

bool results_incomplete(const struct daemon *d) {
        return d->results_rest != NULL;
}

bool results_wait(struct conn *c, const char *line, size_t len) {
        struct waiter *q = malloc(sizeof(*q) + len);
        if (!q)
                return false;
        q->c = c;
        q->len = len;
        memcpy(q->line, line, len);
        list_add_tail(&c->d->results_waiters, &q->link);
        conn_busy(c);
        return true;
}

void results_rest_abandon(struct daemon *d) {
        d->results_abandoned = true;
}

void results_rest_done(struct daemon *d) {
        result_rest_free(d->results_rest);
        d->results_rest = NULL;
        wake_waiters(d);
}
