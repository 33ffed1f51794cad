/* SPDX-License-Identifier: Apache-2.0 */
/* Shared between the profile parser, loader and writer; not for callers of
 * lib/profile.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "profile.h"

/* One word of a value after quotes, escapes and ${VAR} are resolved. Words
 * carry a length because "\x00" may put a NUL byte into file data=. */
struct pword {
        char *s;
        size_t len;
};

struct pwords {
        struct pword *v;
        size_t n, cap;
};

void pwords_free(struct pwords *w);

/* A growing, NUL-terminated byte string. */
struct pbuf {
        char *s;
        size_t len, cap;
};
int pbuf_put(struct pbuf *b, const char *s, size_t n);

/* Split a value into words (see sbx-profile(5), VALUE SYNTAX). On error
 * returns -EINVAL (or -ENOMEM) with a short reason in why. */
int pvalue_split(const char *value, struct pwords *ret, struct sbx_error *why);
/* The same; without expand_vars a ${NAME} is an error (a bundle manifest
 * must not read the daemon's environment). */
int pvalue_split_opts(const char *value, bool expand_vars, struct pwords *ret, struct sbx_error *why);

/* How a key behaves when it is given more than once. */
enum key_kind {
        KEY_SCALAR, /* one value; twice in one file is an error; later files override */
        KEY_SET,    /* a whole set (namespaces, capabilities): replaces, continuation lines extend */
        KEY_LIST,   /* ordered operations: every line appends */
};

/* Index of the key in the key table, -1 if the key is unknown, -2 if the
 * section is unknown. */
#define PROFILE_KEYS_MAX 64
int profile_key_find(const char *section, const char *key);
enum key_kind profile_key_kind(int idx);
bool profile_section_known(const char *section);
/* The keys of a section, space-separated, for "unknown key" messages. */
void profile_section_keys(const char *section, char *buf, size_t len);

/* Parse value (file syntax) and apply it. continuation: value came from an
 * indented continuation line of the same key (KEY_SET keys then extend). */
int profile_apply_value(struct profile *p, int idx, const char *value, const char *origin,
                        bool continuation, struct sbx_error *err);

/* Names of errno values used by deny = NAME:ERRNO; NULL if none. */
const char *profile_errno_name(int errnum);
