/* SPDX-License-Identifier: Apache-2.0 */
/* The session requests (sbx-protocol(7), SESSIONS): parsed as strictly as
 * run, whose pieces they share (proto.c). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "deps.h"
#include "proto-internal.h"
#include "util.h"

#define SESSION_FIELD { "session", K_STRING, true }

static const struct field create_fields[] = {
        COMMON_FIELDS,
        { "profile", K_STRING, false },
        { "env", K_OBJECT, false },
        { "limits", K_OBJECT, false },
        { "network", K_NET, false },
        { "files", K_ARRAY, false },
        { "ttl_s", K_UINT, false },
        { "idle_s", K_UINT, false },
        { "secrets", K_ARRAY, false },
        { "pip", K_ARRAY, false },
        { "npm", K_ARRAY, false },
};
static const struct field exec_fields[] = {
        COMMON_FIELDS,
        SESSION_FIELD,
        { "command", K_ARRAY, true },
        { "env", K_OBJECT, false },
        { "cwd", K_STRING, false },
        { "stdin", K_STRING, false },
        { "stdin_b64", K_STRING, false },
        { "timeout_ms", K_UINT, false },
        { "follow", K_BOOL, false },
        { "stdin_open", K_BOOL, false },
        { "tty", K_BOOL, false },
        { "rows", K_UINT, false },
        { "cols", K_UINT, false },
};
static const struct field resize_fields[] = {
        COMMON_FIELDS, SESSION_FIELD, { "job", K_STRING, true }, { "rows", K_UINT, true }, { "cols", K_UINT, true },
};
static const struct field signal_fields[] = { COMMON_FIELDS, SESSION_FIELD, { "job", K_STRING, true }, { "signal", K_TAG, true } };
static const struct field extend_fields[] = { COMMON_FIELDS, SESSION_FIELD, { "ttl_s", K_UINT, true } };
static const struct field session_fields[] = { COMMON_FIELDS, SESSION_FIELD };
static const struct field list_fields[] = { COMMON_FIELDS };
static const struct field put_fields[] = {
        COMMON_FIELDS, SESSION_FIELD,          { "path", K_STRING, true },
        { "data", K_STRING, false },           { "data_b64", K_STRING, false },
        { "mode", K_UINT, false },             { "offset", K_UINT, false },
};
static const struct field get_fields[] = {
        COMMON_FIELDS, SESSION_FIELD, { "path", K_STRING, true }, { "offset", K_UINT, false }, { "max_bytes", K_UINT, false },
};
static const struct field ls_fields[] = { COMMON_FIELDS, SESSION_FIELD, { "path", K_STRING, false } };
static const struct field expose_fields[] = { COMMON_FIELDS, SESSION_FIELD, { "port", K_UINT, true }, { "signed_ttl_s", K_UINT, false } };
static const struct field stdin_fields[] = {
        COMMON_FIELDS, SESSION_FIELD, { "job", K_STRING, true }, { "data", K_STRING, false }, { "data_b64", K_STRING, false },
        { "eof", K_BOOL, false },
};
static const struct field unexpose_fields[] = { COMMON_FIELDS, SESSION_FIELD, { "port", K_UINT, true } };

/* A terminal's rows and columns (sbx-init takes as many). */
#define WINSIZE_MAX 1000

/* rows and cols, each 1 to WINSIZE_MAX when given. */
static int parse_winsize(json_t *root, struct request *r, struct sbx_error *err) {
        const char *names[] = { "rows", "cols" };
        uint16_t *to[] = { &r->rows, &r->cols };
        for (int i = 0; i < 2; i++) {
                json_t *v = json_object_get(root, names[i]);
                if (!v)
                        continue;
                json_int_t n = json_integer_value(v);
                if (n < 1 || n > WINSIZE_MAX)
                        return sbx_error_msg(err, EINVAL, "field '%s': 1 to %d", names[i], WINSIZE_MAX);
                *to[i] = (uint16_t) n;
        }
        return 0;
}

/* A signed URL lives a day at most. */
#define SIGNED_TTL_MAX_S 86400

static int parse_port(json_t *root, struct request *r, struct sbx_error *err) {
        json_int_t p = json_integer_value(json_object_get(root, "port"));
        if (p < 1 || p > 65535)
                return sbx_error_msg(err, EINVAL, "field 'port': 1 to 65535");
        r->port = (uint16_t) p;
        json_t *t = json_object_get(root, "signed_ttl_s");
        if (t && (json_integer_value(t) < 1 || json_integer_value(t) > SIGNED_TTL_MAX_S))
                return sbx_error_msg(err, EINVAL, "field 'signed_ttl_s': 1 to %d", SIGNED_TTL_MAX_S);
        r->signed_ttl_s = t ? (uint64_t) json_integer_value(t) : 0;
        return 0;
}

static bool session_id_valid(const char *s) {
        if (!s || strlen(s) != PROTO_SESSION_ID_LEN)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

/* A workspace path: relative and inside it, or "." (dot_ok) for itself. */
static int parse_path(json_t *root, const char *field, bool dot_ok, char **ret, struct sbx_error *err) {
        const char *p = json_string_value(json_object_get(root, field));
        if (!p)
                p = ".";
        if (!(dot_ok && streq(p, ".")) && !proto_valid_rel_path(p, false))
                return sbx_error_msg(err, EINVAL, "field '%s': not a path inside the workspace (relative, without '.' or '..' "
                                                  "components, at most %d bytes)",
                                     field, PROTO_MAX_PATH);
        *ret = strdup(p);
        return *ret ? 0 : sbx_error_set(err, ENOMEM, "%s", field);
}

static const struct {
        const char *name;
        int signo;
} signals[] = {
        { "HUP", SIGHUP },   { "INT", SIGINT },   { "QUIT", SIGQUIT }, { "KILL", SIGKILL }, { "USR1", SIGUSR1 },
        { "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "CONT", SIGCONT }, { "STOP", SIGSTOP },
};

static int parse_signal(json_t *v, int *ret, struct sbx_error *err) {
        if (json_is_integer(v)) {
                json_int_t n = json_integer_value(v);
                if (n < 1 || n > 64)
                        return sbx_error_msg(err, EINVAL, "field 'signal': a signal number is 1 to 64");
                *ret = (int) n;
                return 0;
        }
        const char *s = json_string_value(v);
        if (strncmp(s, "SIG", 3) == 0)
                s += 3;
        for (size_t i = 0; i < ARRAY_SIZE(signals); i++)
                if (streq(s, signals[i].name)) {
                        *ret = signals[i].signo;
                        return 0;
                }
        return sbx_error_msg(err, EINVAL, "field 'signal': expected a number or one of HUP, INT, QUIT, KILL, USR1, USR2, "
                                          "TERM, CONT, STOP");
}

static int parse_create(json_t *root, struct request *r, struct sbx_error *err) {
        struct run_request *run = &r->run;
        json_t *v;
        int rc;
        const char *profile = json_string_value(json_object_get(root, "profile"));
        if (profile) {
                if (!name_valid(profile))
                        return sbx_error_msg(err, EINVAL, "field 'profile': invalid profile name '%.64s'", profile);
                if (!(run->profile = strdup(profile)))
                        return sbx_error_set(err, ENOMEM, "profile");
        }
        if ((v = json_object_get(root, "env")) && (rc = proto_parse_env(v, run, err)) < 0)
                return rc;
        if ((v = json_object_get(root, "limits")) && (rc = proto_parse_limits(v, run, err)) < 0)
                return rc;
        if ((v = json_object_get(root, "network")) && (rc = proto_parse_network(v, run, err)) < 0)
                return rc;
        if ((v = json_object_get(root, "files")) && (rc = proto_parse_files(v, run, err)) < 0)
                return rc;
        if ((v = json_object_get(root, "secrets")) && (rc = proto_parse_secrets(v, run, err)) < 0)
                return rc;
        if ((v = json_object_get(root, "pip")) && (rc = deps_parse_field(v, DEP_PIP, 0, &run->pip, &run->n_pip, err)) < 0)
                return rc;
        if ((v = json_object_get(root, "npm")) &&
            (rc = deps_parse_field(v, DEP_NPM, run->n_pip, &run->npm, &run->n_npm, err)) < 0)
                return rc;
        if ((v = json_object_get(root, "ttl_s"))) {
                if (json_integer_value(v) == 0)
                        return sbx_error_msg(err, EINVAL, "field 'ttl_s': must be positive");
                r->ttl_s = (uint64_t) json_integer_value(v);
        }
        if ((v = json_object_get(root, "idle_s"))) {
                if (json_integer_value(v) == 0)
                        return sbx_error_msg(err, EINVAL, "field 'idle_s': must be positive");
                r->idle_s = (uint64_t) json_integer_value(v);
        }
        return 0;
}

static int parse_exec(json_t *root, struct request *r, struct sbx_error *err) {
        struct run_request *run = &r->run;
        json_t *v;
        int rc = proto_parse_command(json_object_get(root, "command"), "command", true, run, err);
        if (rc < 0)
                return rc;
        if ((v = json_object_get(root, "env")) && (rc = proto_parse_env(v, run, err)) < 0)
                return rc;
        if (json_object_get(root, "cwd") && (rc = parse_path(root, "cwd", true, &r->cwd, err)) < 0)
                return rc;
        rc = proto_parse_stdin(root, json_string_value(json_object_get(root, "stdin")),
                               json_string_value(json_object_get(root, "stdin_b64")), run, err);
        if (rc < 0)
                return rc;
        if ((v = json_object_get(root, "timeout_ms"))) {
                if (json_integer_value(v) == 0)
                        return sbx_error_msg(err, EINVAL, "field 'timeout_ms': must be positive");
                run->timeout_ms = (uint64_t) json_integer_value(v);
        }
        run->follow = json_is_true(json_object_get(root, "follow"));
        r->stdin_open = json_is_true(json_object_get(root, "stdin_open"));
        r->tty = json_is_true(json_object_get(root, "tty"));
        if ((json_object_get(root, "rows") || json_object_get(root, "cols")) && !r->tty)
                return sbx_error_msg(err, EINVAL, "fields 'rows' and 'cols' are the size of a terminal: they need 'tty'");
        return parse_winsize(root, r, err);
}

/* data or data_b64 (need: exactly one; else at most one). */
static int parse_data(json_t *root, struct request *r, bool need, struct sbx_error *err) {
        const char *data = json_string_value(json_object_get(root, "data"));
        const char *b64 = json_string_value(json_object_get(root, "data_b64"));
        if ((data && b64) || (need && !data && !b64))
                return sbx_error_msg(err, EINVAL, "exactly one of fields 'data' and 'data_b64' is needed");
        if (data) {
                r->data_len = strlen(data);
                if (!(r->data = (unsigned char *) strdup(data)))
                        return sbx_error_set(err, ENOMEM, "data");
        } else if (b64)
                return proto_decode_b64("data_b64", b64, &r->data, &r->data_len, err);
        return 0;
}

static int parse_put(json_t *root, struct request *r, struct sbx_error *err) {
        int rc = parse_path(root, "path", false, &r->path, err);
        if (rc < 0)
                return rc;
        if ((rc = parse_data(root, r, true, err)) < 0)
                return rc;
        json_t *m = json_object_get(root, "mode");
        if (m)
                r->mode = (json_integer_value(m) & 0111) ? 0755 : 0644;
        m = json_object_get(root, "offset");
        r->offset = m ? (uint64_t) json_integer_value(m) : 0;
        return 0;
}

static int parse_get(json_t *root, struct request *r, struct sbx_error *err) {
        int rc = parse_path(root, "path", false, &r->path, err);
        if (rc < 0)
                return rc;
        json_t *v;
        r->offset = (v = json_object_get(root, "offset")) ? (uint64_t) json_integer_value(v) : 0;
        r->max_bytes = PROTO_SESSION_GET_CHUNK;
        if ((v = json_object_get(root, "max_bytes"))) {
                json_int_t n = json_integer_value(v);
                if (n < 1 || n > PROTO_SESSION_GET_CHUNK)
                        return sbx_error_msg(err, EINVAL, "field 'max_bytes': 1 to %u", PROTO_SESSION_GET_CHUNK);
                r->max_bytes = (uint64_t) n;
        }
        return 0;
}

int proto_parse_session(json_t *root, struct request *r, struct sbx_error *err) {
        const struct field *spec;
        size_t n;
        switch (r->op) {
        case REQ_SESSION_CREATE: spec = create_fields; n = ARRAY_SIZE(create_fields); break;
        case REQ_SESSION_EXEC: spec = exec_fields; n = ARRAY_SIZE(exec_fields); break;
        case REQ_SESSION_SIGNAL: spec = signal_fields; n = ARRAY_SIZE(signal_fields); break;
        case REQ_SESSION_EXTEND: spec = extend_fields; n = ARRAY_SIZE(extend_fields); break;
        case REQ_SESSION_LIST: spec = list_fields; n = ARRAY_SIZE(list_fields); break;
        case REQ_SESSION_PUT: spec = put_fields; n = ARRAY_SIZE(put_fields); break;
        case REQ_SESSION_GET: spec = get_fields; n = ARRAY_SIZE(get_fields); break;
        case REQ_SESSION_LS: spec = ls_fields; n = ARRAY_SIZE(ls_fields); break;
        case REQ_SESSION_EXPOSE: spec = expose_fields; n = ARRAY_SIZE(expose_fields); break;
        case REQ_SESSION_UNEXPOSE:
        case REQ_SESSION_FORWARD: spec = unexpose_fields; n = ARRAY_SIZE(unexpose_fields); break;
        case REQ_SESSION_STDIN: spec = stdin_fields; n = ARRAY_SIZE(stdin_fields); break;
        case REQ_SESSION_RESIZE: spec = resize_fields; n = ARRAY_SIZE(resize_fields); break;
        default: spec = session_fields; n = ARRAY_SIZE(session_fields); break;
        }
        int rc = proto_check_fields(root, spec, n, "", err);
        if (rc < 0)
                return rc;
        json_t *sid = json_object_get(root, "session");
        if (sid) {
                if (!session_id_valid(json_string_value(sid)))
                        return sbx_error_msg(err, EINVAL, "field 'session': not a session id (%d lowercase hex digits)",
                                             PROTO_SESSION_ID_LEN);
                if (!(r->session = strdup(json_string_value(sid))))
                        return sbx_error_set(err, ENOMEM, "session");
        }
        switch (r->op) {
        case REQ_SESSION_CREATE:
                return parse_create(root, r, err);
        case REQ_SESSION_EXEC:
                return parse_exec(root, r, err);
        case REQ_SESSION_SIGNAL:
                if ((rc = proto_parse_job_field(root, r, err)) < 0)
                        return rc;
                return parse_signal(json_object_get(root, "signal"), &r->signo, err);
        case REQ_SESSION_EXTEND: {
                json_int_t t = json_integer_value(json_object_get(root, "ttl_s"));
                if (t <= 0)
                        return sbx_error_msg(err, EINVAL, "field 'ttl_s': must be positive");
                r->ttl_s = (uint64_t) t;
                return 0;
        }
        case REQ_SESSION_PUT:
                return parse_put(root, r, err);
        case REQ_SESSION_GET:
                return parse_get(root, r, err);
        case REQ_SESSION_LS:
                return parse_path(root, "path", true, &r->path, err);
        case REQ_SESSION_EXPOSE:
        case REQ_SESSION_UNEXPOSE:
        case REQ_SESSION_FORWARD:
                return parse_port(root, r, err);
        case REQ_SESSION_STDIN:
                if ((rc = proto_parse_job_field(root, r, err)) < 0)
                        return rc;
                r->eof = json_is_true(json_object_get(root, "eof"));
                return parse_data(root, r, false, err);
        case REQ_SESSION_RESIZE:
                if ((rc = proto_parse_job_field(root, r, err)) < 0)
                        return rc;
                return parse_winsize(root, r, err);
        default:
                return 0;
        }
}
