/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "launch-abi.h"

void job_init(struct job *j) {
        memset(j, 0, sizeof(*j));
        j->state = JOB_QUEUED;
        j->attempt = 1;
        j->exit_code = -1;
        list_init(&j->queue_link);
        request_init(&j->req);
}

void job_release(struct job *j) {
        request_free(&j->req);
        free(j->error_code);
        free(j->error_message);
        j->error_code = j->error_message = NULL;
        struct job_bundle *b = &j->bundle;
        free(b->stale_why);
        free(b->tree);
        for (size_t i = 0; i < b->n_command; i++)
                free(b->command[i]);
        free(b->command);
        b->stale_why = b->tree = NULL;
        b->command = NULL;
        b->n_command = 0;
}

static const char *const state_names[] = {
        [JOB_QUEUED] = "queued",
        [JOB_STARTING] = "starting",
        [JOB_RUNNING] = "running",
        [JOB_STOPPING] = "stopping",
        [JOB_DONE] = "done",
        [JOB_FETCHING] = "fetching",
};

static const char *const outcome_names[] = {
        [OUTCOME_NONE] = "none",         [OUTCOME_SUCCEEDED] = "succeeded", [OUTCOME_FAILED] = "failed",
        [OUTCOME_TIMED_OUT] = "timed_out", [OUTCOME_KILLED] = "killed",     [OUTCOME_OOM] = "oom",
        [OUTCOME_REJECTED] = "rejected", [OUTCOME_ERROR] = "error",
};

const char *job_state_name(enum job_state s) {
        return (size_t) s < ARRAY_SIZE(state_names) ? state_names[s] : "?";
}

const char *job_outcome_name(enum job_outcome o) {
        return (size_t) o < ARRAY_SIZE(outcome_names) ? outcome_names[o] : "?";
}

bool job_state_filter_valid(const char *s) {
        if (streq(s, "active") || streq(s, "done"))
                return true;
        for (size_t i = 0; i < ARRAY_SIZE(state_names); i++)
                if (i != JOB_DONE && streq(state_names[i], s))
                        return true;
        for (size_t i = 0; i < ARRAY_SIZE(outcome_names); i++)
                if (i != OUTCOME_NONE && streq(outcome_names[i], s))
                        return true;
        return false;
}

bool job_state_filter_matches(const char *filter, const char *state, bool active) {
        if (!filter)
                return true;
        if (streq(filter, "active"))
                return active;
        if (streq(filter, "done"))
                return !active;
        return streq(filter, state);
}

/* The first reason a job ended is the one its record gives. */
static void set_error(struct job *j, const char *code, const char *msg) {
        if (j->error_code || !code)
                return;
        j->error_code = strdup(code);
        j->error_message = strdup(msg ? msg : "");
}

static void end(struct job *j, enum job_outcome o, const char *code, const char *msg) {
        j->state = JOB_DONE;
        j->outcome = o;
        set_error(j, code, msg);
}

static int from_queued(struct job *j, enum job_event ev, const char *detail) {
        switch (ev) {
        case JEV_PREPARE:
                j->state = JOB_STARTING;
                return 0;
        case JEV_CANCEL:
                j->cancelled = true;
                end(j, OUTCOME_KILLED, E_CANCELLED, "cancelled by the client before it started");
                return 0;
        case JEV_SHUTDOWN:
                end(j, OUTCOME_ERROR, E_SHUTTING_DOWN, "supervisor stopped before the job started");
                return 0;
        case JEV_REJECTED:
                end(j, OUTCOME_REJECTED, E_FORBIDDEN, detail);
                return 0;
        case JEV_FETCH:
                if (!j->bundle.set && !run_has_deps(&j->req.run))
                        return -EINVAL;
                j->state = JOB_FETCHING;
                return 0;
        default:
                return -EINVAL;
        }
}

/* Waiting for its bundle: counted in the queue, never started from it. */
static int from_fetching(struct job *j, enum job_event ev, const char *detail) {
        switch (ev) {
        case JEV_FETCHED:
                j->state = JOB_QUEUED;
                return 0;
        case JEV_CANCEL:
                j->cancelled = true;
                end(j, OUTCOME_KILLED, E_CANCELLED,
                    j->bundle.set ? "cancelled by the client while its bundle was being fetched"
                                  : "cancelled by the client while its packages were being installed");
                return 0;
        case JEV_SHUTDOWN:
                end(j, OUTCOME_ERROR, E_SHUTTING_DOWN,
                    j->bundle.set ? "supervisor stopped while the job's bundle was being fetched"
                                  : "supervisor stopped while the job's packages were being installed");
                return 0;
        case JEV_REJECTED:
                end(j, OUTCOME_REJECTED, E_FORBIDDEN, detail);
                return 0;
        default:
                return -EINVAL;
        }
}

/* While its workspace is made, a job cannot be stopped: a cancel or a
 * shutdown marks it, and it is abandoned (never run) once ready. */
static int from_starting(struct job *j, enum job_event ev, const char *detail) {
        switch (ev) {
        case JEV_START:
                j->state = JOB_RUNNING;
                return 0;
        case JEV_SPAWN_FAIL:
                end(j, OUTCOME_ERROR, E_SPAWN, detail);
                return 0;
        case JEV_CANCEL:
                j->cancelled = j->abandon = true;
                set_error(j, E_CANCELLED, "cancelled by the client before it started");
                return 0;
        case JEV_SHUTDOWN:
                j->abandon = true;
                set_error(j, E_SHUTTING_DOWN, "supervisor stopped before the job started");
                return 0;
        case JEV_ABANDON:
                if (!j->abandon)
                        return -EINVAL;
                end(j, j->cancelled ? OUTCOME_KILLED : OUTCOME_ERROR, NULL, NULL);
                return 0;
        default:
                return -EINVAL;
        }
}

static int from_running(struct job *j, enum job_event ev, const char *detail) {
        switch (ev) {
        case JEV_TIMEOUT:
                j->timed_out = true;
                j->state = JOB_STOPPING;
                return 0;
        case JEV_CANCEL:
                j->cancelled = true;
                j->state = JOB_STOPPING;
                return 0;
        case JEV_SHUTDOWN:
                set_error(j, E_SHUTTING_DOWN, "supervisor stopped while the job ran");
                j->state = JOB_STOPPING;
                return 0;
        case JEV_CPU_TIME:
                set_error(j, E_CPU_TIME, detail);
                j->state = JOB_STOPPING;
                return 0;
        case JEV_RESTARTED:
                end(j, OUTCOME_ERROR, E_RESTARTED, detail ? detail : "supervisor restarted");
                return 0;
        case JEV_RETRY:
                j->state = JOB_QUEUED;
                j->started_ms = 0;
                j->attempt++;
                return 0;
        default:
                return -EINVAL;
        }
}

static int from_stopping(struct job *j, enum job_event ev, const char *detail) {
        switch (ev) {
        /* A second timeout is the end of the grace period; a cancel after
         * a timeout changes nothing: the first reason wins. */
        case JEV_TIMEOUT:
        case JEV_CANCEL:
                return 0;
        case JEV_SHUTDOWN:
                set_error(j, E_SHUTTING_DOWN, "supervisor stopped while the job ran");
                return 0;
        case JEV_CPU_TIME:
                set_error(j, E_CPU_TIME, detail);
                return 0;
        case JEV_RESTARTED:
                end(j, OUTCOME_ERROR, E_RESTARTED, detail ? detail : "supervisor restarted");
                return 0;
        default:
                return -EINVAL;
        }
}

int job_transition(struct job *j, enum job_event ev, const char *detail) {
        switch (j->state) {
        case JOB_QUEUED:
                return from_queued(j, ev, detail);
        case JOB_STARTING:
                return from_starting(j, ev, detail);
        case JOB_FETCHING:
                return from_fetching(j, ev, detail);
        case JOB_RUNNING:
                return from_running(j, ev, detail);
        case JOB_STOPPING:
                return from_stopping(j, ev, detail);
        case JOB_DONE:
                return -EINVAL;
        }
        return -EINVAL;
}

int job_bundle_failed(struct job *j, const char *code, const char *msg) {
        if (j->state != JOB_QUEUED && j->state != JOB_FETCHING)
                return -EINVAL;
        /* A policy's refusal is a rejection; anything else kept the job
         * from running. */
        bool refused = streq(code, E_FORBIDDEN) || streq(code, E_LIMIT) || streq(code, E_NO_PROFILE);
        end(j, refused ? OUTCOME_REJECTED : OUTCOME_ERROR, code, msg);
        return 0;
}

int job_recorded(struct job *j, const char *state, int exit_code, int sig, const char *code, const char *msg) {
        if (j->state == JOB_DONE || !state)
                return -EINVAL;
        for (size_t i = OUTCOME_SUCCEEDED; i < ARRAY_SIZE(outcome_names); i++)
                if (streq(outcome_names[i], state)) {
                        j->exit_code = exit_code;
                        j->term_signal = sig;
                        end(j, (enum job_outcome) i, code, msg);
                        return 0;
                }
        return -EINVAL;
}

bool job_memory_near(const struct job *j, uint64_t peak_vm_kb) {
        uint64_t limit = j->pol.memory;
        if (limit == PROTO_UNSET || limit == 0 || peak_vm_kb == 0)
                return false;
        if (j->outcome != OUTCOME_FAILED && j->outcome != OUTCOME_KILLED)
                return false;
        if (j->timed_out || j->cancelled)
                return false;
        return peak_vm_kb * 1024 >= limit - limit / 8;
}

enum job_outcome job_outcome_from_exit(const struct job *j, int code, int sig) {
        if (j->timed_out)
                return OUTCOME_TIMED_OUT;
        if (j->cancelled)
                return OUTCOME_KILLED;
        if (sig != 0)
                return OUTCOME_KILLED;
        if (code == 0)
                return OUTCOME_SUCCEEDED;
        if (code == SBX_EXIT_TIMEOUT)
                return OUTCOME_TIMED_OUT;
        if (code == SBX_EXIT_SETUP)
                return OUTCOME_ERROR;
        if (code > SBX_EXIT_SIGNAL_BASE && code < SBX_EXIT_SIGNAL_BASE + 65)
                return OUTCOME_KILLED;
        return OUTCOME_FAILED;
}

int job_exited(struct job *j, const struct job_exit *x) {
        char msg[SBX_ERROR_MAX + 64];
        if (j->state != JOB_RUNNING && j->state != JOB_STOPPING)
                return -EINVAL;
        j->state = JOB_DONE;

        if (x->spawn_error) {
                /* The daemon's child died before it could exec the
                 * launcher: nothing of the sandbox ever ran. */
                j->exit_code = -1;
                j->term_signal = 0;
                j->outcome = OUTCOME_ERROR;
                set_error(j, E_SPAWN, x->spawn_error);
                return 0;
        }
        int code = x->status, sig = x->signal;
        if (x->have_end) {
                /* The launcher's own account: the command's status, not
                 * the launcher's. */
                code = x->end_exit_code;
                sig = x->end_signal;
        } else if (sig > 0)
                code = -1;
        j->exit_code = code;
        j->term_signal = sig;
        j->outcome = job_outcome_from_exit(j, code, sig);

        if (x->setup_step) {
                snprintf(msg, sizeof(msg), "sbx-launch: %s: %s", x->setup_step,
                         x->setup_message ? x->setup_message : "failed");
                set_error(j, E_SETUP, msg);
        }
        /* With a memory cgroup, the kernel counts its OOM kills. */
        if (x->oom_killed && j->outcome != OUTCOME_SUCCEEDED && !j->timed_out && !j->cancelled) {
                j->outcome = OUTCOME_OOM;
                set_error(j, E_OOM, "the job ran out of memory (its cgroup's memory.max)");
        }
        /* An rlimit refuses allocations and kills nothing: the program
         * fails its own way (MemoryError, a NULL from malloc). Said as
         * what is known: how near its address space came to the limit. */
        if (x->memory_rlimit && job_memory_near(j, x->peak_vm_kb)) {
                snprintf(msg, sizeof(msg),
                         "the job did not succeed and its address space reached %.1f MiB of its %.1f MiB memory limit "
                         "(RLIMIT_AS, per process): an allocation was most likely refused",
                         (double) x->peak_vm_kb / 1024.0, (double) j->pol.memory / 1048576.0);
                set_error(j, E_MEMORY, msg);
        }
        if (j->outcome == OUTCOME_ERROR)
                set_error(j, E_SETUP, "sbx-launch could not set up the sandbox (exit status 125; see the job's stderr)");
        if (j->outcome == OUTCOME_TIMED_OUT) {
                snprintf(msg, sizeof(msg), "timed out after %" PRIu64 " ms", j->pol.timeout_ms);
                set_error(j, E_TIMEOUT, msg);
        }
        if (j->cancelled && !j->timed_out)
                set_error(j, E_CANCELLED, "cancelled by the client");
        return 0;
}
