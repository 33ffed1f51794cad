/* SPDX-License-Identifier: Apache-2.0 */
/* Shared between the profile parser, loader and writer; not for callers of
 * lib/profile.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "inikeys.h"
#include "profile.h"

struct pwords {
        struct iniword *v;
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

/* The profile's key table (profile-keys.c), for files and profile_set(). */
extern const struct inikey_format profile_format;

/* Names of errno values used by deny = NAME:ERRNO; NULL if none. */
const char *profile_errno_name(int errnum);
