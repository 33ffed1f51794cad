/* SPDX-License-Identifier: Apache-2.0 */
/* A job's secrets (sbx-supervisord(8) SECRETS): the values of those it
 * asked for, read from the store when its sandbox starts and kept, wiped at
 * the end, while that sandbox lives (a session's execs share its box's), so
 * that what it prints is redacted against the values it really got. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "conf.h"
#include "error.h"
#include "launchspec.h"

struct rjob;
struct redactor;

struct job_secrets {
        unsigned refs;
        size_t n;
        struct launch_secret s[SECRET_MAX_PER_JOB];
        bool shown[SECRET_MAX_PER_JOB]; /* secrets_in_output: not redacted */
};

/* rj's secrets, read from the store, in rj->secrets (and a redactor for
 * it in rj->redact). 0 with nothing done when it asked for none; an error
 * naming the secret when one is not granted (any more) or not set. */
/* With header secrets, also the proxy of them (rj->sproxy, its upstream
 * trusting proxy_ca too); they need a restricted network (an error
 * otherwise). */
int job_secrets_open(struct rjob *rj, int state_fd, const char *proxy_ca, struct sbx_error *err);
/* An exec of a session: its box's values and a redactor of its own (the
 * box of an adopted session reads them from the store again). */
int job_secrets_share(struct rjob *exec, struct rjob *box, int state_fd, const char *proxy_ca, struct sbx_error *err);
void job_secrets_unref(struct job_secrets *js);
/* [{"name", "mode", "redacted"}] for the record; NULL when none. */
json_t *job_secrets_record(const struct rjob *rj);
/* The artifacts copied into adir, redacted where a secret shows (their size
 * and sha256 in rj->artifacts updated); on an error every one is removed.
 * Blocking: off the loop. */
int job_secrets_artifacts(struct rjob *rj, int adir);
/* The job's $SBX_RESULT value and error message, redacted. */
void job_secrets_value(struct rjob *rj);
