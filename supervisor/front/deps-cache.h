/* SPDX-License-Identifier: Apache-2.0 */
/* The packages' layers kept in STATE/deps (deps-ops.h), bounded by
 * [daemon] deps_cache_size: each layer's size and last use known, the
 * jobs that hold it counted. When a new layer takes the layers past the
 * bound, the least recently used that no job holds go (renamed out of
 * the way at once, then removed off the loop, the requests' keys that
 * named them with them); a layer a job holds is never removed under it.
 * On the loop thread only. */
#pragma once

#include <stdint.h>

#include "error.h"

struct deps_cache;

/* The layers already in the directory (dir_fd, path for the workers),
 * found by name (64 hex digits) and their lock.json; what a crash left
 * half made or half removed goes. */
int deps_cache_open(int dir_fd, const char *path, struct deps_cache **ret, struct sbx_error *err);
void deps_cache_free(struct deps_cache *c);
/* A job holds layer key now (its last use: now, on disk too), or no
 * longer. */
void deps_cache_use(struct deps_cache *c, const char *key);
void deps_cache_unuse(struct deps_cache *c, const char *key);
/* A layer just placed, of bytes; then the oldest unheld go while the
 * layers hold more than cap (never this one). */
void deps_cache_add(struct deps_cache *c, const char *key, uint64_t bytes, uint64_t cap);
/* The layers kept, in bytes, and how many. */
uint64_t deps_cache_bytes(const struct deps_cache *c, size_t *count);
