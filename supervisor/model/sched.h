/* SPDX-License-Identifier: Apache-2.0 */
/* Queue and admission: which queued job runs next under the global and
 * per-tenant concurrency limits, and whether a new one may queue. The
 * scheduler owns its counters (global and per tenant) and is the only
 * admission check. Pure, unit-tested. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "error.h"
#include "job.h"

struct sched_count {
        unsigned running; /* running or stopping */
        unsigned queued;
};

/* Something a job may need besides a place to run (a restricted job's
 * block of the network pool). take() is asked last, once every limit lets
 * the job start: true gives the job what it needs (until its end, the
 * gate's owner's to track) or says it needs nothing; false leaves it
 * queued in its place, and later jobs may pass it. */
struct sched_gate {
        bool (*take)(void *arg, struct job *j);
        void *arg;
};

struct scheduler {
        struct list queue;            /* struct job.queue_link, FIFO */
        struct sched_count all;
        struct sched_count *tenant;   /* one per tenant slot (struct tenant.slot) */
        size_t n_tenant;
        uint64_t max_running;
        uint64_t max_queued;
        struct sched_gate gate;       /* none: take is NULL */
};

int sched_init(struct scheduler *s, const struct config *cfg);
void sched_done(struct scheduler *s);
/* Counters for n_slots tenant slots (after a reload added some). */
int sched_grow(struct scheduler *s, size_t n_slots);

/* Admit j to the queue: 0, or -EAGAIN with err saying whose queue is full
 * (E_QUEUE_FULL). */
int sched_enqueue(struct scheduler *s, struct job *j, struct sbx_error *err);

/* Queue a job admitted before a restart, whatever the queue's length. */
void sched_requeue(struct scheduler *s, struct job *j);

/* The next queued job that may start now (FIFO, skipping tenants at their
 * max_jobs, jobs still fetching their bundle and jobs the gate holds back),
 * removed from the queue and counted as running; NULL if none. */
struct job *sched_next(struct scheduler *s);

/* Remove a queued job (cancelled, or its preparation failed). */
void sched_remove_queued(struct scheduler *s, struct job *j);

/* A job that kept running across a restart (a session's box) is counted
 * as running again. */
void sched_adopt(struct scheduler *s, const struct job *j);

/* A running job finished: free its slot. */
void sched_finished(struct scheduler *s, const struct job *j);

/* The counters of t's jobs. */
const struct sched_count *sched_tenant(const struct scheduler *s, const struct tenant *t);
