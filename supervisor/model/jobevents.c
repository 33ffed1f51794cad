/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>

#include "jobevents.h"

/* One daemon per process, and its listeners are set before its loop runs:
 * a table of the process, not a member of struct daemon, so that code below
 * the daemon's header can tell without reaching for it. */
static const struct job_listener *listeners[JOB_LISTENERS_MAX];
static size_t n_listeners;

int job_listen(const struct job_listener *l) {
        for (size_t i = 0; i < n_listeners; i++)
                if (listeners[i] == l)
                        return 0;
        if (n_listeners == JOB_LISTENERS_MAX)
                return -ENOSPC;
        listeners[n_listeners++] = l;
        return 0;
}

void job_tell_event(struct rjob *rj, json_t *ev, unsigned stream, size_t len) {
        if (!ev)
                return;
        for (size_t i = 0; i < n_listeners; i++)
                if (listeners[i]->event)
                        listeners[i]->event(rj, ev, stream, len);
        json_decref(ev);
}

void job_tell_end(struct rjob *rj, json_t *rec) {
        for (size_t i = 0; i < n_listeners; i++)
                if (listeners[i]->end)
                        listeners[i]->end(rj, rec);
}

void job_tell_fail(struct rjob *rj, const char *code, const char *msg) {
        for (size_t i = 0; i < n_listeners; i++)
                if (listeners[i]->fail)
                        listeners[i]->fail(rj, code, msg);
}
