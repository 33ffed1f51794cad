/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "daemon.h"
#include "job-secrets.h"
#include "jobs.h"
#include "redact.h"
#include "secretproxy.h"
#include "tenant.h"

void jobs_init(struct jobs *js) {
        list_init(&js->all);
        js->n = 0;
}

struct rjob *rjob_new(struct daemon *d) {
        struct rjob *rj = calloc(1, sizeof(*rj));
        if (!rj)
                return NULL;
        job_init(&rj->j);
        rj->d = d;
        list_init(&rj->link);
        list_init(&rj->watches);
        list_init(&rj->commit_link);
        rj->pid = -1;
        rj->timer_fd = rj->cgroup_fd = rj->ws_fd = rj->session_fd = -1;
        rj->cgroup_cpu_us = -1;
        capture_init(&rj->cap);
        netevents_init(&rj->net, d ? d->cfg->network_events : 0);
        return rj;
}

void rjob_free(void *p) {
        struct rjob *rj = p;
        callbacks_progress_end(&rj->d->cb, &rj->cb_prog);
        job_release(&rj->j);
        capture_release(&rj->cap);
        netevents_release(&rj->net);
        free(rj->net_fail);
        if (rj->timer_fd >= 0)
                close(rj->timer_fd);
        if (rj->cgroup_fd >= 0)
                close(rj->cgroup_fd);
        if (rj->session_fd >= 0)
                close(rj->session_fd);
        free(rj->session_orphans);
        json_decref(rj->session_service);
        free(rj->profile_path);
        free(rj->prep_error);
        job_secrets_unref(rj->secrets);
        secretproxy_close(rj->sproxy);
        secretproxy_unref(rj->sproxy);
        free(rj->deps_layer);
        json_decref(rj->deps_info);
        redactor_free(rj->redact);
        json_decref(rj->artifacts);
        json_decref(rj->limit_hit);
        free(rj->artifacts_error);
        json_decref(rj->value);
        free(rj->value_error);
        json_decref(rj->rec);
        json_decref(rj->rec_kept);
        free(rj->rec_text);
        free(rj->cb_text);
        outbox_entry_free(&rj->cb_entry);
        free(rj);
}

void jobs_add(struct jobs *js, struct rjob *rj) {
        list_add_tail(&js->all, &rj->link);
        js->n++;
}

void jobs_remove(struct jobs *js, struct rjob *rj) {
        list_del(&rj->link);
        js->n--;
}

struct rjob *jobs_find(struct jobs *js, const char *id) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &js->all) {
                struct rjob *rj = list_entry(pos, struct rjob, link);
                if (streq(rj->j.id, id))
                        return rj;
        }
        return NULL;
}

struct rjob *jobs_find_key(struct jobs *js, const struct tenant *t, const char *key) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &js->all) {
                struct rjob *rj = list_entry(pos, struct rjob, link);
                const char *k = rj->j.req.run.idempotency_key;
                if (tenant_same(rj->j.tenant, t) && k && streq(k, key))
                        return rj;
        }
        return NULL;
}

void jobs_new_id(char buf[static 24]) {
        unsigned char rnd[10];
        char hex[21];
        if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
                /* Never in practice (the pool is seeded long before the
                 * daemon starts); still unique enough with the clock. */
                uint64_t t = now_real_ms() ^ ((uint64_t) getpid() << 40);
                memcpy(rnd, &t, 8);
                rnd[8] = rnd[9] = 0;
        }
        hex_encode(rnd, sizeof(rnd), hex);
        snprintf(buf, 24, "j%s", hex);
}

/* Why a session ended, as its sandbox's record says: what ended it, or,
 * when nothing asked, what the sandbox's own end says. */
const char *rjob_session_end(const struct rjob *rj) {
        const struct job *j = &rj->j;
        if (rj->session_end)
                return rj->session_end;
        if (j->timed_out)
                return "ttl";
        if (j->outcome == OUTCOME_OOM || (j->error_code && (streq(j->error_code, E_MEMORY) || streq(j->error_code, E_CPU_TIME))))
                return "limit";
        if (j->error_code && streq(j->error_code, E_RESTARTED))
                return "restarted";
        if (j->cancelled)
                return "closed";
        return "crashed";
}
