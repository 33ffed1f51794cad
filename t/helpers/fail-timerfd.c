/* SPDX-License-Identifier: Apache-2.0 */
/* Test only: preloaded into sbx-supervisord (LD_PRELOAD) to make the
 * kernel's timers fail on demand, which no unprivileged setting can do.
 * While the file named by SBX_TEST_TIMERFD_FAULT exists, timerfd_create(2)
 * fails with EMFILE when the file says "create", and timerfd_settime(2)
 * fails with EINVAL when it says "settime"; otherwise both are the system
 * calls themselves. The daemon has no hook of its own for this. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

int timerfd_create(int clockid, int flags);
int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old_value);

static int faulty(const char *what) {
        const char *path = getenv("SBX_TEST_TIMERFD_FAULT");
        char buf[16] = { 0 };
        if (!path)
                return 0;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        return n > 0 && strncmp(buf, what, strlen(what)) == 0;
}

int timerfd_create(int clockid, int flags) {
        if (faulty("create")) {
                errno = EMFILE;
                return -1;
        }
        return (int) syscall(SYS_timerfd_create, clockid, flags);
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old_value) {
        if (faulty("settime")) {
                errno = EINVAL;
                return -1;
        }
        return (int) syscall(SYS_timerfd_settime, fd, flags, new_value, old_value);
}
