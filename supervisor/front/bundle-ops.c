/* SPDX-License-Identifier: Apache-2.0 */
/* bundle.show: a bundle resolved as a run would resolve it (fetched if it
 * is not at hand; the connection reads no further request meanwhile, so
 * responses keep their order), with its manifest, the profile a job of it
 * would get, and the verdict of the caller's policy. cache.list and
 * cache.gc: the cached trees of the caller's registry, and removing them
 * (past the budget and the age limit, or every unused one the caller's
 * tenant alone used). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle-internal.h"
#include "cachefs.h"
#include "conn.h"
#include "daemon.h"
#include "grant.h"
#include "launchspec.h"

struct show {
        struct bwait w;
        struct conn *c;
        json_t *tag;
        struct sbx_error err;
        char tenant[65]; /* w.tenant: a reload may free the tenant while it waits */
};

/* The profile a job of this bundle would be given (its generated part;
 * the named profile is the operator's file). */
static json_t *derived_profile(struct conn *c, const struct cache_entry *e, const struct policy_decision *pol, unsigned ro) {
        struct daemon *d = c->d;
        struct job j;
        struct launchspec ls;
        struct sbx_error err;
        job_init(&j);
        snprintf(j.id, sizeof(j.id), "(none)");
        j.tenant = c->tenant;
        j.pol = *pol;
        j.bundle.set = true;
        bundle_ref_parse(e->name, &j.bundle.ref, &err);
        snprintf(j.bundle.version, sizeof(j.bundle.version), "%s", e->version);
        j.bundle.tree = cachefs_tree_path(d->cfg->state_dir, e->sha256);
        j.bundle.command = e->manifest.command;
        j.bundle.n_command = e->manifest.n_command;
        j.bundle.ro_paths = ro;
        struct launchspec_input in = {
                .launcher = d->cfg->launcher,
                .profile_file = pol->profile,
                .search_path = d->cfg->profile_path,
                .workspace = "WORKSPACE",
                .j = &j,
                /* as runner.c hands it: a mount, where the daemon may mount */
                .bundle_fd = geteuid() == 0,
        };
        json_t *out = json_null();
        if (j.bundle.tree && launchspec_build(&in, &ls, &err) == 0) {
                json_decref(out);
                out = json_pack("{s:s, s:s%}", "profile", pol->profile, "generated", ls.profile, ls.profile_len);
                launchspec_free(&ls);
        }
        j.bundle.command = NULL;
        j.bundle.n_command = 0;
        job_release(&j);
        return out;
}

static json_t *versions(const struct bundle_index *ix) {
        json_t *a = json_array();
        for (size_t i = 0; a && ix && i < ix->n; i++)
                json_array_append_new(a, json_pack("{s:s, s:s, s:I}", "version", ix->v[i].version, "sha256", ix->v[i].sha256, "size",
                                                   (json_int_t) ix->v[i].size));
        return a;
}

static json_t *show_body(struct conn *c, const struct resolution *r) {
        const struct cache_entry *e = r->entry;
        struct policy_decision pol;
        struct sbx_error err;
        struct request none;
        unsigned ro = 0;
        sbx_error_clear(&err);
        request_init(&none);
        struct netpolicy *np = NULL;
        int g = grant_bundle(c->tenant, &e->manifest, &none.run, &c->d->caps, &pol, &ro, &np, &err);
        free(np);
        json_t *verdict = g == 0 ? json_pack("{s:b, s:o}", "allowed", 1, "policy", policy_to_json(&pol))
                                 : json_pack("{s:b, s:s, s:s}", "allowed", 0, "code", pol.code ? pol.code : E_FORBIDDEN, "message",
                                             err.msg);
        json_t *res = json_pack("{s:s, s:s, s:s, s:s, s:b, s:o, s:o}", "registry", e->registry, "name", e->name, "version",
                                e->version, "sha256", e->sha256, "stale", r->stale, "serial",
                                r->serial ? json_integer((json_int_t) r->serial) : json_null(), "versions",
                                versions(r->index));
        return json_pack("{s:o, s:o, s:o, s:o}", "bundle", res, "manifest", manifest_to_json(&e->manifest), "verdict", verdict,
                         "profile", g == 0 ? derived_profile(c, e, &pol, ro) : json_null());
}

static void show_ready(struct bwait *w, const struct resolution *r) {
        struct show *s = container_of(w, struct show, w);
        struct conn *c = s->c;
        if (!c->closed) {
                if (r->code)
                        conn_send(c, proto_error(s->tag, r->code, "%s", r->msg));
                else
                        conn_send(c, proto_ok(s->tag, show_body(c, r)));
        }
        if (r->entry)
                bundle_unpin(c->d->bundles, r->entry);
        json_decref(s->tag);
        free(s);
        conn_unbusy(c);
}

void bundle_op_show(struct conn *c, struct request *req) {
        const char *code;
        struct run_request run;
        struct sbx_error err;
        memset(&run, 0, sizeof(run));
        run.bundle = req->bundle;
        if (bundle_admit(c->tenant, &run, &code, &err) < 0) {
                conn_send(c, proto_error(req->tag, code, "%s", err.msg));
                return;
        }
        struct show *s = calloc(1, sizeof(*s));
        if (!s) {
                conn_send(c, proto_error(req->tag, E_INTERNAL, "out of memory"));
                return;
        }
        s->c = c;
        s->tag = req->tag ? json_incref(req->tag) : NULL;
        s->w.reg = c->tenant->registry;
        snprintf(s->tenant, sizeof(s->tenant), "%s", c->tenant->name);
        s->w.tenant = s->tenant;
        bundle_ref_parse(req->bundle, &s->w.ref, &err);
        s->w.t0_us = now_mono_us();
        s->w.ready = show_ready;
        /* Held until answered; later requests wait for it. */
        conn_busy(c);
        bundle_resolve(c->d->bundles, &s->w);
}

static json_t *entry_json(const struct cache_entry *e) {
        return json_pack("{s:s, s:s, s:s, s:s, s:I, s:o, s:i}", "sha256", e->sha256, "registry", e->registry, "name", e->name,
                         "version", e->version, "bytes", (json_int_t) e->bytes, "last_used", proto_time(e->last_used_ms), "jobs",
                         (int) e->refs);
}

void bundle_op_cache_list(struct conn *c, struct request *req) {
        struct bundles *b = c->d->bundles;
        const struct registry_conf *reg = c->tenant->registry;
        json_t *a = json_array();
        struct list *pos, *tmp;
        /* Most recently used first. */
        for (pos = b->cache.lru.prev, tmp = pos->prev; pos != &b->cache.lru; pos = tmp, tmp = pos->prev) {
                const struct cache_entry *e = list_entry(pos, struct cache_entry, link);
                if (reg && streq(e->registry, reg->name))
                        json_array_append_new(a, entry_json(e));
        }
        conn_send(c, proto_ok(req->tag, json_pack("{s:o, s:I, s:I, s:I}", "bundles", a, "bytes", (json_int_t) b->cache.bytes,
                                                  "budget", (json_int_t) c->d->cfg->cache_size, "max_age_ms",
                                                  (json_int_t) c->d->cfg->cache_max_age_ms)));
}

void bundle_op_cache_gc(struct conn *c, struct request *req) {
        struct bundles *b = c->d->bundles;
        const struct registry_conf *reg = c->tenant->registry;
        json_t *removed = json_array();
        if (req->all && !reg) {
                json_decref(removed);
                conn_send(c, proto_error(req->tag, E_FORBIDDEN, "tenant '%s' has no registry: it has no bundles to remove",
                                         c->tenant->name));
                return;
        }
        uint64_t freed = bundle_evict(b, req->all, c->tenant->name, removed);
        conn_send(c, proto_ok(req->tag, json_pack("{s:o, s:I, s:I}", "removed", removed, "freed", (json_int_t) freed, "bytes",
                                                  (json_int_t) b->cache.bytes)));
}
