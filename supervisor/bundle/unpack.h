/* SPDX-License-Identifier: Apache-2.0 */
/* Unpacking a bundle in a sandboxed child. libarchive parses an archive
 * that a registry sent; a memory bug in it must reach nothing but the one
 * staging directory. So the daemon never runs extract_archive() itself: it
 * clones a child in new user, mount, pid, network, IPC and UTS namespaces
 * that executes sbx-unpack (found beside the daemon's own executable, so
 * that the child holds none of the daemon's memory: tenants' callback
 * keys, other jobs' data). sbx-unpack makes the staging tree its whole
 * root, drops every capability, sets no_new_privs, rlimits and a seccomp
 * allow list (unpack_confine), unpacks the archive from an fd it was given
 * and writes one fixed-size reply. The daemon waits for it with a deadline,
 * kills a child that overruns, and checks the tree it made (tree-check.h).
 * This header is the contract between the two sides. */
#pragma once

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "extract.h"

#define UNPACK_PROGRAM "sbx-unpack"

/* The child's descriptors. */
#define UNPACK_FD_ARCHIVE 3 /* the archive, read-only, at offset 0 */
#define UNPACK_FD_TREE 4    /* the empty staging tree */
#define UNPACK_FD_REPLY 5   /* struct unpack_reply, once */

/* argv: sbx-unpack MAX_BYTES MAX_ENTRIES MAX_PATH CPU_SECONDS. It runs
 * as uid and gid 0 of its user namespace, mapped to the daemon's: the one
 * mapping an unprivileged daemon may write too. */
#define UNPACK_ARGC 5

struct unpack_reply {
        int32_t rc;         /* what extract_archive() returned, or -errno of a sandbox step */
        uint32_t sandbox;   /* 1: rc is of setting up the sandbox, not of the archive */
        uint64_t bytes;     /* struct extract_stats */
        uint64_t entries;
        char msg[SBX_ERROR_MAX];
};

struct unpack_limits {
        struct extract_limits x;
        uint64_t timeout_ms; /* wall clock, from the start of the child */
};

/* What sbx-unpack reads from its argv. */
struct unpack_args {
        struct unpack_limits lim;
        uint64_t cpu_seconds;
};

/* Unpack the archive read from fd into the empty directory tree_fd in a
 * sandboxed child running program (NULL: sbx-unpack beside the daemon).
 * Once the child reported success, the tree is walked (tree_check()) and
 * st is what the walk counted. Returns as extract_archive() does, and
 * also -ETIMEDOUT (killed at the
 * deadline), -ECHILD (the child died of a signal or without a reply: err
 * says which), -EPERM and others (the sandbox could not be set up: err
 * names the step). Blocking: a worker thread's. */
int unpack_archive(const char *program, int fd, int tree_fd, const struct unpack_limits *lim, const atomic_bool *stop,
                   struct extract_stats *st, struct sbx_error *err);

/* The sbx-unpack side: make the staging tree (fd UNPACK_FD_TREE) the
 * root of the mount namespace, then drop what the process holds: every
 * capability, the ability to regain any (no_new_privs), core dumps; set
 * rlimits (CPU seconds, address space, file size, open files) and the
 * seccomp allow list. Afterwards UNPACK_FD_TREE is the new root. 0 or
 * -errno with err naming the step. */
int unpack_confine(const struct unpack_args *a, struct sbx_error *err);
