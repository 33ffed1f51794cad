/* SPDX-License-Identifier: Apache-2.0 */
/* Jobs' packages (sbx-supervisord(8) DEPENDENCIES). A job that asks for
 * pip or npm pins its tenant's lists admit gets them as a read-only layer
 * at /deps (pip's at /deps/pip, on its PYTHONPATH; npm's at
 * /deps/npm/node_modules, its NODE_PATH): a directory of STATE/deps named
 * by its lock's key (deps_lock_key()), which STATE/deps/by-request/KEY
 * names for the request's key (deps_key()), made once by an install job — a job of the
 * same tenant that runs pip and npm with the network restricted to the
 * index and registry, its layer and the clients' locks collected as
 * artifacts — and used by every later job with the same pins from the
 * same sources whose tenant admits every package of its lock. A job whose
 * layer is not at hand waits ("fetching") for the install, which jobs
 * asking for the same layer share; when it fails they end with E_DEPS,
 * naming the install job. */
#pragma once

#include <stdbool.h>

#include "error.h"

struct conn;
struct daemon;
struct request;
struct rjob;

int deps_init(struct daemon *d, struct sbx_error *err);
void deps_done(struct daemon *d);
/* The pins of req (if any) for c's tenant: 0, or -EPERM with code and msg
 * (len bytes) naming each refused pin and why. */
int deps_admit(struct conn *c, const struct request *req, const char **code, char *msg, size_t len);
/* An accepted job with pins: its layer at hand, or it waits for one. */
void deps_job_start(struct rjob *rj);
