/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-bundle(1)'s errors and file digests, used by pack and the rest. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bundle-tool.h"
#include "util.h"

int tool_err(int errnum, const char *fmt, ...) {
        va_list ap;
        fputs("sbx-bundle: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        if (errnum)
                fprintf(stderr, ": %s", strerror(errnum));
        fputc('\n', stderr);
        return -1;
}

int tool_sha256_file(const char *path, char hex[65], uint64_t *ret_size) {
        crypto_hash_sha256_state h;
        unsigned char d[32], buf[65536];
        uint64_t size = 0;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return tool_err(errno, "%s", path);
        crypto_hash_sha256_init(&h);
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return tool_err(errno, "%s", path);
                if (n == 0)
                        break;
                crypto_hash_sha256_update(&h, buf, (size_t) n);
                size += (uint64_t) n;
        }
        crypto_hash_sha256_final(&h, d);
        hex_encode(d, sizeof(d), hex);
        *ret_size = size;
        return 0;
}
