/* SPDX-License-Identifier: Apache-2.0 */
/* secret.set, secret.ls and secret.rm: the values of tenants' secrets,
 * kept in STATE/secrets (store/secret-store.c). Setting and removing are an
 * admin's; a tenant may list its own. A value is never sent back, logged
 * or audited: the audit line names the tenant, the secret and who. */
#include <errno.h>
#include <string.h>

#include "audit.h"
#include "conn.h"
#include "daemon.h"
#include "log.h"
#include "policy-ops.h"
#include "proto.h"
#include "secret-store.h"
#include "tenant.h"
#include "util.h"

static void refuse(struct conn *c, struct request *req, const char *code, const char *msg) {
        audit_request(c, req_op_name(req->op), "refused", NULL, code, msg, true);
        conn_send(c, proto_error(req->tag, code, "%s", msg));
}

/* The grant of the secret in the tenant's policy now, for the answer. */
static json_t *granted(const struct tenant *t, const char *name) {
        const struct secret_grant *g = t ? tenant_secret(t, name) : NULL;
        return g ? json_string(secret_mode_name(g->mode)) : json_null();
}

static void op_list(struct conn *c, struct request *req) {
        struct daemon *d = c->d;
        const char *tn = req->tenant ? req->tenant : c->tenant->name;
        if (!policy_caller_admin(c) && !streq(tn, c->tenant->name)) {
                char msg[160];
                snprintf(msg, sizeof(msg), "only an admin may list another tenant's secrets ('%s')", tn);
                return refuse(c, req, E_FORBIDDEN, msg);
        }
        json_t *list = secret_store_list(d->dirs.state_fd, tn);
        if (!list) {
                conn_send(c, proto_error(req->tag, E_STORAGE, "%s/%s/%s: %s", d->cfg->state_dir, SECRETS_DIR, tn,
                                         strerror(errno)));
                return;
        }
        const struct tenant *t = tenant_find(d->cfg, tn);
        size_t i;
        json_t *e;
        json_array_foreach (list, i, e)
                json_object_set_new(e, "granted", granted(t, json_string_value(json_object_get(e, "name"))));
        /* granted secrets without a value: a job that asks for one is refused */
        for (size_t k = 0; t && k < t->n_secrets; k++)
                if (!secret_store_has(d->dirs.state_fd, tn, t->secrets[k].name))
                        json_array_append_new(list, json_pack("{s:s, s:n, s:n, s:s}", "name", t->secrets[k].name, "bytes",
                                                              "updated_ms", "granted", secret_mode_name(t->secrets[k].mode)));
        conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:o}", "tenant", tn, "secrets", list)));
}

static void op_change(struct conn *c, struct request *req, const char *by) {
        struct daemon *d = c->d;
        int r;
        if (req->op == REQ_SECRET_SET)
                r = secret_store_set(d->dirs.state_fd, req->tenant, req->name, req->value, req->value_len);
        else
                r = secret_store_rm(d->dirs.state_fd, req->tenant, req->name);
        if (r == -ENOENT && req->op == REQ_SECRET_RM) {
                char msg[200];
                snprintf(msg, sizeof(msg), "tenant '%s' has no secret '%s'", req->tenant, req->name);
                return refuse(c, req, E_NOT_FOUND, msg);
        }
        if (r < 0) {
                log_error("%s (%s) of %s/%s not made: %s", req_op_name(req->op), by, req->tenant, req->name, strerror(-r));
                conn_send(c, proto_error(req->tag, E_STORAGE, "cannot write %s/%s/%s: %s; nothing changed", d->cfg->state_dir,
                                         SECRETS_DIR, req->tenant, strerror(-r)));
                return;
        }
        bool set = req->op == REQ_SECRET_SET;
        audit_write_deferred(json_pack("{s:s, s:s, s:s, s:s}", "event", set ? "secret_set" : "secret_rm", "by", by, "tenant",
                                       req->tenant, "name", req->name));
        log_notice("%s (%s): tenant %s, secret %s", req_op_name(req->op), by, req->tenant, req->name);
        const struct tenant *t = tenant_find(d->cfg, req->tenant);
        json_t *o = json_pack("{s:s, s:s, s:o}", "tenant", req->tenant, "name", req->name, "granted", granted(t, req->name));
        if (set)
                json_object_set_new(o, "bytes", json_integer((json_int_t) req->value_len));
        conn_send(c, proto_ok(req->tag, json_pack("{s:o}", "secret", o)));
}

void secret_op(struct conn *c, struct request *req, const char *by) {
        if (req->op == REQ_SECRET_LIST)
                return op_list(c, req);
        if (!policy_caller_admin(c)) {
                char msg[160];
                snprintf(msg, sizeof(msg), "%s: only an admin may (root, the admins key, a token of scope admin)",
                         req_op_name(req->op));
                return refuse(c, req, E_FORBIDDEN, msg);
        }
        audit_request(c, req_op_name(req->op), "accepted", NULL, NULL, NULL, false);
        op_change(c, req, by);
}
