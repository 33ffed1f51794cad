/* SPDX-License-Identifier: Apache-2.0 */
/* The strict field checker, and the parsers of the requests that name a
 * job or ask the daemon something (everything but run, which proto.c
 * parses). */
#include <errno.h>
#include <string.h>

#include "index.h"
#include "job.h"
#include "proto-internal.h"
#include "util.h"

const char *proto_json_kind_name(const json_t *j) {
        switch (json_typeof(j)) {
        case JSON_OBJECT: return "object";
        case JSON_ARRAY: return "array";
        case JSON_STRING: return "string";
        case JSON_INTEGER: return "integer";
        case JSON_REAL: return "number";
        case JSON_TRUE:
        case JSON_FALSE: return "boolean";
        case JSON_NULL: return "null";
        }
        return "?";
}

static const char *kind_name(enum kind k) {
        switch (k) {
        case K_STRING: return "string";
        case K_UINT: return "non-negative integer";
        case K_BOOL: return "boolean";
        case K_ARRAY: return "array";
        case K_OBJECT: return "object";
        case K_TAG: return "string or integer";
        case K_NUMBER: return "number";
        case K_NET: return "string or object";
        }
        return "?";
}

static bool kind_ok(enum kind k, const json_t *j) {
        switch (k) {
        case K_STRING: return json_is_string(j);
        case K_UINT: return json_is_integer(j) && json_integer_value(j) >= 0;
        case K_BOOL: return json_is_boolean(j);
        case K_ARRAY: return json_is_array(j);
        case K_OBJECT: return json_is_object(j);
        case K_TAG: return json_is_string(j) || json_is_integer(j);
        case K_NUMBER: return json_is_number(j);
        case K_NET: return json_is_string(j) || json_is_object(j);
        }
        return false;
}

int proto_check_fields(const json_t *obj, const struct field *spec, size_t n, const char *where, struct sbx_error *err) {
        const char *key;
        json_t *val;
        json_object_foreach((json_t *) obj, key, val) {
                size_t i;
                for (i = 0; i < n; i++)
                        if (streq(spec[i].name, key))
                                break;
                if (i == n)
                        return sbx_error_msg(err, EINVAL, "unknown field '%s%s'", where, key);
                if (!kind_ok(spec[i].kind, val)) {
                        if (spec[i].kind == K_UINT && json_is_integer(val))
                                return sbx_error_msg(err, EINVAL, "field '%s%s': must not be negative", where, key);
                        return sbx_error_msg(err, EINVAL, "field '%s%s': expected %s, got %s", where, key,
                                             kind_name(spec[i].kind), proto_json_kind_name(val));
                }
        }
        for (size_t i = 0; i < n; i++)
                if (spec[i].required && !json_object_get(obj, spec[i].name))
                        return sbx_error_msg(err, EINVAL, "missing field '%s%s'", where, spec[i].name);
        return 0;
}

static const struct field logs_fields[] = {
        COMMON_FIELDS,
        { "job", K_STRING, true },
        { "stream", K_STRING, false },
        { "follow", K_BOOL, false },
        { "offset", K_UINT, false },
        { "max_bytes", K_UINT, false },
};
static const struct field list_fields[] = {
        COMMON_FIELDS,
        { "state", K_STRING, false },
        { "limit", K_UINT, false },
};
static const struct field bundle_show_fields[] = { COMMON_FIELDS, { "bundle", K_STRING, true } };

int proto_parse_job_field(json_t *root, struct request *r, struct sbx_error *err) {
        const char *job = json_string_value(json_object_get(root, "job"));
        if (!proto_valid_job_id(job))
                return sbx_error_msg(err, EINVAL, "field 'job': not a job id");
        r->job = strdup(job);
        return r->job ? 0 : sbx_error_set(err, ENOMEM, "job");
}

int proto_parse_logs(json_t *root, struct request *r, struct sbx_error *err) {
        int rc = proto_check_fields(root, logs_fields, ARRAY_SIZE(logs_fields), "", err);
        if (rc == 0)
                rc = proto_parse_job_field(root, r, err);
        if (rc < 0)
                return rc;
        const char *s = json_string_value(json_object_get(root, "stream"));
        if (!s || streq(s, "both"))
                r->streams = STREAM_BOTH;
        else if (streq(s, "stdout"))
                r->streams = STREAM_STDOUT;
        else if (streq(s, "stderr"))
                r->streams = STREAM_STDERR;
        else
                return sbx_error_msg(err, EINVAL, "field 'stream': expected \"stdout\", \"stderr\" or \"both\"");
        r->follow = json_is_true(json_object_get(root, "follow"));
        json_t *off = json_object_get(root, "offset"), *mb = json_object_get(root, "max_bytes");
        if ((off || mb) && r->follow)
                return sbx_error_msg(err, EINVAL, "fields 'offset' and 'max_bytes' do not go with 'follow'");
        if (off)
                r->offset = (uint64_t) json_integer_value(off);
        if (mb) {
                r->max_bytes = (uint64_t) json_integer_value(mb);
                if (r->max_bytes == 0 || r->max_bytes > PROTO_LOGS_CHUNK)
                        return sbx_error_msg(err, EINVAL, "field 'max_bytes': must be 1 to %u", PROTO_LOGS_CHUNK);
        }
        return 0;
}

int proto_parse_list(json_t *root, struct request *r, struct sbx_error *err) {
        int rc = proto_check_fields(root, list_fields, ARRAY_SIZE(list_fields), "", err);
        if (rc < 0)
                return rc;
        const char *s = json_string_value(json_object_get(root, "state"));
        if (s) {
                if (!job_state_filter_valid(s))
                        return sbx_error_msg(err, EINVAL, "field 'state': unknown state '%.32s'", s);
                r->state = strdup(s);
                if (!r->state)
                        return sbx_error_set(err, ENOMEM, "state");
        }
        json_t *l = json_object_get(root, "limit");
        if (l) {
                r->limit = (uint64_t) json_integer_value(l);
                if (r->limit == 0 || r->limit > PROTO_MAX_LIST)
                        return sbx_error_msg(err, EINVAL, "field 'limit': must be 1 to %d", PROTO_MAX_LIST);
        }
        return 0;
}

int proto_parse_bundle_show(json_t *root, struct request *r, struct sbx_error *err) {
        struct bundle_ref ref;
        int rc = proto_check_fields(root, bundle_show_fields, ARRAY_SIZE(bundle_show_fields), "", err);
        if (rc < 0)
                return rc;
        const char *b = json_string_value(json_object_get(root, "bundle"));
        if (bundle_ref_parse(b, &ref, err) < 0)
                return sbx_error_wrap(err, "field 'bundle'");
        r->bundle = strdup(b);
        return r->bundle ? 0 : sbx_error_set(err, ENOMEM, "bundle");
}


static const struct field download_fields[] = {
        COMMON_FIELDS,
        { "job", K_STRING, true },
        { "artifact", K_STRING, false },
        { "stream", K_STRING, false },
};

/* One file of a finished job: an artifact by the path its record lists,
 * or a captured stream. */
int proto_parse_download(json_t *root, struct request *r, struct sbx_error *err) {
        int rc = proto_check_fields(root, download_fields, ARRAY_SIZE(download_fields), "", err);
        if (rc == 0)
                rc = proto_parse_job_field(root, r, err);
        if (rc < 0)
                return rc;
        const char *a = json_string_value(json_object_get(root, "artifact"));
        const char *s = json_string_value(json_object_get(root, "stream"));
        if (!!a == !!s)
                return sbx_error_msg(err, EINVAL, "exactly one of the fields 'artifact' and 'stream' is required");
        if (s) {
                if (streq(s, "stdout"))
                        r->streams = STREAM_STDOUT;
                else if (streq(s, "stderr"))
                        r->streams = STREAM_STDERR;
                else
                        return sbx_error_msg(err, EINVAL, "field 'stream': expected \"stdout\" or \"stderr\"");
                return 0;
        }
        if (!proto_valid_rel_path(a, false))
                return sbx_error_msg(err, EINVAL, "field 'artifact': must be a relative path without '.' or '..' components");
        r->artifact = strdup(a);
        return r->artifact ? 0 : sbx_error_set(err, ENOMEM, "artifact");
}

static const struct field cb_list_fields[] = {
        COMMON_FIELDS,
        { "state", K_STRING, false },
        { "limit", K_UINT, false },
};
static const struct field cb_job_fields[] = { COMMON_FIELDS, { "job", K_STRING, true } };

/* callbacks.list [state, limit]; callbacks.retry and .drop: job. */
int proto_parse_callbacks(json_t *root, struct request *r, struct sbx_error *err) {
        if (r->op != REQ_CB_LIST) {
                int rc = proto_check_fields(root, cb_job_fields, ARRAY_SIZE(cb_job_fields), "", err);
                return rc < 0 ? rc : proto_parse_job_field(root, r, err);
        }
        int rc = proto_check_fields(root, cb_list_fields, ARRAY_SIZE(cb_list_fields), "", err);
        if (rc < 0)
                return rc;
        const char *s = json_string_value(json_object_get(root, "state"));
        if (s) {
                if (!streq(s, "pending") && !streq(s, "dead") && !streq(s, "dropped"))
                        return sbx_error_msg(err, EINVAL, "field 'state': expected \"pending\", \"dead\" or \"dropped\"");
                if (!(r->state = strdup(s)))
                        return sbx_error_set(err, ENOMEM, "state");
        }
        json_t *l = json_object_get(root, "limit");
        if (l) {
                r->limit = (uint64_t) json_integer_value(l);
                if (r->limit == 0 || r->limit > PROTO_MAX_LIST)
                        return sbx_error_msg(err, EINVAL, "field 'limit': must be 1 to %d", PROTO_MAX_LIST);
        }
        return 0;
}
