/* SPDX-License-Identifier: Apache-2.0 */
/* Callers to tenants: the socket's peer credentials decide, never the
 * request. Pure, unit-tested. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "conf.h"

/* The tenant for a caller: the first whose uids contain uid, else the first
 * whose gids contain gid or one of groups. NULL when none matches. */
const struct tenant *tenant_lookup(const struct config *c, uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups);

/* The tenant called name, or NULL (the anonymous tenant included). */
const struct tenant *tenant_find(const struct config *c, const char *name);

/* One tenant, perhaps as two reloads of the configuration have it: its
 * name is what stays. */
bool tenant_same(const struct tenant *a, const struct tenant *b);
