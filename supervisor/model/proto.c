/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <string.h>

#include "conf.h"
#include "deps.h"
#include "env-name.h"
#include "index.h"
#include "job.h"
#include "launch-abi.h"
#include "netpolicy.h"
#include "profile.h"
#include "proto.h"
#include "proto-internal.h"
#include "trace.h"
#include "util.h"

static const struct field run_fields[] = {
        COMMON_FIELDS,
        { "command", K_ARRAY, false },
        { "bundle", K_STRING, false },
        { "args", K_ARRAY, false },
        { "profile", K_STRING, false },
        { "env", K_OBJECT, false },
        { "stdin", K_STRING, false },
        { "stdin_b64", K_STRING, false },
        { "timeout_ms", K_UINT, false },
        { "limits", K_OBJECT, false },
        { "network", K_NET, false },
        { "files", K_ARRAY, false },
        { "artifacts", K_ARRAY, false },
        { "idempotency_key", K_STRING, false },
        { "retries", K_UINT, false },
        { "follow", K_BOOL, false },
        { "traceparent", K_STRING, false },
        { "callback", K_STRING, false },
        { "progress", K_UINT, false },
        { "secrets", K_ARRAY, false },
        { "pip", K_ARRAY, false },
        { "npm", K_ARRAY, false },
};
static const struct field network_fields[] = {
        { "mode", K_STRING, false },
        { "audit", K_BOOL, false },
        { "allow", K_ARRAY, false },
        { "deny_ports", K_ARRAY, false },
};
static const struct field limit_fields[] = {
        { "memory", K_UINT, false },
        { "processes", K_UINT, false },
        { "cpu_s", K_UINT, false },
        { "cpus", K_NUMBER, false },
        { "output", K_UINT, false },
        { "disk", K_UINT, false },
};
static const struct field file_fields[] = {
        { "path", K_STRING, true },
        { "data", K_STRING, false },
        { "data_b64", K_STRING, false },
        { "mode", K_UINT, false },
};
static const struct field job_fields[] = { COMMON_FIELDS, { "job", K_STRING, true } };
static const struct field ping_fields[] = { COMMON_FIELDS };
static const struct field cache_gc_fields[] = { COMMON_FIELDS, { "all", K_BOOL, false } };

static const char *const op_names[] = {
        [REQ_RUN] = "run", [REQ_STATUS] = "status", [REQ_WAIT] = "wait", [REQ_LOGS] = "logs",
        [REQ_CANCEL] = "cancel", [REQ_RESULT] = "result", [REQ_LIST] = "list", [REQ_PING] = "ping",
        [REQ_BUNDLE_SHOW] = "bundle.show", [REQ_CACHE_LIST] = "cache.list", [REQ_CACHE_GC] = "cache.gc",
        [REQ_DOWNLOAD] = "download", [REQ_METRICS] = "metrics", [REQ_CB_LIST] = "callbacks.list",
        [REQ_CB_RETRY] = "callbacks.retry", [REQ_CB_DROP] = "callbacks.drop",
        [REQ_SESSION_CREATE] = "session.create", [REQ_SESSION_EXEC] = "session.exec",
        [REQ_SESSION_SIGNAL] = "session.signal", [REQ_SESSION_EXTEND] = "session.extend",
        [REQ_SESSION_CLOSE] = "session.close", [REQ_SESSION_SHOW] = "session.show", [REQ_SESSION_LIST] = "session.list",
        [REQ_SESSION_PUT] = "session.put", [REQ_SESSION_GET] = "session.get", [REQ_SESSION_LS] = "session.ls",
        [REQ_SESSION_EXPOSE] = "session.expose", [REQ_SESSION_UNEXPOSE] = "session.unexpose",
        [REQ_SESSION_STDIN] = "session.stdin", [REQ_SESSION_FORWARD] = "session.forward", [REQ_SESSION_RESIZE] = "session.resize",
        [REQ_RELOAD] = "reload", [REQ_POLICY_SHOW] = "policy.show", [REQ_POLICY_SET] = "policy.set",
        [REQ_POLICY_HISTORY] = "policy.history", [REQ_NODES] = "nodes", [REQ_DRAIN] = "drain",
        [REQ_SECRET_SET] = "secret.set", [REQ_SECRET_LIST] = "secret.ls", [REQ_SECRET_RM] = "secret.rm",
};

const char *req_op_name(enum req_op op) {
        return op < ARRAY_SIZE(op_names) ? op_names[op] : "?";
}

void request_init(struct request *r) {
        memset(r, 0, sizeof(*r));
        r->run.timeout_ms = r->run.memory = r->run.processes = r->run.cpu_s = r->run.cpu_milli = r->run.output = r->run.disk =
                r->run.progress_s = PROTO_UNSET;
        r->run.net = -1;
        r->streams = STREAM_BOTH;
        r->limit = PROTO_MAX_LIST;
        r->max_bytes = PROTO_LOGS_CHUNK;
        r->ttl_s = r->idle_s = PROTO_UNSET;
        r->mode = 0644;
}

void request_free(struct request *r) {
        struct run_request *run = &r->run;
        json_decref(r->tag);
        free(r->job);
        free(r->state);
        free(r->bundle);
        free(r->artifact);
        free(r->session);
        free(r->cwd);
        free(r->path);
        free(r->data);
        free(r->tenant);
        json_decref(r->policy);
        free(r->reason);
        free(r->name);
        if (r->value)
                sodium_memzero(r->value, r->value_len);
        free(r->value);
        free(run->traceparent);
        free(run->callback);
        free(run->netpol);
        free(run->bundle);
        for (size_t i = 0; i < run->argc; i++)
                free(run->argv[i]);
        free(run->argv);
        free(run->profile);
        for (size_t i = 0; i < run->n_env; i++) {
                free(run->env[i].name);
                free(run->env[i].value);
        }
        free(run->env);
        free(run->stdin_data);
        for (size_t i = 0; i < run->n_files; i++) {
                free(run->files[i].path);
                free(run->files[i].data);
        }
        free(run->files);
        for (size_t i = 0; i < run->n_artifacts; i++)
                free(run->artifacts[i]);
        free(run->artifacts);
        for (size_t i = 0; i < run->n_secrets; i++)
                free(run->secrets[i]);
        free(run->secrets);
        for (size_t i = 0; i < run->n_pip; i++)
                free(run->pip[i]);
        free(run->pip);
        for (size_t i = 0; i < run->n_npm; i++)
                free(run->npm[i]);
        free(run->npm);
        free(run->idempotency_key);
        request_init(r);
}

bool proto_valid_job_id(const char *s) {
        if (s[0] != 'j' || strlen(s) != 21)
                return false;
        for (const char *p = s + 1; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

int proto_decode_b64(const char *field, const char *s, unsigned char **ret, size_t *ret_len, struct sbx_error *err) {
        size_t slen = strlen(s), n = 0;
        _cleanup_free_ unsigned char *buf = malloc(slen / 4 * 3 + 3);
        if (!buf)
                return sbx_error_set(err, ENOMEM, "%s", field);
        if (sodium_base642bin(buf, slen / 4 * 3 + 3, s, slen, "\n\r", &n, NULL, sodium_base64_VARIANT_ORIGINAL) < 0)
                return sbx_error_msg(err, EINVAL, "field '%s': invalid base64", field);
        *ret = TAKE_PTR(buf);
        *ret_len = n;
        return 0;
}

static int dup_bytes(const char *s, size_t len, unsigned char **ret) {
        unsigned char *b = malloc(len ? len : 1);
        if (!b)
                return -ENOMEM;
        memcpy(b, s, len);
        *ret = b;
        return 0;
}

bool proto_valid_rel_path(const char *p, bool glob) {
        size_t len = strlen(p);
        if (len == 0 || len > PROTO_MAX_PATH || p[0] == '/')
                return false;
        const char *c = p;
        while (*c) {
                const char *e = strchr(c, '/');
                size_t n = e ? (size_t) (e - c) : strlen(c);
                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (!glob && memchr(c, '\0', n))
                        return false;
                c += n;
                if (*c == '/')
                        c++;
        }
        return p[len - 1] != '/';
}

static bool valid_env_name(const char *s) {
        return env_name_valid(s, strlen(s));
}

/* command (a program and its arguments) or, after a bundle, args (its
 * arguments only, maybe none). */
int proto_parse_command(json_t *command, const char *field, bool program, struct run_request *run, struct sbx_error *err) {
        size_t n = json_array_size(command);
        if (n == 0 && program)
                return sbx_error_msg(err, EINVAL, "field '%s': must name a program", field);
        if (n > PROTO_MAX_ARGS)
                return sbx_error_msg(err, EINVAL, "field '%s': more than %d arguments", field, PROTO_MAX_ARGS);
        run->argv = calloc(n + 1, sizeof(char *));
        if (!run->argv)
                return sbx_error_set(err, ENOMEM, "%s", field);
        for (size_t i = 0; i < n; i++) {
                json_t *a = json_array_get(command, i);
                if (!json_is_string(a))
                        return sbx_error_msg(err, EINVAL, "field '%s[%zu]': expected string, got %s", field, i, proto_json_kind_name(a));
                if (json_string_length(a) > PROTO_MAX_ARG_LEN)
                        return sbx_error_msg(err, EINVAL, "field '%s[%zu]': longer than %d bytes", field, i, PROTO_MAX_ARG_LEN);
                if (i == 0 && program && json_string_length(a) == 0)
                        return sbx_error_msg(err, EINVAL, "field '%s[0]': empty program name", field);
                if (!(run->argv[i] = strdup(json_string_value(a))))
                        return sbx_error_set(err, ENOMEM, "%s", field);
                run->argc++;
        }
        return 0;
}

/* A bundle instead of a command: the manifest decides the program, its
 * profile and its network; the request gives arguments. */
static int parse_bundle(const char *bundle, json_t *command, json_t *args, const char *profile, const json_t *net,
                        struct run_request *run, struct sbx_error *err) {
        struct bundle_ref ref;
        if (command)
                return sbx_error_msg(err, EINVAL, "fields 'command' and 'bundle' exclude each other (a bundle's arguments go in 'args')");
        if (profile)
                return sbx_error_msg(err, EINVAL, "field 'profile': a bundle's manifest names its profile");
        if (net)
                return sbx_error_msg(err, EINVAL, "field 'network': a bundle's manifest declares its network");
        if (bundle_ref_parse(bundle, &ref, err) < 0)
                return sbx_error_wrap(err, "field 'bundle'");
        if (!(run->bundle = strdup(bundle)))
                return sbx_error_set(err, ENOMEM, "bundle");
        return proto_parse_command(args, "args", false, run, err);
}

int proto_parse_env(json_t *env, struct run_request *run, struct sbx_error *err) {
        const char *name;
        json_t *val;
        if (json_object_size(env) > PROTO_MAX_ENV)
                return sbx_error_msg(err, EINVAL, "field 'env': more than %d variables", PROTO_MAX_ENV);
        run->env = calloc(json_object_size(env) + 1, sizeof(*run->env));
        if (!run->env)
                return sbx_error_set(err, ENOMEM, "env");
        json_object_foreach(env, name, val) {
                if (!valid_env_name(name))
                        return sbx_error_msg(err, EINVAL, "field 'env.%.64s': invalid variable name", name);
                /* The task context (SBX_JOB_ID, SBX_TENANT,
                 * SBX_WORKSPACE) is the daemon's word, not the
                 * caller's. */
                if (strncmp(name, SBX_ENV_RESERVED_PREFIX, strlen(SBX_ENV_RESERVED_PREFIX)) == 0)
                        return sbx_error_msg(err, EINVAL, "field 'env.%s': SBX_* variables are reserved", name);
                if (!json_is_string(val))
                        return sbx_error_msg(err, EINVAL, "field 'env.%s': expected string, got %s", name, proto_json_kind_name(val));
                if (json_string_length(val) > PROTO_MAX_ARG_LEN)
                        return sbx_error_msg(err, EINVAL, "field 'env.%s': longer than %d bytes", name, PROTO_MAX_ARG_LEN);
                struct env_pair *p = &run->env[run->n_env++];
                p->name = strdup(name);
                p->value = strdup(json_string_value(val));
                if (!p->name || !p->value)
                        return sbx_error_set(err, ENOMEM, "env");
        }
        return 0;
}

int proto_parse_stdin(json_t *root, const char *in, const char *in_b64, struct run_request *run, struct sbx_error *err) {
        if (in && in_b64)
                return sbx_error_msg(err, EINVAL, "fields 'stdin' and 'stdin_b64' exclude each other");
        if (in) {
                json_t *j = json_object_get(root, "stdin");
                run->stdin_len = json_string_length(j);
                if (dup_bytes(in, run->stdin_len, &run->stdin_data) < 0)
                        return sbx_error_set(err, ENOMEM, "stdin");
        } else if (in_b64 && proto_decode_b64("stdin_b64", in_b64, &run->stdin_data, &run->stdin_len, err) < 0)
                return -EINVAL;
        return 0;
}

int proto_parse_limits(json_t *limits, struct run_request *run, struct sbx_error *err) {
        json_error_t je;
        int r;
        json_int_t mem = -1, procs = -1, cpu = -1, out = -1, disk = -1;
        json_t *cpus = NULL;
        r = proto_check_fields(limits, limit_fields, ARRAY_SIZE(limit_fields), "limits.", err);
        if (r < 0)
                return r;
        if (json_unpack_ex(limits, &je, JSON_STRICT, "{s?:I, s?:I, s?:I, s?:o, s?:I, s?:I}", "memory", &mem,
                           "processes", &procs, "cpu_s", &cpu, "cpus", &cpus, "output", &out, "disk", &disk) < 0)
                return sbx_error_msg(err, EINVAL, "field 'limits': %s", je.text);
        if (cpus) {
                double v = json_number_value(cpus) * 1000.0;
                if (!(v >= PROTO_CPUS_MIN_MILLI - 0.5 && v <= PROTO_CPUS_MAX_MILLI + 0.5))
                        return sbx_error_msg(err, EINVAL, "field 'limits.cpus': %g is out of range (0.01 to 1024 CPUs)",
                                             json_number_value(cpus));
                run->cpu_milli = (uint64_t) (v + 0.5);
        }
        if (mem == 0 || procs == 0 || cpu == 0 || disk == 0)
                return sbx_error_msg(err, EINVAL, "field 'limits.%s': must be positive",
                                     mem == 0 ? "memory" : procs == 0 ? "processes" : cpu == 0 ? "cpu_s" : "disk");
        if (disk > 0)
                run->disk = (uint64_t) disk;
        if (mem > 0)
                run->memory = (uint64_t) mem;
        if (procs > 0)
                run->processes = (uint64_t) procs;
        if (cpu > 0)
                run->cpu_s = (uint64_t) cpu;
        if (out >= 0)
                run->output = (uint64_t) out;
        return 0;
}

static int cmp_upload_path(const void *a, const void *b) {
        const struct upload *const *x = a, *const *y = b;
        int c = strcmp((*x)->path, (*y)->path);
        /* Equal paths in request order, so the error names the later one. */
        return c ? c : (*x > *y) - (*x < *y);
}

/* No path twice. Sorted, not compared pairwise: a request of 1,024 long
 * paths would otherwise cost the event loop half a million comparisons. */
static int files_unique(const struct run_request *run, struct sbx_error *err) {
        if (run->n_files < 2)
                return 0;
        _cleanup_free_ const struct upload **v = calloc(run->n_files, sizeof(*v));
        if (!v)
                return sbx_error_set(err, ENOMEM, "files");
        for (size_t i = 0; i < run->n_files; i++)
                v[i] = &run->files[i];
        qsort(v, run->n_files, sizeof(*v), cmp_upload_path);
        for (size_t i = 1; i < run->n_files; i++)
                if (streq(v[i - 1]->path, v[i]->path))
                        return sbx_error_msg(err, EINVAL, "field 'files[%zu].path': '%s' given twice",
                                             (size_t) (v[i] - run->files), v[i]->path);
        return 0;
}

int proto_parse_files(json_t *files, struct run_request *run, struct sbx_error *err) {
        json_error_t je;
        int r;
        size_t nf = json_array_size(files);
        if (nf > PROTO_MAX_FILES)
                return sbx_error_msg(err, EINVAL, "field 'files': more than %d files", PROTO_MAX_FILES);
        run->files = calloc(nf + 1, sizeof(*run->files));
        if (!run->files)
                return sbx_error_set(err, ENOMEM, "files");
        for (size_t i = 0; i < nf; i++) {
                json_t *f = json_array_get(files, i);
                char where[64];
                const char *path = NULL, *data = NULL, *data_b64 = NULL;
                json_int_t mode = -1;
                snprintf(where, sizeof(where), "files[%zu].", i);
                if (!json_is_object(f))
                        return sbx_error_msg(err, EINVAL, "field 'files[%zu]': expected object, got %s", i, proto_json_kind_name(f));
                r = proto_check_fields(f, file_fields, ARRAY_SIZE(file_fields), where, err);
                if (r < 0)
                        return r;
                if (json_unpack_ex(f, &je, JSON_STRICT, "{s:s, s?:s, s?:s, s?:I}", "path", &path, "data", &data,
                                   "data_b64", &data_b64, "mode", &mode) < 0)
                        return sbx_error_msg(err, EINVAL, "field 'files[%zu]': %s", i, je.text);
                if (!proto_valid_rel_path(path, false))
                        return sbx_error_msg(err, EINVAL, "field 'files[%zu].path': must be a relative path without '.' or '..' components", i);
                if (!!data == !!data_b64)
                        return sbx_error_msg(err, EINVAL, "field 'files[%zu]': exactly one of 'data' and 'data_b64' is required", i);
                if (mode >= 0 && mode != 0644 && mode != 0755 && mode != 0600 && mode != 0700)
                        return sbx_error_msg(err, EINVAL, "field 'files[%zu].mode': only 0644, 0755, 0600 and 0700 (as decimal integers) are allowed", i);
                struct upload *u = &run->files[run->n_files++];
                u->path = strdup(path);
                u->mode = mode >= 0 ? (mode_t) mode : 0644;
                if (!u->path)
                        return sbx_error_set(err, ENOMEM, "files");
                if (data) {
                        u->len = json_string_length(json_object_get(f, "data"));
                        if (dup_bytes(data, u->len, &u->data) < 0)
                                return sbx_error_set(err, ENOMEM, "files");
                } else if (proto_decode_b64(where, data_b64, &u->data, &u->len, err) < 0)
                        return -EINVAL;
                run->upload_bytes += u->len;
        }
        return files_unique(run, err);
}

static int parse_artifacts(json_t *artifacts, struct run_request *run, struct sbx_error *err) {
        size_t na = json_array_size(artifacts);
        if (na > PROTO_MAX_ARTIFACTS)
                return sbx_error_msg(err, EINVAL, "field 'artifacts': more than %d globs", PROTO_MAX_ARTIFACTS);
        run->artifacts = calloc(na + 1, sizeof(char *));
        if (!run->artifacts)
                return sbx_error_set(err, ENOMEM, "artifacts");
        for (size_t i = 0; i < na; i++) {
                json_t *a = json_array_get(artifacts, i);
                if (!json_is_string(a))
                        return sbx_error_msg(err, EINVAL, "field 'artifacts[%zu]': expected string, got %s", i, proto_json_kind_name(a));
                if (!proto_valid_rel_path(json_string_value(a), true))
                        return sbx_error_msg(err, EINVAL, "field 'artifacts[%zu]': must be a relative glob without '.' or '..' components", i);
                if (!(run->artifacts[i] = strdup(json_string_value(a))))
                        return sbx_error_set(err, ENOMEM, "artifacts");
                run->n_artifacts++;
        }
        return 0;
}

/* "none", "host" or "restricted", or {"mode": ..., "audit": true, "allow":
 * [...], "deny_ports": [...]}. */
static int parse_net_mode(const char *mode, const char *field, struct run_request *run, struct sbx_error *err) {
        if (streq(mode, "none"))
                run->net = NET_NONE;
        else if (streq(mode, "host"))
                run->net = NET_HOST;
        else if (streq(mode, "restricted"))
                run->net = NET_RESTRICTED;
        else
                return sbx_error_msg(err, EINVAL, "field '%s': expected \"none\", \"host\" or \"restricted\"", field);
        return 0;
}

/* allow and deny_ports: arrays of strings, each parsed by netpolicy. */
static int parse_net_lists(json_t *allow, json_t *deny, struct netpolicy *p, struct sbx_error *err) {
        size_t i;
        json_t *v;
        if (json_array_size(allow) > NETPOLICY_MAX_ALLOW)
                return sbx_error_msg(err, EINVAL, "field 'network.allow': more than %d entries", NETPOLICY_MAX_ALLOW);
        if (json_array_size(deny) > NETPOLICY_MAX_DENY)
                return sbx_error_msg(err, EINVAL, "field 'network.deny_ports': more than %d entries", NETPOLICY_MAX_DENY);
        json_array_foreach(allow, i, v) {
                if (!json_is_string(v))
                        return sbx_error_msg(err, EINVAL, "field 'network.allow[%zu]': expected string, got %s", i, proto_json_kind_name(v));
                if (netpolicy_parse_allow(json_string_value(v), &p->allow[p->n_allow], err) < 0)
                        return sbx_error_wrap(err, "field 'network.allow[%zu]'", i);
                p->n_allow++;
        }
        json_array_foreach(deny, i, v) {
                if (!json_is_string(v))
                        return sbx_error_msg(err, EINVAL, "field 'network.deny_ports[%zu]': expected string, got %s", i,
                                             proto_json_kind_name(v));
                if (netpolicy_parse_ports(json_string_value(v), &p->deny[p->n_deny], err) < 0)
                        return sbx_error_wrap(err, "field 'network.deny_ports[%zu]'", i);
                p->n_deny++;
        }
        return 0;
}

int proto_parse_network(json_t *net, struct run_request *run, struct sbx_error *err) {
        if (json_is_string(net)) {
                int r = parse_net_mode(json_string_value(net), "network", run, err);
                if (r == 0 && run->net == NET_RESTRICTED && !(run->netpol = calloc(1, sizeof(*run->netpol))))
                        return sbx_error_set(err, ENOMEM, "network");
                return r;
        }
        int r = proto_check_fields(net, network_fields, ARRAY_SIZE(network_fields), "network.", err);
        if (r < 0)
                return r;
        json_t *mode = json_object_get(net, "mode"), *allow = json_object_get(net, "allow"), *deny = json_object_get(net, "deny_ports");
        if (mode && (r = parse_net_mode(json_string_value(mode), "network.mode", run, err)) < 0)
                return r;
        run->net_audit = json_is_true(json_object_get(net, "audit"));
        if (run->net != NET_RESTRICTED) {
                if (allow || deny)
                        return sbx_error_msg(err, EINVAL, "field 'network.%s': only with mode \"restricted\"", allow ? "allow" : "deny_ports");
                return 0;
        }
        /* Restricted jobs are always audited: every verdict is recorded. */
        run->net_audit = true;
        if (!(run->netpol = calloc(1, sizeof(*run->netpol))))
                return sbx_error_set(err, ENOMEM, "network");
        return parse_net_lists(allow, deny, run->netpol, err);
}

int proto_parse_secrets(json_t *secrets, struct run_request *run, struct sbx_error *err) {
        size_t n = json_array_size(secrets);
        if (n > SECRET_MAX_PER_JOB)
                return sbx_error_msg(err, EINVAL, "field 'secrets': more than %d names", SECRET_MAX_PER_JOB);
        if (!(run->secrets = calloc(n + 1, sizeof(char *))))
                return sbx_error_set(err, ENOMEM, "secrets");
        for (size_t i = 0; i < n; i++) {
                const char *name = json_string_value(json_array_get(secrets, i));
                if (!name)
                        return sbx_error_msg(err, EINVAL, "field 'secrets[%zu]': expected string, got %s", i,
                                             proto_json_kind_name(json_array_get(secrets, i)));
                if (!secret_name_valid(name))
                        return sbx_error_msg(err, EINVAL, "field 'secrets[%zu]': '%.64s' is not a secret's name (a letter or '_', "
                                                          "then letters, digits and '_', at most %d; not SBX_...)",
                                             i, name, SECRET_NAME_MAX);
                for (size_t k = 0; k < i; k++)
                        if (streq(run->secrets[k], name))
                                return sbx_error_msg(err, EINVAL, "field 'secrets': '%s' is named twice", name);
                if (!(run->secrets[i] = strdup(name)))
                        return sbx_error_set(err, ENOMEM, "secrets");
                run->n_secrets++;
        }
        return 0;
}

static int parse_run(json_t *root, struct run_request *run, struct sbx_error *err) {
        json_t *command = NULL, *args = NULL, *env = NULL, *limits = NULL, *files = NULL, *artifacts = NULL, *net = NULL,
               *secrets = NULL, *pip = NULL, *npm = NULL;
        const char *profile = NULL, *in = NULL, *in_b64 = NULL, *key = NULL, *bundle = NULL, *traceparent = NULL, *callback = NULL;
        json_int_t timeout = -1, retries = 0, progress = -1;
        int follow = 0;
        json_error_t je;
        int r;

        r = proto_check_fields(root, run_fields, ARRAY_SIZE(run_fields), "", err);
        if (r < 0)
                return r;
        /* The checks above give the precise message; the strict unpack
         * guarantees extraction and validation agree on the field set. */
        if (json_unpack_ex(root, &je, JSON_STRICT,
                           "{s:i, s:s, s?o, s?o, s?:s, s?:o, s?:s, s?:o, s?:s, s?:s, s?:I, s?:o, s?:o, s?:o, s?:o, s?:s, s?:I, s?:b, s?:s, s?:s, "
                           "s?:I, s?:o, s?:o, s?:o}",
                           "v", &(int){ 0 }, "op", &(const char *){ NULL }, "id", &(json_t *){ NULL },
                           "command", &command, "bundle", &bundle, "args", &args, "profile", &profile, "env", &env,
                           "stdin", &in, "stdin_b64", &in_b64,
                           "timeout_ms", &timeout, "limits", &limits, "network", &net, "files", &files,
                           "artifacts", &artifacts, "idempotency_key", &key, "retries", &retries, "follow", &follow,
                           "traceparent", &traceparent, "callback", &callback, "progress", &progress, "secrets", &secrets, "pip", &pip,
                           "npm", &npm) < 0)
                return sbx_error_msg(err, EINVAL, "%s", je.text);

        if (bundle)
                r = parse_bundle(bundle, command, args, profile, net, run, err);
        else if (args)
                r = sbx_error_msg(err, EINVAL, "field 'args' goes with 'bundle' (a command's arguments follow it in 'command')");
        else if (!command)
                r = sbx_error_msg(err, EINVAL, "missing field 'command' (or 'bundle')");
        else
                r = proto_parse_command(command, "command", true, run, err);
        if (r < 0)
                return r;

        if (profile) {
                if (!name_valid(profile))
                        return sbx_error_msg(err, EINVAL, "field 'profile': invalid profile name '%.64s'", profile);
                run->profile = strdup(profile);
        }

        if (env && (r = proto_parse_env(env, run, err)) < 0)
                return r;

        if ((r = proto_parse_stdin(root, in, in_b64, run, err)) < 0)
                return r;

        if (timeout >= 0) {
                if (timeout == 0)
                        return sbx_error_msg(err, EINVAL, "field 'timeout_ms': must be positive");
                run->timeout_ms = (uint64_t) timeout;
        }

        if (limits && (r = proto_parse_limits(limits, run, err)) < 0)
                return r;

        if (net && (r = proto_parse_network(net, run, err)) < 0)
                return r;

        if (files && (r = proto_parse_files(files, run, err)) < 0)
                return r;

        if (artifacts && (r = parse_artifacts(artifacts, run, err)) < 0)
                return r;

        if (secrets && (r = proto_parse_secrets(secrets, run, err)) < 0)
                return r;

        if (pip && (r = deps_parse_field(pip, DEP_PIP, 0, &run->pip, &run->n_pip, err)) < 0)
                return r;
        if (npm && (r = deps_parse_field(npm, DEP_NPM, run->n_pip, &run->npm, &run->n_npm, err)) < 0)
                return r;

        if (key) {
                size_t kl = strlen(key);
                if (kl == 0 || kl > PROTO_MAX_KEY)
                        return sbx_error_msg(err, EINVAL, "field 'idempotency_key': must be 1 to %d bytes", PROTO_MAX_KEY);
                run->idempotency_key = strdup(key);
        }
        if (retries > PROTO_MAX_RETRIES)
                return sbx_error_msg(err, EINVAL, "field 'retries': must be 0 to %d", PROTO_MAX_RETRIES);
        run->retries = (unsigned) retries;
        run->follow = follow;
        if (traceparent) {
                if (!trace_valid(traceparent))
                        return sbx_error_msg(err, EINVAL, "field 'traceparent': not a W3C traceparent "
                                                          "(00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>, lowercase, ids not all zero)");
                if (!(run->traceparent = strdup(traceparent)))
                        return sbx_error_set(err, ENOMEM, "traceparent");
        }
        if (callback) {
                if (!callback_url_valid(callback))
                        return sbx_error_msg(err, EINVAL, "field 'callback': expected an http:// or https:// URL with a host, "
                                                          "at most %d bytes, without spaces",
                                             CONFIG_CALLBACK_MAX_URL);
                if (!(run->callback = strdup(callback)))
                        return sbx_error_set(err, ENOMEM, "callback");
        }
        if (progress >= 0) {
                if (progress > PROTO_MAX_PROGRESS)
                        return sbx_error_msg(err, EINVAL, "field 'progress': expected the seconds between heartbeats, 1 to %d, or 0 "
                                                          "for no progress callbacks",
                                             PROTO_MAX_PROGRESS);
                run->progress_s = (uint64_t) progress;
        }
        return 0;
}

int proto_parse_request(const char *line, size_t len, struct request *r, struct sbx_error *err) {
        json_error_t je;
        int rc;

        request_init(r);
        json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
        if (!root)
                return sbx_error_msg(err, EINVAL, "malformed JSON at byte %d: %s", je.position, je.text);
        if (!json_is_object(root)) {
                json_decref(root);
                return sbx_error_msg(err, EINVAL, "a request must be a JSON object");
        }
        json_t *tag = json_object_get(root, "id");
        if (tag && (json_is_integer(tag) || (json_is_string(tag) && json_string_length(tag) <= PROTO_MAX_KEY)))
                r->tag = json_incref(tag);

        json_t *v = json_object_get(root, "v"), *op = json_object_get(root, "op");
        if (!v) {
                rc = sbx_error_msg(err, EINVAL, "missing field 'v'");
                goto out;
        }
        if (!json_is_integer(v) || json_integer_value(v) != PROTO_VERSION) {
                rc = sbx_error_msg(err, EINVAL, "field 'v': unsupported protocol version (this daemon speaks %d)", PROTO_VERSION);
                goto out;
        }
        if (!op) {
                rc = sbx_error_msg(err, EINVAL, "missing field 'op'");
                goto out;
        }
        if (!json_is_string(op)) {
                rc = sbx_error_msg(err, EINVAL, "field 'op': expected string, got %s", proto_json_kind_name(op));
                goto out;
        }
        const char *ops = json_string_value(op);
        size_t i;
        for (i = 0; i < ARRAY_SIZE(op_names); i++)
                if (streq(op_names[i], ops))
                        break;
        if (i == ARRAY_SIZE(op_names)) {
                rc = sbx_error_msg(err, EINVAL, "field 'op': unknown request '%.64s'", ops);
                goto out;
        }
        r->op = (enum req_op) i;

        if (req_op_is_session(r->op) || req_op_is_admin(r->op)) {
                rc = req_op_is_admin(r->op) ? proto_parse_admin(root, r, err) : proto_parse_session(root, r, err);
                goto out;
        }
        switch (r->op) {
        case REQ_RUN:
                rc = parse_run(root, &r->run, err);
                break;
        case REQ_STATUS:
        case REQ_WAIT:
        case REQ_CANCEL:
        case REQ_RESULT:
                rc = proto_check_fields(root, job_fields, ARRAY_SIZE(job_fields), "", err);
                if (rc == 0)
                        rc = proto_parse_job_field(root, r, err);
                break;
        case REQ_LOGS:
                rc = proto_parse_logs(root, r, err);
                break;
        case REQ_LIST:
                rc = proto_parse_list(root, r, err);
                break;
        case REQ_PING:
        case REQ_CACHE_LIST:
        case REQ_METRICS:
                rc = proto_check_fields(root, ping_fields, ARRAY_SIZE(ping_fields), "", err);
                break;
        case REQ_BUNDLE_SHOW:
                rc = proto_parse_bundle_show(root, r, err);
                break;
        case REQ_DOWNLOAD:
                rc = proto_parse_download(root, r, err);
                break;
        case REQ_CB_LIST:
        case REQ_CB_RETRY:
        case REQ_CB_DROP:
                rc = proto_parse_callbacks(root, r, err);
                break;
        case REQ_CACHE_GC:
                rc = proto_check_fields(root, cache_gc_fields, ARRAY_SIZE(cache_gc_fields), "", err);
                r->all = json_is_true(json_object_get(root, "all"));
                break;
        default:
                rc = -EINVAL;
        }
out:
        json_decref(root);
        if (rc < 0) {
                json_t *t = TAKE_PTR(r->tag);
                request_free(r);
                r->tag = t;
        }
        return rc;
}
