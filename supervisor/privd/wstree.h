/* SPDX-License-Identifier: Apache-2.0 */
/* A job's workspace changing hands across the uid line: the front's
 * uploads become the job's (WS_HANDOVER), the job's artifacts become the
 * front's (WS_RECLAIM). Both walk the tree by descriptor from the
 * workspace's root, which the helper holds; no path string is looked up,
 * no symlink is followed, and nothing on another mount is touched. Each
 * returns 0 or a negative errno and never prints: what it found is in
 * the report, for the caller's log. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Deeper directories are refused (handover) or left alone (reclaim): each
 * level holds one descriptor while the walk is below it. */
#define WSTREE_DEPTH_MAX 64u
/* Entries visited in one walk, at most (a tmpfs holds a bounded number of
 * inodes, but a racing front could rename directories to be seen twice). */
#define WSTREE_ENTRIES_MAX 1000000u

struct wstree_report {
        unsigned long entries;    /* visited */
        unsigned long changed;    /* given to the new owner */
        unsigned long skipped;    /* reclaim: of another owner, on another mount, or too deep */
        bool partial;             /* handover: some entries changed before the walk failed */
        char why[160];            /* the refusal: what was found, and where */
};

/* Check, then give every entry to uid:gid. Refused (nothing changed) when
 * an entry is not owned by front, is a device, fifo or socket, a regular
 * file with more than one link, on another mount, or too deep; the second
 * pass checks each entry again on the descriptor it changes, so a front
 * that changes the tree during the request makes it fail with partial
 * set. Directories lose group and other write permission; the root
 * becomes 0700. */
int wstree_handover(int root_fd, uid_t front, uid_t uid, gid_t gid, struct wstree_report *rep);
/* Give every entry owned by job (never a symlink's target) to
 * front:front_gid; entries of other owners are left and counted. */
int wstree_reclaim(int root_fd, uid_t job, uid_t front, gid_t front_gid, struct wstree_report *rep);
