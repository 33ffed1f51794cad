/* SPDX-License-Identifier: Apache-2.0 */
/* What a bundle job may do: the capabilities its manifest declares,
 * intersected with its tenant's policy, and the caller's request within
 * both. Anything the manifest does not declare is denied; a declared
 * capability the policy does not allow is refused (E_FORBIDDEN, naming
 * it); limits go through the tenant's caps as an inline request's do
 * (E_LIMIT, or clamped where the tenant clamps). Pure, unit-tested. */
#pragma once

#include "conf.h"
#include "error.h"
#include "manifest.h"
#include "policy.h"
#include "proto.h"

struct netpolicy;

/* 0 with d filled, *ret_ro_paths the read-only paths granted and, for a
 * bundle declaring network = restricted, *ret_netpol its connect
 * endpoints as allow entries (the caller's to free; NULL otherwise); or
 * -EPERM with d->code and err saying what was refused and why (a
 * restricted bundle: as for a restricted request, within the tenant's
 * network_allow and what the daemon can enforce). */
int grant_bundle(const struct tenant *t, const struct manifest *m, const struct run_request *run,
                 const struct daemon_caps *caps, struct policy_decision *d, unsigned *ret_ro_paths, struct netpolicy **ret_netpol,
                 struct sbx_error *err);
