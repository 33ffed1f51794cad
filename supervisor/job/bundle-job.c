/* SPDX-License-Identifier: Apache-2.0 */
/* A bundle job's side of resolution: it waits (state "fetching") unless
 * its bundle is at hand; once resolved it holds its tree, its manifest's
 * capabilities are granted against its tenant's policy, and it queues;
 * or it ends with the reason, audited. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "bundle-internal.h"
#include "cachefs.h"
#include "daemon.h"
#include "grant.h"
#include "log.h"
#include "netjob.h"
#include "profile.h"
#include "runner.h"

struct jwait {
        struct bwait w;
        struct rjob *rj;
};

int bundle_admit(const struct tenant *t, const struct run_request *run, const char **code, struct sbx_error *err) {
        struct bundle_ref ref;
        *code = E_BAD_REQUEST;
        if (bundle_ref_parse(run->bundle, &ref, err) < 0)
                return -EINVAL;
        *code = E_FORBIDDEN;
        if (!t->registry)
                return sbx_error_msg(err, EPERM, "field 'bundle': tenant '%s' has no registry: it runs no bundles", t->name);
        if (!tenant_allows_bundle(t, ref.name))
                return sbx_error_msg(err, EPERM, "field 'bundle': tenant '%s' may not run bundle '%s' (bundles)", t->name, ref.name);
        return 0;
}

static void audit_job(const struct rjob *rj, const char *decision, const char *code, const char *msg) {
        const struct job *j = &rj->j;
        char ref[160];
        bundle_ref_str(&j->bundle.ref, ref, sizeof(ref));
        json_t *rec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "event", "bundle", "job", j->id, "tenant", j->tenant->name,
                                "registry", j->bundle.registry ? j->bundle.registry : "", "bundle", ref, "decision", decision);
        if (!rec)
                return;
        if (j->bundle.sha256[0]) {
                json_object_set_new(rec, "version", json_string(j->bundle.version));
                json_object_set_new(rec, "sha256", json_string(j->bundle.sha256));
                json_object_set_new(rec, "source", json_string(j->bundle.from_cache ? "cache" : "registry"));
                json_object_set_new(rec, "stale", json_boolean(j->bundle.stale));
        }
        if (code) {
                json_object_set_new(rec, "code", json_string(code));
                json_object_set_new(rec, "message", json_string(msg) ?: json_string("?"));
        }
        audit_write_deferred(rec);
}

/* The job ends before it ran: out of the queue, its record through the
 * group commit. */
static void end(struct rjob *rj, const char *code, const char *msg) {
        struct daemon *d = rj->d;
        bool queued = true;
        audit_job(rj, "refused", code, msg);
        log_info(JOB_LOG ": bundle: %s: %s", JOB_LOG_ARGS(&rj->j), code, msg);
        if (job_bundle_failed(&rj->j, code, msg) < 0)
                queued = false;
        if (queued)
                sched_remove_queued(&d->sched, &rj->j);
        runner_end(rj);
}

static int copy_command(struct job_bundle *jb, const struct manifest *m) {
        jb->command = calloc(m->n_command + 1, sizeof(char *));
        if (!jb->command)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_command; i++) {
                if (!(jb->command[i] = strdup(m->command[i])))
                        return -ENOMEM;
                jb->n_command++;
        }
        return 0;
}

/* What the resolution says of the job's bundle, for its record. */
static int note(struct rjob *rj, const struct resolution *r) {
        struct job_bundle *jb = &rj->j.bundle;
        const struct cache_entry *e = r->entry;
        jb->resolve_us = r->resolve_us;
        jb->download_us = r->download_us;
        jb->verify_us = r->verify_us;
        jb->extract_us = r->extract_us;
        if (!e)
                return 0;
        snprintf(jb->version, sizeof(jb->version), "%s", e->version);
        snprintf(jb->sha256, sizeof(jb->sha256), "%s", e->sha256);
        jb->from_cache = r->from_cache;
        jb->stale = r->stale;
        jb->serial = r->serial;
        free(jb->stale_why);
        jb->stale_why = r->stale_why ? strdup(r->stale_why) : NULL;
        free(jb->tree);
        jb->tree = cachefs_tree_path(rj->d->cfg->state_dir, e->sha256);
        if (!jb->tree || copy_command(jb, &e->manifest) < 0)
                return -ENOMEM;
        return 0;
}

static void ready(struct bwait *w, const struct resolution *r) {
        struct jwait *jw = container_of(w, struct jwait, w);
        struct rjob *rj = jw->rj;
        struct job *j = &rj->j;
        struct daemon *d = rj->d;
        struct sbx_error err;
        struct policy_decision pol;
        unsigned ro = 0;
        sbx_error_clear(&err);
        rj->bundle_wait = NULL;
        free(jw);
        if (note(rj, r) < 0) {
                if (r->entry)
                        bundle_unpin(d->bundles, r->entry);
                end(rj, E_INTERNAL, "out of memory");
                return;
        }
        if (r->code) {
                end(rj, r->code, r->msg);
                return;
        }
        rj->bundle_tree = r->entry;
        struct netpolicy *np = NULL;
        if (grant_bundle(j->tenant, &r->entry->manifest, &j->req.run, &d->caps, &pol, &ro, &np, &err) < 0) {
                end(rj, pol.code ? pol.code : E_FORBIDDEN, err.msg);
                return;
        }
        _cleanup_free_ char *profile = NULL;
        int e = profile_find(pol.profile, d->cfg->profile_path, &profile, &err);
        if (e < 0) {
                char msg[SBX_ERROR_MAX];
                snprintf(msg, sizeof(msg), "bundle %s: its profile '%s' is not in %s", r->entry->name, pol.profile,
                         d->cfg->profile_path);
                free(np);
                end(rj, e == -ENOENT ? E_NO_PROFILE : E_INTERNAL, msg);
                return;
        }
        char why[SBX_ERROR_MAX];
        if ((e = netjob_profile_policy(&d->caps, pol.profile, profile, &pol, why, sizeof(why))) < 0) {
                free(np);
                end(rj, e == -EOPNOTSUPP ? E_UNSUPPORTED : E_FORBIDDEN, why);
                return;
        }
        j->pol = pol;
        j->bundle.ro_paths = ro;
        /* a restricted bundle's endpoints are its allow entries */
        free(j->req.run.netpol);
        j->req.run.netpol = np;
        free(rj->profile_path);
        rj->profile_path = TAKE_PTR(profile);
        audit_job(rj, pol.clamped[0] ? "granted (clamped)" : "granted", NULL, NULL);
        if (j->bundle.stale)
                log_warning(JOB_LOG ": runs %s %s from the cache, the registry could not be asked: %s", JOB_LOG_ARGS(j), r->entry->name,
                            r->entry->version, r->stale_why);
        if (j->state == JOB_FETCHING)
                job_transition(j, JEV_FETCHED, NULL);
        runner_schedule(d);
}

void bundle_job_start(struct rjob *rj) {
        struct job *j = &rj->j;
        struct jwait *jw = calloc(1, sizeof(*jw));
        if (!jw) {
                end(rj, E_INTERNAL, "out of memory");
                return;
        }
        jw->rj = rj;
        jw->w.reg = j->tenant->registry;
        jw->w.tenant = j->tenant->name;
        jw->w.ref = j->bundle.ref;
        jw->w.t0_us = now_mono_us();
        jw->w.ready = ready;
        rj->bundle_wait = jw;
        if (!jw->w.reg) {
                rj->bundle_wait = NULL;
                free(jw);
                end(rj, E_FORBIDDEN, "the job's tenant has no registry any more");
                return;
        }
        bundle_resolve(rj->d->bundles, &jw->w);
        /* Not at hand: the job waits, visibly. */
        if (rj->bundle_wait)
                job_transition(j, JEV_FETCH, NULL);
}

int bundle_job_tree_mount(struct rjob *rj) {
        if (!rj->bundle_tree)
                return -ENOENT;
        /* A front without privilege hands sbx-privd the directory, which
         * makes the mount. */
        if (privc_on(&rj->d->privc))
                return cachefs_tree_open(rj->d->bundles->cache_fd, rj->bundle_tree->sha256);
        return cachefs_tree_mount(rj->d->bundles->cache_fd, rj->bundle_tree->sha256);
}

void bundle_job_release(struct rjob *rj) {
        struct jwait *jw = rj->bundle_wait;
        if (jw) {
                bundle_wait_cancel(&jw->w);
                free(jw);
                rj->bundle_wait = NULL;
        }
        if (rj->bundle_tree) {
                bundle_unpin(rj->d->bundles, rj->bundle_tree);
                rj->bundle_tree = NULL;
        }
}
