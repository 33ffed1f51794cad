/* SPDX-License-Identifier: Apache-2.0 */
/* Small file descriptor helpers shared by the launcher and the supervisor.
 * Each returns 0 or a negative errno and never prints. */
#pragma once

#include <stddef.h>

/* Write all of buf, retrying after EINTR and short writes. A write that
 * makes no progress is -EIO. */
int fd_write_all(int fd, const void *buf, size_t len);

/* Write text to the existing file name beneath dirfd with one write(2),
 * opened O_WRONLY | O_NOFOLLOW | O_CLOEXEC. For the kernel's control files
 * (/proc/PID/uid_map, cgroup.procs, memory.max, ...), which take a value
 * in a single write and answer a short one with an error. */
int fd_write_at(int dirfd, const char *name, const char *text);

/* Send one message (a SOCK_SEQPACKET datagram) with up to FD_SEND_MAX
 * descriptors (SCM_RIGHTS), retrying after EINTR. MSG_NOSIGNAL: a peer
 * that went away is -EPIPE, not SIGPIPE. */
#define FD_SEND_MAX 16
int fd_send_with(int sock, const void *msg, size_t len, const int *fds, unsigned n_fds);

/* Copy from in to out until end of file. */
int fd_copy(int in, int out);
