/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "profile.h"
#include "tenant.h"

struct tenant *tenant_lookup(struct config *c, uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups) {
        for (size_t i = 0; i < c->n_tenants; i++)
                for (size_t j = 0; j < c->tenants[i].n_uids; j++)
                        if (c->tenants[i].uids[j] == uid)
                                return &c->tenants[i];
        for (size_t i = 0; i < c->n_tenants; i++)
                for (size_t j = 0; j < c->tenants[i].n_gids; j++) {
                        gid_t g = c->tenants[i].gids[j];
                        if (g == gid)
                                return &c->tenants[i];
                        for (size_t k = 0; k < n_groups; k++)
                                if (groups[k] == g)
                                        return &c->tenants[i];
                }
        return NULL;
}

bool tenant_allows_profile(const struct tenant *t, const char *name) {
        for (size_t i = 0; i < t->n_profiles; i++)
                if (streq(t->profiles[i], "*") || streq(t->profiles[i], name))
                        return true;
        return false;
}

/* How a value is said in messages: most are plain numbers; CPU bandwidth
 * is kept in thousandths of a CPU and said in CPUs ("1.5"). */
typedef const char *(*value_fmt)(uint64_t v, char *buf, size_t len);

static const char *plain_str(uint64_t v, char *buf, size_t len) {
        snprintf(buf, len, "%" PRIu64, v);
        return buf;
}

static const char *cpus_str(uint64_t milli, char *buf, size_t len) {
        snprintf(buf, len, "%" PRIu64 ".%03" PRIu64, milli / 1000, milli % 1000);
        char *e = buf + strlen(buf) - 1;
        while (*e == '0')
                *e-- = '\0';
        if (*e == '.')
                *e = '\0';
        return buf;
}

/* One capped value: not asked → the default; above the cap → refuse or clamp. */
static int cap_value_fmt(const struct tenant *t, struct policy_decision *d, const char *what, uint64_t asked, uint64_t cap,
                         uint64_t dflt, uint64_t *out, value_fmt fmt, struct sbx_error *err) {
        char a[32], c[32];
        if (asked == PROTO_UNSET) {
                *out = dflt;
                return 0;
        }
        if (cap != CONFIG_UNSET && asked > cap) {
                if (t->over_limit == OVER_LIMIT_CLAMP) {
                        size_t l = strlen(d->clamped);
                        snprintf(d->clamped + l, sizeof(d->clamped) - l, "%s%s %s -> %s", l ? "; " : "", what,
                                 fmt(asked, a, sizeof(a)), fmt(cap, c, sizeof(c)));
                        *out = cap;
                        return 0;
                }
                d->code = E_LIMIT;
                return sbx_error_msg(err, EPERM, "field '%s': %s is above tenant '%s''s cap of %s", what, fmt(asked, a, sizeof(a)),
                                     t->name, fmt(cap, c, sizeof(c)));
        }
        *out = asked;
        return 0;
}

static int cap_value(const struct tenant *t, struct policy_decision *d, const char *what, uint64_t asked, uint64_t cap,
                     uint64_t dflt, uint64_t *out, struct sbx_error *err) {
        return cap_value_fmt(t, d, what, asked, cap, dflt, out, plain_str, err);
}

int policy_apply(const struct tenant *t, const struct run_request *run, struct policy_decision *d, struct sbx_error *err) {
        int r;
        memset(d, 0, sizeof(*d));

        const char *prof = run->profile ? run->profile : t->default_profile ? t->default_profile : "default";
        if (!tenant_allows_profile(t, prof)) {
                d->code = E_FORBIDDEN;
                return sbx_error_msg(err, EPERM, "field 'profile': tenant '%s' may not use profile '%s'", t->name, prof);
        }
        snprintf(d->profile, sizeof(d->profile), "%s", prof);

        /* The limits that the job could not run sensibly without are always
         * set: a timeout, and output kept per stream. */
        r = cap_value(t, d, "timeout_ms", run->timeout_ms, t->max_timeout_ms, t->default_timeout_ms, &d->timeout_ms, err);
        if (r < 0)
                return r;
        r = cap_value(t, d, "limits.memory", run->memory, t->max_memory, t->max_memory == CONFIG_UNSET ? PROTO_UNSET : t->max_memory,
                      &d->memory, err);
        if (r < 0)
                return r;
        r = cap_value(t, d, "limits.processes", run->processes, t->max_processes,
                      t->max_processes == CONFIG_UNSET ? PROTO_UNSET : t->max_processes, &d->processes, err);
        if (r < 0)
                return r;
        r = cap_value(t, d, "limits.cpu_s", run->cpu_s, t->max_cpu_s, t->max_cpu_s == CONFIG_UNSET ? PROTO_UNSET : t->max_cpu_s,
                      &d->cpu_s, err);
        if (r < 0)
                return r;
        r = cap_value_fmt(t, d, "limits.cpus", run->cpu_milli, t->max_cpu_milli,
                          t->max_cpu_milli == CONFIG_UNSET ? PROTO_UNSET : t->max_cpu_milli, &d->cpu_milli, cpus_str, err);
        if (r < 0)
                return r;
        r = cap_value(t, d, "limits.output", run->output, t->max_output, t->max_output == CONFIG_UNSET ? (16u << 20) : t->max_output,
                      &d->output, err);
        if (r < 0)
                return r;

        /* Uploads cannot be clamped without changing what the job sees. */
        if (t->max_upload != CONFIG_UNSET && run->upload_bytes > t->max_upload) {
                d->code = E_LIMIT;
                return sbx_error_msg(err, EPERM, "field 'files': %zu bytes is above tenant '%s''s cap of %" PRIu64, run->upload_bytes,
                                     t->name, t->max_upload);
        }
        d->artifacts = t->max_artifacts == CONFIG_UNSET ? (1ull << 40) : t->max_artifacts;

        d->net = run->net < 0 ? NET_NONE : run->net;
        if (!(t->net_modes & NET_MODE_BIT(d->net))) {
                d->code = E_FORBIDDEN;
                return sbx_error_msg(err, EPERM, "field 'network': tenant '%s' may not use network mode '%s'", t->name,
                                     d->net == NET_HOST ? "host" : "none");
        }
        return 0;
}
