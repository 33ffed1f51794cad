/* SPDX-License-Identifier: Apache-2.0 */
/* The bundle cache on disk: STATE/cache/<sha256>/ holds one bundle, its
 * unpacked tree (tree/, read-only, root-owned) and what the daemon knows
 * of it (meta.json). A tree is unpacked into a staging directory, synced,
 * then renamed into place, so that after any crash the cache holds either
 * the whole tree or nothing of it; what a crash left in staging is removed
 * at start. A tree leaves by a rename to a trash name (at once, so no job
 * can be given it any more) and is deleted off the event loop. The last
 * use of a tree is its directory's modification time, so the LRU order
 * survives a restart. */
#pragma once

#include <stdint.h>

#include "cache.h"
#include "error.h"

#define CACHEFS_TREE "tree"
#define CACHEFS_META "meta.json"
#define CACHEFS_MAX_TENANTS 4096

/* STATE/cache, made if missing (0700: no job user or local user reaches
 * a tree by its path; a job gets its tree as a mount, cachefs_tree_mount);
 * leftovers of staging and trash removed; every complete
 * bundle read into c (an unreadable one is removed, never used). */
int cachefs_open(int state_fd, struct cache *c, int *ret_fd, struct sbx_error *err);

/* A new staging directory (.staging-<sha>-<random>) with an empty tree/
 * in it: its name into name_out (64 bytes at least) and the tree's fd. */
int cachefs_stage(int cache_fd, const char *sha256, char *name_out, size_t len, int *ret_stage_fd, int *ret_tree_fd,
                  struct sbx_error *err);
/* Write meta.json, make the staged tree durable (syncfs), and rename it to
 * <sha256>; then sync the cache directory. When <sha256> is already there
 * (another registry's download of the same digest), the staged tree is
 * removed and that one stands: 0 too. */
int cachefs_commit(int cache_fd, const char *staged, int stage_fd, const struct cache_entry *e, struct sbx_error *err);
/* Rewrite <sha256>/meta.json from e (its users changed): atomic, not
 * synced (a crash may lose the change: the users only decide whose
 * cache gc --all removes the tree). -errno. */
int cachefs_write_meta(int cache_fd, const struct cache_entry *e);
/* Remove a staging or trash directory (blocking: off the loop). */
void cachefs_remove(int cache_fd, const char *name);
/* Rename <sha256> to a trash name (into trash_out, 96 bytes) for
 * cachefs_remove(); -errno. */
int cachefs_trash(int cache_fd, const char *sha256, unsigned seq, char *trash_out, size_t len);
/* Record the last use (the directory's mtime). */
void cachefs_touch(int cache_fd, const char *sha256, uint64_t real_ms);
/* A detached, read-only (nosuid, nodev) mount of <sha256>'s tree for a
 * job's launcher to move into its sandbox: the fd, or -errno (-EPERM
 * for a daemon that may not mount). */
/* The tree's directory itself (for sbx-privd, which makes the mount). */
int cachefs_tree_open(int cache_fd, const char *sha256);
int cachefs_tree_mount(int cache_fd, const char *sha256);
/* The tree's path on the host: STATE/cache/<sha256>/tree (malloc'd). */
char *cachefs_tree_path(const char *state_dir, const char *sha256);
