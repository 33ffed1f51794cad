/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the files of the profile's key table (profile-keys*.c): the
 * context of one key being applied, and the helpers that report what is
 * wrong with its value. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"
#include "profile-internal.h"

struct keydef;

struct kctx {
        struct profile *p;
        const struct keydef *def;
        const char *origin;
        const char *raw;  /* the value as written, for messages */
        struct pword *w;
        size_t n;
        bool continuation;
        struct sbx_error *err;
};

struct keydef {
        const char *section;
        const char *key;
        enum key_kind kind;
        int (*fn)(struct kctx *c);
        int arg;
};

/* "origin: section.key: what (value '...')"; returns -EINVAL. */
int pkey_err(const struct kctx *c, const char *fmt, ...) _printf_(2, 3);
int pkey_oom(const struct kctx *c);
/* The value has min to max words, else an error naming usage. */
int pkey_want_words(const struct kctx *c, size_t min, size_t max, const char *usage);
/* A word used as a C string must not hide a NUL byte (only data= may). */
int pkey_word_cstr(const struct kctx *c, size_t i, const char *what);
/* A safe prefix of a value for messages. */
void pkey_show_value(const char *raw, char *out, size_t outlen);
/* Grow an array by one element, keeping it NULL-safe on failure. */
void *pkey_grow(void *arr, size_t n, size_t elem);

/* [fs] (profile-keys-fs.c) */
int pkey_fs_bind(struct kctx *c);
int pkey_fs_dest(struct kctx *c);
int pkey_fs_symlink(struct kctx *c);

/* [security] (profile-keys-security.c) */
int pkey_seccomp(struct kctx *c);
int pkey_landlock(struct kctx *c);
int pkey_seccomp_rule(struct kctx *c);
int pkey_caps(struct kctx *c);

/* Or'ed into the arg of a bind key for its -try form. */
#define PKEY_TRY 0x100
