/* SPDX-License-Identifier: Apache-2.0 */
/* We drive ini_parse_stream() with our own reader so that we know the
 * exact line of every call to the handler (Debian builds inih without
 * INI_HANDLER_LINENO), refuse lines inih would silently truncate (its
 * buffer is INI_MAX_LINE = 200 bytes), and stop at the first error instead
 * of parsing on. */
#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include <ini.h>

#include "ini-load.h"
#include "macro.h"

struct loader {
        const struct ini_schema *s;
        void *target;
        const char *name;
        const char *text;       /* whole input, NUL-terminated */
        size_t pos;             /* start of the next line */
        unsigned line;          /* number of the line last handed to inih */
        bool line_indented;     /* it starts with a space or tab */
        bool have_prev;         /* inih remembers a key for continuation lines */
        char prev_key[64];
        unsigned seen[SBX_INI_MAX_KEYS];  /* line where a scalar/set key was first set in this file */

        /* A value ending in an unescaped '\' continues on the next line. */
        char *pending;
        size_t pending_len;
        int pending_idx;
        unsigned pending_line;
        bool pending_cont;

        bool failed;
        unsigned fail_line;     /* the line being read when we failed */
        struct sbx_error *err;
};

static int lerr(struct loader *l, unsigned line, const char *fmt, ...) _printf_(3, 4);
static int lerr(struct loader *l, unsigned line, const char *fmt, ...) {
        char what[768];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        l->failed = true;
        l->fail_line = l->line;
        return sbx_error_msg(l->err, EINVAL, "%s:%u: %s", l->name, line, what);
}

/* Mirror inih's test for a "[section]" line so that an unknown section is
 * reported on its own line, even when it holds no keys. */
static void check_section_line(struct loader *l, const char *s, size_t n) {
        size_t i = 0;
        /* inih skips a UTF-8 byte order mark on the first line. */
        if (l->line == 1 && n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
                i = 3;
        while (i < n && isspace((unsigned char) s[i]))
                i++;
        if (i == n || s[i] != '[' || (i > 0 && l->have_prev))
                return;
        size_t start = ++i;
        bool was_space = false;
        while (i < n && s[i] != ']' && !(was_space && s[i] == ';')) {
                was_space = isspace((unsigned char) s[i]);
                i++;
        }
        if (i == n || s[i] != ']')
                return; /* inih reports the syntax error */
        if (l->pending) {
                lerr(l, l->pending_line, "the value ends in '\\' but line %u is not an indented continuation line",
                     l->line);
                return;
        }
        l->have_prev = false;
        /* inih ignores anything after the ']'; a typo there would pass
         * silently, so only a comment may follow. */
        for (size_t j = i + 1; j < n && s[j] != ';' && s[j] != '#'; j++)
                if (!isspace((unsigned char) s[j])) {
                        lerr(l, l->line, "unexpected text after the section header (line '%.*s')",
                             (int) (n < 60 ? n : 60), s);
                        return;
                }
        char sec[64];
        size_t len = i - start;
        if (len >= sizeof(sec))
                len = sizeof(sec) - 1;
        memcpy(sec, s + start, len);
        sec[len] = '\0';
        if (l->s->key_find(sec, "") == -2)
                lerr(l, l->line, "unknown section [%s] (known: %s)", sec, l->s->sections);
}

static char *reader(char *buf, int num, void *stream) {
        struct loader *l = stream;

        if (l->failed || !l->text[l->pos])
                return NULL;
        const char *s = l->text + l->pos, *nl = strchr(s, '\n');
        size_t n = nl ? (size_t) (nl - s) : strlen(s);
        size_t max = num > 1 ? (size_t) num - 1 : 0;
        if (max > SBX_INI_MAX_LINE)
                max = SBX_INI_MAX_LINE;

        l->line++;
        l->pos += n + (nl ? 1 : 0);
        /* A '\r' of a CRLF line end does not count against the limit. */
        size_t content = (n > 0 && s[n - 1] == '\r') ? n - 1 : n;
        if (content > max) {
                lerr(l, l->line, "line longer than %zu bytes (split a long value with a '\\' at the end of the "
                     "line and continue it on an indented line)", max);
                return NULL;
        }
        memcpy(buf, s, content);
        buf[content] = '\0';
        /* inih's test for a continuation line: leading isspace(). */
        l->line_indented = content > 0 && isspace((unsigned char) s[0]);
        if (l->pending && !l->line_indented && content > 0 && s[0] != ';' && s[0] != '#') {
                lerr(l, l->pending_line, "the value ends in '\\' but line %u is not an indented continuation line",
                     l->line);
                return NULL;
        }
        check_section_line(l, s, content);
        return l->failed ? NULL : buf;
}

/* inih keeps inline comments on continuation lines; strip them the same
 * way it does on key lines: ';' after whitespace starts a comment. */
static void strip_inline_comment(char *v) {
        for (size_t i = 1; v[i]; i++)
                if (v[i] == ';' && isspace((unsigned char) v[i - 1])) {
                        v[i] = '\0';
                        break;
                }
        size_t n = strlen(v);
        while (n > 0 && isspace((unsigned char) v[n - 1]))
                v[--n] = '\0';
}

static bool ends_in_continuation(const char *v, size_t n) {
        size_t bs = 0;
        while (bs < n && v[n - 1 - bs] == '\\')
                bs++;
        return bs % 2 == 1;
}

static int apply(struct loader *l, int idx, const char *value, unsigned line, bool cont) {
        char origin[PATH_MAX + 32];
        snprintf(origin, sizeof(origin), "%s:%u", l->name, line);
        int r = l->s->apply(l->target, idx, value, origin, cont, l->err);
        if (r < 0) {
                l->failed = true;
                l->fail_line = l->line;
        }
        return r;
}

static int pending_add(struct loader *l, const char *v, size_t n) {
        if (l->pending_len + n > l->s->max_value)
                return lerr(l, l->pending_line, "value longer than %zu bytes", l->s->max_value);
        char *t = realloc(l->pending, l->pending_len + n + 1);
        if (!t)
                return lerr(l, l->pending_line, "out of memory");
        memcpy(t + l->pending_len, v, n);
        l->pending = t;
        l->pending_len += n;
        t[l->pending_len] = '\0';
        return 0;
}

/* Start or extend a value; apply it once it no longer ends in '\'. */
static int take_value(struct loader *l, int idx, const char *value, bool cont) {
        size_t n = strlen(value);
        bool more = ends_in_continuation(value, n);

        if (!l->pending && !more)
                return apply(l, idx, value, l->line, cont);
        if (!l->pending) {
                l->pending_idx = idx;
                l->pending_line = l->line;
                l->pending_cont = cont;
        }
        int r = pending_add(l, value, more ? n - 1 : n);
        if (r < 0 || more)
                return r;
        _cleanup_free_ char *v = TAKE_PTR(l->pending);
        l->pending_len = 0;
        return apply(l, l->pending_idx, v, l->pending_line, l->pending_cont);
}

static int handler(void *user, const char *section, const char *name, const char *value) {
        struct loader *l = user;

        if (l->failed)
                return 0;
        bool cont = l->line_indented && l->have_prev;
        if (cont) {
                _cleanup_free_ char *v = strdup(value);
                if (!v)
                        return lerr(l, l->line, "out of memory"), 0;
                strip_inline_comment(v);
                if (l->pending)
                        return take_value(l, l->pending_idx, v, l->pending_cont) >= 0;
                int idx = l->s->key_find(section, name);
                if (idx < 0)
                        return 1; /* unreachable: the key's own line failed */
                /* inih reads any indented line after a key as a continuation;
                 * an indented "key = value" is almost always a mistake. */
                size_t k = strspn(v, "abcdefghijklmnopqrstuvwxyz-");
                if (k > 0) {
                        size_t e = k + strspn(v + k, " \t");
                        char key[32];
                        snprintf(key, sizeof(key), "%.*s", (int) (k < 31 ? k : 31), v);
                        if (v[e] == '=' && l->s->key_find(section, key) >= 0)
                                return lerr(l, l->line, "indented line is read as a continuation of '%s'; "
                                            "do not indent keys", l->prev_key), 0;
                }
                if (l->s->key_kind(idx) == KEY_SCALAR)
                        return lerr(l, l->line, "%s.%s: takes a single line (an indented line continues the "
                                    "previous key)", section, name), 0;
                return take_value(l, idx, v, true) >= 0;
        }

        if (l->pending)
                return lerr(l, l->pending_line, "the value ends in '\\' but line %u is not an indented "
                            "continuation line", l->line), 0;
        l->have_prev = true;
        snprintf(l->prev_key, sizeof(l->prev_key), "%s", name);
        if (!*section)
                return lerr(l, l->line, "key '%s' outside of any [section]", name), 0;
        int idx = l->s->key_find(section, name);
        if (idx == -2)
                return lerr(l, l->line, "unknown section [%s]", section), 0;
        if (idx == -1) {
                char known[512];
                l->s->section_keys(section, known, sizeof(known));
                return lerr(l, l->line, "%s.%s: unknown key (known in [%s]: %s)", section, name, section, known), 0;
        }
        if (l->s->key_kind(idx) != KEY_LIST) {
                if (l->seen[idx])
                        return lerr(l, l->line, "%s.%s: set twice in this file (first on line %u)", section, name,
                                    l->seen[idx]), 0;
                l->seen[idx] = l->line;
        }
        return take_value(l, idx, value, false) >= 0;
}

/* The text of line n, for the syntax error message. */
static void line_text(const char *text, unsigned n, char *out, size_t outlen) {
        const char *s = text;
        for (unsigned i = 1; i < n && s; i++) {
                s = strchr(s, '\n');
                if (s)
                        s++;
        }
        size_t j = 0;
        for (; s && *s && *s != '\n' && j + 4 < outlen; s++) {
                if (j == 60) {
                        memcpy(out + j, "...", 3);
                        j += 3;
                        break;
                }
                out[j++] = ((unsigned char) *s < 0x20 || *s == 0x7f) ? '?' : *s;
        }
        out[j] = '\0';
}

int ini_load_text(const struct ini_schema *s, void *target, const char *name, const char *text, size_t len,
                  struct sbx_error *err) {
        struct loader l = { .s = s, .target = target, .name = name, .text = text, .err = err };

        /* A NUL byte would end the text early and silently drop the rest. */
        const char *nul = memchr(text, '\0', len);
        if (nul) {
                unsigned line = 1;
                for (const char *c = text; c < nul; c++)
                        line += *c == '\n';
                return sbx_error_msg(err, EINVAL, "%s:%u: NUL byte in %s", name, line, s->what);
        }
        int r = ini_parse_stream(reader, &l, handler, &l);
        if (!l.failed && l.pending) {
                lerr(&l, l.pending_line, "the value ends in '\\' but the file ends before its continuation");
        }
        free(l.pending);
        /* inih's error line is the first failure of either kind; ours may
         * be a later one when a syntax error came first. */
        if (r > 0 && (!l.failed || (unsigned) r < l.fail_line)) {
                char shown[80];
                line_text(text, (unsigned) r, shown, sizeof(shown));
                return sbx_error_msg(err, EINVAL, "%s:%d: expected '[section]' or 'key = value' (line '%s')",
                                     name, r, shown);
        }
        if (l.failed)
                return -EINVAL;
        if (r < 0)
                return sbx_error_msg(err, ENOMEM, "%s: out of memory while parsing", name);
        return 0;
}

int ini_load_file(const struct ini_schema *s, void *target, const char *path, size_t max_size, struct sbx_error *err) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return sbx_error_set(err, errno, "%s", path);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return sbx_error_set(err, errno, "%s", path);
        if (S_ISDIR(st.st_mode))
                return sbx_error_set(err, EISDIR, "%s", path);

        /* Read to EOF rather than trusting st_size: pipes and /dev/fd/N work. */
        size_t cap = 4096, len = 0;
        _cleanup_free_ char *buf = malloc(cap);
        if (!buf)
                return sbx_error_set(err, ENOMEM, "%s", path);
        for (;;) {
                if (len + 1 >= cap) {
                        if (cap > max_size)
                                return sbx_error_msg(err, EFBIG, "%s: %s larger than %zu bytes", path, s->what,
                                                     max_size);
                        char *t = realloc(buf, cap * 2);
                        if (!t)
                                return sbx_error_set(err, ENOMEM, "%s", path);
                        buf = t;
                        cap *= 2;
                }
                ssize_t n = read(fd, buf + len, cap - len - 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return sbx_error_set(err, errno, "%s", path);
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        if (len > max_size)
                return sbx_error_msg(err, EFBIG, "%s: %s larger than %zu bytes", path, s->what, max_size);
        buf[len] = '\0';
        return ini_load_text(s, target, path, buf, len, err);
}
