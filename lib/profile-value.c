/* SPDX-License-Identifier: Apache-2.0 */
/* The value syntax of profiles (sbx-profile(5), VALUE SYNTAX): words,
 * double quotes, backslash escapes and ${VAR}. */
#include <ctype.h>
#include <string.h>

#include "env-name.h"
#include "macro.h"
#include "profile-internal.h"

void pwords_free(struct pwords *w) {
        for (size_t i = 0; i < w->n; i++)
                free(w->v[i].s);
        free(w->v);
        w->v = NULL;
        w->n = w->cap = 0;
}

int pbuf_put(struct pbuf *b, const char *s, size_t n) {
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

static int pwords_push(struct pwords *w, struct pbuf *b) {
        if (w->n == w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 4;
                struct iniword *t = realloc(w->v, cap * sizeof(*t));
                if (!t)
                        return -ENOMEM;
                w->v = t;
                w->cap = cap;
        }
        if (!b->s && pbuf_put(b, "", 0) < 0)
                return -ENOMEM;
        w->v[w->n].s = b->s;
        w->v[w->n].len = b->len;
        w->n++;
        *b = (struct pbuf) { 0 };
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
static int unescape_one(const char *s, char *ret, struct sbx_error *why) {
        switch (s[1]) {
        case 'n': *ret = '\n'; return 2;
        case 't': *ret = '\t'; return 2;
        case 'r': *ret = '\r'; return 2;
        case '\\': case '"': case '\'': case ';': case '#': case '$': case ' ':
                *ret = s[1];
                return 2;
        case 'x': {
                int hi = hexval(s[2]), lo = hi >= 0 ? hexval(s[3]) : -1;
                if (hi < 0 || lo < 0)
                        return sbx_error_msg(why, EINVAL, "'\\x' needs two hex digits");
                *ret = (char) (hi * 16 + lo);
                return 4;
        }
        case '\0':
                return sbx_error_msg(why, EINVAL, "a '\\' at the end of the value continues it on the next indented line, but none follows");
        default:
                if (isprint((unsigned char) s[1]))
                        return sbx_error_msg(why, EINVAL, "unknown escape '\\%c' (known: \\n \\t \\r \\\\ \\\" \\' \\; \\# \\$ \\<space> \\xHH)", s[1]);
                return sbx_error_msg(why, EINVAL, "unknown escape '\\' followed by byte 0x%02x", (unsigned char) s[1]);
        }
}

/* ${NAME}: the launcher's environment at load time. The value is inserted
 * as it is: never split into words and never unescaped again, so a path
 * with spaces or backslashes in $WORKSPACE stays one literal word. */
static int expand_var(const char *s, struct pbuf *b, struct sbx_error *why) {
        const char *start = s + 2, *end = start;
        char name[ENV_NAME_MAX + 1];

        while (*end && *end != '}' && end - start <= ENV_NAME_MAX)
                end++;
        if (end - start > ENV_NAME_MAX)
                return sbx_error_msg(why, EINVAL, "variable name longer than %d bytes", ENV_NAME_MAX);
        if (*end != '}')
                return sbx_error_msg(why, EINVAL, "unterminated '${' (a variable is written ${NAME}, a literal '$' as $$)");
        size_t n = (size_t) (end - start);
        if (n == 0)
                return sbx_error_msg(why, EINVAL, "empty variable name '${}'");
        if (!env_name_valid(start, n))
                return sbx_error_msg(why, EINVAL, "bad variable name '${%.*s}'", (int) n, start);
        memcpy(name, start, n);
        name[n] = '\0';
        const char *v = getenv(name);
        if (!v)
                return sbx_error_msg(why, EINVAL, "undefined variable ${%s}", name);
        if (pbuf_put(b, v, strlen(v)) < 0)
                return -ENOMEM;
        return (int) (n + 3);
}

int pvalue_split_opts(const char *v, bool expand_vars, struct pwords *ret, struct sbx_error *why) {
        struct pwords w = { 0 };
        struct pbuf b = { 0 };
        int r = 0;

        for (size_t i = 0;;) {
                while (v[i] == ' ' || v[i] == '\t')
                        i++;
                if (!v[i])
                        break;
                bool quoted = false;
                if (pbuf_put(&b, "", 0) < 0)
                        goto oom;
                while (v[i] && (quoted || (v[i] != ' ' && v[i] != '\t'))) {
                        char c = v[i];
                        if (c == '"') {
                                quoted = !quoted;
                                i++;
                        } else if (c == '\\') {
                                char out;
                                r = unescape_one(v + i, &out, why);
                                if (r < 0)
                                        goto fail;
                                i += (size_t) r;
                                if (pbuf_put(&b, &out, 1) < 0)
                                        goto oom;
                        } else if (c == '$') {
                                if (v[i + 1] == '$') {
                                        if (pbuf_put(&b, "$", 1) < 0)
                                                goto oom;
                                        i += 2;
                                } else if (v[i + 1] == '{' && !expand_vars) {
                                        r = sbx_error_msg(why, EINVAL,
                                                          "variables (${NAME}) are not expanded here; write $$ for a literal '$'");
                                        goto fail;
                                } else if (v[i + 1] == '{') {
                                        r = expand_var(v + i, &b, why);
                                        if (r < 0)
                                                goto fail;
                                        i += (size_t) r;
                                } else {
                                        r = sbx_error_msg(why, EINVAL, "'$' must start ${NAME}; write $$ for a literal '$'");
                                        goto fail;
                                }
                        } else {
                                if (pbuf_put(&b, &c, 1) < 0)
                                        goto oom;
                                i++;
                        }
                }
                if (quoted) {
                        r = sbx_error_msg(why, EINVAL, "unterminated double quote");
                        goto fail;
                }
                if (pwords_push(&w, &b) < 0)
                        goto oom;
        }
        *ret = w;
        return 0;
oom:
        r = sbx_error_msg(why, ENOMEM, "out of memory");
fail:
        free(b.s);
        pwords_free(&w);
        return r;
}

int pvalue_split(const char *v, struct pwords *ret, struct sbx_error *why) {
        return pvalue_split_opts(v, true, ret, why);
}
