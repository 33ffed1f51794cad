/* SPDX-License-Identifier: Apache-2.0 */
/* The syncer: a thread (with a few helpers) that runs the syncs of a group
 * commit (the files a batch of jobs wrote, their result records' renames,
 * the journal, the audit log, the results directory) so that the event loop
 * keeps serving other clients and jobs while the disk works. The files of a
 * batch are synced side by side, so their device flushes overlap. It
 * touches nothing but the file descriptors and names it is handed and
 * reports completion on an eventfd. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* One file of a batch: with data set, first write it to dirfd/tmp (a new
 * file, mode 0600; creating the inode can be slow on a busy file system,
 * so not on the event loop) and use that as fd, closed at the end. Then
 * fsync(fd) unless it is -1; then, if tmp is set,
 * rename dirfd/tmp to dirfd/name (after every file of the batch is synced)
 * and note the first failure in err (-errno; the tmp file is removed then).
 * With remove set instead, the tree dirfd/name is deleted (a finished
 * job's workspace: gone before its client hears of the end, and deleted
 * off the event loop). */
struct sync_file {
        int fd;
        int dirfd;
        const char *tmp, *name;
        const void *data;
        size_t len;
        bool remove;
        const char *path;  /* with remove: dirfd's path, to unmount dirfd/name first if it is a mount */
        bool early;        /* renamed first, and made durable by early_dir_fd's sync before the others are renamed */
        const struct sync_file *after; /* renamed only if this (early) file's rename is durable; or NULL */
        int err;
};

struct sync_request {
        struct sync_file *files;
        size_t n_files;
        int journal_fd; /* fdatasync, beside the files; -1 skips */
        int audit_fd;   /* fdatasync, beside the files; -1 skips */
        int early_dir_fd; /* fsync after the early renames, before the others; -1 skips */
        int dir_fd;     /* fsync after the renames, making them durable; -1 skips */
        int journal_err, audit_err, dir_err, early_dir_err; /* set by the syncer */
};

/* Start the threads (with every signal blocked, as the caller's mask must
 * already be); returns the eventfd that becomes readable on completion. */
int syncer_start(void);
/* Hand over req, which must stay untouched until syncer_complete(). Only
 * one request may be in flight. */
void syncer_submit(struct sync_request *req);
/* After the eventfd fired: consume it; returns 0 or the first -errno of the
 * journal, audit and directory syncs (per-file failures are in files[].err). */
int syncer_complete(void);
void syncer_stop(void);
