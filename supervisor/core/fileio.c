/* SPDX-License-Identifier: Apache-2.0 */
/* Whole files in and out, by directory descriptor. Apart from util.c so
 * that a program that links no JSON library (sbx-privd) can have them. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "macro.h"

int write_all(int fd, const void *buf, size_t len) {
        const char *p = buf;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

int write_file_durable(int dirfd, const char *name, const void *data, size_t len, mode_t mode, bool sync_dir) {
        char tmp[512];
        int r;
        if (snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= (int) sizeof(tmp))
                return -ENAMETOOLONG;
        _cleanup_close_ int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        r = write_all(fd, data, len);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = -errno;
        if (r < 0) {
                unlinkat(dirfd, tmp, 0);
                return r;
        }
        /* The rename is durable only once the directory itself is synced. */
        if (sync_dir && fsync(dirfd) < 0)
                return -errno;
        return 0;
}

int write_file_tmp(int dirfd, const char *name, const void *data, size_t len, mode_t mode, int *ret_fd) {
        char tmp[512];
        if (snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= (int) sizeof(tmp))
                return -ENAMETOOLONG;
        int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, data, len);
        if (r < 0) {
                close(fd);
                unlinkat(dirfd, tmp, 0);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

int read_file_at(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        /* Pseudo-files (cgroupfs, procfs) report size 0: read to EOF. */
        size_t cap = st.st_size > 0 ? (size_t) st.st_size + 1 : 4096, got = 0;
        if ((uint64_t) st.st_size > max)
                return -EFBIG;
        _cleanup_free_ char *buf = malloc(cap + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (got == cap) {
                        if (cap >= max)
                                return -EFBIG;
                        cap = cap * 2 > max ? max : cap * 2;
                        char *nb = realloc(buf, cap + 1);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                }
                ssize_t n = read(fd, buf + got, cap - got);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                got += (size_t) n;
        }
        buf[got] = '\0';
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = got;
        return 0;
}
