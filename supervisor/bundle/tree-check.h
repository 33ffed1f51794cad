/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's own look at a tree that the unpacking child (unpack.h)
 * made. The child ran extract.c's checks, but a child that a hostile
 * archive took over could have made anything its seccomp filter allows
 * beneath the tree: so the daemon walks it once more, never following a
 * link, before it trusts it. */
#pragma once

#include "error.h"
#include "extract.h"

/* Only directories, regular files and symbolic links; no setuid, setgid
 * or sticky bit; each link's target inside the tree (lexically and as the
 * kernel resolves it beneath the tree); within lim's entries, bytes and
 * path length. st gets the entries and bytes found (a file with n links
 * counts a nth of its size at each). 0, -EINVAL or -EFBIG with err naming
 * the entry, or another -errno. */
int tree_check(int tree_fd, const struct extract_limits *lim, struct extract_stats *st, struct sbx_error *err);
