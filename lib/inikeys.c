/* SPDX-License-Identifier: Apache-2.0 */
/* The key-table engine (see inikeys.h): the INI reader hands over each
 * section header and each whole value with its line; here they meet a
 * format's tables. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inikeys.h"
#include "parse.h"
#include "profile-internal.h"

void inikey_show_value(const char *raw, char *out, size_t outlen) {
        size_t j = 0, max = 60;
        for (size_t i = 0; raw[i] && j + 4 < outlen; i++) {
                if (i == max) {
                        memcpy(out + j, "...", 3);
                        j += 3;
                        break;
                }
                unsigned char ch = (unsigned char) raw[i];
                out[j++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char) ch;
        }
        out[j] = '\0';
}

int inikey_fail(const struct inikey_ctx *c, const char *fmt, ...) {
        char what[512], shown[80];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        inikey_show_value(c->value ? c->value : "", shown, sizeof(shown));
        return sbx_error_msg(c->err, EINVAL, "%s: %s.%s: %s (value '%s')", c->origin, c->section, c->def->key, what,
                             shown);
}

int inikey_oom(const struct inikey_ctx *c) {
        return sbx_error_msg(c->err, ENOMEM, "%s: %s.%s: out of memory", c->origin, c->section, c->def->key);
}

void iniwords_free(struct iniword *w, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(w[i].s);
        free(w);
}

int inikeys_split(const char *value, bool expand_vars, struct iniword **ret, size_t *ret_n, struct sbx_error *why) {
        struct pwords w = { 0 };
        int r = pvalue_split_opts(value, expand_vars, &w, why);
        if (r < 0)
                return r;
        *ret = w.v;
        *ret_n = w.n;
        return 0;
}

/* ---- finding a key ---- */

static bool section_matches(const char *pattern, const char *section) {
        size_t n = strlen(pattern);
        if (n > 0 && pattern[n - 1] == '.')
                return strncmp(pattern, section, n) == 0 && section[n] != '\0';
        return streq(pattern, section);
}

static bool section_known(const struct inikey_format *fmt, const char *section) {
        for (size_t t = 0; t < fmt->n_tables; t++)
                for (size_t i = 0; i < fmt->tables[t].n; i++)
                        if (section_matches(fmt->tables[t].keys[i].section, section))
                                return true;
        return false;
}

/* The key's number across the tables, for the "set twice" lines; -1 if none. */
static int key_index(const struct inikey_format *fmt, const char *section, const char *key) {
        int idx = 0;
        for (size_t t = 0; t < fmt->n_tables; t++)
                for (size_t i = 0; i < fmt->tables[t].n; i++, idx++) {
                        const struct inikey *k = &fmt->tables[t].keys[i];
                        if (section_matches(k->section, section) && streq(k->key, key))
                                return idx;
                }
        return -1;
}

static const struct inikey *key_at(const struct inikey_format *fmt, int idx) {
        for (size_t t = 0; t < fmt->n_tables; t++) {
                if ((size_t) idx < fmt->tables[t].n)
                        return &fmt->tables[t].keys[idx];
                idx -= (int) fmt->tables[t].n;
        }
        return NULL;
}

static size_t keys_count(const struct inikey_format *fmt) {
        size_t n = 0;
        for (size_t t = 0; t < fmt->n_tables; t++)
                n += fmt->tables[t].n;
        return n;
}

const struct inikey *inikeys_find(const struct inikey_format *fmt, const char *section, const char *key, int *ret_why) {
        int idx = key_index(fmt, section, key);
        if (idx >= 0)
                return key_at(fmt, idx);
        *ret_why = section_known(fmt, section) ? -ENOENT : -ESRCH;
        return NULL;
}

/* The keys of a section, space-separated. */
static void section_keys(const struct inikey_format *fmt, const char *section, char *buf, size_t len) {
        size_t used = 0;
        buf[0] = '\0';
        for (size_t t = 0; t < fmt->n_tables; t++)
                for (size_t i = 0; i < fmt->tables[t].n; i++) {
                        const struct inikey *k = &fmt->tables[t].keys[i];
                        if (!section_matches(k->section, section))
                                continue;
                        int w = snprintf(buf + used, len - used, "%s%s", used ? " " : "", k->key);
                        if (w < 0 || (size_t) w >= len - used)
                                return;
                        used += (size_t) w;
                }
}

static void unknown_msg(const struct inikey_format *fmt, const char *section, const char *key, int why, char *buf,
                        size_t len) {
        char known[1024];
        if (why == -ESRCH) {
                snprintf(buf, len, "unknown section [%s] (known: %s)", section, fmt->sections);
                return;
        }
        section_keys(fmt, section, known, sizeof(known));
        snprintf(buf, len, "%s.%s: unknown key (known in [%s]: %s)", section, key, section, known);
}

int inikeys_unknown(const struct inikey_format *fmt, const char *section, const char *key, int why, const char *origin,
                    struct sbx_error *err) {
        char msg[1400];
        unknown_msg(fmt, section, key, why, msg, sizeof(msg));
        return sbx_error_msg(err, EINVAL, "%s: %s", origin, msg);
}

/* ---- applying a value ---- */

/* "a, b or c" */
static const char *enum_names(const char *const *names, char *buf, size_t len) {
        size_t used = 0, n = 0;
        while (names[n])
                n++;
        buf[0] = '\0';
        for (size_t i = 0; i < n && used < len; i++) {
                int w = snprintf(buf + used, len - used, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ", names[i]);
                if (w < 0)
                        break;
                used += (size_t) w;
        }
        return buf;
}

static int apply_kind(const struct inikey_format *fmt, struct inikey_ctx *c) {
        const struct inikey *k = c->def;
        char what[256];
        const char *v = c->value;
        uint64_t n = 0, max = k->max ? k->max : UINT64_MAX - 1;
        int r;

        if (fmt->check && (r = fmt->check(c)) < 0)
                return r;
        switch (k->kind) {
        case INIKEY_CUSTOM:
                return k->fn(c);
        case INIKEY_STRING: {
                char *s = strdup(v), **dst = inikey_field(c);
                if (!s)
                        return inikey_oom(c);
                free(*dst);
                *dst = s;
                break;
        }
        case INIKEY_BOOL:
                if (parse_bool(v, inikey_field(c)) < 0)
                        return inikey_fail(c, "expected yes or no");
                break;
        case INIKEY_ENUM:
                for (int i = 0; k->names[i]; i++)
                        if (streq(k->names[i], v)) {
                                *(int *) inikey_field(c) = i;
                                return k->fn ? k->fn(c) : 0;
                        }
                return inikey_fail(c, "expected %s", enum_names(k->names, what, sizeof(what)));
        case INIKEY_SIZE:
        case INIKEY_DURATION: {
                bool size = k->kind == INIKEY_SIZE;
                const char *noun = size ? "size" : "duration", *unit = size ? "bytes" : "ms";
                r = size ? parse_size(v, &n) : parse_duration_ms(v, &n);
                if (r < 0 || n < k->min || n > max)
                        return k->max ? inikey_fail(c, "expected a %s from %" PRIu64 " to %" PRIu64 " %s", noun, k->min, max, unit)
                                      : inikey_fail(c, "expected a %s of at least %" PRIu64 " %s", noun, k->min, unit);
                *(uint64_t *) inikey_field(c) = n;
                break;
        }
        case INIKEY_UINT:
                r = parse_uint64(v, max, &n);
                if (r < 0 || n < k->min)
                        return inikey_fail(c, "expected a number from %" PRIu64 " to %" PRIu64, k->min, max);
                *(uint64_t *) inikey_field(c) = n;
                break;
        }
        return k->fn ? k->fn(c) : 0;
}

int inikeys_apply(const struct inikey_format *fmt, struct inikey_ctx *c) {
        struct sbx_error why = { 0 };
        int r;

        if (!fmt->words || c->w)
                return apply_kind(fmt, c);
        r = inikeys_split(c->value, fmt->expand_vars, &c->w, &c->n, &why);
        if (r < 0)
                return r == -ENOMEM ? inikey_oom(c) : inikey_fail(c, "%s", why.msg);
        r = apply_kind(fmt, c);
        iniwords_free(c->w, c->n);
        c->w = NULL;
        c->n = 0;
        return r;
}

/* ---- the loop over a file ---- */

struct run {
        const struct inikey_format *fmt;
        void *user;
        struct sbx_error *err;
        unsigned *seen;          /* per key: the line it was set on, in this file */
        unsigned header_line;    /* of the last section header */
        char **sections;         /* headers seen, when sections_once */
        unsigned *section_lines;
        size_t n_sections;
};

static int on_section(struct inifile *f, const char *section, unsigned line, void *user) {
        struct run *run = user;
        const struct inikey_format *fmt = run->fmt;

        if (!section_known(fmt, section))
                return inifile_fail(f, line, "unknown section [%s] (known: %s)", section, fmt->sections);
        run->header_line = line;
        /* A key of a [prefix.NAME] section counts as set once per header. */
        for (size_t i = 0, n = keys_count(fmt); i < n; i++) {
                const char *s = key_at(fmt, (int) i)->section;
                if (s[strlen(s) - 1] == '.')
                        run->seen[i] = 0;
        }
        if (!fmt->sections_once)
                return 0;
        for (size_t i = 0; i < run->n_sections; i++)
                if (streq(run->sections[i], section))
                        return inifile_fail(f, line, "[%s] again (first on line %u)", section, run->section_lines[i]);
        char **s = realloc(run->sections, (run->n_sections + 1) * sizeof(*s));
        if (!s)
                return sbx_error_msg(run->err, ENOMEM, "%s: out of memory", inifile_name(f));
        run->sections = s;
        unsigned *l = realloc(run->section_lines, (run->n_sections + 1) * sizeof(*l));
        if (!l)
                return sbx_error_msg(run->err, ENOMEM, "%s: out of memory", inifile_name(f));
        run->section_lines = l;
        if (!(s[run->n_sections] = strdup(section)))
                return sbx_error_msg(run->err, ENOMEM, "%s: out of memory", inifile_name(f));
        l[run->n_sections++] = line;
        return 0;
}

static bool key_known(const char *section, const char *key, void *user) {
        struct run *run = user;
        return key_index(run->fmt, section, key) >= 0;
}

static int on_entry(struct inifile *f, const struct inifile_entry *e, void *user) {
        struct run *run = user;
        const struct inikey_format *fmt = run->fmt;
        char origin[PATH_MAX + 32];
        int idx = key_index(fmt, e->section, e->key);

        snprintf(origin, sizeof(origin), "%s:%u", inifile_name(f), e->line);
        if (idx < 0) {
                char msg[1400];
                unknown_msg(fmt, e->section, e->key, section_known(fmt, e->section) ? -ENOENT : -ESRCH, msg, sizeof(msg));
                return inifile_fail(f, e->line, "%s", msg);
        }
        const struct inikey *k = key_at(fmt, idx);
        if (e->continuation && k->repeat == INIKEY_ONCE)
                return inifile_fail(f, e->line, "%s.%s: takes a single line (an indented line continues the previous key)",
                                    e->section, e->key);
        if (!e->continuation && k->repeat != INIKEY_APPEND && !fmt->last_wins) {
                if (run->seen[idx])
                        return inifile_fail(f, e->line, "%s.%s: set twice in this file (first on line %u)", e->section,
                                            e->key, run->seen[idx]);
                run->seen[idx] = e->line;
        }

        struct inikey_ctx c = {
                .def = k, .section = e->section, .value = e->value, .origin = origin, .f = f, .line = e->line,
                .section_line = run->header_line, .continuation = e->continuation, .obj = run->user, .user = run->user, .err = run->err,
        };
        if (fmt->object) {
                int r = fmt->object(&c, &c.obj);
                if (r != 0)
                        return r < 0 ? r : 0; /* > 0: the front-end skips this line */
        }
        int r = inikeys_apply(fmt, &c);
        if (r < 0 && (!run->err || !run->err->code))
                r = sbx_error_set(run->err, -r, "%s", origin);
        return r;
}

int inikeys_parse(const struct inikey_format *fmt, const char *name, const char *text, size_t len, void *user,
                  struct sbx_error *err) {
        static const struct inifile_ops ops = { .section = on_section, .entry = on_entry, .key_known = key_known };
        struct run run = { .fmt = fmt, .user = user, .err = err };
        int r;

        run.seen = calloc(keys_count(fmt) + 1, sizeof(*run.seen));
        if (!run.seen)
                return sbx_error_msg(err, ENOMEM, "%s: out of memory", name);
        sbx_error_clear(err);
        r = inifile_parse(name, text, len, &ops, &run, err);
        for (size_t i = 0; i < run.n_sections; i++)
                free(run.sections[i]);
        free(run.sections);
        free(run.section_lines);
        free(run.seen);
        return r;
}

int inikeys_load(const struct inikey_format *fmt, const char *path, size_t max_bytes, void *user, struct sbx_error *err) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = inifile_read(path, max_bytes, &text, &len, err);
        if (r < 0)
                return r;
        return inikeys_parse(fmt, path, text, len, user, err);
}
