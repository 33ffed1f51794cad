/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "launch-abi.h"
#include "netevents.h"
#include "record.h"

static json_t *limit_json(uint64_t value, const char *by) {
        if (value == PROTO_UNSET)
                return json_pack("{s:n, s:n}", "value", "by");
        return json_pack("{s:I, s:s}", "value", (json_int_t) value, "by", by);
}

/* CPU bandwidth has no rlimit: without the cgroup cpu controller it is
 * recorded as not enforced. */
static json_t *cpus_json(uint64_t milli, bool enforced) {
        if (milli == PROTO_UNSET)
                return json_pack("{s:n, s:n}", "value", "by");
        return json_pack("{s:f, s:s}", "value", (double) milli / 1000.0, "by", enforced ? "cgroup" : "none");
}

/* Which mechanism enforced each limit: the daemon's own timer for the wall
 * clock and the output, the job cgroup where its controller is enabled
 * (CPU time: its cpu.stat, which every cgroup has, summed over all the
 * job's processes), otherwise the launcher's rlimits (per process). */
/* What a memory limit kept by rlimits covers, and what not: said, so that
 * nobody reads it as the whole job's memory. */
#define MEMORY_RLIMIT_COVERS \
        "the address space of each process (RLIMIT_AS); memfd_create refused; not the job as a whole, nor its tmpfs mounts, which have sizes of their own"

static json_t *memory_json(uint64_t value, bool cgroup) {
        json_t *o = limit_json(value, cgroup ? "cgroup" : "rlimit");
        if (o && value != PROTO_UNSET && !cgroup)
                json_object_set_new(o, "covers", json_string(MEMORY_RLIMIT_COVERS));
        return o;
}

static json_t *limits_json(const struct policy_decision *pol, unsigned cg, bool cgroup, bool disk_quota) {
        const char *rl = "rlimit";
        return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "timeout_ms", limit_json(pol->timeout_ms, "supervisor"),
                         "memory", memory_json(pol->memory, cg & CG_LIMIT_MEMORY), "processes",
                         limit_json(pol->processes, cg & CG_LIMIT_PIDS ? "cgroup" : rl), "cpu_s", limit_json(pol->cpu_s, cgroup ? "cgroup" : rl),
                         "cpus", cpus_json(pol->cpu_milli, cg & CG_LIMIT_CPU), "output", limit_json(pol->output, "supervisor"),
                         "disk", limit_json(pol->disk, disk_quota ? "tmpfs" : "none"));
}

static json_t *stream_json(const struct record_input *in, int i) {
        char path[4200];
        const struct record_stream *s = &in->out[i];
        snprintf(path, sizeof(path), "%s/%s/%s", in->results_path, in->j->id, proto_stream_name(i));
        json_t *o = json_pack("{s:I, s:I, s:b, s:s}", "size", (json_int_t) s->kept, "produced",
                              (json_int_t) (s->produced > s->kept ? s->produced : s->kept), "truncated", s->truncated, "path",
                              path);
        /* Kept short of the cap because the disk refused it: say so, not
         * "truncated" alone. */
        if (o && s->write_err < 0)
                json_object_set_new(o, "error", json_string(strerror(-s->write_err)));
        return o;
}

static json_t *int_or_null(int v, int floor) {
        return v >= floor ? json_integer(v) : json_null();
}

json_t *record_command(const struct job *j) {
        const struct job_bundle *b = &j->bundle;
        json_t *a = json_array();
        for (size_t i = 0; a && i < b->n_command; i++)
                json_array_append_new(a, json_string(b->command[i]) ?: json_string("?"));
        for (size_t i = 0; a && i < j->req.run.argc; i++)
                json_array_append_new(a, json_string(j->req.run.argv[i]) ?: json_string("?"));
        return a;
}

static json_t *str_or_null(const char *s) {
        return s && *s ? json_string(s) : json_null();
}

json_t *record_bundle(const struct job_bundle *b) {
        char ref[160];
        if (!b->set)
                return json_null();
        bool resolved = b->sha256[0] != '\0';
        bundle_ref_str(&b->ref, ref, sizeof(ref));
        json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:b, s:{s:I, s:I, s:I, s:I}}", "name", b->ref.name, "ref",
                              ref, "registry", str_or_null(b->registry), "version", str_or_null(b->version), "sha256",
                              str_or_null(b->sha256), "source",
                              resolved ? json_string(b->from_cache ? "cache" : "registry") : json_null(), "serial",
                              b->serial ? json_integer((json_int_t) b->serial) : json_null(), "stale", b->stale, "time_us",
                              "resolve", (json_int_t) b->resolve_us, "download", (json_int_t) b->download_us, "verify",
                              (json_int_t) b->verify_us, "extract", (json_int_t) b->extract_us);
        if (o && b->stale && b->stale_why)
                json_object_set_new(o, "stale_reason", json_string(b->stale_why));
        return o;
}

static uint64_t u64_member(json_t *o, const char *k) {
        json_t *v = json_object_get(o, k);
        return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t) json_integer_value(v) : 0;
}

void record_bundle_restore(json_t *o, struct job_bundle *b) {
        const char *v = json_string_value(json_object_get(o, "version"));
        const char *sha = json_string_value(json_object_get(o, "sha256"));
        const char *src = json_string_value(json_object_get(o, "source"));
        const char *why = json_string_value(json_object_get(o, "stale_reason"));
        json_t *t = json_object_get(o, "time_us");
        if (!json_is_object(o))
                return;
        if (v && semver_valid(v))
                snprintf(b->version, sizeof(b->version), "%s", v);
        if (sha && sha256_hex_valid(sha))
                snprintf(b->sha256, sizeof(b->sha256), "%s", sha);
        b->from_cache = src && streq(src, "cache");
        b->stale = json_is_true(json_object_get(o, "stale"));
        if (why && !b->stale_why)
                b->stale_why = strdup(why);
        b->serial = u64_member(o, "serial");
        b->resolve_us = u64_member(t, "resolve");
        b->download_us = u64_member(t, "download");
        b->verify_us = u64_member(t, "verify");
        b->extract_us = u64_member(t, "extract");
}

json_t *record_build(const struct record_input *in) {
        const struct job *j = in->j;
        json_t *end = in->launcher_end;
        /* A job that never started never had a uid: null, not 0. */
        json_t *rec = json_pack("{s:i, s:s, s:s, s:I, s:o, s:o, s:o, s:s, s:s}", "v", PROTO_VERSION, "job", j->id, "tenant",
                                in->tenant, "uid", (json_int_t) j->caller_uid, "job_uid",
                                in->job_uid ? json_integer((json_int_t) in->job_uid) : json_null(), "job_gid",
                                in->job_uid ? json_integer((json_int_t) in->job_gid) : json_null(), "command",
                                record_command(j), "profile", j->pol.profile, "state", job_outcome_name(j->outcome));
        if (!rec)
                return NULL;
        json_object_set_new(rec, "exit_code", int_or_null(j->exit_code, 0));
        json_object_set_new(rec, "signal", int_or_null(j->term_signal, 1));
        json_object_set_new(rec, "timed_out", json_boolean(j->timed_out));
        json_object_set_new(rec, "cancelled", json_boolean(j->cancelled));
        if (j->error_code)
                json_object_set_new(rec, "error", json_pack("{s:s, s:s}", "code", j->error_code, "message",
                                                            j->error_message ? j->error_message : ""));
        else
                json_object_set_new(rec, "error", json_null());
        json_object_set_new(rec, "attempt", json_integer(j->attempt));
        json_object_set_new(rec, "created", proto_time(j->created_ms));
        json_object_set_new(rec, "started", proto_time(j->started_ms));
        json_object_set_new(rec, "ended", proto_time(j->ended_ms));
        uint64_t wall = j->started_ms && j->ended_ms >= j->started_ms ? j->ended_ms - j->started_ms : 0;
        json_object_set_new(rec, "wall_ms", json_integer((json_int_t) wall));
        json_t *cpu = end ? json_object_get(end, SBX_STATUS_CPU_MS) : NULL;
        if (in->cgroup_cpu_us >= 0)
                json_object_set_new(rec, "cpu_ms", json_integer((json_int_t) (in->cgroup_cpu_us / 1000)));
        else
                json_object_set_new(rec, "cpu_ms", cpu ? json_incref(cpu) : json_null());
        json_t *rss = end ? json_object_get(end, SBX_STATUS_PEAK_RSS_KB) : NULL;
        json_object_set_new(rec, "peak_rss_kb", rss ? json_incref(rss) : json_null());
        for (int i = 0; i < 2; i++)
                json_object_set_new(rec, proto_stream_name(i), stream_json(in, i));
        json_object_set_new(rec, "artifacts", in->artifacts ? json_incref(in->artifacts) : json_array());
        json_object_set_new(rec, "artifacts_truncated", json_boolean(in->artifacts_truncated));
        if (in->artifacts_error)
                json_object_set_new(rec, "artifacts_error", json_string(in->artifacts_error));
        json_object_set_new(rec, "value", in->value ? json_incref(in->value) : json_null());
        if (in->value_error)
                json_object_set_new(rec, "value_error", json_string(in->value_error));
        json_object_set_new(rec, "limits", limits_json(&j->pol, in->cg_limits, in->cgroup, in->disk_quota));
        json_object_set_new(rec, "limit_hit", in->limit_hit ? json_incref(in->limit_hit) : json_null());
        if (in->secrets)
                json_object_set_new(rec, "secrets", json_incref(in->secrets));
        if (in->deps)
                json_object_set_new(rec, "dependencies", json_incref(in->deps));
        json_object_set_new(rec, "cgroup", json_boolean(in->cgroup));
        json_object_set_new(rec, "warm", json_boolean(in->warm));
        if (in->session) {
                json_t *s = json_pack("{s:s, s:s}", "id", in->session, "role", in->session_role ? in->session_role : "exec");
                if (s && in->session_end)
                        json_object_set_new(s, "ended", json_string(in->session_end));
                json_object_set_new(rec, "session", s);
        }
        json_object_set_new(rec, "workspace", json_pack("{s:s, s:b, s:b}", "storage", in->disk_quota ? "tmpfs" : "directory", "noswap",
                                                        in->disk_quota && in->ws_noswap, "encrypted",
                                                        !in->disk_quota && in->ws_encrypted));
        json_t *prot = end ? json_object_get(end, SBX_STATUS_PROTECTIONS) : NULL;
        if (!prot)
                prot = in->start_prot;
        json_object_set_new(rec, "protections", prot ? json_incref(prot) : json_null());
        const struct netevents *ne = in->net;
        json_object_set_new(rec, "network_events", ne && ne->list ? json_incref(ne->list) : json_array());
        json_object_set_new(rec, "network", netevents_summary(ne, j->pol.net, j->pol.net_audit));
        json_object_set_new(rec, "bundle", record_bundle(&j->bundle));
        json_object_set_new(rec, "idempotency_key",
                            j->req.run.idempotency_key ? json_string(j->req.run.idempotency_key) : json_null());
        json_object_set_new(rec, "request_sha256", in->req_digest ? json_string(in->req_digest) : json_null());
        if (j->pol.clamped[0])
                json_object_set_new(rec, "clamped", json_string(j->pol.clamped));
        const char *cb = j->req.run.callback;
        json_object_set_new(rec, "callback", cb && in->cb_delivery ? json_pack("{s:s, s:s}", "url", cb, "delivery", in->cb_delivery)
                                                                    : json_null());
        /* W3C trace context: null for jobs accepted before the daemon
         * kept one. */
        const char *tp = j->req.run.traceparent;
        json_object_set_new(rec, "traceparent", tp ? json_string(tp) : json_null());
        json_object_set_new(rec, "trace_id", tp ? json_stringn(tp + 3, 32) : json_null());
        return rec;
}
