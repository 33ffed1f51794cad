/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "syncer.h"
#include "workspace.h"
#include "util.h"

/* The syncer thread plus this many helpers share each phase of a batch.
 * Every fsync ends in a cache flush of the device; flushes asked for while
 * one is in flight are served together by the block layer, so K files
 * synced side by side cost about two flushes instead of K. */
#define SYNC_HELPERS 3

static pthread_t thread, helpers[SYNC_HELPERS];
static size_t n_helpers;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int efd = -1;
static struct sync_request *req;
static bool has_request, quit, started;
static int result;

/* One phase: items 0..n-1 of work(), taken by whoever is free. */
static pthread_mutex_t pmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pgo = PTHREAD_COND_INITIALIZER, pdone = PTHREAD_COND_INITIALIZER;
static void (*work)(struct sync_request *q, size_t i);
static struct sync_request *wq;
static size_t w_n, w_next, w_done;
static unsigned w_gen;
static bool w_quit;

/* Called with pmu held; returns with it held. */
static void take_items(void) {
        while (w_next < w_n) {
                size_t i = w_next++;
                pthread_mutex_unlock(&pmu);
                work(wq, i);
                pthread_mutex_lock(&pmu);
                if (++w_done == w_n)
                        pthread_cond_signal(&pdone);
        }
}

static void *helper(void *arg) {
        unsigned seen = 0;
        (void) arg;
        pthread_mutex_lock(&pmu);
        for (;;) {
                while (w_gen == seen && !w_quit)
                        pthread_cond_wait(&pgo, &pmu);
                if (w_quit)
                        break;
                seen = w_gen;
                take_items();
        }
        pthread_mutex_unlock(&pmu);
        return NULL;
}

static void run_phase(struct sync_request *q, size_t n, void (*fn)(struct sync_request *, size_t)) {
        if (n == 0)
                return;
        pthread_mutex_lock(&pmu);
        work = fn;
        wq = q;
        w_n = n;
        w_next = w_done = 0;
        if (n > 1 && n_helpers > 0) {
                w_gen++;
                pthread_cond_broadcast(&pgo);
        }
        take_items();
        while (w_done < w_n)
                pthread_cond_wait(&pdone, &pmu);
        w_n = 0;
        pthread_mutex_unlock(&pmu);
}

/* Phase 1: every file's data (a record first written to its tmp name),
 * the journal and the audit log, side by side. */
static void sync_one(struct sync_request *q, size_t i) {
        if (i == q->n_files) {
                q->journal_err = q->journal_fd >= 0 && fdatasync(q->journal_fd) < 0 ? -errno : 0;
                return;
        }
        if (i == q->n_files + 1) {
                q->audit_err = q->audit_fd >= 0 && fdatasync(q->audit_fd) < 0 ? -errno : 0;
                return;
        }
        struct sync_file *f = &q->files[i];
        if (f->remove)
                return;
        if (f->data) {
                f->fd = -1;
                f->err = write_file_tmp(f->dirfd, f->name, f->data, f->len, 0600, &f->fd);
                if (f->err < 0)
                        return;
        }
        f->err = f->fd >= 0 && fsync(f->fd) < 0 ? -errno : 0;
}

/* Phase 3: finished jobs' workspaces. */
static void remove_one(struct sync_request *q, size_t i) {
        struct sync_file *f = &q->files[i];
        if (f->remove)
                f->err = f->path ? workspace_remove(f->dirfd, f->path, f->name) : rm_rf_at(f->dirfd, f->name);
}

/* Rename the early files or the others; a file whose early file failed
 * is not renamed (and counts as failed). */
static void rename_all(struct sync_request *q, bool early) {
        for (size_t i = 0; i < q->n_files; i++) {
                struct sync_file *f = &q->files[i];
                if (!f->tmp || f->early != early)
                        continue;
                if (f->err == 0 && f->after && (f->after->err < 0 || q->early_dir_err < 0))
                        f->err = f->after->err ?: q->early_dir_err;
                if (f->err == 0 && renameat(f->dirfd, f->tmp, f->dirfd, f->name) < 0)
                        f->err = -errno;
                if (f->err < 0)
                        unlinkat(f->dirfd, f->tmp, 0);
                if (f->data && f->fd >= 0) {
                        close(f->fd);
                        f->fd = -1;
                }
        }
}

static void *run(void *arg) {
        (void) arg;
        pthread_mutex_lock(&mu);
        for (;;) {
                while (!has_request && !quit)
                        pthread_cond_wait(&cv, &mu);
                if (quit)
                        break;
                struct sync_request *q = req;
                has_request = false;
                pthread_mutex_unlock(&mu);

                /* Data first, then the names that point at it, then the
                 * directory that holds the names: a crash at any point
                 * leaves either no record or a complete one. The journal
                 * and the audit log hold no names, so they sync with the
                 * data. */
                run_phase(q, q->n_files + 2, sync_one);
                int r = q->journal_err ?: q->audit_err;
                /* Early names (a callback's outbox entry) are durable
                 * before the names that depend on them (its result
                 * record) appear: a record never exists without its
                 * delivery. */
                rename_all(q, true);
                q->early_dir_err = q->early_dir_fd >= 0 && fsync(q->early_dir_fd) < 0 ? -errno : 0;
                rename_all(q, false);
                q->dir_err = q->dir_fd >= 0 && fsync(q->dir_fd) < 0 ? -errno : 0;
                if (r == 0)
                        r = q->dir_err ?: q->early_dir_err;
                run_phase(q, q->n_files, remove_one);

                pthread_mutex_lock(&mu);
                result = r;
                uint64_t one = 1;
                while (write(efd, &one, sizeof(one)) < 0 && errno == EINTR)
                        ;
        }
        pthread_mutex_unlock(&mu);
        return NULL;
}

static void stop_helpers(void) {
        pthread_mutex_lock(&pmu);
        w_quit = true;
        pthread_cond_broadcast(&pgo);
        pthread_mutex_unlock(&pmu);
        for (size_t i = 0; i < n_helpers; i++)
                pthread_join(helpers[i], NULL);
        n_helpers = 0;
        w_quit = false;
}

int syncer_start(void) {
        pthread_attr_t attr;
        efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd < 0)
                return -errno;
        /* The helpers only call fsync and walk directories one level at a
         * time: a small stack each. Too few helpers only costs speed. */
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        for (n_helpers = 0; n_helpers < SYNC_HELPERS; n_helpers++)
                if (pthread_create(&helpers[n_helpers], &attr, helper, NULL) != 0)
                        break;
        pthread_attr_destroy(&attr);
        int r = pthread_create(&thread, NULL, run, NULL);
        if (r != 0) {
                stop_helpers();
                close(efd);
                efd = -1;
                return -r;
        }
        started = true;
        return efd;
}

void syncer_submit(struct sync_request *q) {
        pthread_mutex_lock(&mu);
        req = q;
        has_request = true;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
}

int syncer_complete(void) {
        uint64_t n;
        (void) !read(efd, &n, sizeof(n));
        pthread_mutex_lock(&mu);
        int r = result;
        result = 0;
        pthread_mutex_unlock(&mu);
        return r;
}

void syncer_stop(void) {
        if (!started)
                return;
        pthread_mutex_lock(&mu);
        quit = true;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
        pthread_join(thread, NULL);
        stop_helpers();
        started = false;
        if (efd >= 0)
                close(efd);
        efd = -1;
}
