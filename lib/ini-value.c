/* SPDX-License-Identifier: Apache-2.0 */
/* The value syntax of sbx's INI formats (sbx-profile(5), VALUE SYNTAX):
 * words separated by blanks, double quotes, backslash escapes and, in
 * profiles, ${NAME} from the environment. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ini-load.h"
#include "macro.h"

/* ---- words ------------------------------------------------------------ */

void pwords_free(struct pwords *w) {
        for (size_t i = 0; i < w->n; i++)
                free(w->v[i].s);
        free(w->v);
        w->v = NULL;
        w->n = w->cap = 0;
}

struct buf {
        char *s;
        size_t len, cap;
};

static int buf_put(struct buf *b, const char *s, size_t n) {
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 32;
                while (cap < b->len + n + 1)
                        cap *= 2;
                char *t = realloc(b->s, cap);
                if (!t)
                        return -ENOMEM;
                b->s = t;
                b->cap = cap;
        }
        memcpy(b->s + b->len, s, n);
        b->len += n;
        b->s[b->len] = '\0';
        return 0;
}

static int pwords_push(struct pwords *w, struct buf *b) {
        if (w->n == w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 4;
                struct pword *t = realloc(w->v, cap * sizeof(*t));
                if (!t)
                        return -ENOMEM;
                w->v = t;
                w->cap = cap;
        }
        if (!b->s && buf_put(b, "", 0) < 0)
                return -ENOMEM;
        w->v[w->n].s = b->s;
        w->v[w->n].len = b->len;
        w->n++;
        *b = (struct buf) { 0 };
        return 0;
}

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Decode one backslash escape at s (s[0] == '\\'); returns bytes consumed. */
static int unescape_one(const char *s, char *ret, char *errbuf, size_t errlen) {
        switch (s[1]) {
        case 'n': *ret = '\n'; return 2;
        case 't': *ret = '\t'; return 2;
        case 'r': *ret = '\r'; return 2;
        case '\\': case '"': case '\'': case ';': case '#': case '$': case ' ':
                *ret = s[1];
                return 2;
        case 'x': {
                int hi = hexval(s[2]), lo = hi >= 0 ? hexval(s[3]) : -1;
                if (hi < 0 || lo < 0) {
                        snprintf(errbuf, errlen, "'\\x' needs two hex digits");
                        return -EINVAL;
                }
                *ret = (char) (hi * 16 + lo);
                return 4;
        }
        case '\0':
                snprintf(errbuf, errlen, "a '\\' at the end of the value continues it on the next indented line, but none follows");
                return -EINVAL;
        default:
                if (isprint((unsigned char) s[1]))
                        snprintf(errbuf, errlen, "unknown escape '\\%c' (known: \\n \\t \\r \\\\ \\\" \\' \\; \\# \\$ \\<space> \\xHH)", s[1]);
                else
                        snprintf(errbuf, errlen, "unknown escape '\\' followed by byte 0x%02x", (unsigned char) s[1]);
                return -EINVAL;
        }
}

bool pvalue_name_char(char c, bool first) {
        return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9');
}

/* ${NAME}: the launcher's environment at load time. The value is inserted
 * as it is: never split into words and never unescaped again, so a path
 * with spaces or backslashes in $WORKSPACE stays one literal word. */
static int expand_var(const char *s, struct buf *b, char *errbuf, size_t errlen) {
        const char *start = s + 2, *end = start;

        while (*end && *end != '}' && end - start < 128)
                end++;
        if (end - start >= 128) {
                snprintf(errbuf, errlen, "variable name longer than 127 bytes");
                return -EINVAL;
        }
        if (*end != '}') {
                snprintf(errbuf, errlen, "unterminated '${' (a variable is written ${NAME}, a literal '$' as $$)");
                return -EINVAL;
        }
        size_t n = (size_t) (end - start);
        for (size_t i = 0; i < n; i++)
                if (!pvalue_name_char(start[i], i == 0)) {
                        snprintf(errbuf, errlen, "bad variable name '${%.*s}'", (int) n, start);
                        return -EINVAL;
                }
        if (n == 0) {
                snprintf(errbuf, errlen, "empty variable name '${}'");
                return -EINVAL;
        }
        char name[129];
        memcpy(name, start, n);
        name[n] = '\0';
        const char *v = getenv(name);
        if (!v) {
                snprintf(errbuf, errlen, "undefined variable ${%s}", name);
                return -EINVAL;
        }
        if (buf_put(b, v, strlen(v)) < 0)
                return -ENOMEM;
        return (int) (n + 3);
}

int pvalue_split(const char *v, bool expand_vars, struct pwords *ret, char *errbuf, size_t errlen) {
        struct pwords w = { 0 };
        struct buf b = { 0 };
        int r = 0;

        for (size_t i = 0;;) {
                while (v[i] == ' ' || v[i] == '\t')
                        i++;
                if (!v[i])
                        break;
                bool quoted = false;
                if (buf_put(&b, "", 0) < 0)
                        goto oom;
                while (v[i] && (quoted || (v[i] != ' ' && v[i] != '\t'))) {
                        char c = v[i];
                        if (c == '"') {
                                quoted = !quoted;
                                i++;
                        } else if (c == '\\') {
                                char out;
                                r = unescape_one(v + i, &out, errbuf, errlen);
                                if (r < 0)
                                        goto fail;
                                i += (size_t) r;
                                if (buf_put(&b, &out, 1) < 0)
                                        goto oom;
                        } else if (c == '$') {
                                if (v[i + 1] == '$') {
                                        if (buf_put(&b, "$", 1) < 0)
                                                goto oom;
                                        i += 2;
                                } else if (v[i + 1] == '{' && !expand_vars) {
                                        snprintf(errbuf, errlen, "variables (${NAME}) are not expanded here; write $$ for a literal '$'");
                                        r = -EINVAL;
                                        goto fail;
                                } else if (v[i + 1] == '{') {
                                        r = expand_var(v + i, &b, errbuf, errlen);
                                        if (r < 0)
                                                goto fail;
                                        i += (size_t) r;
                                } else {
                                        snprintf(errbuf, errlen, "'$' must start ${NAME}; write $$ for a literal '$'");
                                        r = -EINVAL;
                                        goto fail;
                                }
                        } else {
                                if (buf_put(&b, &c, 1) < 0)
                                        goto oom;
                                i++;
                        }
                }
                if (quoted) {
                        snprintf(errbuf, errlen, "unterminated double quote");
                        r = -EINVAL;
                        goto fail;
                }
                if (pwords_push(&w, &b) < 0)
                        goto oom;
        }
        *ret = w;
        return 0;
oom:
        snprintf(errbuf, errlen, "out of memory");
        r = -ENOMEM;
fail:
        free(b.s);
        pwords_free(&w);
        return r;
}

