/* SPDX-License-Identifier: Apache-2.0 */
/* One job's life as a pure state machine: the only code that sets a job's
 * state, its outcome and its error. The modules that act (runner, capture,
 * dispatch, recover) report events and facts here and do what the new state
 * calls for; the unit tests drive it directly.
 *
 *   queued ──prepare──► starting ──start──► running ──exit──► done
 *     │                   │                    │  ▲
 *     │                   │     timeout/cancel/shutdown/cpu time
 *     │                   │                    ▼  │
 *     │                   │                 stopping ──exit──► done
 *     │                   └──spawn failure, or abandon after a cancel or
 *     │                      shutdown while it was being prepared──► done
 *     └──cancel / shutdown / rejected──► done
 *
 * and, after a restart, running ──retry──► queued (the next attempt), or
 * running ──restarted──► done.
 * A bundle job whose bundle is not at hand waits for it, counted in the
 * queue but not started:
 *
 *   queued ──fetch──► fetching ──fetched──► queued
 *                        └──cancel / shutdown / bundle failure──► done
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "index.h"
#include "policy.h"
#include "proto.h"
#include "util.h"

enum job_state {
        JOB_QUEUED,
        JOB_STARTING, /* its workspace and launcher are being prepared */
        JOB_RUNNING,
        JOB_STOPPING, /* SIGTERM sent (timeout, cancel, shutdown); killed after the grace period */
        JOB_DONE,     /* ended; its record is being written or is written */
        JOB_FETCHING, /* queued, waiting for its bundle (index, download, unpacking) or its packages' install */
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
        JEV_PREPARE,    /* the scheduler gave it a slot: its workspace is being made */
        JEV_START,      /* the launcher was spawned */
        JEV_SPAWN_FAIL, /* it could not be (detail: why) */
        JEV_TIMEOUT,    /* the wall-clock timer fired */
        JEV_CANCEL,     /* a client asked */
        JEV_SHUTDOWN,   /* the daemon is stopping */
        JEV_RESTARTED,  /* the daemon died while the job ran (recovery) */
        JEV_REJECTED,   /* re-checked after a restart and refused (detail: why) */
        JEV_RETRY,      /* interrupted by a restart, run again as the next attempt */
        JEV_ABANDON,    /* cancelled or shut down while starting: it never runs */
        JEV_CPU_TIME,   /* its cgroup used its whole CPU time (detail: how much) */
        JEV_FETCH,      /* its bundle is not at hand: wait for it */
        JEV_FETCHED,    /* its bundle is ready and granted: it may start */
};

/* What a bundle job runs: the reference asked for and, once resolved, what
 * it resolved to, where it came from and what the resolution cost. */
struct job_bundle {
        bool set;                  /* the job runs a bundle */
        struct bundle_ref ref;     /* as asked */
        const char *registry;      /* the tenant's registry's name (the configuration's) */
        char version[SEMVER_MAX + 1]; /* resolved; "" until then */
        char sha256[SHA256_HEX + 1];
        bool from_cache;           /* the tree was in the cache: nothing was downloaded for it */
        bool stale;                /* run from the cache because the registry could not be asked */
        char *stale_why;           /* then: the registry's failure */
        uint64_t serial;           /* of the index it was resolved in; 0 when stale */
        uint64_t resolve_us, download_us, verify_us, extract_us;
        char *tree;                /* the unpacked tree on the host, while the job holds it */
        char **command;            /* the manifest's command, NULL-terminated */
        size_t n_command;
        unsigned ro_paths;         /* MANIFEST_PATH_BIT()s granted */
};

struct job {
        char id[24];
        const struct tenant *tenant;
        uid_t caller_uid;
        uid_t job_uid;           /* what it runs as: its own uid from the pool, or the tenant's */
        gid_t job_gid;
        enum job_state state;
        enum job_outcome outcome;
        bool timed_out;
        bool cancelled;
        bool abandon;            /* starting, and it must not run (cancel or shutdown) */
        unsigned attempt;        /* 1, or more when re-run after a restart */
        struct list queue_link;  /* in the scheduler's queue while queued */

        /* the request, validated, and the policy decision for it */
        struct request req;
        struct policy_decision pol;

        /* CLOCK_REALTIME milliseconds; 0: not yet */
        uint64_t created_ms, started_ms, ended_ms;

        int exit_code;           /* the command's exit status, or -1 */
        int term_signal;         /* the signal that ended it, or 0 */
        char *error_code;        /* E_*, or NULL */
        char *error_message;

        struct job_bundle bundle;
};

/* What is known when the launcher has exited. */
struct job_exit {
        int status;              /* the launcher's exit status, or -1 when a signal ended it */
        int signal;              /* that signal, or 0 */
        bool have_end;           /* the launcher wrote its end record */
        int end_exit_code;       /* from the end record */
        int end_signal;
        const char *setup_step;  /* the launcher's set-up failure, or NULL */
        const char *setup_message;
        const char *spawn_error; /* the daemon could not exec the launcher, or NULL */
        bool oom_killed;         /* the job's memory cgroup counted OOM kills */
        bool memory_rlimit;      /* its memory limit was an rlimit (RLIMIT_AS), not a cgroup's */
        uint64_t peak_vm_kb;     /* the launcher's sampled peak address space, 0: unknown */
};

void job_init(struct job *j);
/* Frees what the job owns (the request, the error), not j itself. */
void job_release(struct job *j);

/* The job's trace id (32 hex digits, not NUL-terminated: print with
 * "%.32s"), or "-" for a job accepted before the daemon kept one. Log
 * lines about a job start with JOB_LOG, so that every one names its
 * trace. */
static inline const char *job_trace(const struct job *j) {
        return j->req.run.traceparent ? j->req.run.traceparent + 3 : "-";
}
#define JOB_LOG "job %s (trace %.32s)"
#define JOB_LOG_ARGS(j) (j)->id, job_trace(j)

const char *job_state_name(enum job_state s);
const char *job_outcome_name(enum job_outcome o);
/* Is s a state `list` can filter on: a live state, an outcome, "active"
 * or "done"? */
bool job_state_filter_valid(const char *s);
/* Does a job in live state `state` (when active) or with outcome name
 * `state` (when done) pass the filter (NULL: any)? */
bool job_state_filter_matches(const char *filter, const char *state, bool active);

/* Apply ev to j. Returns 0 with the state, outcome and error updated, or
 * -EINVAL when ev is not allowed in j's state (nothing changes). detail is
 * the message for JEV_SPAWN_FAIL and JEV_REJECTED (may be NULL elsewhere). */
int job_transition(struct job *j, enum job_event ev, const char *detail);

/* Resolving the job's bundle failed (code: E_REGISTRY_UNAVAILABLE,
 * E_BUNDLE_*, or a refusal of the manifest's capabilities: E_FORBIDDEN,
 * E_LIMIT, E_NO_PROFILE): done, state error, or rejected for a refusal.
 * -EINVAL when j is not queued or fetching. */
int job_bundle_failed(struct job *j, const char *code, const char *msg);

/* The launcher exited: the job is done, with the outcome, exit code,
 * signal and error the facts in x call for. Returns -EINVAL when j is not
 * running or stopping. */
int job_exited(struct job *j, const struct job_exit *x);

/* After a restart, the journal held the job's result record (its record
 * could not be written before): done, with the outcome, exit code, signal
 * and error that record states. -EINVAL when j is done or state is not an
 * outcome's name. */
int job_recorded(struct job *j, const char *state, int exit_code, int sig, const char *code, const char *msg);

/* Did an RLIMIT_AS memory limit most likely stop the job? It did not
 * succeed, and its processes' address space came within an eighth of the
 * limit: an allocation that would have crossed it was refused. */
bool job_memory_near(const struct job *j, uint64_t peak_vm_kb);

/* The outcome for a launcher exit status (124 timeout, 125 set-up failure,
 * 128+N signal), given what happened to the job before. */
enum job_outcome job_outcome_from_exit(const struct job *j, int code, int sig);
