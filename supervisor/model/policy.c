/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "netpolicy.h"
#include "policy.h"
#include "profile.h"
#include "util.h"

bool policy_allows_profile(const struct tenant *t, const char *name) {
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

/* What a job gets when it does not ask: the default, or the cap when it is
 * lower; nothing when the tenant has no cap at all ("unlimited"). */
static uint64_t capped_default(uint64_t cap, uint64_t dflt) {
        if (cap == CONFIG_UNSET)
                return PROTO_UNSET;
        return cap < dflt ? cap : dflt;
}

/* A restricted job: a daemon that can enforce it, hostname entries only
 * where the DNS proxy has a resolver, each within the tenant's network_allow, and
 * room for the tenant's deny-ports beside its own. */
static int restricted(const struct tenant *t, const struct run_request *run, const struct daemon_caps *caps,
                      struct policy_decision *d, struct sbx_error *err) {
        const struct netpolicy *np = run->netpol;
        if (!caps || !caps->net_restricted) {
                d->code = E_UNSUPPORTED;
                return sbx_error_msg(err, EPERM, "field 'network': this daemon cannot run restricted jobs (%s)",
                                     caps && caps->no_restricted_why ? caps->no_restricted_why : "no eBPF network policy");
        }
        if (!np) {
                d->code = E_INTERNAL;
                return sbx_error_msg(err, EINVAL, "field 'network': restricted without its policy");
        }
        if (netpolicy_has_hosts(np) && !caps->dns_proxy) {
                d->code = E_UNSUPPORTED;
                return sbx_error_msg(err, EPERM, "field 'network.allow': hostname entries need the DNS proxy, which this daemon cannot run (%s)",
                                     caps->no_dns_why ? caps->no_dns_why : "no upstream resolver");
        }
        if (netpolicy_check_caps(np, t->net_allow, t->n_net_allow, t->name, err) < 0) {
                d->code = E_FORBIDDEN;
                return -EPERM;
        }
        /* the programs deny these whatever the entry says: an entry that
         * names only them (the gateway, 169.254.169.254) is a mistake or
         * an attempt, said at once */
        if (netdeny_check_policy(caps->net_deny, np, err) < 0) {
                d->code = E_FORBIDDEN;
                return -EPERM;
        }
        if (np->n_deny + t->n_net_deny > NETPOLICY_MAX_DENY) {
                d->code = E_LIMIT;
                return sbx_error_msg(err, EPERM, "field 'network.deny_ports': %zu entries and tenant '%s''s %zu are more than %d", np->n_deny,
                                     t->name, t->n_net_deny, NETPOLICY_MAX_DENY);
        }
        return 0;
}

int policy_apply(const struct tenant *t, const struct run_request *run, const struct daemon_caps *caps,
                 struct policy_decision *d, struct sbx_error *err) {
        int r;
        memset(d, 0, sizeof(*d));

        const char *prof = run->profile ? run->profile : t->default_profile ? t->default_profile : "default";
        if (!policy_allows_profile(t, prof)) {
                d->code = E_FORBIDDEN;
                return sbx_error_msg(err, EPERM, "field 'profile': tenant '%s' may not use profile '%s'", t->name, prof);
        }
        snprintf(d->profile, sizeof(d->profile), "%s", prof);

        /* The limits that the job could not run sensibly without are always
         * set: a timeout, and output kept per stream. */
        r = cap_value(t, d, "timeout_ms", run->timeout_ms, t->max_timeout_ms, t->default_timeout_ms, &d->timeout_ms, err);
        if (r < 0)
                return r;
        r = cap_value(t, d, "limits.memory", run->memory, t->max_memory, capped_default(t->max_memory, POLICY_MEMORY_DEFAULT),
                      &d->memory, err);
        if (r < 0)
                return r;
        r = cap_value(t, d, "limits.processes", run->processes, t->max_processes,
                      capped_default(t->max_processes, POLICY_PROCESSES_DEFAULT), &d->processes, err);
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

        uint64_t disk_default = t->max_disk != CONFIG_UNSET && t->max_disk < POLICY_DISK_DEFAULT ? t->max_disk : POLICY_DISK_DEFAULT;
        r = cap_value(t, d, "limits.disk", run->disk, t->max_disk, disk_default, &d->disk, err);
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
                                     proto_net_mode_name(d->net));
        }

        if (d->net == NET_RESTRICTED && (r = restricted(t, run, caps, d, err)) < 0)
                return r;

        /* An audit asked for is an audit done, or a refusal: never a job
         * that runs unrecorded. */
        d->net_audit = run->net_audit || d->net == NET_RESTRICTED;
        if (d->net_audit && !(caps && caps->net_audit)) {
                d->code = E_UNSUPPORTED;
                return sbx_error_msg(err, EPERM, "field 'network.audit': this daemon cannot audit network use (%s)",
                                     caps && caps->no_net_audit_why ? caps->no_net_audit_why : "no eBPF network audit");
        }

        /* Asked for and impossible here: refused, not quietly ignored. (A
         * tenant's max_cpus alone still runs, recorded as not enforced; the
         * daemon warned at start.) */
        if (run->cpu_milli != PROTO_UNSET && !(caps && caps->cpu_bandwidth)) {
                d->code = E_LIMIT;
                return sbx_error_msg(err, EPERM, "field 'limits.cpus': this daemon cannot enforce CPU bandwidth (%s)",
                                     caps && caps->no_cpu_why ? caps->no_cpu_why : "no cgroup cpu controller");
        }
        return 0;
}

static json_t *u64_json(uint64_t v) {
        return v == PROTO_UNSET ? json_null() : json_integer((json_int_t) v);
}

json_t *policy_to_json(const struct policy_decision *d) {
        return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:b, s:s}", "profile", d->profile, "timeout_ms",
                         u64_json(d->timeout_ms), "memory", u64_json(d->memory), "processes", u64_json(d->processes), "cpu_s",
                         u64_json(d->cpu_s), "cpu_milli", u64_json(d->cpu_milli), "output", u64_json(d->output), "disk", u64_json(d->disk), "artifacts",
                         u64_json(d->artifacts), "net", proto_net_mode_name(d->net), "net_audit",
                         d->net_audit, "clamped", d->clamped);
}

static uint64_t u64_of(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t) json_integer_value(v) : PROTO_UNSET;
}

int policy_from_json(json_t *o, struct policy_decision *d) {
        memset(d, 0, sizeof(*d));
        const char *profile = json_string_value(json_object_get(o, "profile"));
        const char *net = json_string_value(json_object_get(o, "net"));
        const char *clamped = json_string_value(json_object_get(o, "clamped"));
        if (!json_is_object(o) || !profile)
                return -EINVAL;
        snprintf(d->profile, sizeof(d->profile), "%s", profile);
        d->timeout_ms = u64_of(o, "timeout_ms");
        d->memory = u64_of(o, "memory");
        d->processes = u64_of(o, "processes");
        d->cpu_s = u64_of(o, "cpu_s");
        d->cpu_milli = u64_of(o, "cpu_milli");
        d->output = u64_of(o, "output");
        d->disk = u64_of(o, "disk");
        d->artifacts = u64_of(o, "artifacts");
        d->net = net && streq(net, "host") ? NET_HOST : net && streq(net, "restricted") ? NET_RESTRICTED : NET_NONE;
        d->net_audit = json_is_true(json_object_get(o, "net_audit"));
        snprintf(d->clamped, sizeof(d->clamped), "%s", clamped ? clamped : "");
        return 0;
}
