/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's one event loop: epoll over the listening socket, clients,
 * a signalfd, and per job a pidfd, output pipes, the status pipe and a
 * timerfd. No thread per job and no polling: every wakeup is an event.
 *
 * Objects that an event may free (a client, a job) are not freed while the
 * batch of events that might still mention them is being dispatched: they
 * are marked dead and freed by loop_defer_free() after the batch. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct source;
typedef void (*source_cb)(struct source *s, uint32_t events);

struct source {
        int fd;
        source_cb cb;
        bool dead;
};

int loop_init(void);
/* Runs what is still deferred, then closes the loop. */
void loop_done(void);
int loop_add(struct source *s, int fd, uint32_t events, source_cb cb);
int loop_mod(struct source *s, uint32_t events);
void loop_del(struct source *s);
/* Run until loop_quit(); returns 0 or -errno. */
int loop_run(void);
void loop_quit(void);
/* Free ptr with fn after the current batch of events. */
void loop_defer_free(void (*fn)(void *), void *ptr);
/* Called once after every batch (flushes, scheduling). */
void loop_set_idle(void (*fn)(void *arg), void *arg);
