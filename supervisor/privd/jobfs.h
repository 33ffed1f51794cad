/* SPDX-License-Identifier: Apache-2.0 */
/* A job's cgroup and workspace, made, emptied and removed by descriptor
 * (jobfs.c). Each returns 0 or a negative errno and never prints. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "privd-abi.h"

/* Enable memory, pids and cpu for the children of root_fd where its
 * parent offers them; the PRIVD_LIMIT_* bits that worked. */
unsigned jobfs_cgroup_controllers(int root_fd);
/* Make root/name (it must not exist) with m's limits where have allows;
 * *ret_fd: the new cgroup's directory, *ret_limits: what it enforces. */
int jobfs_cgroup_make(int root_fd, const char *name, unsigned have, const struct privd_job_open *m, int *ret_fd,
                      unsigned *ret_limits);
/* cgroup.kill: every process of the cgroup at once. */
int jobfs_cgroup_kill(int cg_fd);
/* Wait (at most about 2 s) until no process is in the cgroup; -EBUSY if
 * one still is. Blocking. */
int jobfs_cgroup_wait_empty(int cg_fd);
/* Kill, wait briefly for the last process to go, rmdir; -EBUSY if one
 * is still there. Blocking. */
int jobfs_cgroup_remove(int root_fd, int cg_fd, const char *name);
/* Make ws/name, mount on it a tmpfs of bytes owned by uid:gid, return its root. */
int jobfs_workspace_make(int ws_fd, const char *name, uid_t uid, gid_t gid, uint64_t bytes, bool *ret_noswap, int *ret_fd);
/* A bundle's tree for SPAWN: dir_fd must be a directory owned by front,
 * on no kernel filesystem; returns a detached read-only, nosuid, nodev
 * mount of it (open_tree OPEN_TREE_CLONE), or -errno with why filled.
 * cache (or NULL): the bundle cache's directory, where the same
 * directory is looked up when dir_fd is of another mount namespace. */
int jobfs_bundle_mount(int dir_fd, uid_t front, const char *cache, char *why, size_t why_len);
/* Detach the tmpfs (the kernel frees it with the last reference) and
 * remove the directory under it. */
int jobfs_workspace_remove(const char *ws_path, int ws_fd, const char *name);
/* At start: kill and remove every job cgroup and workspace a helper that
 * died left behind (their names are the helper's own), so that no name is
 * taken and no process of an old job keeps running. How many were
 * removed, or -errno. Blocking. */
int jobfs_sweep(int cg_root_fd, const char *ws_path, int ws_fd);
