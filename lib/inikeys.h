/* SPDX-License-Identifier: Apache-2.0 */
/* The key-table engine shared by sbx's INI formats: profiles
 * (sbx-profile(5)), bundle manifests (sbx-manifest(5)) and the daemon's
 * configuration (sbx-supervisord.conf(5)). A format is a table of keys,
 * each saying its section, how it may repeat, what kind of value it takes,
 * where the value goes and within what limits; one loop over the INI
 * reader (inifile.h) finds the key and applies it, and every error names
 * FILE:LINE, the section and the key:
 *
 *   FILE:LINE: unknown section [S] (known: ...)
 *   FILE:LINE: S.K: unknown key (known in [S]: ...)
 *   FILE:LINE: S.K: set twice in this file (first on line N)
 *   FILE:LINE: S.K: takes a single line (an indented line continues ...)
 *   FILE:LINE: S.K: WHAT WAS EXPECTED (value 'V')
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "inifile.h"
#include "macro.h"

/* How a key behaves when it is given more than once. */
enum inikey_repeat {
        INIKEY_ONCE,   /* one line; twice in a file is an error (or the later wins, see last_wins) */
        INIKEY_SET,    /* a whole set: a new line replaces, indented lines extend */
        INIKEY_APPEND, /* ordered items: every line and indented line adds */
};

enum inikey_kind {
        INIKEY_CUSTOM,   /* the key's fn reads the value */
        INIKEY_STRING,   /* char *, replaced */
        INIKEY_BOOL,     /* bool: yes/no/true/false/on/off/1/0 */
        INIKEY_SIZE,     /* uint64_t bytes, 64K, 2G...; within min..max */
        INIKEY_DURATION, /* uint64_t milliseconds, 30s, 5m...; within min..max */
        INIKEY_UINT,     /* uint64_t, decimal; within min..max */
        INIKEY_ENUM,     /* int: the index of the value in names */
};

struct inikey_ctx;

struct inikey {
        const char *section;     /* a section's name; "prefix." stands for every [prefix.NAME] */
        const char *key;
        enum inikey_repeat repeat;
        enum inikey_kind kind;
        int (*fn)(struct inikey_ctx *c); /* INIKEY_CUSTOM; for another kind, run once the field is set */
        size_t off;              /* the field, as an offset into the section's object */
        uint64_t min, max;       /* limits of numbers; max 0 = none */
        const char *const *names; /* INIKEY_ENUM: NULL-terminated */
        int arg;                 /* the front-end's own */
};

struct inikey_table {
        const struct inikey *keys;
        size_t n;
};
#define INIKEY_TABLE(a) { .keys = (a), .n = ARRAY_SIZE(a) }

/* One word of a value once quotes, escapes and ${VAR} are resolved (see
 * sbx-profile(5), VALUE SYNTAX). Words carry a length because "\x00" may
 * put a NUL byte into one. */
struct iniword {
        char *s;
        size_t len;
};

/* One key line (or indented continuation) being applied. */
struct inikey_ctx {
        const struct inikey *def;
        const char *section;     /* as written: "tenant.alice" */
        const char *value;       /* as written, continued lines joined */
        const char *origin;      /* "FILE:LINE" */
        struct inifile *f;       /* NULL when the value comes from a command line */
        unsigned line;
        unsigned section_line;   /* of the section's header */
        bool continuation;
        void *obj;               /* what def->off points into */
        void *user;              /* the front-end's own state */
        struct iniword *w;       /* the value's words, when the format splits values */
        size_t n;
        struct sbx_error *err;
};

struct inikey_format {
        const struct inikey_table *tables;
        size_t n_tables;
        const char *sections;     /* the known sections, for messages */
        bool words;               /* split values into words before a key sees them */
        bool expand_vars;         /* ... with ${NAME} read from the environment */
        bool last_wins;           /* a one-line key given again replaces (else: an error) */
        bool sections_once;       /* a section header may not be repeated */
        /* The object a key of section writes into; NULL: user. Called for
         * every key, so it may make the object on first use. A return
         * above 0 skips the line (the front-end has its value elsewhere). */
        int (*object)(struct inikey_ctx *c, void **ret);
        /* Run on every value before its key sees it; optional. */
        int (*check)(const struct inikey_ctx *c);
};

/* Read text (len bytes, NUL-terminated at len) named name in messages. */
int inikeys_parse(const struct inikey_format *fmt, const char *name, const char *text, size_t len, void *user,
                  struct sbx_error *err);
/* The same for a file of at most max_bytes. */
int inikeys_load(const struct inikey_format *fmt, const char *path, size_t max_bytes, void *user, struct sbx_error *err);

/* The key of section, or NULL with *ret_why -ENOENT (unknown key) or
 * -ESRCH (unknown section). */
const struct inikey *inikeys_find(const struct inikey_format *fmt, const char *section, const char *key, int *ret_why);
/* The error for a key inikeys_find() did not find, at origin. */
int inikeys_unknown(const struct inikey_format *fmt, const char *section, const char *key, int why, const char *origin,
                    struct sbx_error *err);
/* Apply c->value (and c->w when the format splits words) to c->def. */
int inikeys_apply(const struct inikey_format *fmt, struct inikey_ctx *c);
/* Split a value into words; on error -EINVAL (or -ENOMEM) with the
 * reason in why. */
int inikeys_split(const char *value, bool expand_vars, struct iniword **ret, size_t *ret_n, struct sbx_error *why);
void iniwords_free(struct iniword *w, size_t n);

/* "ORIGIN: S.K: what (value 'V')"; returns -EINVAL. */
int inikey_fail(const struct inikey_ctx *c, const char *fmt, ...) _printf_(2, 3);
/* "ORIGIN: S.K: out of memory"; returns -ENOMEM. */
int inikey_oom(const struct inikey_ctx *c);
/* A safe prefix of a value, for messages: values may hold control bytes
 * or be 300 KiB long. */
void inikey_show_value(const char *raw, char *out, size_t outlen);
/* The field of c->def in c->obj. */
static inline void *inikey_field(const struct inikey_ctx *c) {
        return (char *) c->obj + c->def->off;
}
