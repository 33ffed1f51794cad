/* SPDX-License-Identifier: Apache-2.0 */
/* Small language helpers shared by every sbx binary: cleanup attributes,
 * ownership transfer and attribute shorthands. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _noreturn_ __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_ __attribute__((unused))
#define _cleanup_(f) __attribute__((cleanup(f)))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline void freep(void *p) {
        free(*(void **) p);
}

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Take ownership out of a cleanup variable so it is not released on return. */
#define TAKE_PTR(p)                                  \
        ({                                           \
                __typeof__(p) _take_ptr_tmp_ = (p);  \
                (p) = NULL;                          \
                _take_ptr_tmp_;                      \
        })

#define TAKE_FD(fd)                                  \
        ({                                           \
                int _take_fd_tmp_ = (fd);            \
                (fd) = -1;                           \
                _take_fd_tmp_;                       \
        })

#define streq(a, b) (strcmp((a), (b)) == 0)
