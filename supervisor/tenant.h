/* SPDX-License-Identifier: Apache-2.0 */
/* Callers to tenants, and a tenant's policy applied to a run request: each
 * value the request asks for is checked against the tenant's cap and either
 * refused or clamped (the tenant's over_limit setting); values it leaves out
 * get the tenant's defaults. Pure functions, unit-tested. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "error.h"
#include "proto.h"

/* The tenant for a caller: the first whose uids contain uid, else the first
 * whose gids contain gid or one of groups. NULL when none matches. */
struct tenant *tenant_lookup(struct config *c, uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups);

struct policy_decision {
        char profile[72];
        uint64_t timeout_ms;
        uint64_t memory;     /* PROTO_UNSET: no limit */
        uint64_t processes;
        uint64_t cpu_s;
        uint64_t cpu_milli;  /* CPU bandwidth, thousandths of a CPU; PROTO_UNSET: none */
        uint64_t output;     /* bytes kept per stream */
        uint64_t artifacts;  /* bytes of artifacts kept */
        int net;             /* enum net_mode */
        char clamped[512];   /* "timeout_ms 600000 -> 60000; ..." or "" */
        const char *code;    /* error code when refused */
};

/* 0 when the request may run (d filled), or -EPERM with d->code and err
 * naming the field and the cap. */
int policy_apply(const struct tenant *t, const struct run_request *run, struct policy_decision *d, struct sbx_error *err);

/* Does the tenant allow this profile name? */
bool tenant_allows_profile(const struct tenant *t, const char *name);
