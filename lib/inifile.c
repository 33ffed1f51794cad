/* SPDX-License-Identifier: Apache-2.0 */
/* The INI reader (see inifile.h). We drive ini_parse_stream() with our own
 * line reader so that we know the exact line of every call to the handler
 * (Debian builds inih without INI_HANDLER_LINENO), refuse lines inih would
 * silently truncate, and stop at the first error instead of parsing on. */
#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include <ini.h>

#include "inifile.h"
#include "macro.h"

/* inih's own limits on section and key names (MAX_SECTION, MAX_NAME). */
#define NAME_BUF 64

struct inifile {
        const char *name;
        const char *text;       /* whole input, NUL-terminated */
        size_t pos;             /* start of the next line */
        unsigned line;          /* number of the line last handed to inih */
        bool line_indented;     /* it starts with a space or tab */
        bool have_prev;         /* inih remembers a key for continuation lines */
        char prev_key[NAME_BUF];
        const struct inifile_ops *ops;
        void *user;

        /* A value ending in an unescaped '\' continues on the next line. */
        char *pending;
        size_t pending_len;
        unsigned pending_line;
        bool pending_cont;
        char pending_section[NAME_BUF];
        char pending_key[NAME_BUF];

        bool failed;
        unsigned fail_line;     /* the line being read when we failed */
        struct sbx_error *err;
};

const char *inifile_name(const struct inifile *f) {
        return f->name;
}

static void mark_failed(struct inifile *f) {
        f->failed = true;
        f->fail_line = f->line;
}

int inifile_fail(struct inifile *f, unsigned line, const char *fmt, ...) {
        char what[768];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        mark_failed(f);
        return sbx_error_msg(f->err, EINVAL, "%s:%u: %s", f->name, line, what);
}

static int not_continued(struct inifile *f) {
        return inifile_fail(f, f->pending_line, "the value ends in '\\' but line %u is not an indented continuation line",
                            f->line);
}

/* Mirror inih's test for a "[section]" line so that a section is seen on
 * its own line, even when it holds no keys. */
static void check_section_line(struct inifile *f, const char *s, size_t n) {
        size_t i = 0;
        /* inih skips a UTF-8 byte order mark on the first line. */
        if (f->line == 1 && n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
                i = 3;
        while (i < n && isspace((unsigned char) s[i]))
                i++;
        if (i == n || s[i] != '[' || (i > 0 && f->have_prev))
                return;
        size_t start = ++i;
        bool was_space = false;
        while (i < n && s[i] != ']' && !(was_space && s[i] == ';')) {
                was_space = isspace((unsigned char) s[i]);
                i++;
        }
        if (i == n || s[i] != ']')
                return; /* inih reports the syntax error */
        if (f->pending) {
                not_continued(f);
                return;
        }
        f->have_prev = false;
        /* inih ignores anything after the ']'; a typo there would pass
         * silently, so only a comment may follow. */
        for (size_t j = i + 1; j < n && s[j] != ';' && s[j] != '#'; j++)
                if (!isspace((unsigned char) s[j])) {
                        inifile_fail(f, f->line, "unexpected text after the section header (line '%.*s')",
                                     (int) (n < 60 ? n : 60), s);
                        return;
                }
        char sec[NAME_BUF];
        size_t len = i - start;
        if (len >= sizeof(sec))
                len = sizeof(sec) - 1;
        memcpy(sec, s + start, len);
        sec[len] = '\0';
        if (f->ops->section && f->ops->section(f, sec, f->line, f->user) < 0)
                mark_failed(f);
}

static char *reader(char *buf, int num, void *stream) {
        struct inifile *f = stream;

        if (f->failed || !f->text[f->pos])
                return NULL;
        const char *s = f->text + f->pos, *nl = strchr(s, '\n');
        size_t n = nl ? (size_t) (nl - s) : strlen(s);
        size_t max = num > 1 ? (size_t) num - 1 : 0;
        if (max > INIFILE_MAX_LINE)
                max = INIFILE_MAX_LINE;

        f->line++;
        f->pos += n + (nl ? 1 : 0);
        /* A '\r' of a CRLF line end does not count against the limit. */
        size_t content = (n > 0 && s[n - 1] == '\r') ? n - 1 : n;
        if (content > max) {
                inifile_fail(f, f->line, "line longer than %zu bytes (split a long value with a '\\' at the end of the "
                             "line and continue it on an indented line)", max);
                return NULL;
        }
        memcpy(buf, s, content);
        buf[content] = '\0';
        /* inih's test for a continuation line: leading isspace(). */
        f->line_indented = content > 0 && isspace((unsigned char) s[0]);
        if (f->pending && !f->line_indented && content > 0 && s[0] != ';' && s[0] != '#') {
                not_continued(f);
                return NULL;
        }
        check_section_line(f, s, content);
        return f->failed ? NULL : buf;
}

/* inih keeps inline comments on continuation lines; strip them the same
 * way it does on key lines: ';' after whitespace starts a comment. */
static void strip_inline_comment(char *v) {
        for (size_t i = 1; v[0] && v[i]; i++)
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

static int deliver(struct inifile *f, const char *section, const char *key, const char *value, unsigned line,
                   bool cont) {
        const struct inifile_entry e = {
                .section = section, .key = key, .value = value, .line = line, .continuation = cont,
        };
        int r = f->ops->entry(f, &e, f->user);
        if (r < 0)
                mark_failed(f);
        return r;
}

static int pending_add(struct inifile *f, const char *v, size_t n) {
        if (f->pending_len + n > INIFILE_MAX_VALUE)
                return inifile_fail(f, f->pending_line, "value longer than %d bytes", INIFILE_MAX_VALUE);
        char *t = realloc(f->pending, f->pending_len + n + 1);
        if (!t)
                return inifile_fail(f, f->pending_line, "out of memory");
        memcpy(t + f->pending_len, v, n);
        f->pending = t;
        f->pending_len += n;
        t[f->pending_len] = '\0';
        return 0;
}

/* Start or extend a value; deliver it once it no longer ends in '\'. */
static int take_value(struct inifile *f, const char *section, const char *key, const char *value, bool cont) {
        size_t n = strlen(value);
        bool more = ends_in_continuation(value, n);

        if (!f->pending && !more)
                return deliver(f, section, key, value, f->line, cont);
        if (!f->pending) {
                snprintf(f->pending_section, sizeof(f->pending_section), "%s", section);
                snprintf(f->pending_key, sizeof(f->pending_key), "%s", key);
                f->pending_line = f->line;
                f->pending_cont = cont;
        }
        int r = pending_add(f, value, more ? n - 1 : n);
        if (r < 0 || more)
                return r;
        _cleanup_free_ char *v = TAKE_PTR(f->pending);
        f->pending_len = 0;
        return deliver(f, f->pending_section, f->pending_key, v, f->pending_line, f->pending_cont);
}

/* An indented "key = value" line whose key exists is almost always a key
 * indented by mistake: inih would take it as a continuation. */
static bool looks_like_key(struct inifile *f, const char *section, const char *v) {
        size_t k = strspn(v, "abcdefghijklmnopqrstuvwxyz-_.");
        if (k == 0 || !f->ops->key_known)
                return false;
        size_t e = k + strspn(v + k, " \t");
        char key[NAME_BUF];
        snprintf(key, sizeof(key), "%.*s", (int) (k < sizeof(key) - 1 ? k : sizeof(key) - 1), v);
        return v[e] == '=' && f->ops->key_known(section, key, f->user);
}

static int handler(void *user, const char *section, const char *name, const char *value) {
        struct inifile *f = user;

        if (f->failed)
                return 0;
        if (f->line_indented && f->have_prev) {
                _cleanup_free_ char *v = strdup(value);
                if (!v)
                        return inifile_fail(f, f->line, "out of memory"), 0;
                strip_inline_comment(v);
                if (!f->pending && looks_like_key(f, section, v))
                        return inifile_fail(f, f->line, "indented line is read as a continuation of '%s'; "
                                            "do not indent keys", f->prev_key), 0;
                return take_value(f, section, name, v, true) >= 0;
        }

        if (f->pending)
                return not_continued(f), 0;
        f->have_prev = true;
        snprintf(f->prev_key, sizeof(f->prev_key), "%s", name);
        if (!*section)
                return inifile_fail(f, f->line, "key '%s' outside of any [section]", name), 0;
        return take_value(f, section, name, value, false) >= 0;
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

int inifile_parse(const char *name, const char *text, size_t len, const struct inifile_ops *ops, void *user,
                  struct sbx_error *err) {
        struct inifile f = { .name = name, .text = text, .ops = ops, .user = user, .err = err };

        /* A NUL byte would end the text early and silently drop the rest. */
        const char *nul = memchr(text, '\0', len);
        if (nul) {
                unsigned line = 1;
                for (const char *s = text; s < nul; s++)
                        line += *s == '\n';
                return sbx_error_msg(err, EINVAL, "%s:%u: NUL byte in the file", name, line);
        }
        int r = ini_parse_stream(reader, &f, handler, &f);
        if (!f.failed && f.pending)
                inifile_fail(&f, f.pending_line, "the value ends in '\\' but the file ends before its continuation");
        free(f.pending);
        /* inih's error line is the first failure of either kind; ours may
         * be a later one when a syntax error came first. */
        if (r > 0 && (!f.failed || (unsigned) r < f.fail_line)) {
                char shown[80];
                line_text(text, (unsigned) r, shown, sizeof(shown));
                return sbx_error_msg(err, EINVAL, "%s:%d: syntax error: expected '[section]' or 'key = value' (line '%s')",
                                     name, r, shown);
        }
        if (f.failed)
                return err && err->code ? -err->code : -EINVAL;
        if (r < 0)
                return sbx_error_msg(err, ENOMEM, "%s: out of memory while parsing", name);
        return 0;
}

int inifile_read(const char *path, size_t max_bytes, char **ret_text, size_t *ret_len, struct sbx_error *err) {
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
                        if (cap > max_bytes)
                                return sbx_error_msg(err, EFBIG, "%s: larger than %zu bytes", path, max_bytes);
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
        if (len > max_bytes)
                return sbx_error_msg(err, EFBIG, "%s: larger than %zu bytes", path, max_bytes);
        buf[len] = '\0';
        *ret_text = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}
