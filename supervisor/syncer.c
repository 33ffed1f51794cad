/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "syncer.h"
#include "util.h"

static pthread_t thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int efd = -1;
static struct sync_request *req;
static bool has_request, quit, started;
static int result;

static void *run(void *arg) {
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
                 * leaves either no record or a complete one. */
                int r = 0;
                for (size_t i = 0; i < q->n_files; i++) {
                        struct sync_file *f = &q->files[i];
                        if (f->data) {
                                f->fd = -1;
                                f->err = write_file_tmp(f->dirfd, f->name, f->data, f->len, 0600, &f->fd);
                                if (f->err < 0)
                                        continue;
                        }
                        f->err = f->fd >= 0 && fsync(f->fd) < 0 ? -errno : 0;
                }
                for (size_t i = 0; i < q->n_files; i++) {
                        struct sync_file *f = &q->files[i];
                        if (!f->tmp)
                                continue;
                        if (f->err == 0 && renameat(f->dirfd, f->tmp, f->dirfd, f->name) < 0)
                                f->err = -errno;
                        if (f->err < 0)
                                unlinkat(f->dirfd, f->tmp, 0);
                        if (f->data && f->fd >= 0) {
                                close(f->fd);
                                f->fd = -1;
                        }
                }
                if (q->journal_fd >= 0 && fdatasync(q->journal_fd) < 0)
                        r = -errno;
                if (q->audit_fd >= 0 && fdatasync(q->audit_fd) < 0 && r == 0)
                        r = -errno;
                if (q->dir_fd >= 0 && fsync(q->dir_fd) < 0 && r == 0)
                        r = -errno;
                for (size_t i = 0; i < q->n_files; i++)
                        if (q->files[i].remove)
                                q->files[i].err = rm_rf_at(q->files[i].dirfd, q->files[i].name);

                pthread_mutex_lock(&mu);
                result = r;
                uint64_t one = 1;
                while (write(efd, &one, sizeof(one)) < 0 && errno == EINTR)
                        ;
        }
        pthread_mutex_unlock(&mu);
        return NULL;
}

int syncer_start(void) {
        efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd < 0)
                return -errno;
        int r = pthread_create(&thread, NULL, run, NULL);
        if (r != 0) {
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
        started = false;
        if (efd >= 0)
                close(efd);
        efd = -1;
}
