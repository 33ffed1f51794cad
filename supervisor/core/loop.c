/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "loop.h"

#define MAX_EVENTS 256

struct deferred {
        void (*fn)(void *);
        void *ptr;
        struct deferred *next;
};

static int epfd = -1;
static bool quit;
static struct deferred *deferred;
static void (*idle_fn)(void *);
static void *idle_arg;

int loop_init(void) {
        epfd = epoll_create1(EPOLL_CLOEXEC);
        return epfd < 0 ? -errno : 0;
}

static void run_deferred(void) {
        while (deferred) {
                struct deferred *d = deferred;
                deferred = d->next;
                d->fn(d->ptr);
                free(d);
        }
}

void loop_done(void) {
        run_deferred();
        idle_fn = NULL;
        quit = false;
        if (epfd >= 0)
                close(epfd);
        epfd = -1;
}

int loop_add(struct source *s, int fd, uint32_t events, source_cb cb) {
        struct epoll_event ev = { .events = events, .data.ptr = s };
        s->fd = fd;
        s->cb = cb;
        s->dead = false;
        return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int loop_mod(struct source *s, uint32_t events) {
        struct epoll_event ev = { .events = events, .data.ptr = s };
        return epoll_ctl(epfd, EPOLL_CTL_MOD, s->fd, &ev) < 0 ? -errno : 0;
}

void loop_del(struct source *s) {
        if (s->fd >= 0 && !s->dead)
                epoll_ctl(epfd, EPOLL_CTL_DEL, s->fd, NULL);
        s->dead = true;
}

void loop_quit(void) {
        quit = true;
}

void loop_set_idle(void (*fn)(void *), void *arg) {
        idle_fn = fn;
        idle_arg = arg;
}

void loop_defer_free(void (*fn)(void *), void *ptr) {
        struct deferred *d = malloc(sizeof(*d));
        if (!d) {
                /* Leaking is better than a use-after-free. */
                return;
        }
        d->fn = fn;
        d->ptr = ptr;
        d->next = deferred;
        deferred = d;
}

int loop_run(void) {
        struct epoll_event evs[MAX_EVENTS];
        while (!quit) {
                int n = epoll_wait(epfd, evs, MAX_EVENTS, -1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                for (int i = 0; i < n; i++) {
                        struct source *s = evs[i].data.ptr;
                        if (!s->dead)
                                s->cb(s, evs[i].events);
                }
                if (idle_fn)
                        idle_fn(idle_arg);
                run_deferred();
        }
        run_deferred();
        return 0;
}
