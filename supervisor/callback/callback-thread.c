/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "callback-thread.h"
#include "outbox.h"
#include "util.h"

struct cb_thread {
        pthread_t th;
        pthread_mutex_t mu;
        struct cb_task *todo, *done, *done_tail;
        struct cb_task *active;   /* posts in the multi handle (thread only) */
        bool quit;
        int efd;
        int outbox_fd, dead_fd;
        CURLM *multi;
};

static void finish(struct cb_thread *t, struct cb_task *task) {
        task->next = NULL;
        pthread_mutex_lock(&t->mu);
        if (t->done_tail)
                t->done_tail->next = task;
        else
                t->done = task;
        t->done_tail = task;
        pthread_mutex_unlock(&t->mu);
        uint64_t one = 1;
        while (write(t->efd, &one, sizeof(one)) < 0 && errno == EINTR)
                ;
}

static int sync_dir(int fd) {
        return fsync(fd) < 0 ? -errno : 0;
}

static void file_op(struct cb_thread *t, struct cb_task *k) {
        int r = 0;
        switch (k->op) {
        case CB_OP_DEAD:
                if (renameat(t->outbox_fd, k->name, t->dead_fd, k->name) < 0)
                        r = -errno;
                else
                        r = sync_dir(t->dead_fd);
                break;
        case CB_OP_DROP:
                if (renameat(k->from_dead ? t->dead_fd : t->outbox_fd, k->name, t->dead_fd, k->dropped) < 0)
                        r = -errno;
                else
                        r = sync_dir(t->dead_fd);
                break;
        case CB_OP_RESTORE: {
                char tmp[48];
                snprintf(tmp, sizeof(tmp), "%s.tmp", k->name);
                int fd = openat(t->outbox_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0) {
                        r = -errno;
                        break;
                }
                r = write_all(fd, k->text, k->text_len);
                if (r == 0 && fsync(fd) < 0)
                        r = -errno;
                close(fd);
                if (r == 0 && renameat(t->outbox_fd, tmp, t->outbox_fd, k->name) < 0)
                        r = -errno;
                if (r < 0) {
                        unlinkat(t->outbox_fd, tmp, 0);
                        break;
                }
                r = sync_dir(t->outbox_fd);
                if (r == 0 && unlinkat(t->dead_fd, k->from_dead ? k->name : k->dropped, 0) < 0 && errno != ENOENT)
                        r = -errno;
                break;
        }
        case CB_OP_POST:
        case CB_OP_PROGRESS:
        case CB_OP_LOAD:
                break;
        }
        k->file_err = r;
}

/* Posts that ended: their answer, and a delivered entry's file removed
 * (not synced: a crash that brings it back means one more delivery,
 * which at-least-once allows). */
static void reap(struct cb_thread *t) {
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(t->multi, &left))) {
                if (m->msg != CURLMSG_DONE)
                        continue;
                struct cb_task *k = NULL;
                curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **) &k);
                k->curl_rc = (int) m->data.result;
                if (k->curl_rc == CURLE_OK)
                        curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &k->status);
                curl_multi_remove_handle(t->multi, m->easy_handle);
                for (struct cb_task **p = &t->active; *p; p = &(*p)->next)
                        if (*p == k) {
                                *p = k->next;
                                break;
                        }
                if (k->op == CB_OP_POST && k->curl_rc == CURLE_OK && outbox_verdict(k->status) == OUTBOX_DELIVERED &&
                    unlinkat(t->outbox_fd, k->name, 0) < 0 && errno != ENOENT)
                        k->file_err = -errno;
                finish(t, k);
        }
}

static void *run(void *arg) {
        struct cb_thread *t = arg;
        for (;;) {
                pthread_mutex_lock(&t->mu);
                struct cb_task *todo = t->todo;
                t->todo = NULL;
                bool quit = t->quit;
                pthread_mutex_unlock(&t->mu);
                if (quit)
                        break;
                /* in submission order */
                struct cb_task *rev = NULL;
                while (todo) {
                        struct cb_task *n = todo->next;
                        todo->next = rev;
                        rev = todo;
                        todo = n;
                }
                while (rev) {
                        struct cb_task *k = rev;
                        rev = rev->next;
                        if (k->op == CB_OP_LOAD) {
                                k->work(k);
                                finish(t, k);
                                continue;
                        }
                        if (k->op != CB_OP_POST && k->op != CB_OP_PROGRESS) {
                                file_op(t, k);
                                finish(t, k);
                                continue;
                        }
                        k->next = t->active;
                        t->active = k;
                        curl_multi_add_handle(t->multi, k->h);
                }
                int running;
                curl_multi_perform(t->multi, &running);
                reap(t);
                curl_multi_poll(t->multi, NULL, 0, 1000, NULL);
        }
        return NULL;
}

int cb_thread_start(int outbox_fd, int dead_fd, struct cb_thread **ret) {
        struct cb_thread *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->outbox_fd = outbox_fd;
        t->dead_fd = dead_fd;
        pthread_mutex_init(&t->mu, NULL);
        t->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        t->multi = curl_multi_init();
        if (t->efd < 0 || !t->multi) {
                int r = t->efd < 0 ? -errno : -ENOMEM;
                if (t->efd >= 0)
                        close(t->efd);
                if (t->multi)
                        curl_multi_cleanup(t->multi);
                free(t);
                return r;
        }
        /* Connections to a receiver are reused across deliveries; progress
         * posts take at most half of them (callback-progress.c). */
        curl_multi_setopt(t->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 32L);
        int r = -pthread_create(&t->th, NULL, run, t);
        if (r < 0) {
                close(t->efd);
                curl_multi_cleanup(t->multi);
                free(t);
                return r;
        }
        *ret = t;
        return t->efd;
}

void cb_thread_submit(struct cb_thread *t, struct cb_task *task) {
        pthread_mutex_lock(&t->mu);
        task->next = t->todo;
        t->todo = task;
        pthread_mutex_unlock(&t->mu);
        curl_multi_wakeup(t->multi);
}

struct cb_task *cb_thread_take_done(struct cb_thread *t) {
        uint64_t n;
        while (read(t->efd, &n, sizeof(n)) < 0 && errno == EINTR)
                ;
        pthread_mutex_lock(&t->mu);
        struct cb_task *d = t->done;
        t->done = t->done_tail = NULL;
        pthread_mutex_unlock(&t->mu);
        return d;
}

static void drop_list(struct cb_task *k, void (*drop)(struct cb_task *)) {
        while (k) {
                struct cb_task *n = k->next;
                drop(k);
                k = n;
        }
}

void cb_thread_stop(struct cb_thread *t, void (*drop)(struct cb_task *)) {
        if (!t)
                return;
        pthread_mutex_lock(&t->mu);
        t->quit = true;
        pthread_mutex_unlock(&t->mu);
        curl_multi_wakeup(t->multi);
        pthread_join(t->th, NULL);
        for (struct cb_task *k = t->active; k; k = k->next)
                curl_multi_remove_handle(t->multi, k->h);
        drop_list(t->active, drop);
        drop_list(t->todo, drop);
        drop_list(t->done, drop);
        curl_multi_cleanup(t->multi);
        close(t->efd);
        pthread_mutex_destroy(&t->mu);
        free(t);
}
