/* SPDX-License-Identifier: Apache-2.0 */
/* Error objects: library code never prints; a fallible function returns a
 * negative errno and fills a struct sbx_error with a message that names what
 * failed. Callers may prepend context as the error travels up. */
#pragma once

#include "macro.h"

#define SBX_ERROR_MAX 1024

struct sbx_error {
        int code;                 /* positive errno value, 0 if none */
        char msg[SBX_ERROR_MAX];  /* "what: why", without a trailing newline */
};

/* Fill err (may be NULL) and return -errnum (errnum may be given with either
 * sign). The message is formatted from fmt; when errnum is non-zero
 * ": strerror(errnum)" is appended. */
int sbx_error_set(struct sbx_error *err, int errnum, const char *fmt, ...) _printf_(3, 4);

/* Like sbx_error_set but never appends strerror(); for validation errors
 * where the message says everything ("profile.ini:3: unknown key 'foo'"). */
int sbx_error_msg(struct sbx_error *err, int errnum, const char *fmt, ...) _printf_(3, 4);

/* Prepend "context: " to an existing message; returns -err->code. */
int sbx_error_wrap(struct sbx_error *err, const char *fmt, ...) _printf_(2, 3);

static inline void sbx_error_clear(struct sbx_error *err) {
        if (err) {
                err->code = 0;
                err->msg[0] = '\0';
        }
}
