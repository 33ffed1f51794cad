/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "tenant.h"
#include "util.h"

const struct tenant *tenant_lookup(const struct config *c, uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups) {
        for (size_t i = 0; i < c->n_tenants; i++)
                for (size_t j = 0; j < c->tenants[i].n_uids; j++)
                        if (c->tenants[i].uids[j] == uid)
                                return &c->tenants[i];
        for (size_t i = 0; i < c->n_tenants; i++)
                for (size_t j = 0; j < c->tenants[i].n_gids; j++) {
                        gid_t g = c->tenants[i].gids[j];
                        if (g == gid)
                                return &c->tenants[i];
                        for (size_t k = 0; k < n_groups; k++)
                                if (groups[k] == g)
                                        return &c->tenants[i];
                }
        return NULL;
}

const struct tenant *tenant_find(const struct config *c, const char *name) {
        for (size_t i = 0; i < c->n_tenants; i++)
                if (streq(c->tenants[i].name, name))
                        return &c->tenants[i];
        if (c->allow_unauthenticated && c->anonymous && streq(c->anonymous->name, name))
                return c->anonymous;
        return NULL;
}

bool tenant_same(const struct tenant *a, const struct tenant *b) {
        return a == b || (a && b && streq(a->name, b->name));
}
