/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <string.h>

#include <stdbool.h>

#include "error.h"

static int error_vset(struct sbx_error *err, int errnum, bool with_strerror,
                      const char *fmt, va_list ap) {
        if (errnum < 0)
                errnum = -errnum;
        if (!err)
                return -errnum;
        err->code = errnum;
        int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        if (n < 0)
                err->msg[0] = '\0';
        else if (with_strerror && errnum && (size_t) n < sizeof(err->msg))
                snprintf(err->msg + n, sizeof(err->msg) - (size_t) n, ": %s", strerror(errnum));
        return -errnum;
}

int sbx_error_set(struct sbx_error *err, int errnum, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = error_vset(err, errnum, true, fmt, ap);
        va_end(ap);
        return r;
}

int sbx_error_msg(struct sbx_error *err, int errnum, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = error_vset(err, errnum, false, fmt, ap);
        va_end(ap);
        return r;
}

int sbx_error_wrap(struct sbx_error *err, const char *fmt, ...) {
        if (!err)
                return -EIO;
        char old[SBX_ERROR_MAX];
        va_list ap;

        memcpy(old, err->msg, sizeof(old));
        va_start(ap, fmt);
        int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        /* Truncation is acceptable: the message stays terminated. */
        if (n >= 0 && (size_t) n < sizeof(err->msg)) {
                size_t used = (size_t) n, room = sizeof(err->msg) - used;
                size_t olen = strnlen(old, sizeof(old) - 1);
                if (room > 2) {
                        memcpy(err->msg + used, ": ", 2);
                        used += 2;
                        room -= 2;
                        if (olen >= room)
                                olen = room - 1;
                        memcpy(err->msg + used, old, olen);
                        err->msg[used + olen] = '\0';
                }
        }
        return -(err->code ? err->code : EIO);
}
