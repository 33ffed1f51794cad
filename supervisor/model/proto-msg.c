/* SPDX-License-Identifier: Apache-2.0 */
/* The messages the daemon sends: replies, events, job summaries, and the
 * digests that identify a request. */
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "profile.h"
#include "netpolicy.h"
#include "proto.h"
#include "util.h"

const char *proto_stream_name(int i) {
        return i == 0 ? "stdout" : "stderr";
}

unsigned proto_stream_bit(int i) {
        return i == 0 ? STREAM_STDOUT : STREAM_STDERR;
}

json_t *proto_time(uint64_t real_ms) {
        char ts[64];
        return real_ms ? json_string(format_rfc3339(real_ms, ts, sizeof(ts))) : json_null();
}

json_t *proto_argv(const struct run_request *run) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < run->argc; i++)
                json_array_append_new(a, json_string(run->argv[i]) ?: json_string("?"));
        return a;
}

static json_t *event(const char *name, const char *job) {
        return json_pack("{s:i, s:s, s:s}", "v", PROTO_VERSION, "event", name, "job", job);
}

json_t *proto_ev_started(const char *job) {
        return event("started", job);
}

const char *proto_net_mode_name(int mode) {
        return mode == NET_HOST ? "host" : mode == NET_RESTRICTED ? "restricted" : "none";
}

json_t *proto_ev_network(const char *job, json_t *net_event) {
        json_t *ev = event("network", job);
        if (ev && json_object_update_missing(ev, net_event) < 0) {
                json_decref(ev);
                return NULL;
        }
        return ev;
}

json_t *proto_ev_output(const char *job, int stream, const char *data, size_t len) {
        json_t *ev = event("output", job);
        if (ev && (json_object_set_new(ev, "stream", json_string(proto_stream_name(stream))) < 0 ||
                   proto_set_data(ev, "data", data, len) < 0)) {
                json_decref(ev);
                return NULL;
        }
        return ev;
}

json_t *proto_ev_lagged(const char *job, int stream, uint64_t skipped) {
        json_t *ev = event("lagged", job);
        if (ev) {
                json_object_set_new(ev, "stream", json_string(proto_stream_name(stream)));
                json_object_set_new(ev, "skipped", json_integer((json_int_t) skipped));
        }
        return ev;
}

json_t *proto_ev_end(const char *job, json_t *rec) {
        json_t *ev = event("end", job);
        if (ev)
                json_object_set(ev, "result", rec ? rec : json_null());
        return ev;
}

json_t *proto_ev_error(const char *job, const char *code, const char *msg) {
        json_t *ev = event("error", job);
        if (ev)
                json_object_set_new(ev, "error", json_pack("{s:s, s:s}", "code", code, "message", msg));
        return ev;
}

json_t *proto_summary_live(const char *job, const char *tenant, const char *state, uint64_t created_ms,
                           uint64_t started_ms, const char *command) {
        return json_pack("{s:s, s:s, s:s, s:o, s:o, s:[s]}", "job", job, "tenant", tenant, "state", state, "created",
                         proto_time(created_ms), "started", proto_time(started_ms), "command", command);
}

json_t *proto_summary_done(const char *job, const char *tenant, const char *state, uint64_t created_ms,
                           uint64_t ended_ms, int exit_code) {
        return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "job", job, "tenant", tenant, "state", state, "created",
                         proto_time(created_ms), "ended", proto_time(ended_ms), "exit_code",
                         exit_code >= 0 ? json_integer(exit_code) : json_null());
}

static void set_u64(json_t *o, const char *key, uint64_t v) {
        if (v != PROTO_UNSET)
                json_object_set_new(o, key, json_integer((json_int_t) v));
}

json_t *proto_run_json(const struct run_request *run) {
        json_t *o = run->bundle ? json_pack("{s:i, s:s, s:s, s:o}", "v", PROTO_VERSION, "op", "run", "bundle", run->bundle, "args",
                                            proto_argv(run))
                                : json_pack("{s:i, s:s, s:o}", "v", PROTO_VERSION, "op", "run", "command", proto_argv(run));
        if (!o)
                return NULL;
        int r = 0;
        if (run->profile)
                r |= json_object_set_new(o, "profile", json_string(run->profile));
        if (run->n_env) {
                json_t *env = json_object();
                for (size_t i = 0; env && i < run->n_env; i++)
                        r |= json_object_set_new(env, run->env[i].name, json_string(run->env[i].value));
                r |= json_object_set_new(o, "env", env);
        }
        if (run->stdin_data)
                r |= proto_set_data(o, "stdin", (const char *) run->stdin_data, run->stdin_len);
        set_u64(o, "timeout_ms", run->timeout_ms);
        json_t *lim = json_object();
        if (lim) {
                set_u64(lim, "memory", run->memory);
                set_u64(lim, "processes", run->processes);
                set_u64(lim, "cpu_s", run->cpu_s);
                set_u64(lim, "output", run->output);
                set_u64(lim, "disk", run->disk);
                if (run->cpu_milli != PROTO_UNSET)
                        json_object_set_new(lim, "cpus", json_real((double) run->cpu_milli / 1000.0));
        }
        r |= json_object_set_new(o, "limits", lim);
        /* A request without audit keeps the string form: its digest (and
         * so its idempotency) is what it was before audit existed. */
        if (run->net_audit || run->netpol) {
                json_t *n = json_pack("{s:s, s:b}", "mode", proto_net_mode_name(run->net), "audit", run->net_audit);
                if (n && run->netpol) {
                        json_t *allow = json_array(), *deny = json_array();
                        char buf[320];
                        for (size_t i = 0; i < run->netpol->n_allow; i++) {
                                netpolicy_format_allow(&run->netpol->allow[i], buf, sizeof(buf));
                                json_array_append_new(allow, json_string(buf));
                        }
                        for (size_t i = 0; i < run->netpol->n_deny; i++) {
                                netpolicy_format_ports(&run->netpol->deny[i], buf, sizeof(buf));
                                json_array_append_new(deny, json_string(buf));
                        }
                        json_object_set_new(n, "allow", allow);
                        json_object_set_new(n, "deny_ports", deny);
                }
                r |= json_object_set_new(o, "network", n);
        } else if (run->net >= 0)
                r |= json_object_set_new(o, "network", json_string(proto_net_mode_name(run->net)));
        if (run->n_files) {
                json_t *files = json_array();
                for (size_t i = 0; files && i < run->n_files; i++) {
                        const struct upload *u = &run->files[i];
                        json_t *f = json_pack("{s:s, s:i}", "path", u->path, "mode", (int) u->mode);
                        if (!f || proto_set_data(f, "data", (const char *) u->data, u->len) < 0)
                                r = -1;
                        r |= json_array_append_new(files, f);
                }
                r |= json_object_set_new(o, "files", files);
        }
        if (run->n_artifacts) {
                json_t *a = json_array();
                for (size_t i = 0; a && i < run->n_artifacts; i++)
                        r |= json_array_append_new(a, json_string(run->artifacts[i]));
                r |= json_object_set_new(o, "artifacts", a);
        }
        if (run->idempotency_key)
                r |= json_object_set_new(o, "idempotency_key", json_string(run->idempotency_key));
        if (run->retries)
                r |= json_object_set_new(o, "retries", json_integer(run->retries));
        /* Names only: the journal keeps what a restart needs to give the job
         * (or a session's execs) its secrets again, never a value. */
        if (run->n_secrets) {
                json_t *a = json_array();
                for (size_t i = 0; a && i < run->n_secrets; i++)
                        r |= json_array_append_new(a, json_string(run->secrets[i]));
                r |= json_object_set_new(o, "secrets", a);
        }
        if (run->n_pip) {
                json_t *a = json_array();
                for (size_t i = 0; a && i < run->n_pip; i++)
                        r |= json_array_append_new(a, json_string(run->pip[i]));
                r |= json_object_set_new(o, "pip", a);
        }
        if (run->n_npm) {
                json_t *a = json_array();
                for (size_t i = 0; a && i < run->n_npm; i++)
                        r |= json_array_append_new(a, json_string(run->npm[i]));
                r |= json_object_set_new(o, "npm", a);
        }
        /* Not in the request digest: a retry under another trace is still
         * the same job. */
        if (run->traceparent)
                r |= json_object_set_new(o, "traceparent", json_string(run->traceparent));
        if (run->callback)
                r |= json_object_set_new(o, "callback", json_string(run->callback));
        if (run->progress_s != PROTO_UNSET && run->progress_s > 0)
                r |= json_object_set_new(o, "progress", json_integer((json_int_t) run->progress_s));
        if (r) {
                json_decref(o);
                return NULL;
        }
        return o;
}

/* Each piece is hashed with its length first, so that moving bytes from
 * one piece to the next changes the digest. */
static void put(crypto_hash_sha256_state *h, const void *p, size_t len) {
        uint64_t n = len;
        crypto_hash_sha256_update(h, (const unsigned char *) &n, sizeof(n));
        if (len)
                crypto_hash_sha256_update(h, p, len);
}

static void put_str(crypto_hash_sha256_state *h, const char *s) {
        put(h, s ? s : "", s ? strlen(s) + 1 : 0);
}

static void put_u64(crypto_hash_sha256_state *h, uint64_t v) {
        crypto_hash_sha256_update(h, (const unsigned char *) &v, sizeof(v));
}

static void finish(crypto_hash_sha256_state *h, char hex[65]) {
        unsigned char d[crypto_hash_sha256_BYTES];
        crypto_hash_sha256_final(h, d);
        hex_encode(d, sizeof(d), hex);
}

static void hash_inputs(crypto_hash_sha256_state *h, const struct run_request *run) {
        if (run->bundle)
                crypto_hash_sha256_update(h, (const unsigned char *) run->bundle, strlen(run->bundle) + 1);
        for (size_t i = 0; i < run->argc; i++)
                crypto_hash_sha256_update(h, (const unsigned char *) run->argv[i], strlen(run->argv[i]) + 1);
        for (size_t i = 0; i < run->n_env; i++) {
                crypto_hash_sha256_update(h, (const unsigned char *) run->env[i].name, strlen(run->env[i].name) + 1);
                crypto_hash_sha256_update(h, (const unsigned char *) run->env[i].value, strlen(run->env[i].value) + 1);
        }
        if (run->stdin_data)
                crypto_hash_sha256_update(h, run->stdin_data, run->stdin_len);
        for (size_t i = 0; i < run->n_files; i++) {
                crypto_hash_sha256_update(h, (const unsigned char *) run->files[i].path, strlen(run->files[i].path) + 1);
                crypto_hash_sha256_update(h, run->files[i].data, run->files[i].len);
        }
}

void proto_inputs_digest(const struct run_request *run, char hex[65]) {
        crypto_hash_sha256_state h;
        crypto_hash_sha256_init(&h);
        hash_inputs(&h, run);
        finish(&h, hex);
}

void proto_request_digest(const struct run_request *run, char hex[65]) {
        crypto_hash_sha256_state h;
        crypto_hash_sha256_init(&h);
        /* Inline requests hash as they always did (records keep these
         * digests); a bundle's request starts with a count no command
         * can have. */
        if (run->bundle) {
                put_u64(&h, UINT64_MAX);
                put_str(&h, run->bundle);
        }
        put_u64(&h, run->argc);
        for (size_t i = 0; i < run->argc; i++)
                put_str(&h, run->argv[i]);
        put_u64(&h, run->n_env);
        for (size_t i = 0; i < run->n_env; i++) {
                put_str(&h, run->env[i].name);
                put_str(&h, run->env[i].value);
        }
        put_u64(&h, run->stdin_data ? 1 : 0);
        put(&h, run->stdin_data, run->stdin_len);
        put_u64(&h, run->n_files);
        for (size_t i = 0; i < run->n_files; i++) {
                put_str(&h, run->files[i].path);
                put(&h, run->files[i].data, run->files[i].len);
                put_u64(&h, run->files[i].mode);
        }
        put_str(&h, run->profile);
        put_u64(&h, run->timeout_ms);
        put_u64(&h, run->memory);
        put_u64(&h, run->processes);
        put_u64(&h, run->cpu_s);
        put_u64(&h, run->cpu_milli);
        put_u64(&h, run->output);
        put_u64(&h, run->disk);
        /* Audit as a bit above the mode: requests without it hash as before. */
        put_u64(&h, run->net_audit ? 0x100u | (run->net < 0 ? 0xffu : (uint64_t) run->net) : (uint64_t) (int64_t) run->net);
        if (run->netpol) {
                char buf[320];
                put_u64(&h, run->netpol->n_allow);
                for (size_t i = 0; i < run->netpol->n_allow; i++) {
                        netpolicy_format_allow(&run->netpol->allow[i], buf, sizeof(buf));
                        put_str(&h, buf);
                }
                put_u64(&h, run->netpol->n_deny);
                for (size_t i = 0; i < run->netpol->n_deny; i++) {
                        put_u64(&h, run->netpol->deny[i].lo);
                        put_u64(&h, run->netpol->deny[i].hi);
                }
        }
        put_u64(&h, run->n_artifacts);
        for (size_t i = 0; i < run->n_artifacts; i++)
                put_str(&h, run->artifacts[i]);
        put_u64(&h, run->retries);
        /* The secrets asked for, after the rest: requests without them hash
         * as they did before secrets existed. */
        if (run->n_secrets) {
                put_u64(&h, run->n_secrets);
                for (size_t i = 0; i < run->n_secrets; i++)
                        put_str(&h, run->secrets[i]);
        }
        /* likewise the packages */
        if (run->n_pip) {
                put_str(&h, "pip");
                put_u64(&h, run->n_pip);
                for (size_t i = 0; i < run->n_pip; i++)
                        put_str(&h, run->pip[i]);
        }
        if (run->n_npm) {
                put_str(&h, "npm");
                put_u64(&h, run->n_npm);
                for (size_t i = 0; i < run->n_npm; i++)
                        put_str(&h, run->npm[i]);
        }
        finish(&h, hex);
}

json_t *proto_ok(json_t *tag, json_t *extra) {
        json_t *o = json_pack("{s:i, s:b}", "v", PROTO_VERSION, "ok", 1);
        if (!o)
                return NULL;
        if (tag)
                json_object_set(o, "id", tag);
        if (extra) {
                json_object_update(o, extra);
                json_decref(extra);
        }
        return o;
}

json_t *proto_error(json_t *tag, const char *code, const char *fmt, ...) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        /* Messages may quote client bytes; keep them valid UTF-8. */
        json_t *m = json_string(msg);
        if (!m)
                m = json_string("(message not representable)");
        json_t *o = json_pack("{s:i, s:b, s:{s:s, s:o}}", "v", PROTO_VERSION, "ok", 0, "error", "code", code, "message", m);
        if (o && tag)
                json_object_set(o, "id", tag);
        return o;
}

int proto_set_data(json_t *obj, const char *key, const char *data, size_t len) {
        json_t *s = json_stringn(data, len);
        if (s)
                return json_object_set_new(obj, key, s) < 0 ? -ENOMEM : 0;
        size_t blen = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
        _cleanup_free_ char *b = malloc(blen);
        if (!b)
                return -ENOMEM;
        sodium_bin2base64(b, blen, (const unsigned char *) data, len, sodium_base64_VARIANT_ORIGINAL);
        char k[64];
        snprintf(k, sizeof(k), "%s_b64", key);
        return json_object_set_new(obj, k, json_string(b)) < 0 ? -ENOMEM : 0;
}
