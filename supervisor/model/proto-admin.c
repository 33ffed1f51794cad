/* SPDX-License-Identifier: Apache-2.0 */
/* The requests about the daemon's configuration: reload, and one tenant's
 * policy shown, changed or its changes listed (sbx-protocol(7)). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "proto-internal.h"
#include "util.h"

#define POLICY_MAX_KEYS 64
#define POLICY_MAX_VALUE 4096
#define POLICY_MAX_REASON 512

static const struct field reload_fields[] = { COMMON_FIELDS };
static const struct field show_fields[] = { COMMON_FIELDS, { "tenant", K_STRING, false }, { "limit", K_UINT, false } };
static const struct field drain_fields[] = { COMMON_FIELDS, { "node", K_STRING, false }, { "undo", K_BOOL, false } };
static const struct field set_fields[] = { COMMON_FIELDS, { "tenant", K_STRING, true }, { "set", K_OBJECT, true },
                                           { "reason", K_STRING, false } };

static const struct field secret_set_fields[] = { COMMON_FIELDS, { "tenant", K_STRING, true }, { "name", K_STRING, true },
                                                  { "value", K_STRING, true } };
static const struct field secret_rm_fields[] = { COMMON_FIELDS, { "tenant", K_STRING, true }, { "name", K_STRING, true } };
static const struct field secret_ls_fields[] = { COMMON_FIELDS, { "tenant", K_STRING, false } };

static int take_string(json_t *root, const char *name, size_t max, char **ret, struct sbx_error *err) {
        const char *s = json_string_value(json_object_get(root, name));
        if (!s)
                return 0;
        if (strlen(s) > max)
                return sbx_error_msg(err, EINVAL, "field '%s': longer than %zu bytes", name, max);
        if (!(*ret = strdup(s)))
                return sbx_error_set(err, ENOMEM, "%s", name);
        return 0;
}

/* Each key a tenant key's name; each value a string of one line or null
 * (back to the file's). Whether the key exists and the value is good is
 * the configuration's to say, when the daemon tries it. */
static int parse_set(json_t *set, struct sbx_error *err) {
        if (json_object_size(set) == 0)
                return sbx_error_msg(err, EINVAL, "field 'set': names no key");
        if (json_object_size(set) > POLICY_MAX_KEYS)
                return sbx_error_msg(err, EINVAL, "field 'set': more than %d keys", POLICY_MAX_KEYS);
        const char *k;
        json_t *v;
        json_object_foreach (set, k, v) {
                if (!*k || strlen(k) > 64 || strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(k))
                        return sbx_error_msg(err, EINVAL, "field 'set': '%.64s' is not a key's name (a-z, 0-9, '_')", k);
                if (json_is_null(v))
                        continue;
                const char *s = json_string_value(v);
                if (!s)
                        return sbx_error_msg(err, EINVAL, "field 'set.%s': a string or null, not %s", k, proto_json_kind_name(v));
                if (!*s || strlen(s) > POLICY_MAX_VALUE)
                        return sbx_error_msg(err, EINVAL, "field 'set.%s': 1 to %d bytes", k, POLICY_MAX_VALUE);
                for (const char *p = s; *p; p++)
                        if ((unsigned char) *p < 0x20 || *p == 0x7f)
                                return sbx_error_msg(err, EINVAL, "field 'set.%s': a control character (one line only)", k);
                if (*s == ' ' || s[strlen(s) - 1] == ' ')
                        return sbx_error_msg(err, EINVAL, "field 'set.%s': leading or trailing space", k);
        }
        return 0;
}

/* A secret's value: SECRET_VALUE_MIN to SECRET_VALUE_MAX bytes without a
 * NUL (it may become an environment variable or a profile's word). Never
 * quoted back in an error. */
static int take_value(json_t *v, struct request *r, struct sbx_error *err) {
        size_t n = json_string_length(v);
        const char *s = json_string_value(v);
        if (n < SECRET_VALUE_MIN || n > SECRET_VALUE_MAX)
                return sbx_error_msg(err, EINVAL, "field 'value': %zu bytes; a secret is %d to %d bytes", n, SECRET_VALUE_MIN,
                                     SECRET_VALUE_MAX);
        if (memchr(s, '\0', n))
                return sbx_error_msg(err, EINVAL, "field 'value': holds a NUL byte");
        if (!(r->value = malloc(n + 1)))
                return sbx_error_set(err, ENOMEM, "value");
        memcpy(r->value, s, n + 1);
        r->value_len = n;
        return 0;
}

int proto_parse_admin(json_t *root, struct request *r, struct sbx_error *err) {
        int rc;
        switch (r->op) {
        case REQ_RELOAD:
                return proto_check_fields(root, reload_fields, ARRAY_SIZE(reload_fields), "", err);
        case REQ_POLICY_SHOW:
        case REQ_POLICY_HISTORY:
                rc = proto_check_fields(root, show_fields, ARRAY_SIZE(show_fields), "", err);
                if (rc == 0 && json_object_get(root, "limit")) {
                        r->limit = (uint64_t) json_integer_value(json_object_get(root, "limit"));
                        if (r->limit == 0 || r->limit > PROTO_MAX_LIST)
                                return sbx_error_msg(err, EINVAL, "field 'limit': must be 1 to %d", PROTO_MAX_LIST);
                }
                break;
        case REQ_POLICY_SET:
                rc = proto_check_fields(root, set_fields, ARRAY_SIZE(set_fields), "", err);
                if (rc == 0)
                        rc = parse_set(json_object_get(root, "set"), err);
                if (rc == 0)
                        r->policy = json_incref(json_object_get(root, "set"));
                if (rc == 0)
                        rc = take_string(root, "reason", POLICY_MAX_REASON, &r->reason, err);
                break;
        case REQ_SECRET_SET:
        case REQ_SECRET_RM:
                rc = proto_check_fields(root, r->op == REQ_SECRET_SET ? secret_set_fields : secret_rm_fields,
                                        r->op == REQ_SECRET_SET ? ARRAY_SIZE(secret_set_fields) : ARRAY_SIZE(secret_rm_fields), "",
                                        err);
                if (rc == 0 && !secret_name_valid(json_string_value(json_object_get(root, "name"))))
                        return sbx_error_msg(err, EINVAL, "field 'name': '%.64s' is not a secret's name (a letter or '_', then "
                                                          "letters, digits and '_', at most %d; not SBX_...)",
                                             json_string_value(json_object_get(root, "name")), SECRET_NAME_MAX);
                if (rc == 0)
                        rc = take_string(root, "name", SECRET_NAME_MAX, &r->name, err);
                if (rc == 0 && r->op == REQ_SECRET_SET)
                        rc = take_value(json_object_get(root, "value"), r, err);
                break;
        case REQ_SECRET_LIST:
                rc = proto_check_fields(root, secret_ls_fields, ARRAY_SIZE(secret_ls_fields), "", err);
                break;
        case REQ_NODES:
                return proto_check_fields(root, reload_fields, ARRAY_SIZE(reload_fields), "", err);
        case REQ_DRAIN:
                rc = proto_check_fields(root, drain_fields, ARRAY_SIZE(drain_fields), "", err);
                if (rc == 0)
                        rc = take_string(root, "node", 63, &r->name, err);
                r->undo = json_is_true(json_object_get(root, "undo"));
                return rc;
        default:
                return -EINVAL;
        }
        if (rc == 0)
                rc = take_string(root, "tenant", 64, &r->tenant, err);
        if (rc == 0 && r->tenant && !name_valid(r->tenant))
                return sbx_error_msg(err, EINVAL, "field 'tenant': '%s' is not a tenant's name", r->tenant);
        return rc;
}
