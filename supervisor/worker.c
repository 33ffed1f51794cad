/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "worker.h"

#define WORKERS 2

static pthread_t threads[WORKERS];
static size_t n_threads;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct work *todo_head, *todo_tail, *finished;
static bool quit;
static int efd = -1;

/* Workers run at a lower priority than the event loop: copying, deleting
 * and unpacking for one tenant must not take the CPU the loop needs to
 * answer the others (bench/fairness.sh). */
#define WORKER_NICE 10

static void *worker(void *arg) {
        (void) arg;
        (void) setpriority(PRIO_PROCESS, (id_t) gettid(), WORKER_NICE);
        pthread_mutex_lock(&mu);
        for (;;) {
                while (!todo_head && !quit)
                        pthread_cond_wait(&cv, &mu);
                if (!todo_head)
                        break;
                struct work *w = todo_head;
                todo_head = w->next;
                if (!todo_head)
                        todo_tail = NULL;
                pthread_mutex_unlock(&mu);
                w->run(w);
                pthread_mutex_lock(&mu);
                w->next = finished;
                finished = w;
                uint64_t one = 1;
                while (write(efd, &one, sizeof(one)) < 0 && errno == EINTR)
                        ;
        }
        pthread_mutex_unlock(&mu);
        return NULL;
}

int worker_start(void) {
        pthread_attr_t attr;
        efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd < 0)
                return -errno;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 512 * 1024);
        for (n_threads = 0; n_threads < WORKERS; n_threads++) {
                int r = pthread_create(&threads[n_threads], &attr, worker, NULL);
                if (r != 0) {
                        pthread_attr_destroy(&attr);
                        if (n_threads > 0)
                                break; /* fewer threads only cost speed */
                        close(efd);
                        efd = -1;
                        return -r;
                }
        }
        pthread_attr_destroy(&attr);
        return efd;
}

void worker_submit(struct work *w) {
        pthread_mutex_lock(&mu);
        w->next = NULL;
        if (todo_tail)
                todo_tail->next = w;
        else
                todo_head = w;
        todo_tail = w;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
}

/* Call done() of the finished items, oldest first. */
static void complete(void) {
        pthread_mutex_lock(&mu);
        struct work *list = finished;
        finished = NULL;
        pthread_mutex_unlock(&mu);
        struct work *rev = NULL;
        while (list) {
                struct work *next = list->next;
                list->next = rev;
                rev = list;
                list = next;
        }
        while (rev) {
                struct work *next = rev->next;
                rev->done(rev);
                rev = next;
        }
}

void worker_complete(void) {
        uint64_t n;
        (void) !read(efd, &n, sizeof(n));
        complete();
}

void worker_stop(void) {
        if (efd < 0)
                return;
        pthread_mutex_lock(&mu);
        quit = true;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        for (size_t i = 0; i < n_threads; i++)
                pthread_join(threads[i], NULL);
        n_threads = 0;
        /* What the threads finished is reported here, on the caller's
         * thread; what that submits runs here too, until nothing is left. */
        while (finished || todo_head) {
                while (todo_head) {
                        struct work *w = todo_head;
                        todo_head = w->next;
                        if (!todo_head)
                                todo_tail = NULL;
                        w->run(w);
                        w->next = finished;
                        finished = w;
                }
                complete();
        }
        quit = false;
        close(efd);
        efd = -1;
}
