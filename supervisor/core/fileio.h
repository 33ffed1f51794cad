/* SPDX-License-Identifier: Apache-2.0 */
/* Whole files in and out, by directory descriptor (fileio.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Write all of buf (retrying on EINTR and short writes); -errno on failure. */
int write_all(int fd, const void *buf, size_t len);

/* Write data to dirfd/name durably: .name.tmp, fsync, rename, then
 * fsync(dir) unless the caller syncs the directory itself (once for a
 * batch of files). */
int write_file_durable(int dirfd, const char *name, const void *data, size_t len, mode_t mode, bool sync_dir);
/* The first half of write_file_durable: writes .NAME.tmp and returns it
 * open, unsynced; the caller fsyncs it, renames it to NAME and syncs the
 * directory (a group commit does that for many files at once). */
int write_file_tmp(int dirfd, const char *name, const void *data, size_t len, mode_t mode, int *ret_fd);

/* Read a whole (small) file into a NUL-terminated buffer, at most max bytes. */
int read_file_at(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len);
