/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "syncer.h"

static pthread_t thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int efd = -1;
static int req_journal = -1, req_dir = -1;
static bool has_request, quit, started;
static int result;

static void *run(void *arg) {
        pthread_mutex_lock(&mu);
        for (;;) {
                while (!has_request && !quit)
                        pthread_cond_wait(&cv, &mu);
                if (quit)
                        break;
                int j = req_journal, d = req_dir;
                has_request = false;
                pthread_mutex_unlock(&mu);

                int r = 0;
                if (j >= 0 && fdatasync(j) < 0)
                        r = -errno;
                if (d >= 0 && fsync(d) < 0 && r == 0)
                        r = -errno;

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

void syncer_submit(int journal_fd, int dir_fd) {
        pthread_mutex_lock(&mu);
        req_journal = journal_fd;
        req_dir = dir_fd;
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
