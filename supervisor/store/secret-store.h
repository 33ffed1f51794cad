/* SPDX-License-Identifier: Apache-2.0 */
/* The tenants' secrets, kept by the daemon in STATE/secrets/TENANT/NAME:
 * directories of mode 0700, files of mode 0600, owned by the daemon's user
 * (the front's, with privilege separation), each written whole and synced
 * before it replaces the last. Values are read when a job that asked for
 * them starts, never cached, and wiped from memory after use. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define SECRETS_DIR "secrets"

int secret_store_set(int state_fd, const char *tenant, const char *name, const void *value, size_t len);
/* -ENOENT when it is not set. */
int secret_store_rm(int state_fd, const char *tenant, const char *name);
/* The value in *ret (malloc'd, NUL-terminated; the caller wipes and frees
 * it). -ENOENT when it is not set. */
int secret_store_get(int state_fd, const char *tenant, const char *name, char **ret, size_t *ret_len);
bool secret_store_has(int state_fd, const char *tenant, const char *name);
/* [{"name", "bytes", "updated_ms"}] of the tenant's secrets, by name; an
 * empty array when it has none. NULL on an error (errno). */
json_t *secret_store_list(int state_fd, const char *tenant);
