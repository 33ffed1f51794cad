/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "pool.h"

static void *thread_main(void *arg) {
        struct pool *p = arg;
        pthread_mutex_lock(&p->mu);
        for (;;) {
                while (!p->todo_head && !p->quit)
                        pthread_cond_wait(&p->cv, &p->mu);
                if (!p->todo_head)
                        break;
                struct work *w = p->todo_head;
                p->todo_head = w->next;
                if (!p->todo_head)
                        p->todo_tail = NULL;
                pthread_mutex_unlock(&p->mu);
                w->run(w);
                pthread_mutex_lock(&p->mu);
                w->next = p->finished;
                p->finished = w;
                uint64_t one = 1;
                while (write(p->efd, &one, sizeof(one)) < 0 && errno == EINTR)
                        ;
        }
        pthread_mutex_unlock(&p->mu);
        return NULL;
}

int pool_start(struct pool *p, size_t n) {
        pthread_attr_t attr;
        memset(p, 0, sizeof(*p));
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->cv, NULL);
        p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->efd < 0)
                return -errno;
        if (n > POOL_MAX_THREADS)
                n = POOL_MAX_THREADS;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 512 * 1024);
        for (p->n_threads = 0; p->n_threads < n; p->n_threads++) {
                int r = pthread_create(&p->threads[p->n_threads], &attr, thread_main, p);
                if (r != 0) {
                        pthread_attr_destroy(&attr);
                        if (p->n_threads > 0)
                                break; /* fewer threads only cost speed */
                        close(p->efd);
                        p->efd = -1;
                        return -r;
                }
        }
        pthread_attr_destroy(&attr);
        return p->efd;
}

void pool_submit(struct pool *p, struct work *w) {
        pthread_mutex_lock(&p->mu);
        w->next = NULL;
        if (p->todo_tail)
                p->todo_tail->next = w;
        else
                p->todo_head = w;
        p->todo_tail = w;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
}

/* Call done() of the finished items, oldest first. */
static void complete(struct pool *p) {
        pthread_mutex_lock(&p->mu);
        struct work *list = p->finished;
        p->finished = NULL;
        pthread_mutex_unlock(&p->mu);
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

void pool_complete(struct pool *p) {
        uint64_t n;
        (void) !read(p->efd, &n, sizeof(n));
        complete(p);
}

void pool_stop(struct pool *p) {
        if (p->efd < 0)
                return;
        pthread_mutex_lock(&p->mu);
        p->quit = true;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        for (size_t i = 0; i < p->n_threads; i++)
                pthread_join(p->threads[i], NULL);
        p->n_threads = 0;
        /* What the threads finished is reported here, on the caller's
         * thread; what that submits runs here too, until nothing is left. */
        while (p->finished || p->todo_head) {
                while (p->todo_head) {
                        struct work *w = p->todo_head;
                        p->todo_head = w->next;
                        if (!p->todo_head)
                                p->todo_tail = NULL;
                        w->run(w);
                        w->next = p->finished;
                        p->finished = w;
                }
                complete(p);
        }
        p->quit = false;
        close(p->efd);
        p->efd = -1;
}
