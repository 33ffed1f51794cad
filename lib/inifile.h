/* SPDX-License-Identifier: Apache-2.0 */
/* The one INI reader of sbx, for profiles (sbx-profile(5)) and for the
 * daemon's configuration (sbx-supervisord.conf(5)): inih, driven line by
 * line so that every message names the exact line, with the syntax both
 * formats share:
 *
 *   - a line holds at most INIFILE_MAX_LINE bytes; a longer one is an
 *     error (inih would cut it silently at its 200-byte buffer);
 *   - a value ending in an unescaped '\' continues on the next line, which
 *     must be indented; the pieces are joined without the indentation;
 *   - any other indented line after a key is handed over again as that key
 *     (inih's multi-line rule), marked as a continuation;
 *   - only a comment may follow the ']' of a section header;
 *   - no NUL byte, CRLF line ends and a UTF-8 byte order mark accepted.
 *
 * The first error stops the reading. What sections and keys mean, and
 * whether a key may be continued, is the caller's, through inifile_ops. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Bytes in one physical line, without its line end: inih reads lines into
 * a buffer of INI_MAX_LINE (200 on Debian) bytes, NUL included. */
#define INIFILE_MAX_LINE 199
/* One value joined from continued lines. */
#define INIFILE_MAX_VALUE (320 * 1024)

struct inifile;

struct inifile_entry {
        const char *section;   /* "" for a key before any section header */
        const char *key;
        const char *value;     /* whole: continued lines joined, comments stripped */
        unsigned line;         /* where the value starts */
        bool continuation;     /* an indented line continuing the previous key */
};

struct inifile_ops {
        /* A "[section]" header on line; optional. */
        int (*section)(struct inifile *f, const char *section, unsigned line, void *user);
        /* A key, once its value is complete. */
        int (*entry)(struct inifile *f, const struct inifile_entry *e, void *user);
        /* Whether key names a key of section; optional. An indented
         * "key = value" line is then refused as almost surely a key
         * indented by mistake (inih would read it as a continuation). */
        bool (*key_known)(const char *section, const char *key, void *user);
};

/* Callbacks return 0, or a negative errno with the error filled (through
 * inifile_fail() or with a message that names the place themselves).
 * Parse text (len bytes; it must be NUL-terminated at len) named name in
 * messages ("name:line: ..."). Returns 0 or the first error. */
int inifile_parse(const char *name, const char *text, size_t len, const struct inifile_ops *ops, void *user,
                  struct sbx_error *err);

/* Fill the error with "name:line: message" and return -EINVAL. */
int inifile_fail(struct inifile *f, unsigned line, const char *fmt, ...) _printf_(3, 4);

/* The name given to inifile_parse(), for the callbacks' own messages. */
const char *inifile_name(const struct inifile *f);

/* Read a whole file (to end of file: pipes and /dev/fd/N work) of at most
 * max_bytes into a malloc'd, NUL-terminated buffer. */
int inifile_read(const char *path, size_t max_bytes, char **ret_text, size_t *ret_len, struct sbx_error *err);
