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

/* Where and for whom a job's workspace is made. */
struct workspace_spec {
        int work_dirfd;
        const char *work_path;
        const char *id;
        const struct run_request *run;   /* its uploads */
        uid_t uid;
        gid_t gid;
        bool own_mount;                  /* a tmpfs of its own (the daemon runs as root) */
        uint64_t size_bytes;             /* that tmpfs' size: the job's disk quota */
};

/* What a workspace turned out to be. */
struct workspace_made {
        bool mounted;     /* a tmpfs of its own */
        bool noswap;      /* ... mounted noswap */
        bool encrypted;   /* a directory on a disk, encrypted with a key of its own (wscrypt.h) */
};

/* WORK/ID, with the uploads in it, owned by the job's uid: a tmpfs of its
 * own, sized, nosuid and nodev, when own_mount; otherwise a directory,
 * encrypted where its file system can. On failure the caller removes what
 * was made (workspace_remove). Blocking: not on the event loop. */
int workspace_prepare(const struct workspace_spec *ws, struct workspace_made *ret, struct sbx_error *err);

/* The request's uploads, written below the directory fd (which must be
 * fresh: they are created, never replaced). */
int workspace_write_uploads(int fd, const struct run_request *run, struct sbx_error *err);

/* Copy files of work/ID matching globs into dest_dirfd, at most 10,000
 * files and cap bytes; *ret is a JSON array of {path, size, sha256}. The
 * copies are not synced: the caller syncs them (syncfs) before the record
 * that lists them. */
/* The structured result a job left in file name of its workspace (dirfd,
 * sub-directory id): 0 with *ret NULL when there is none; 0 with *ret the
 * JSON value; -EINVAL with *ret_why (malloc'd) saying why it is not one:
 * not a regular file (a link is not followed, a FIFO not waited for),
 * more than max bytes, not JSON. */
int workspace_read_value(int dirfd, const char *id, const char *name, uint64_t max, json_t **ret, char **ret_why);
int workspace_collect(int work_dirfd, const char *id, char *const *globs, size_t n_globs, uint64_t cap, int dest_dirfd,
                      json_t **ret, bool *ret_truncated, struct sbx_error *err);

/* Unmount WORK/ID if it is a mount, then delete what is left. */
int workspace_remove(int work_dirfd, const char *work_path, const char *id);
