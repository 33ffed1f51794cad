/* SPDX-License-Identifier: Apache-2.0 */
/* reload and policy.show, .set, .history (policy-ops.c). */
#pragma once

#include "error.h"

struct conn;
struct daemon;
struct request;

void policy_op(struct conn *c, struct request *req);
/* At start, after the state directory: STATE/policy.json read, and the
 * keys it holds applied (an error if they no longer fit the file). */
int policy_open(struct daemon *d, struct sbx_error *err);
