/* SPDX-License-Identifier: Apache-2.0 */
/* Bundles on the event loop: resolving a job's bundle reference through
 * its tenant's registry (a verified index kept in memory for index_ttl,
 * so that a warm run asks nothing of the registry), the cache of unpacked
 * trees (a job holds its tree while it runs; least recently used trees
 * go beyond the byte budget or the age limit, never one in use), and the
 * transfers and unpacking, which run on a pool of their own: one download
 * for every job that asks for the same missing bundle, and a job waiting
 * for its bundle is in state "fetching". When the bundle is ready its
 * manifest's capabilities are intersected with the tenant's policy
 * (grant.h) and the job queues, or ends with the refusal; every failure is
 * the job's result (E_REGISTRY_UNAVAILABLE, E_BUNDLE_*), audited. With a
 * registry's offline = use-cached, a registry that cannot be asked lets
 * the newest cached version that fits run, marked stale. */
#pragma once

#include <stdint.h>

#include "conf.h"
#include "error.h"
#include "proto.h"

struct bundles;
struct config;
struct conn;
struct daemon;
struct rjob;

/* After the state directory (state_fd) and the loop: the cache read from
 * disk, the pool started; *ret set at once (bundles_done() frees it, the
 * start failed or not). cfg: the daemon's configuration (a reload swaps
 * what it holds, so its new limits apply). */
int bundles_init(struct bundles **ret, const struct config *cfg, int state_fd, struct sbx_error *err);
/* The daemon is stopping: transfers and unpacking stop at once. */
void bundles_stop(struct bundles *b);
/* After the clients are gone: the pool joined, everything freed (b may be
 * NULL). */
void bundles_done(struct bundles *b);
/* Once a second: trees past the age limit or the budget go. */
void bundles_housekeeping(struct bundles *b);
/* The cache's unpacked bytes and trees (0 without bundles: b NULL). */
void bundles_cache_stats(const struct bundles *b, uint64_t *ret_bytes, uint64_t *ret_entries);

/* May t run the bundle run names? 0, or -EPERM with *code and err. */
int bundle_admit(const struct tenant *t, const struct run_request *run, const char **code, struct sbx_error *err);
/* An accepted bundle job (queued): resolved now if its bundle is at hand,
 * else it waits ("fetching"). It may end here (refused). */
void bundle_job_start(struct rjob *rj);
/* The job's tree as a detached read-only mount for its launcher
 * (cachefs_tree_mount): the fd, or -errno. */
int bundle_job_tree_mount(struct rjob *rj);
/* The job ends: it stops waiting, and lets go of its tree. */
void bundle_job_release(struct rjob *rj);

/* bundle.show, cache.list, cache.gc (bundle-ops.c). */
void bundle_op_show(struct conn *c, struct request *req);
void bundle_op_cache_list(struct conn *c, struct request *req);
void bundle_op_cache_gc(struct conn *c, struct request *req);
