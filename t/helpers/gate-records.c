/* SPDX-License-Identifier: Apache-2.0 */
/* Test only: preloaded into sbx-supervisord (LD_PRELOAD) to hold back the
 * reading of result records off the event loop, which nothing else can
 * make slow on demand. While the file named by SBX_TEST_RECORD_GATE
 * exists, openat(2) for reading of a name ending in ".json" on any thread
 * but the main one waits (checking every 10 ms) until it is removed; every other
 * open is the system call itself. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int openat(int dirfd, const char *name, int flags, ...);

static void wait_gate(const char *name, int flags) {
        const char *gate = getenv("SBX_TEST_RECORD_GATE");
        size_t l = strlen(name);
        if (!gate || (flags & O_ACCMODE) != O_RDONLY || l < 5 || strcmp(name + l - 5, ".json") != 0 || syscall(SYS_gettid) == getpid())
                return;
        const struct timespec tick = { .tv_nsec = 10 * 1000 * 1000 };
        while (syscall(SYS_faccessat, AT_FDCWD, gate, F_OK) == 0)
                nanosleep(&tick, NULL);
}

int openat(int dirfd, const char *name, int flags, ...) {
        mode_t mode = 0;
        if (flags & (O_CREAT | O_TMPFILE)) {
                va_list ap;
                va_start(ap, flags);
                mode = va_arg(ap, mode_t);
                va_end(ap);
        }
        wait_gate(name, flags);
        return (int) syscall(SYS_openat, dirfd, name, flags, mode);
}
