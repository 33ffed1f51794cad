/* SPDX-License-Identifier: Apache-2.0 */
/* The per-job workspace: created by the daemon (files uploaded with the
 * request written into it before the job can touch it), handed to the job
 * uid, bind-mounted at /workspace by the launcher; afterwards the artifacts
 * the request asked for are copied out — without following the job's
 * symlinks, regular files only, within a byte cap, each with its sha256 —
 * and the workspace is deleted. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "proto.h"

int workspace_create(int work_dirfd, const char *id, const struct run_request *run, uid_t uid, gid_t gid,
                     struct sbx_error *err);

/* Copy files of work/ID matching globs into dest_dirfd, at most 10,000
 * files and cap bytes; *ret is a JSON array of {path, size, sha256}. The
 * copies are not synced: the caller syncs them (syncfs) before the record
 * that lists them. */
int workspace_collect(int work_dirfd, const char *id, char *const *globs, size_t n_globs, uint64_t cap, int dest_dirfd,
                      json_t **ret, bool *ret_truncated, struct sbx_error *err);

int workspace_remove(int work_dirfd, const char *id);
