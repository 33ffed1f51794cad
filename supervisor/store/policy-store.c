/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "policy-store.h"
#include "util.h"

#define POLICY_FILE_MAX (16u << 20)

static json_t *empty_doc(void) {
        return json_pack("{s:i, s:{}, s:[]}", "version", 0, "tenants", "history");
}

/* Every tenant an object of strings. */
static bool tenants_valid(const json_t *tenants) {
        const char *tn, *k;
        json_t *keys, *v;
        if (!json_is_object(tenants))
                return false;
        json_object_foreach ((json_t *) tenants, tn, keys) {
                if (!json_is_object(keys) || !name_valid(tn))
                        return false;
                json_object_foreach (keys, k, v)
                        if (!json_is_string(v))
                                return false;
        }
        return true;
}

int policy_store_load(int state_fd, const char *state_dir, json_t **ret, struct sbx_error *err) {
        char *text = NULL;
        size_t len;
        int r = read_file_at(state_fd, POLICY_FILE, POLICY_FILE_MAX, &text, &len);
        if (r == -ENOENT) {
                *ret = empty_doc();
                return *ret ? 0 : sbx_error_set(err, ENOMEM, "%s", POLICY_FILE);
        }
        if (r < 0)
                return sbx_error_set(err, -r, "%s/%s", state_dir, POLICY_FILE);
        json_error_t je;
        json_t *doc = json_loadb(text, len, 0, &je);
        free(text);
        if (!doc)
                return sbx_error_msg(err, EINVAL, "%s/%s:%d: %s", state_dir, POLICY_FILE, je.line, je.text);
        if (!json_is_integer(json_object_get(doc, "version")) || !tenants_valid(json_object_get(doc, "tenants")) ||
            !json_is_array(json_object_get(doc, "history"))) {
                json_decref(doc);
                return sbx_error_msg(err, EINVAL,
                                     "%s/%s: not a policy file (\"version\", \"tenants\" of strings by key, \"history\")",
                                     state_dir, POLICY_FILE);
        }
        *ret = doc;
        return 0;
}

int policy_store_save(int state_fd, const json_t *doc) {
        char *s = json_dumps(doc, JSON_INDENT(1) | JSON_SORT_KEYS);
        if (!s)
                return -ENOMEM;
        size_t len = strlen(s);
        int r = write_file_durable(state_fd, POLICY_FILE, s, len, 0600, true);
        free(s);
        return r;
}

json_t *policy_store_apply(const json_t *doc, const char *tenant, const json_t *set) {
        json_t *tenants = json_deep_copy(json_object_get(doc, "tenants"));
        if (!tenants)
                return NULL;
        json_t *keys = json_object_get(tenants, tenant);
        if (!keys) {
                keys = json_object();
                if (json_object_set_new(tenants, tenant, keys) < 0) {
                        json_decref(tenants);
                        return NULL;
                }
        }
        const char *k;
        json_t *v;
        json_object_foreach ((json_t *) set, k, v) {
                if (json_is_null(v))
                        json_object_del(keys, k);
                else
                        json_object_set(keys, k, v);
        }
        if (json_object_size(keys) == 0)
                json_object_del(tenants, tenant);
        return tenants;
}

json_t *policy_store_commit(json_t *doc, json_t *tenants, const char *tenant, const json_t *set, const char *by,
                            const char *reason, const char *time) {
        json_t *was = json_object_get(json_object_get(doc, "tenants"), tenant);
        json_t *before = json_object();
        const char *k;
        json_t *v;
        json_object_foreach ((json_t *) set, k, v) {
                json_t *old = json_object_get(was, k);
                json_object_set_new(before, k, old ? json_incref(old) : json_null());
        }
        json_int_t version = json_integer_value(json_object_get(doc, "version")) + 1;
        json_t *entry = json_pack("{s:I, s:s, s:s, s:s, s:O, s:o}", "version", version, "time", time, "by", by, "tenant", tenant,
                                  "set", set, "before", before);
        if (entry && reason)
                json_object_set_new(entry, "reason", json_string(reason));
        json_object_set_new(doc, "version", json_integer(version));
        json_object_set_new(doc, "tenants", tenants);
        json_t *history = json_object_get(doc, "history");
        json_array_append_new(history, entry);
        while (json_array_size(history) > POLICY_HISTORY_MAX)
                json_array_remove(history, 0);
        while (json_array_size(history) > 1 && json_dumpb(doc, NULL, 0, JSON_INDENT(1) | JSON_SORT_KEYS) > POLICY_FILE_BUDGET)
                json_array_remove(history, 0);
        return entry;
}
