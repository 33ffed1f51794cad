/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the files of the profile's key table (profile-keys*.c): the
 * context of one key being applied, and the helpers that report what is
 * wrong with its value. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"
#include "profile-internal.h"

static inline struct profile *kp(const struct inikey_ctx *c) {
        return c->obj;
}

/* The value has min to max words, else an error naming usage. */
int pkey_want_words(const struct inikey_ctx *c, size_t min, size_t max, const char *usage);
/* A word used as a C string must not hide a NUL byte (only data= may). */
int pkey_word_cstr(const struct inikey_ctx *c, size_t i, const char *what);
/* Grow an array by one element, keeping it NULL-safe on failure. */
void *pkey_grow(void *arr, size_t n, size_t elem);

/* [fs] (profile-keys-fs.c) */
int pkey_fs_bind(struct inikey_ctx *c);
int pkey_fs_dest(struct inikey_ctx *c);
int pkey_fs_symlink(struct inikey_ctx *c);

/* [security] (profile-keys-security.c) */
int pkey_seccomp(struct inikey_ctx *c);
int pkey_landlock(struct inikey_ctx *c);
int pkey_seccomp_rule(struct inikey_ctx *c);
int pkey_caps(struct inikey_ctx *c);

/* Or'ed into the arg of a bind key for its -try form. */
#define PKEY_TRY 0x100
