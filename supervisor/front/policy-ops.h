/* SPDX-License-Identifier: Apache-2.0 */
/* reload and policy.show, .set, .history (policy-ops.c). */
#pragma once

#include <stdbool.h>

#include "error.h"

struct conn;
struct daemon;
struct request;

void policy_op(struct conn *c, struct request *req);
/* root (not over HTTP), a user of admins, a token of scope admin */
bool policy_caller_admin(const struct conn *c);
/* secret.set, .ls, .rm (secret-ops.c); by: who asks, for the audit */
void secret_op(struct conn *c, struct request *req, const char *by);
/* At start, after the state directory: STATE/policy.json read, and the
 * keys it holds applied (an error if they no longer fit the file). */
int policy_open(struct daemon *d, struct sbx_error *err);
