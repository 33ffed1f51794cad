/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched.h"

int sched_init(struct scheduler *s, const struct config *cfg) {
        list_init(&s->queue);
        s->n_tenant = 0;
        s->all = (struct sched_count) { 0 };
        s->gate = (struct sched_gate) { 0 }; /* none until the daemon sets one */
        s->max_running = cfg->max_jobs;
        s->max_queued = cfg->max_queue;
        s->tenant = NULL;
        return sched_grow(s, cfg->n_slots);
}

int sched_grow(struct scheduler *s, size_t n_slots) {
        if (n_slots <= s->n_tenant)
                return 0;
        struct sched_count *n = realloc(s->tenant, n_slots * sizeof(*n));
        if (!n)
                return -ENOMEM;
        memset(n + s->n_tenant, 0, (n_slots - s->n_tenant) * sizeof(*n));
        s->tenant = n;
        s->n_tenant = n_slots;
        return 0;
}

void sched_done(struct scheduler *s) {
        free(s->tenant);
        s->tenant = NULL;
}

static struct sched_count *count_of(const struct scheduler *s, const struct tenant *t) {
        /* a slot past the table (none should be) counts as the anonymous one's */
        return &s->tenant[t->slot < s->n_tenant ? t->slot : 0];
}

const struct sched_count *sched_tenant(const struct scheduler *s, const struct tenant *t) {
        return count_of(s, t);
}

int sched_enqueue(struct scheduler *s, struct job *j, struct sbx_error *err) {
        struct sched_count *tc = count_of(s, j->tenant);
        if (s->all.queued >= s->max_queued)
                return sbx_error_msg(err, EAGAIN, "the daemon's queue is full (%u waiting); try again later", s->all.queued);
        if (tc->queued >= j->tenant->max_queue)
                return sbx_error_msg(err, EAGAIN, "the tenant's queue is full (%u waiting); try again later", tc->queued);
        list_add_tail(&s->queue, &j->queue_link);
        s->all.queued++;
        tc->queued++;
        return 0;
}

void sched_requeue(struct scheduler *s, struct job *j) {
        list_add_tail(&s->queue, &j->queue_link);
        s->all.queued++;
        count_of(s, j->tenant)->queued++;
}

struct job *sched_next(struct scheduler *s) {
        struct list *pos, *tmp;
        if (s->all.running >= s->max_running)
                return NULL;
        list_for_each_safe(pos, tmp, &s->queue) {
                struct job *j = list_entry(pos, struct job, queue_link);
                struct sched_count *tc = count_of(s, j->tenant);
                /* Admitted, but its bundle is still on its way. */
                if (j->state == JOB_FETCHING || tc->running >= j->tenant->max_jobs)
                        continue;
                if (s->gate.take && !s->gate.take(s->gate.arg, j))
                        continue;
                list_del(&j->queue_link);
                s->all.queued--;
                tc->queued--;
                s->all.running++;
                tc->running++;
                return j;
        }
        return NULL;
}

void sched_remove_queued(struct scheduler *s, struct job *j) {
        struct sched_count *tc = count_of(s, j->tenant);
        list_del(&j->queue_link);
        s->all.queued--;
        tc->queued--;
}

void sched_adopt(struct scheduler *s, const struct job *j) {
        s->all.running++;
        count_of(s, j->tenant)->running++;
}

void sched_finished(struct scheduler *s, const struct job *j) {
        struct sched_count *tc = count_of(s, j->tenant);
        s->all.running--;
        tc->running--;
}
