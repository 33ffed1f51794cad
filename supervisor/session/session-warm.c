/* SPDX-License-Identifier: Apache-2.0 */
/* The sessions side of the warm pools (front/warm.c decides when to make
 * and take them): a warm sandbox is a session the daemon made for a
 * tenant, never listed or found by id, that one job takes and runs in as
 * its exec; when that job ends, so does the sandbox. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "log.h"
#include "runner.h"
#include "session-internal.h"
#include "tenant.h"

/* Does a sandbox made with box's limits run a job whose policy is pol as
 * a cold start would? Everything but the timeout (the job's own, inside
 * the sandbox's) must be the same. */
static bool same_policy(const struct policy_decision *box, const struct policy_decision *pol) {
        return streq(box->profile, pol->profile) && box->memory == pol->memory && box->processes == pol->processes &&
               box->cpu_s == pol->cpu_s && box->cpu_milli == pol->cpu_milli && box->output == pol->output &&
               box->disk == pol->disk && box->artifacts == pol->artifacts && box->net == pol->net &&
               box->net_audit == pol->net_audit;
}

unsigned sessions_warm(const struct sessions *ss, const struct tenant *t, unsigned *ret_ready) {
        unsigned n = 0, ready = 0;
        for (const struct list *p = ss->live.next; p != &ss->live; p = p->next) {
                const struct session *s = list_entry(p, struct session, link);
                if (!s->warm || s->taken || s->state == S_ENDING || (t && !tenant_same(s->tenant, t)))
                        continue;
                n++;
                ready += s->state == S_READY;
        }
        if (ret_ready)
                *ret_ready = ready;
        return n;
}

struct session *session_warm_take(struct sessions *ss, const struct tenant *t, const struct policy_decision *pol) {
        for (struct list *p = ss->live.next; p != &ss->live; p = p->next) {
                struct session *s = list_entry(p, struct session, link);
                if (!s->warm || s->taken || s->state != S_READY || !s->box || !tenant_same(s->tenant, t))
                        continue;
                if (!same_policy(&s->box->j.pol, pol))
                        continue;
                s->taken = true;
                session_idle_stop(s);
                return s;
        }
        return NULL;
}

void session_warm_abandon(struct rjob *rj) {
        struct exec_ref *x = rj->session;
        struct session *s = x->s;
        rj->session = NULL;
        rj->session_signal = NULL;
        rj->session_exec = false;
        rj->session_id[0] = '\0';
        free(x);
        session_end(s, "unused");
}

int session_warm_attach(struct session *s, struct rjob *rj) {
        if (!exec_attach(s, rj)) {
                session_end(s, "unused");
                return -ENOMEM;
        }
        rj->warm = true;
        rj->j.job_uid = s->box->j.job_uid;
        rj->j.job_gid = s->box->j.job_gid;
        return 0;
}

void session_warm_start(struct rjob *rj) {
        struct exec_ref *x = rj->session;
        struct session *s = x->s;
        struct sbx_error err;
        sbx_error_clear(&err);
        list_add_tail(&s->execs, &x->link);
        s->n_execs++;
        if (exec_spawn(s, x, &rj->j.req, &err) < 0) {
                x->ended = true;
                runner_exec_failed(rj, err.msg);
        }
}

bool sessions_warm_end_one(struct sessions *ss, const struct tenant *t, const char *reason) {
        struct session *pick = NULL;
        for (struct list *p = ss->live.next; p != &ss->live; p = p->next) {
                struct session *s = list_entry(p, struct session, link);
                if (!s->warm || s->taken || s->state == S_ENDING || (t && !tenant_same(s->tenant, t)))
                        continue;
                /* one still starting first: it is the furthest from use */
                if (!pick || (pick->state == S_READY && s->state != S_READY))
                        pick = s;
        }
        if (!pick)
                return false;
        pick->taken = true;
        log_info("session %s (tenant %s): a warm sandbox ends (%s)", pick->id, pick->tenant_name, reason);
        session_end(pick, reason);
        return true;
}
