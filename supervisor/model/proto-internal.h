/* SPDX-License-Identifier: Apache-2.0 */
/* What the request parsers of proto.c (run) and proto-query.c (the
 * operations on jobs and the daemon) share: strict field tables. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "proto.h"

/* Field kinds beyond jansson's own types. */
enum kind {
        K_STRING,
        K_UINT,
        K_BOOL,
        K_ARRAY,
        K_OBJECT,
        K_TAG, /* string or integer */
        K_NUMBER, /* integer or real */
        K_NET,    /* "none" / "host", or an object (the run request's network) */
};

struct field {
        const char *name;
        enum kind kind;
        bool required;
};

#define COMMON_FIELDS { "v", K_UINT, true }, { "op", K_STRING, true }, { "id", K_TAG, false }

/* A relative path that stays inside the workspace: no leading '/', no
 * empty, "." or ".." component (glob: a pattern of such paths). */
bool proto_valid_rel_path(const char *p, bool glob);
const char *proto_json_kind_name(const json_t *j);
/* Check every member of obj against spec: unknown members, wrong types and
 * missing required members are errors naming the field (with its path,
 * where). */
int proto_check_fields(const json_t *obj, const struct field *spec, size_t n, const char *where, struct sbx_error *err);
/* "job": a job id the daemon could have made. */
int proto_parse_job_field(json_t *root, struct request *r, struct sbx_error *err);

int proto_parse_logs(json_t *root, struct request *r, struct sbx_error *err);
int proto_parse_list(json_t *root, struct request *r, struct sbx_error *err);
int proto_parse_bundle_show(json_t *root, struct request *r, struct sbx_error *err);
int proto_parse_download(json_t *root, struct request *r, struct sbx_error *err);
int proto_parse_callbacks(json_t *root, struct request *r, struct sbx_error *err);

/* proto.c: the pieces of a run request that a session's requests share
 * (proto-session.c). Each fills run and names the field it refuses. */
int proto_parse_command(json_t *command, const char *field, bool program, struct run_request *run, struct sbx_error *err);
int proto_parse_env(json_t *env, struct run_request *run, struct sbx_error *err);
int proto_parse_stdin(json_t *root, const char *in, const char *in_b64, struct run_request *run, struct sbx_error *err);
int proto_parse_limits(json_t *limits, struct run_request *run, struct sbx_error *err);
int proto_parse_network(json_t *net, struct run_request *run, struct sbx_error *err);
int proto_parse_files(json_t *files, struct run_request *run, struct sbx_error *err);
/* "secrets": the names of the tenant's secrets a job or session asks for. */
int proto_parse_secrets(json_t *secrets, struct run_request *run, struct sbx_error *err);
int proto_decode_b64(const char *field, const char *s, unsigned char **ret, size_t *ret_len, struct sbx_error *err);

/* A reload or policy.* request (proto-admin.c). */
int proto_parse_admin(json_t *root, struct request *r, struct sbx_error *err);
/* proto-session.c */
int proto_parse_session(json_t *root, struct request *r, struct sbx_error *err);
