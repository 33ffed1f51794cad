/* SPDX-License-Identifier: Apache-2.0 */
/* The operations on the daemon's configuration: reload, and a tenant's
 * policy shown, changed (policy.set: validated whole, written durably to
 * STATE/policy.json, then applied as a reload is) and its changes listed.
 * Reload and policy.set are an admin's (root, admins, a token of scope
 * admin); a tenant may show its own policy and history. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "cluster-ops.h"
#include "conn.h"
#include "daemon.h"
#include "log.h"
#include "policy-ops.h"
#include "policy-store.h"
#include "proto.h"
#include "reload.h"
#include "tenant.h"
#include "util.h"

bool policy_caller_admin(const struct conn *c) {
        if (c->token)
                return c->token->admin;
        if (c->peer[0] || c->anonymous)
                return false;
        return config_is_admin(c->d->cfg, c->cred.uid);
}

static void who(const struct conn *c, char *buf, size_t len) {
        if (c->token)
                snprintf(buf, len, "token %s", c->token->name);
        else if (c->peer[0])
                snprintf(buf, len, "HTTP %s", c->peer);
        else
                snprintf(buf, len, "uid %u", (unsigned) c->cred.uid);
}

_printf_(4, 5) static void refuse(struct conn *c, struct request *req, const char *code, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        audit_request(c, req_op_name(req->op), "refused", NULL, code, msg, true);
        conn_send(c, proto_error(req->tag, code, "%s", msg));
}

/* The keys of [tenant.NAME] as the configuration has them now. */
static json_t *keys_of(const struct config *cfg, const char *name) {
        char section[80];
        snprintf(section, sizeof(section), "tenant.%s", name);
        json_t *keys = json_object();
        for (size_t i = 0; i < cfg->n_entries; i++) {
                const struct config_entry *e = &cfg->entries[i];
                if (!streq(e->section, section))
                        continue;
                json_t *was = json_object_get(keys, e->key);
                if (!was)
                        json_object_set_new(keys, e->key, json_string(e->value));
                else if (json_is_array(was))
                        json_array_append_new(was, json_string(e->value));
                else
                        json_object_set_new(keys, e->key, json_pack("[O, s]", was, e->value));
        }
        return keys;
}

/* What the policy comes to, for what is asked most. */
static json_t *effective(const struct tenant *t) {
        json_t *net = json_array();
        for (int m = 0; m < 8; m++)
                if (t->net_modes & NET_MODE_BIT(m))
                        json_array_append_new(net, json_string(net_mode_name((enum net_mode) m)));
#define LIM(v) ((v) == CONFIG_UNSET ? json_null() : json_integer((json_int_t) (v)))
        return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:b}", "max_jobs", LIM(t->max_jobs),
                         "max_queue", LIM(t->max_queue), "default_timeout_ms", LIM(t->default_timeout_ms), "max_timeout_ms",
                         LIM(t->max_timeout_ms), "max_memory", LIM(t->max_memory), "max_processes", LIM(t->max_processes),
                         "max_output", LIM(t->max_output), "max_disk", LIM(t->max_disk), "max_sessions", LIM(t->max_sessions),
                         "max_upload", LIM(t->max_upload), "network", net, "session_services", t->session_services,
                         "bundles_only", t->bundles_only);
#undef LIM
}

/* The tenant a request names, or the caller's; NULL with a refusal sent. */
static const struct tenant *target(struct conn *c, struct request *req) {
        const char *name = req->tenant ? req->tenant : c->tenant->name;
        if (!policy_caller_admin(c) && !streq(name, c->tenant->name)) {
                refuse(c, req, E_FORBIDDEN, "only an admin may see another tenant's policy ('%s')", name);
                return NULL;
        }
        const struct tenant *t = tenant_find(c->d->cfg, name);
        if (!t)
                refuse(c, req, E_NOT_FOUND, "no tenant '%s' in the configuration", name);
        return t;
}

static void op_show(struct conn *c, struct request *req) {
        struct daemon *d = c->d;
        const struct tenant *t = target(c, req);
        if (!t)
                return;
        json_t *set = json_object_get(json_object_get(d->policy, "tenants"), t->name);
        json_t *o = json_pack("{s:s, s:s?, s:I, s:o, s:o, s:o}", "tenant", t->name, "origin", t->origin, "version",
                              json_integer_value(json_object_get(d->policy, "version")), "keys", keys_of(d->cfg, t->name), "set",
                              set ? json_incref(set) : json_object(), "effective", effective(t));
        conn_send(c, proto_ok(req->tag, json_pack("{s:o}", "policy", o)));
}

static void op_history(struct conn *c, struct request *req) {
        /* an admin may read the changes of a tenant taken out of the file */
        const char *name = req->tenant && policy_caller_admin(c) ? req->tenant : NULL;
        if (!name) {
                const struct tenant *t = target(c, req);
                if (!t)
                        return;
                name = t->name;
        }
        json_t *all = json_object_get(c->d->policy, "history"), *out = json_array();
        size_t i;
        json_t *e;
        json_array_foreach (all, i, e)
                if (streq(json_string_value(json_object_get(e, "tenant")) ?: "", name))
                        json_array_append(out, e);
        /* the newest limit ones */
        while (json_array_size(out) > req->limit)
                json_array_remove(out, 0);
        conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:o}", "tenant", name, "history", out)));
}

static void op_reload(struct conn *c, struct request *req, const char *by) {
        struct sbx_error err = { 0 };
        json_t *what = NULL;
        if (daemon_reload(c->d, by, &what, &err) < 0) {
                conn_send(c, proto_error(req->tag, err.code == ENOMEM ? E_BUSY : E_CONFIG, "%s", err.msg));
                return;
        }
        conn_send(c, proto_ok(req->tag, json_pack("{s:o}", "reload", what)));
}

/* Keys of a tenant the file no longer has may still be reset. */
static bool only_resets(const struct daemon *d, const struct request *req) {
        if (!json_object_get(json_object_get(d->policy, "tenants"), req->tenant))
                return false;
        const char *k;
        json_t *v;
        json_object_foreach (req->policy, k, v)
                if (!json_is_null(v))
                        return false;
        return true;
}

static void op_set(struct conn *c, struct request *req, const char *by) {
        struct daemon *d = c->d;
        if (!tenant_find(d->cfg, req->tenant) && !streq(req->tenant, "anonymous") && !only_resets(d, req)) {
                refuse(c, req, E_NOT_FOUND, "no tenant '%s' in the configuration (policy.set changes a tenant's keys; "
                       "a new tenant is added to the file)", req->tenant);
                return;
        }
        struct sbx_error err = { 0 };
        json_t *tenants = policy_store_apply(d->policy, req->tenant, req->policy);
        json_t *doc = tenants ? json_deep_copy(d->policy) : NULL;
        json_t *cand = doc ? json_pack("{s:O}", "tenants", tenants) : NULL;
        struct retired *x = cand ? reload_prepare(d, cand, &err) : NULL;
        json_decref(cand);
        if (!x) {
                json_decref(tenants);
                json_decref(doc);
                if (!err.code)
                        sbx_error_set(&err, ENOMEM, "policy.set");
                audit_request(c, "policy.set", "refused", NULL, E_CONFIG, err.msg, true);
                conn_send(c, proto_error(req->tag, err.code == ENOMEM ? E_BUSY : E_CONFIG, "%s", err.msg));
                return;
        }
        char now[40];
        format_rfc3339(now_real_ms(), now, sizeof(now));
        json_t *entry = policy_store_commit(doc, tenants, req->tenant, req->policy, by, req->reason, now);
        int r = entry ? policy_store_save(d->dirs.state_fd, doc) : -ENOMEM;
        if (r < 0) {
                reload_discard(x);
                json_decref(doc);
                log_error("policy.set (%s) for tenant %s not made: %s/%s: %s", by, req->tenant, d->cfg->state_dir, POLICY_FILE,
                          strerror(-r));
                conn_send(c, proto_error(req->tag, E_STORAGE, "cannot write %s/%s: %s; nothing changed", d->cfg->state_dir,
                                         POLICY_FILE, strerror(-r)));
                return;
        }
        json_t *applied = json_deep_copy(entry);
        json_decref(d->policy);
        d->policy = doc;
        char how[128];
        snprintf(how, sizeof(how), "policy.set by %s", by);
        json_t *what = reload_apply(d, x, how);
        audit_write_deferred(json_pack("{s:s, s:s, s:O}", "event", "policy_set", "by", by, "change", applied));
        log_notice("policy.set (%s): tenant %s, version %lld", by, req->tenant,
                   (long long) json_integer_value(json_object_get(applied, "version")));
        conn_send(c, proto_ok(req->tag, json_pack("{s:o, s:o}", "change", applied, "reload", what)));
}

void policy_op(struct conn *c, struct request *req) {
        char by[96];
        who(c, by, sizeof(by));
        if (req->op == REQ_POLICY_SHOW)
                return op_show(c, req);
        if (req->op == REQ_POLICY_HISTORY)
                return op_history(c, req);
        if (req->op >= REQ_SECRET_SET)
                return secret_op(c, req, by);
        if (!policy_caller_admin(c)) {
                refuse(c, req, E_FORBIDDEN, "%s: only an admin may (root, the admins key, a token of scope admin)",
                       req_op_name(req->op));
                return;
        }
        if (c->d->stopping) {
                conn_send(c, proto_error(req->tag, E_SHUTTING_DOWN, "the daemon is stopping"));
                return;
        }
        if (req->op == REQ_NODES || req->op == REQ_DRAIN)
                return cluster_op_admin(c, req);
        audit_request(c, req_op_name(req->op), "accepted", NULL, NULL, NULL, false);
        if (req->op == REQ_RELOAD)
                op_reload(c, req, by);
        else
                op_set(c, req, by);
}

int policy_open(struct daemon *d, struct sbx_error *err) {
        int r = policy_store_load(d->dirs.state_fd, d->cfg->state_dir, &d->policy, err);
        if (r < 0)
                return r;
        if (!json_object_size(json_object_get(d->policy, "tenants")))
                return 0;
        const char *tn;
        json_t *keys;
        json_object_foreach (json_object_get(d->policy, "tenants"), tn, keys)
                if (!tenant_find(d->cfg, tn) && !streq(tn, "anonymous"))
                        log_notice("%s/%s: tenant %s is not in %s: its %zu keys set by policy set wait for it (sbxctl policy "
                                   "reset drops them)",
                                   d->cfg->state_dir, POLICY_FILE, tn, d->cfg->path, json_object_size(keys));
        /* keys policy.set gave before: in force from the start */
        r = daemon_reload(d, "start", NULL, err);
        if (r < 0)
                return sbx_error_wrap(err, "%s/%s (the keys policy.set gave; fix the configuration file or remove them "
                                             "from that file)", d->cfg->state_dir, POLICY_FILE);
        return 0;
}
