/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"

int fd_write_all(int fd, const void *buf, size_t len) {
        const char *p = buf;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO;
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

int fd_write_at(int dirfd, const char *name, const char *text) {
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        size_t len = strlen(text);
        ssize_t n;

        if (fd < 0)
                return -errno;
        do
                n = write(fd, text, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return (size_t) n == len ? 0 : -EIO;
}

int fd_copy(int in, int out) {
        char buf[64 * 1024];
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                int r = fd_write_all(out, buf, (size_t) n);
                if (r < 0)
                        return r;
        }
}

int fd_send_with(int sock, const void *msg, size_t len, const int *fds, unsigned n_fds) {
        struct iovec iov = { .iov_base = (void *) msg, .iov_len = len };
        union {
                char buf[CMSG_SPACE(FD_SEND_MAX * sizeof(int))];
                struct cmsghdr align;
        } u;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (n_fds > FD_SEND_MAX)
                return -E2BIG;
        if (n_fds) {
                memset(&u, 0, sizeof(u));
                mh.msg_control = u.buf;
                mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
                memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
        }
        while (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
                if (errno != EINTR)
                        return -errno;
        return 0;
}
