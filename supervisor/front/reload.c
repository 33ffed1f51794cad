/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration read again while the daemon runs (SIGHUP, the reload
 * operation). The file is read and checked whole first: a bad one changes
 * nothing. Then the tenants and tokens are swapped in (config_reload_swap:
 * any other key that changed refuses the reload), and:
 *
 * - jobs already admitted keep the tenant they were admitted under: their
 *   limits and rights were decided then;
 * - connections go on under their tenant as the new file has it, found
 *   again from their peer's credentials or their HTTP token; one whose
 *   tenant is gone or is now another is closed;
 * - sessions go on under the new policy, or end ("policy") when it
 *   withdrew their network mode or their tenant; withdrawn services lose
 *   their ports and connections, the session lives on (session-policy.c).
 *
 * The old tenants stay in memory, held by their jobs, until none is left
 * (reload_sweep at housekeeping). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "audit.h"
#include "daemon.h"
#include "http-api.h"
#include "log.h"
#include "policy-store.h"
#include "reload.h"
#include "service.h"
#include "tenant.h"
#include "util.h"
#include "warm.h"

struct retired {
        struct config cfg;   /* the old tenants and tokens */
        struct retired *next;
};

/* c's tenant as cfg has it now, or NULL when it has none for c or another
 * one than before. */
static const struct tenant *tenant_now(const struct config *cfg, struct conn *c) {
        if (c->token) {
                for (size_t i = 0; i < cfg->n_tokens; i++)
                        if (streq(cfg->tokens[i].name, c->token->name)) {
                                c->token = &cfg->tokens[i];
                                return tenant_same(c->token->tenant, c->tenant) ? c->token->tenant : NULL;
                        }
                return NULL;
        }
        if (c->anonymous)
                return cfg->anonymous;
        gid_t groups[256];
        socklen_t gl = sizeof(groups);
        size_t ng = 0;
        if (getsockopt(c->src.fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl) == 0)
                ng = gl / sizeof(gid_t);
        const struct tenant *t = tenant_lookup(cfg, c->cred.uid, c->cred.gid, groups, ng);
        return tenant_same(t, c->tenant) ? t : NULL;
}

static unsigned move_conns(struct daemon *d, json_t *closed) {
        unsigned n = 0;
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &d->conns.all) {
                struct conn *c = list_entry(pos, struct conn, link);
                if (!c->tenant)
                        continue;
                const struct tenant *t = tenant_now(d->cfg, c);
                if (t) {
                        c->tenant = t;
                        continue;
                }
                log_notice("reload: closed a connection of tenant %s (uid %u%s%s): its tenant is gone or is now another",
                           c->tenant->name, (unsigned) c->cred.uid, c->token ? ", token " : "", c->token ? c->token->name : "");
                json_array_append_new(closed, json_pack("{s:s, s:i}", "tenant", c->tenant->name, "uid", (int) c->cred.uid));
                c->token = NULL;
                conn_close(c);
                n++;
        }
        return n;
}

/* Which tenants came, went or changed, by name. */
static json_t *tenant_changes(const struct config *now, const struct config *before) {
        json_t *added = json_array(), *removed = json_array(), *changed = json_array();
        for (size_t i = 0; i < now->n_tenants; i++) {
                const char *name = now->tenants[i].name;
                bool was = false;
                for (size_t j = 0; j < before->n_tenants && !was; j++)
                        was = streq(before->tenants[j].name, name);
                if (!was)
                        json_array_append_new(added, json_string(name));
                else if (config_tenant_changed(now, before, name))
                        json_array_append_new(changed, json_string(name));
        }
        for (size_t j = 0; j < before->n_tenants; j++)
                if (!tenant_find(now, before->tenants[j].name))
                        json_array_append_new(removed, json_string(before->tenants[j].name));
        if (config_tenant_changed(now, before, "anonymous"))
                json_array_append_new(changed, json_string("anonymous"));
        return json_pack("{s:o, s:o, s:o}", "added", added, "removed", removed, "changed", changed);
}

/* what: borrowed */
static void audit_reload(const char *by, const char *decision, const json_t *what) {
        json_t *rec = json_pack("{s:s, s:s, s:s}", "event", "reload", "by", by, "decision", decision);
        if (rec && what)
                json_object_update(rec, (json_t *) what);
        audit_write_deferred(rec);
}

struct retired *reload_prepare(struct daemon *d, const json_t *policy, struct sbx_error *err) {
        struct retired *x = calloc(1, sizeof(*x));
        if (!x) {
                sbx_error_set(err, ENOMEM, "reload");
                return NULL;
        }
        config_init(&x->cfg);
        char name[PATH_MAX];
        snprintf(name, sizeof(name), "%s/%s", d->cfg->state_dir, POLICY_FILE);
        if (config_load_policy(&x->cfg, d->cfg->path, json_object_get(policy, "tenants"), name, err) < 0 ||
            config_reload_check(d->cfg, &x->cfg, err) < 0 || http_api_reserve(d, x->cfg.n_tokens) < 0) {
                if (!err->code)
                        sbx_error_set(err, ENOMEM, "reload");
                reload_discard(x);
                return NULL;
        }
        return x;
}

void reload_discard(struct retired *x) {
        if (!x)
                return;
        config_free(&x->cfg);
        free(x);
}

json_t *reload_apply(struct daemon *d, struct retired *old, const char *by) {
        struct config *fresh = &old->cfg;
        http_api_reload_begin(d);
        config_reload_swap(d->cfg, fresh);
        http_api_reload_end(d);
        /* from here the new policy is in force; fresh holds the old one */
        if (sched_grow(&d->sched, d->cfg->n_slots) < 0 || conns_grow(&d->conns, d->cfg->n_slots) < 0)
                log_error("reload: out of memory for the counters of new tenants: they are counted with the anonymous one");
        json_t *what = tenant_changes(d->cfg, fresh);
        json_t *closed = json_array(), *ended = json_array(), *services = json_array();
        unsigned n_closed = move_conns(d, closed);
        unsigned n_ended = sessions_reloaded(&d->sessions, d->cfg, ended, services);
        warm_reloaded(d);
        size_t i;
        json_t *x;
        json_array_foreach (services, i, x) {
                size_t k;
                json_t *port;
                json_array_foreach (json_object_get(x, "ports"), k, port)
                        service_close_session(d, json_string_value(json_object_get(x, "session")), (int) json_integer_value(port));
        }
        json_object_set_new(what, "connections_closed", closed);
        json_object_set_new(what, "sessions_ended", ended);
        json_object_set_new(what, "services_withdrawn", services);
        json_object_set_new(what, "tenants", json_integer((json_int_t) d->cfg->n_tenants));
        json_object_set_new(what, "tokens", json_integer((json_int_t) d->cfg->n_tokens));
        old->next = d->retired;
        d->retired = old;
        log_notice("reload (%s): %zu tenants, %zu tokens; %zu added, %zu removed, %zu changed; %u connections closed, %u "
                   "sessions ended",
                   by, d->cfg->n_tenants, d->cfg->n_tokens, json_array_size(json_object_get(what, "added")),
                   json_array_size(json_object_get(what, "removed")), json_array_size(json_object_get(what, "changed")),
                   n_closed, n_ended);
        audit_reload(by, "applied", what);
        return what;
}

int daemon_reload(struct daemon *d, const char *by, json_t **ret, struct sbx_error *err) {
        struct retired *x = reload_prepare(d, d->policy, err);
        if (!x) {
                log_error("reload (%s) refused, nothing changed: %s", by, err->msg);
                json_t *m = json_pack("{s:s}", "message", err->msg);
                audit_reload(by, "refused", m);
                json_decref(m);
                return -err->code;
        }
        json_t *what = reload_apply(d, x, by);
        if (ret)
                *ret = what;
        else
                json_decref(what);
        return 0;
}

/* Does anything still point at one of old's tenants? */
static bool held(const struct daemon *d, const struct config *old) {
        for (const struct list *p = d->jobs.all.next; p != &d->jobs.all; p = p->next)
                if (config_has_tenant(old, list_entry(p, struct rjob, link)->j.tenant))
                        return true;
        for (const struct list *p = d->conns.all.next; p != &d->conns.all; p = p->next)
                if (config_has_tenant(old, list_entry(p, struct conn, link)->tenant))
                        return true;
        /* a closed one may still be audited by a step that holds it */
        if (d->conns.closing)
                return true;
        return sessions_hold(&d->sessions, old);
}

void reload_sweep(struct daemon *d, bool all) {
        for (struct retired **pp = &d->retired; *pp;) {
                struct retired *x = *pp;
                if (!all && held(d, &x->cfg)) {
                        pp = &x->next;
                        continue;
                }
                *pp = x->next;
                config_free(&x->cfg);
                free(x);
        }
}
