/* SPDX-License-Identifier: Apache-2.0 */
/* Capability drop (libcap-ng). */
#pragma once

#include "protections.h"

/* Clear the effective, permitted, inheritable and ambient sets and the
 * bounding set, except the capabilities the profile keeps (p->caps), which
 * stay in all five so they survive execve() whatever the uid inside.
 * They only ever mean something inside the sandbox's user namespace.
 * Sets prot->caps_dropped when all five sets are verifiably empty. */
int caps_drop(const struct profile *p, struct protections *prot, struct sbx_error *err);
