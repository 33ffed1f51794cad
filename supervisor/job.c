/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <signal.h>

#include "job.h"

const char *job_state_name(enum job_state s) {
        switch (s) {
        case JOB_QUEUED: return "queued";
        case JOB_RUNNING: return "running";
        case JOB_STOPPING: return "stopping";
        case JOB_DONE: return "done";
        }
        return "?";
}

const char *job_outcome_name(enum job_outcome o) {
        switch (o) {
        case OUTCOME_NONE: return "none";
        case OUTCOME_SUCCEEDED: return "succeeded";
        case OUTCOME_FAILED: return "failed";
        case OUTCOME_TIMED_OUT: return "timed_out";
        case OUTCOME_KILLED: return "killed";
        case OUTCOME_OOM: return "oom";
        case OUTCOME_REJECTED: return "rejected";
        case OUTCOME_ERROR: return "error";
        }
        return "?";
}

int job_transition(struct job *j, enum job_event ev) {
        switch (j->state) {
        case JOB_QUEUED:
                switch (ev) {
                case JEV_START:
                        j->state = JOB_RUNNING;
                        return 0;
                case JEV_SPAWN_FAIL:
                        j->state = JOB_DONE;
                        j->outcome = OUTCOME_ERROR;
                        return 0;
                case JEV_CANCEL:
                        j->cancelled = true;
                        j->state = JOB_DONE;
                        j->outcome = OUTCOME_KILLED;
                        return 0;
                case JEV_SHUTDOWN:
                        j->state = JOB_DONE;
                        j->outcome = OUTCOME_ERROR;
                        return 0;
                default:
                        return -EINVAL;
                }
        case JOB_RUNNING:
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
                        j->state = JOB_STOPPING;
                        return 0;
                case JEV_EXIT:
                        j->state = JOB_DONE;
                        return 0;
                default:
                        return -EINVAL;
                }
        case JOB_STOPPING:
                switch (ev) {
                case JEV_EXIT:
                        j->state = JOB_DONE;
                        return 0;
                /* A second timeout is the end of the grace period; a cancel
                 * after a timeout changes nothing: the first reason wins. */
                case JEV_TIMEOUT:
                case JEV_CANCEL:
                case JEV_SHUTDOWN:
                        return 0;
                default:
                        return -EINVAL;
                }
        case JOB_DONE:
                return -EINVAL;
        }
        return -EINVAL;
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
        if (code == 124)
                return OUTCOME_TIMED_OUT;
        if (code == 125)
                return OUTCOME_ERROR;
        if (code > 128 && code < 128 + 65)
                return OUTCOME_KILLED;
        return OUTCOME_FAILED;
}

void sched_init(struct scheduler *s, uint64_t max_running, uint64_t max_queued) {
        list_init(&s->queue);
        s->n_queued = s->n_running = 0;
        s->max_running = max_running;
        s->max_queued = max_queued;
}

int sched_enqueue(struct scheduler *s, struct job *j) {
        if (s->n_queued >= s->max_queued)
                return -EAGAIN;
        if (j->tenant->n_queued >= j->tenant->max_queue)
                return -EAGAIN;
        list_add_tail(&s->queue, &j->queue_link);
        s->n_queued++;
        j->tenant->n_queued++;
        return 0;
}

struct job *sched_next(struct scheduler *s) {
        struct list *pos, *tmp;
        if (s->n_running >= s->max_running)
                return NULL;
        list_for_each_safe(pos, tmp, &s->queue) {
                struct job *j = list_entry(pos, struct job, queue_link);
                if (j->tenant->n_running >= j->tenant->max_jobs)
                        continue;
                list_del(&j->queue_link);
                s->n_queued--;
                j->tenant->n_queued--;
                s->n_running++;
                j->tenant->n_running++;
                return j;
        }
        return NULL;
}

void sched_remove_queued(struct scheduler *s, struct job *j) {
        list_del(&j->queue_link);
        s->n_queued--;
        j->tenant->n_queued--;
}

void sched_finished(struct scheduler *s, struct job *j) {
        s->n_running--;
        j->tenant->n_running--;
}
