/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration read again while the daemon runs (reload.c). */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "error.h"

struct daemon;
struct retired;

/* Read the daemon's configuration file again, with the policy document's
 * keys (policy-store.h), and apply its tenants, tokens and admins; by says
 * who asked ("SIGHUP", "uid 0"...). 0 with *ret (if not NULL) what
 * changed; on failure nothing changed and err says why. Both are logged
 * and audited. */
int daemon_reload(struct daemon *d, const char *by, json_t **ret, struct sbx_error *err);
/* The two halves, for a change that must be made durable in between
 * (policy.set): the new configuration read and checked, or NULL with err
 * set; then applied (cannot fail), returning what changed, or dropped. */
struct retired *reload_prepare(struct daemon *d, const json_t *policy, struct sbx_error *err);
json_t *reload_apply(struct daemon *d, struct retired *x, const char *by);
void reload_discard(struct retired *x);
/* Free the tenants of earlier configurations nothing points at any more
 * (all: every one, as the daemon ends). */
void reload_sweep(struct daemon *d, bool all);
