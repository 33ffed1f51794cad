/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grant.h"
#include "netpolicy.h"
#include "profile.h"
#include "util.h"

static int refuse(struct policy_decision *d, const char *code, struct sbx_error *err, const char *fmt, ...) _printf_(4, 5);

static int refuse(struct policy_decision *d, const char *code, struct sbx_error *err, const char *fmt, ...) {
        char msg[SBX_ERROR_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        d->code = code;
        return sbx_error_msg(err, EPERM, "%s", msg);
}

/* The caller may lower what the bundle declares, not raise it; what it
 * leaves out is the manifest's value (or, undeclared, the tenant's
 * default). */
static int within(const struct manifest *m, struct policy_decision *d, const char *field, uint64_t asked, uint64_t declared,
                  uint64_t *out, struct sbx_error *err) {
        if (asked == PROTO_UNSET) {
                *out = declared == MANIFEST_UNSET ? PROTO_UNSET : declared;
                return 0;
        }
        if (declared != MANIFEST_UNSET && asked > declared)
                return refuse(d, E_LIMIT, err, "field '%s': %" PRIu64 " is above what bundle %s declares (%" PRIu64 ")", field,
                              asked, m->name, declared);
        *out = asked;
        return 0;
}

static int check_env(const struct manifest *m, const struct run_request *run, struct policy_decision *d,
                     struct sbx_error *err) {
        for (size_t i = 0; i < run->n_env; i++) {
                bool declared = false;
                for (size_t k = 0; k < m->n_env && !declared; k++)
                        declared = streq(m->env[k], run->env[i].name);
                if (!declared)
                        return refuse(d, E_FORBIDDEN, err,
                                      "field 'env.%s': bundle %s does not declare this variable (capabilities.env)",
                                      run->env[i].name, m->name);
        }
        return 0;
}

/* A restricted bundle's connect endpoints as allow entries: HOST:PORT over
 * TCP each, judged against the tenant's network_allow like a request's. */
static int connect_policy(const struct manifest *m, struct netpolicy **ret, struct policy_decision *d, struct sbx_error *err) {
        struct netpolicy *np = calloc(1, sizeof(*np));
        if (!np)
                return refuse(d, E_INTERNAL, err, "out of memory");
        for (size_t i = 0; i < m->n_connect; i++) {
                char text[300];
                const struct manifest_endpoint *c = &m->connect[i];
                snprintf(text, sizeof(text), strchr(c->host, ':') ? "[%s]:%u/tcp" : "%s:%u/tcp", c->host, (unsigned) c->port);
                if (np->n_allow >= NETPOLICY_MAX_ALLOW || netpolicy_parse_allow(text, &np->allow[np->n_allow], err) < 0) {
                        free(np);
                        return refuse(d, E_BUNDLE_INVALID, err, "bundle %s: capabilities.connect '%s' cannot be granted", m->name, text);
                }
                np->n_allow++;
        }
        *ret = np;
        return 0;
}

int grant_bundle(const struct tenant *t, const struct manifest *m, const struct run_request *run,
                 const struct daemon_caps *caps, struct policy_decision *d, unsigned *ret_ro_paths, struct netpolicy **ret_netpol,
                 struct sbx_error *err) {
        int r;
        memset(d, 0, sizeof(*d));
        *ret_netpol = NULL;
        unsigned beyond = m->ro_paths & ~t->bundle_paths;
        for (size_t i = 0; beyond && i < manifest_paths_count(); i++)
                if (beyond & MANIFEST_PATH_BIT(i))
                        return refuse(d, E_FORBIDDEN, err,
                                      "bundle %s declares read-only = %s, which tenant '%s' does not allow (bundle_paths)",
                                      m->name, manifest_path_name(i), t->name);
        if ((r = check_env(m, run, d, err)) < 0)
                return r;

        /* The request the tenant's policy then judges, as if the caller
         * had asked for the manifest's profile and limits. */
        struct run_request asked = *run;
        asked.profile = m->profile;
        asked.net = NET_NONE;
        _cleanup_free_ struct netpolicy *np = NULL;
        if (m->net == MANIFEST_NET_RESTRICTED) {
                if ((r = connect_policy(m, &np, d, err)) < 0)
                        return r;
                asked.net = NET_RESTRICTED;
                asked.net_audit = true;
                asked.netpol = np;
        }
        if ((r = within(m, d, "timeout_ms", run->timeout_ms, m->timeout_ms, &asked.timeout_ms, err)) < 0 ||
            (r = within(m, d, "limits.memory", run->memory, m->memory, &asked.memory, err)) < 0 ||
            (r = within(m, d, "limits.processes", run->processes, m->processes, &asked.processes, err)) < 0 ||
            (r = within(m, d, "limits.cpu_s", run->cpu_s, m->cpu_s, &asked.cpu_s, err)) < 0 ||
            (r = within(m, d, "limits.output", run->output, m->output, &asked.output, err)) < 0)
                return r;
        r = policy_apply(t, &asked, caps, d, err);
        if (r < 0)
                return sbx_error_wrap(err, "bundle %s", m->name);
        *ret_ro_paths = m->ro_paths;
        *ret_netpol = TAKE_PTR(np);
        return 0;
}
