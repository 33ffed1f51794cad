/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's metrics: counters kept on the event loop as jobs end, and
 * their exposition in the Prometheus text format (version 0.0.4, which
 * `promtool check metrics` checks), for the metrics operation and the
 * optional HTTP listener (metrics-http.c). Counters count since the
 * daemon started. Pure: the unit tests drive it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "job.h"

#define METRICS_MAX_STEPS 32      /* set-up steps told apart; more are "other" */
#define METRICS_STARTUP_BUCKETS 13
#define METRICS_RUN_BUCKETS 13

struct metrics_tenant {
        char *name;
        uint64_t ended[OUTCOME_ERROR + 1]; /* by enum job_outcome */
        uint64_t output[2];                /* bytes its jobs wrote to stdout, stderr */
};

struct metrics_hist {
        uint64_t bucket[METRICS_RUN_BUCKETS + 1]; /* the last is +Inf */
        uint64_t count;
        double sum;
};

struct metrics {
        struct metrics_tenant *tenants;
        size_t n_tenants;
        struct metrics_hist startup, run;
        struct {
                char name[32];
                uint64_t n;
        } steps[METRICS_MAX_STEPS + 1]; /* the last is "other" */
        size_t n_steps;
        uint64_t bundle_jobs[2];        /* bundle jobs whose tree came from the cache, from the registry */
        uint64_t bundle_stale;          /* of those from the cache: the registry could not be asked */
};

/* What the exposition reads from the daemon when it is asked. */
struct metrics_gauges {
        uint64_t queued, running, connections;
        uint64_t cache_bytes, cache_entries;
        bool callbacks;                 /* the members below were filled */
        uint64_t cb_backlog, cb_in_memory, cb_dead;
        uint64_t cb_delivered, cb_attempt_failures, cb_dead_lettered;
};

/* What one finished job adds. */
struct metrics_job {
        const char *tenant;
        enum job_outcome outcome;
        int64_t startup_us;             /* accepted to launcher started; < 0: it never started */
        int64_t run_us;                 /* started to exited; < 0: never started */
        uint64_t output[2];
        const char *setup_step;         /* the launcher's failed set-up step, or NULL */
        int bundle_source;              /* -1: no bundle; 0: from the cache; 1: downloaded */
        bool bundle_stale;
};

void metrics_done(struct metrics *m);
/* Returns 0 or -ENOMEM (the job is then not counted). */
int metrics_job_end(struct metrics *m, const struct metrics_job *j);

/* The exposition, NUL-terminated (free() it). With tenant non-NULL, the
 * series labelled with a tenant are those of that tenant only. */
int metrics_render(const struct metrics *m, const struct metrics_gauges *g, const char *tenant, char **ret, size_t *ret_len);

/* "HOST:PORT" with a numeric IPv4 address, or "[IPV6]:PORT". Returns 0,
 * or -EINVAL. */
int metrics_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);
