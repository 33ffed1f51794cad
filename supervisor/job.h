/* SPDX-License-Identifier: Apache-2.0 */
/* Jobs: the state machine every job follows, and the scheduler that picks
 * which queued job runs next under the global and per-tenant concurrency
 * limits. Kept free of I/O so the unit tests drive it directly; the daemon
 * (server.c) performs the side effects each transition calls for.
 *
 *   queued ──start──► running ──exit──► done
 *     │                 │  ▲
 *     │           timeout/cancel
 *     │                 ▼  │
 *     │              stopping ──exit / kill──► done
 *     └──cancel / spawn failure / shutdown──► done
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "tenant.h"
#include "util.h"

enum job_state {
        JOB_QUEUED,
        JOB_RUNNING,
        JOB_STOPPING, /* SIGTERM sent (timeout or cancel); kill after the grace period */
        JOB_DONE,     /* result record written */
};

/* How a finished job ended (the "state" of its result record). */
enum job_outcome {
        OUTCOME_NONE,
        OUTCOME_SUCCEEDED,
        OUTCOME_FAILED,
        OUTCOME_TIMED_OUT,
        OUTCOME_KILLED,
        OUTCOME_OOM,
        OUTCOME_REJECTED,
        OUTCOME_ERROR,
};

enum job_event {
        JEV_START,      /* the launcher was spawned */
        JEV_SPAWN_FAIL, /* it could not be */
        JEV_TIMEOUT,    /* the wall-clock timer fired */
        JEV_CANCEL,     /* a client asked */
        JEV_EXIT,       /* the launcher exited (pidfd) */
        JEV_SHUTDOWN,   /* the daemon is stopping */
};

struct job_watch;

struct job {
        char id[24];
        struct tenant *tenant;
        uid_t caller_uid;
        enum job_state state;
        enum job_outcome outcome;
        bool timed_out;
        bool cancelled;
        struct list queue_link;  /* in the scheduler's queue while queued */
        struct list all_link;    /* in the daemon's list of active jobs */

        /* the request, validated and with the policy applied */
        struct request req;
        struct policy_decision pol;

        /* times, CLOCK_REALTIME ms */
        uint64_t created_ms, started_ms, ended_ms;
        uint64_t started_mono_ms;

        /* runtime state, managed by server.c */
        pid_t pid;
        int pidfd;
        int out_fd[2];           /* read ends of stdout/stderr pipes, -1 when closed */
        int file_fd[2];          /* capture files */
        uint64_t out_bytes[2];   /* bytes seen per stream */
        uint64_t kept_bytes[2];  /* bytes written to the files */
        bool truncated[2];
        int status_fd;           /* read end of --json-status-fd */
        char *status_buf;
        size_t status_len;
        void *status_end;        /* json_t *: the launcher's end record */
        int timer_fd;            /* wall clock / grace timer */
        int cgroup_fd;           /* the job's cgroup directory, -1 without */
        bool exited;
        int wait_status;         /* raw waitid si_code/si_status folded as for waitpid */
        int exit_code;           /* launcher exit status or -1 */
        int term_signal;         /* or 0 */
        char *error_code;
        char *error_message;
        struct list watches;     /* struct job_watch: waiters and followers */
};

const char *job_state_name(enum job_state s);
const char *job_outcome_name(enum job_outcome o);

/* Apply ev to j. Returns 0 with j->state (and outcome flags) updated, or
 * -EINVAL when ev is not allowed in j's state (the caller ignores it). */
int job_transition(struct job *j, enum job_event ev);

/* The outcome of a job whose launcher exited with status `code` (the
 * launcher's conventions: 124 timeout, 125 setup failure, 128+N signal). */
enum job_outcome job_outcome_from_exit(const struct job *j, int code, int sig);

struct scheduler {
        struct list queue;       /* struct job.queue_link, FIFO */
        unsigned n_queued;
        unsigned n_running;      /* running or stopping */
        uint64_t max_running;
        uint64_t max_queued;
};

void sched_init(struct scheduler *s, uint64_t max_running, uint64_t max_queued);

/* Admit j to the queue: 0, or -EAGAIN when the global queue or the
 * tenant's is full (E_QUEUE_FULL). */
int sched_enqueue(struct scheduler *s, struct job *j);

/* The next queued job that may start now (FIFO, skipping tenants at their
 * max_jobs), removed from the queue and counted as running; NULL if none. */
struct job *sched_next(struct scheduler *s);

/* Remove a queued job (cancelled before it started). */
void sched_remove_queued(struct scheduler *s, struct job *j);

/* A running job finished: free its slot. */
void sched_finished(struct scheduler *s, struct job *j);
