/* SPDX-License-Identifier: Apache-2.0 */
/* Unpacking a bundle archive (a tar, gzip'd) with libarchive into an empty
 * directory, refusing whatever could reach outside it or outlive it as
 * something other than plain files: absolute paths, '..', symbolic links
 * whose target leaves the tree (alone or through other links), hard links
 * to anything but a file already unpacked, device nodes, fifos, sockets,
 * setuid and setgid bits, a path written twice; and bounded: the bytes
 * unpacked, the number of entries and the length of a path (an archive
 * that expands a thousandfold stops at the byte bound). Nothing is written
 * through a symbolic link. Files are created by the caller (root-owned),
 * read-only (0444, 0555 when the archive made them executable),
 * directories 0555 once filled. Runs on a worker thread. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct extract_limits {
        uint64_t max_bytes;   /* of file contents */
        uint64_t max_entries; /* entries of the archive */
        size_t max_path;      /* bytes of one path */
};

struct extract_stats {
        uint64_t bytes;
        uint64_t entries;
};

#define EXTRACT_MAX_PATH 1024

/* A symbolic link's target, read from the link's directory at depth
 * levels below the tree's root, never climbs above the root, even half-way
 * (a/../../b does not count as inside); an absolute target is never
 * inside. Lexical only: links the target passes through are judged on
 * their own. Used by the daemon on archives and by sbx-bundle on trees it
 * packs. */
bool extract_link_inside(const char *target, size_t depth);

/* Unpack the archive read from fd into the empty directory dest_fd.
 * -EINVAL (a refused archive: err names the entry and why), -EFBIG (a
 * bound), -ECANCELED (*stop was set), or another -errno (the disk). What
 * was unpacked before a failure stays for the caller to remove. */
int extract_archive(int fd, int dest_fd, const struct extract_limits *lim, const atomic_bool *stop,
                    struct extract_stats *st, struct sbx_error *err);
