/* SPDX-License-Identifier: Apache-2.0 */
/* The strict INI loader behind every INI format sbx reads where each line
 * is an operation (profiles, bundle manifests): inih driven with our own
 * line reader, so that every value carries its exact "file:line"; lines
 * inih would silently cut are refused; an unknown section or key, a scalar
 * set twice, a NUL byte or a syntax error stops the load with a message
 * naming the file and line. Values may continue over indented lines (a '\'
 * at the end of a line, or an indented line after a key of a set or a
 * list). What a key means is the format's own: it hands the loader a
 * schema (its key table) and receives each value with its origin. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Bytes in one physical line, without its line end. inih reads lines into a
 * fixed buffer of INI_MAX_LINE (200 on Debian) bytes and would silently cut
 * longer ones; the loader refuses them instead. */
#define SBX_INI_MAX_LINE 199
/* Keys in one format's table (the loader remembers where each was set). */
#define SBX_INI_MAX_KEYS 64

/* How a key behaves when it is given more than once. */
enum key_kind {
        KEY_SCALAR, /* one value; twice in one file is an error; later files override */
        KEY_SET,    /* a whole set (namespaces, capabilities): replaces, continuation lines extend */
        KEY_LIST,   /* ordered operations: every line appends */
};

struct ini_schema {
        const char *what;       /* "profile", "manifest": in messages */
        const char *sections;   /* the known sections, space-separated, for messages */
        size_t max_value;       /* bytes in one value joined from continuation lines */
        /* Index of the key in the format's table (< INI_MAX_KEYS), -1 if
         * the key is unknown, -2 if the section is. */
        int (*key_find)(const char *section, const char *key);
        enum key_kind (*key_kind)(int idx);
        /* The keys of a section, space-separated, for "unknown key". */
        void (*section_keys)(const char *section, char *buf, size_t len);
        /* Apply one whole value, read at origin ("file:line"). continuation:
         * it came from an indented line after the key's first (sets then
         * extend). Returns 0, or -errno with err naming origin. */
        int (*apply)(void *target, int idx, const char *value, const char *origin, bool continuation,
                     struct sbx_error *err);
};

/* Load text (len bytes, NUL-terminated at len) named name into target. */
int ini_load_text(const struct ini_schema *s, void *target, const char *name, const char *text, size_t len,
                  struct sbx_error *err);
/* Read path (at most max_size bytes; pipes and /dev/fd/N work) and load it. */
int ini_load_file(const struct ini_schema *s, void *target, const char *path, size_t max_size, struct sbx_error *err);

/* One word of a value after quotes, escapes and ${VAR} are resolved. Words
 * carry a length because "\x00" may put a NUL byte into a value. */
struct pword {
        char *s;
        size_t len;
};

struct pwords {
        struct pword *v;
        size_t n, cap;
};

void pwords_free(struct pwords *w);

/* Split a value into words (sbx-profile(5), VALUE SYNTAX). expand_vars:
 * ${NAME} takes the value from the environment (profiles); without it a
 * '${' is an error (a manifest must not read the daemon's environment). On
 * error returns -EINVAL and puts a short reason into errbuf. */
int pvalue_split(const char *value, bool expand_vars, struct pwords *ret, char *errbuf, size_t errlen);
/* A character of a variable name ([A-Za-z_][A-Za-z0-9_]*). */
bool pvalue_name_char(char c, bool first);
