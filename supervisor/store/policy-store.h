/* SPDX-License-Identifier: Apache-2.0 */
/* STATE/policy.json: the tenant keys policy.set gave, which replace the
 * configuration file's, and the history of those changes, written whole
 * and durably at each change (policy-store.c). */
#pragma once

#include <jansson.h>

#include "error.h"

#define POLICY_FILE "policy.json"
/* Changes kept in the history, the newest: at most this many, and fewer
 * when the file would grow past POLICY_FILE_BUDGET (it is read back at
 * start, up to 16 MiB). */
#define POLICY_HISTORY_MAX 1000
#define POLICY_FILE_BUDGET (8u << 20)

/* The document: { "version": N, "tenants": { TENANT: { KEY: VALUE } },
 * "history": [ change... ] }; an empty one when there is no file yet. A
 * file that is not such a document is an error naming it. */
int policy_store_load(int state_fd, const char *state_dir, json_t **ret, struct sbx_error *err);
/* Write doc in place of the file: durable when 0 is returned. */
int policy_store_save(int state_fd, const json_t *doc);
/* A copy of doc's tenants with set applied to tenant's keys (a null value
 * removes the key). */
json_t *policy_store_apply(const json_t *doc, const char *tenant, const json_t *set);
/* Record the change: version + 1, tenants replaced, a history entry
 * (with each key's value before: null for the file's) appended, the
 * oldest dropped past POLICY_HISTORY_MAX. Returns the entry (borrowed). */
json_t *policy_store_commit(json_t *doc, json_t *tenants, const char *tenant, const json_t *set, const char *by,
                            const char *reason, const char *time);
