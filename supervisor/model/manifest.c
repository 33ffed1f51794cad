/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <limits.h>

#include "env-name.h"
#include "inifile.h"
#include "macro.h"
#include "manifest.h"
#include "parse.h"
#include "profile-internal.h"
#include "semver.h"

/* Host files a bundle may ask to read, each public by nature (trust
 * anchors, name service, time zone, the dynamic loader's cache, Debian's
 * alternatives that /usr/bin links point into). Anything else of the host
 * stays out of reach: a bundle cannot name a path of its own choosing. */
static const char *const vocabulary[] = {
        "/etc/alternatives", "/etc/ca-certificates", "/etc/ssl/certs", "/etc/resolv.conf", "/etc/hosts",
        "/etc/localtime",    "/etc/timezone",        "/etc/passwd",    "/etc/group",       "/etc/nsswitch.conf",
        "/etc/ld.so.cache",  "/etc/mime.types",      "/etc/protocols", "/etc/services",
};
_Static_assert(ARRAY_SIZE(vocabulary) <= 32, "read-only paths are bits of an unsigned");

size_t manifest_paths_count(void) {
        return ARRAY_SIZE(vocabulary);
}

const char *manifest_path_name(size_t i) {
        return i < ARRAY_SIZE(vocabulary) ? vocabulary[i] : NULL;
}

int manifest_path_find(const char *path) {
        for (size_t i = 0; i < ARRAY_SIZE(vocabulary); i++)
                if (streq(vocabulary[i], path))
                        return (int) i;
        return -1;
}

const char *manifest_paths_all(void) {
        return "/etc/alternatives /etc/ca-certificates /etc/ssl/certs /etc/resolv.conf /etc/hosts /etc/localtime "
               "/etc/timezone /etc/passwd /etc/group /etc/nsswitch.conf /etc/ld.so.cache /etc/mime.types /etc/protocols "
               "/etc/services";
}

bool bundle_name_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > 64 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
                        return false;
        return true;
}

void manifest_init(struct manifest *m) {
        memset(m, 0, sizeof(*m));
        m->net = MANIFEST_NET_NONE;
        m->timeout_ms = m->memory = m->cpu_s = m->processes = m->output = MANIFEST_UNSET;
}

static void strv_free(char **v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

void manifest_free(struct manifest *m) {
        free(m->name);
        free(m->version);
        free(m->description);
        strv_free(m->command, m->n_command);
        free(m->profile);
        for (size_t i = 0; i < m->n_connect; i++)
                free(m->connect[i].host);
        free(m->connect);
        strv_free(m->env, m->n_env);
        manifest_init(m);
}

/* ---- keys ----------------------------------------------------------------- */

struct mkey;

struct mctx {
        struct manifest *m;
        const struct mkey *def;
        const char *origin;
        const char *raw;
        struct pword *w;
        size_t n;
        bool continuation;
        struct sbx_error *err;
};

struct mkey {
        const char *section;
        const char *key;
        enum key_kind kind;
        int (*fn)(struct mctx *c);
};

_printf_(2, 3) static int merr(const struct mctx *c, const char *fmt, ...) {
        char what[512], shown[80];
        size_t j = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        for (const char *s = c->raw ? c->raw : ""; *s && j + 4 < sizeof(shown); s++) {
                if (j == 60) {
                        memcpy(shown + j, "...", 3);
                        j += 3;
                        break;
                }
                shown[j++] = ((unsigned char) *s < 0x20 || *s == 0x7f) ? '?' : *s;
        }
        shown[j] = '\0';
        return sbx_error_msg(c->err, EINVAL, "%s: %s.%s: %s (value '%s')", c->origin, c->def->section, c->def->key, what,
                             shown);
}

static int moom(const struct mctx *c) {
        return sbx_error_msg(c->err, ENOMEM, "%s: %s.%s: out of memory", c->origin, c->def->section, c->def->key);
}

/* Well-formed UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF): what JSON records and logs can carry. */
static bool utf8_valid(const unsigned char *s, size_t n) {
        for (size_t i = 0; i < n;) {
                unsigned char c = s[i];
                size_t len;
                uint32_t cp;
                if (c < 0x80) {
                        i++;
                        continue;
                }
                if (c >= 0xc2 && c <= 0xdf)
                        len = 2, cp = c & 0x1f;
                else if (c >= 0xe0 && c <= 0xef)
                        len = 3, cp = c & 0x0f;
                else if (c >= 0xf0 && c <= 0xf4)
                        len = 4, cp = c & 0x07;
                else
                        return false;
                if (i + len > n)
                        return false;
                for (size_t k = 1; k < len; k++) {
                        if ((s[i + k] & 0xc0) != 0x80)
                                return false;
                        cp = (cp << 6) | (s[i + k] & 0x3f);
                }
                if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
                    (cp >= 0xd800 && cp <= 0xdfff))
                        return false;
                i += len;
        }
        return true;
}

/* Every word a C string (a NUL byte is refused), printable UTF-8: a
 * manifest comes from a publisher, and its words reach logs and records. */
static int words_clean(const struct mctx *c) {
        for (size_t i = 0; i < c->n; i++) {
                if (strlen(c->w[i].s) != c->w[i].len)
                        return merr(c, "word %zu contains a NUL byte", i + 1);
                if (!utf8_valid((const unsigned char *) c->w[i].s, c->w[i].len))
                        return merr(c, "word %zu is not valid UTF-8", i + 1);
                for (const char *s = c->w[i].s; *s; s++)
                        if ((unsigned char) *s < 0x20 || *s == 0x7f)
                                return merr(c, "word %zu contains a control character", i + 1);
        }
        return 0;
}

static int one_word(const struct mctx *c, const char *usage) {
        if (c->n != 1)
                return merr(c, "expected %s, got %zu words", usage, c->n);
        return 0;
}

static int set_string(const struct mctx *c, char **dst) {
        char *s = strdup(c->w[0].s);
        if (!s)
                return moom(c);
        free(*dst);
        *dst = s;
        return 0;
}

static int k_name(struct mctx *c) {
        int r = one_word(c, "a name");
        if (r < 0)
                return r;
        if (!bundle_name_valid(c->w[0].s))
                return merr(c, "a bundle name is 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit");
        return set_string(c, &c->m->name);
}

static int k_version(struct mctx *c) {
        int r = one_word(c, "a version");
        if (r < 0)
                return r;
        if (!semver_valid(c->w[0].s))
                return merr(c, "not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.2.0 or 2.0.0-rc.1)");
        return set_string(c, &c->m->version);
}

/* The words joined by single spaces: a line of prose. */
static int k_description(struct mctx *c) {
        size_t len = 1;
        for (size_t i = 0; i < c->n; i++)
                len += c->w[i].len + 1;
        if (len > MANIFEST_MAX_DESCRIPTION)
                return merr(c, "longer than %d bytes", MANIFEST_MAX_DESCRIPTION);
        char *s = calloc(1, len);
        if (!s)
                return moom(c);
        for (size_t i = 0; i < c->n; i++) {
                if (i)
                        strcat(s, " ");
                strcat(s, c->w[i].s);
        }
        free(c->m->description);
        c->m->description = s;
        return 0;
}

static int strv_of_words(const struct mctx *c, char ***dst, size_t *n_dst) {
        char **v = calloc(c->n + 1, sizeof(char *));
        if (!v)
                return moom(c);
        for (size_t i = 0; i < c->n; i++)
                if (!(v[i] = strdup(c->w[i].s))) {
                        strv_free(v, i);
                        return moom(c);
                }
        strv_free(*dst, *n_dst);
        *dst = v;
        *n_dst = c->n;
        return 0;
}

static int k_command(struct mctx *c) {
        if (c->n == 0)
                return merr(c, "empty command");
        if (c->n > MANIFEST_MAX_COMMAND)
                return merr(c, "more than %d words", MANIFEST_MAX_COMMAND);
        if (c->w[0].len == 0)
                return merr(c, "empty program name");
        return strv_of_words(c, &c->m->command, &c->m->n_command);
}

/* A profile name as the daemon's profile path knows it (shell, python,
 * node, or one the operator installed). */
static int k_profile(struct mctx *c) {
        int r = one_word(c, "a profile name");
        if (r < 0)
                return r;
        const char *s = c->w[0].s;
        bool ok = *s && *s != '.' && strlen(s) <= 64;
        for (; ok && *s; s++)
                ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-' ||
                     *s == '_' || *s == '.';
        if (!ok)
                return merr(c, "a profile name is 1 to 64 of letters, digits, '.', '_' and '-'");
        return set_string(c, &c->m->profile);
}

static int k_network(struct mctx *c) {
        int r = one_word(c, "none or restricted");
        if (r < 0)
                return r;
        if (streq(c->w[0].s, "none"))
                c->m->net = MANIFEST_NET_NONE;
        else if (streq(c->w[0].s, "restricted"))
                c->m->net = MANIFEST_NET_RESTRICTED;
        else
                return merr(c, "expected none or restricted");
        return 0;
}

static bool host_valid(const char *h) {
        size_t n = strlen(h);
        if (n == 0 || n > 253)
                return false;
        for (const char *p = h; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
                      *p == '-' || *p == ':' || *p == '*'))
                        return false;
        return true;
}

/* HOST:PORT, or [IPV6]:PORT; one or more per line. */
static int k_connect(struct mctx *c) {
        struct manifest *m = c->m;
        if (c->n == 0)
                return merr(c, "expected HOST:PORT");
        for (size_t i = 0; i < c->n; i++) {
                const char *w = c->w[i].s, *colon = strrchr(w, ':');
                uint64_t port;
                if (!colon || parse_uint64(colon + 1, 65535, &port) < 0 || port == 0)
                        return merr(c, "'%s': expected HOST:PORT with a port from 1 to 65535", w);
                size_t hl = (size_t) (colon - w);
                const char *h = w;
                if (hl >= 2 && w[0] == '[' && w[hl - 1] == ']') {
                        h++;
                        hl -= 2;
                }
                char host[256];
                if (hl == 0 || hl >= sizeof(host))
                        return merr(c, "'%s': bad host", w);
                memcpy(host, h, hl);
                host[hl] = '\0';
                if (!host_valid(host))
                        return merr(c, "'%s': bad host", w);
                if (m->n_connect >= MANIFEST_MAX_CONNECT)
                        return merr(c, "more than %d endpoints", MANIFEST_MAX_CONNECT);
                struct manifest_endpoint *t = realloc(m->connect, (m->n_connect + 1) * sizeof(*t));
                if (!t)
                        return moom(c);
                m->connect = t;
                if (!(t[m->n_connect].host = strdup(host)))
                        return moom(c);
                t[m->n_connect++].port = (uint16_t) port;
        }
        return 0;
}

static int k_read_only(struct mctx *c) {
        if (c->n == 0)
                return merr(c, "expected a path");
        for (size_t i = 0; i < c->n; i++) {
                int k = manifest_path_find(c->w[i].s);
                if (k < 0)
                        return merr(c, "'%s' is not a path a bundle may ask for (these are: %s)", c->w[i].s,
                                    manifest_paths_all());
                c->m->ro_paths |= MANIFEST_PATH_BIT(k);
        }
        return 0;
}


/* A set: the first line replaces, indented lines extend. */
static int k_env(struct mctx *c) {
        struct manifest *m = c->m;
        if (!c->continuation) {
                strv_free(m->env, m->n_env);
                m->env = NULL;
                m->n_env = 0;
        }
        for (size_t i = 0; i < c->n; i++) {
                const char *w = c->w[i].s;
                if (!env_name_valid(w, strlen(w)))
                        return merr(c, "'%s' is not a variable name", w);
                if (strncmp(w, "SBX_", 4) == 0)
                        return merr(c, "'%s': SBX_* variables are the daemon's", w);
                bool dup = false;
                for (size_t k = 0; k < m->n_env; k++)
                        dup |= streq(m->env[k], w);
                if (dup)
                        continue;
                if (m->n_env >= MANIFEST_MAX_ENV)
                        return merr(c, "more than %d variables", MANIFEST_MAX_ENV);
                char **t = realloc(m->env, (m->n_env + 2) * sizeof(char *));
                if (!t)
                        return moom(c);
                m->env = t;
                if (!(t[m->n_env] = strdup(w)))
                        return moom(c);
                t[++m->n_env] = NULL;
        }
        return 0;
}

static int k_duration(struct mctx *c, uint64_t *dst, bool seconds) {
        uint64_t ms;
        int r = one_word(c, "a duration");
        if (r < 0)
                return r;
        if (parse_duration_ms(c->w[0].s, &ms) < 0 || ms == 0)
                return merr(c, "expected a positive duration (e.g. 30s, 5m)");
        *dst = seconds ? (ms + 999) / 1000 : ms;
        return 0;
}

static int k_timeout(struct mctx *c) {
        return k_duration(c, &c->m->timeout_ms, false);
}

static int k_cpu(struct mctx *c) {
        return k_duration(c, &c->m->cpu_s, true);
}

static int k_size(struct mctx *c, uint64_t *dst) {
        uint64_t n;
        int r = one_word(c, "a size");
        if (r < 0)
                return r;
        if (parse_size(c->w[0].s, &n) < 0 || n == 0 || n == UINT64_MAX)
                return merr(c, "expected a positive size (e.g. 256M)");
        *dst = n;
        return 0;
}

static int k_memory(struct mctx *c) {
        return k_size(c, &c->m->memory);
}

static int k_output(struct mctx *c) {
        return k_size(c, &c->m->output);
}

static int k_processes(struct mctx *c) {
        uint64_t n;
        int r = one_word(c, "a number");
        if (r < 0)
                return r;
        if (parse_uint64(c->w[0].s, 1u << 30, &n) < 0 || n == 0)
                return merr(c, "expected a positive number");
        c->m->processes = n;
        return 0;
}

static const struct mkey keys[] = {
        { "bundle", "name", KEY_SCALAR, k_name },
        { "bundle", "version", KEY_SCALAR, k_version },
        { "bundle", "description", KEY_SCALAR, k_description },
        { "run", "command", KEY_SCALAR, k_command },
        { "run", "profile", KEY_SCALAR, k_profile },
        { "capabilities", "network", KEY_SCALAR, k_network },
        { "capabilities", "connect", KEY_LIST, k_connect },
        { "capabilities", "read-only", KEY_LIST, k_read_only },
        { "capabilities", "env", KEY_SET, k_env },
        { "limits", "timeout", KEY_SCALAR, k_timeout },
        { "limits", "memory", KEY_SCALAR, k_memory },
        { "limits", "cpu", KEY_SCALAR, k_cpu },
        { "limits", "processes", KEY_SCALAR, k_processes },
        { "limits", "output", KEY_SCALAR, k_output },
};
#define MANIFEST_KEYS_MAX 32
_Static_assert(ARRAY_SIZE(keys) <= MANIFEST_KEYS_MAX, "the loader's per-key table is large enough");

static bool section_known(const char *section) {
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                if (streq(keys[i].section, section))
                        return true;
        return false;
}

static int key_find(const char *section, const char *key) {
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                if (streq(keys[i].section, section) && streq(keys[i].key, key))
                        return (int) i;
        return section_known(section) ? -1 : -2;
}

static void section_keys(const char *section, char *buf, size_t len) {
        size_t used = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                if (streq(keys[i].section, section)) {
                        int w = snprintf(buf + used, len - used, "%s%s", used ? " " : "", keys[i].key);
                        if (w < 0 || (size_t) w >= len - used)
                                break;
                        used += (size_t) w;
                }
}

static int apply(struct manifest *m, int idx, const char *value, const char *origin, bool continuation,
                 struct sbx_error *err) {
        struct pwords w = { 0 };
        struct sbx_error why;
        struct mctx c = { .m = m, .def = &keys[idx], .origin = origin, .raw = value, .continuation = continuation, .err = err };
        sbx_error_clear(&why);
        int r = pvalue_split_opts(value, false, &w, &why);
        if (r < 0)
                return r == -ENOMEM ? moom(&c) : merr(&c, "%s", why.msg);
        c.w = w.v;
        c.n = w.n;
        r = words_clean(&c);
        if (r == 0)
                r = keys[idx].fn(&c);
        pwords_free(&w);
        return r;
}

/* The shared INI reader (inifile.h) hands over each section header and
 * each whole value with its line; here they meet the key table. */
struct loader {
        struct manifest *m;
        struct sbx_error *err;
        unsigned seen[MANIFEST_KEYS_MAX]; /* line where a scalar or set key was first set */
};

static int on_section(struct inifile *f, const char *section, unsigned line, void *user) {
        (void) user;
        if (!section_known(section))
                return inifile_fail(f, line, "unknown section [%s] (known: bundle run capabilities limits)", section);
        return 0;
}

static bool key_known(const char *section, const char *key, void *user) {
        (void) user;
        return key_find(section, key) >= 0;
}

static int on_entry(struct inifile *f, const struct inifile_entry *e, void *user) {
        struct loader *l = user;
        int idx = key_find(e->section, e->key);
        if (idx == -2)
                return inifile_fail(f, e->line, "unknown section [%s]", e->section);
        if (idx == -1) {
                char known[256];
                section_keys(e->section, known, sizeof(known));
                return inifile_fail(f, e->line, "%s.%s: unknown key (known in [%s]: %s)", e->section, e->key, e->section,
                                    known);
        }
        if (e->continuation && keys[idx].kind == KEY_SCALAR)
                return inifile_fail(f, e->line, "%s.%s: takes a single line (an indented line continues the previous key)",
                                    e->section, e->key);
        if (!e->continuation && keys[idx].kind != KEY_LIST) {
                if (l->seen[idx])
                        return inifile_fail(f, e->line, "%s.%s: set twice in this file (first on line %u)", e->section, e->key,
                                            l->seen[idx]);
                l->seen[idx] = e->line;
        }
        char origin[PATH_MAX + 32];
        snprintf(origin, sizeof(origin), "%s:%u", inifile_name(f), e->line);
        return apply(l->m, idx, e->value, origin, e->continuation, l->err);
}

static int load_text(struct manifest *m, const char *name, const char *text, size_t len, struct sbx_error *err) {
        static const struct inifile_ops ops = { .section = on_section, .entry = on_entry, .key_known = key_known };
        struct loader l = { .m = m, .err = err };
        return inifile_parse(name, text, len, &ops, &l, err);
}

/* The whole: what every bundle must say, and what only makes sense together. */
static int validate(struct manifest *m, const char *name, struct sbx_error *err) {
        if (!m->name)
                return sbx_error_msg(err, EINVAL, "%s: bundle.name is missing", name);
        if (!m->version)
                return sbx_error_msg(err, EINVAL, "%s: bundle.version is missing", name);
        if (!m->command)
                return sbx_error_msg(err, EINVAL, "%s: run.command is missing", name);
        if (m->net == MANIFEST_NET_RESTRICTED && m->n_connect == 0)
                return sbx_error_msg(err, EINVAL, "%s: capabilities.network = restricted needs at least one connect = HOST:PORT",
                                     name);
        if (m->net == MANIFEST_NET_NONE && m->n_connect > 0)
                return sbx_error_msg(err, EINVAL, "%s: capabilities.connect needs network = restricted", name);
        if (!m->description && !(m->description = strdup("")))
                return sbx_error_msg(err, ENOMEM, "%s: out of memory", name);
        if (!m->profile && !(m->profile = strdup("default")))
                return sbx_error_msg(err, ENOMEM, "%s: out of memory", name);
        return 0;
}

int manifest_parse(struct manifest *m, const char *name, const char *text, size_t len, struct sbx_error *err) {
        if (len > MANIFEST_MAX_SIZE)
                return sbx_error_msg(err, EFBIG, "%s: manifest larger than %d bytes", name, MANIFEST_MAX_SIZE);
        /* The loader wants the text NUL-terminated at len. */
        _cleanup_free_ char *copy = malloc(len + 1);
        if (!copy)
                return sbx_error_msg(err, ENOMEM, "%s: out of memory", name);
        memcpy(copy, text, len);
        copy[len] = '\0';
        int r = load_text(m, name, copy, len, err);
        return r < 0 ? r : validate(m, name, err);
}

int manifest_load_file(struct manifest *m, const char *path, struct sbx_error *err) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = inifile_read(path, MANIFEST_MAX_SIZE, &text, &len, err);
        if (r == 0)
                r = load_text(m, path, text, len, err);
        return r < 0 ? r : validate(m, path, err);
}

static json_t *strv_json(char *const *v, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++)
                json_array_append_new(a, json_string(v[i]));
        return a;
}

static json_t *u64_or_null(uint64_t v) {
        return v == MANIFEST_UNSET ? json_null() : json_integer((json_int_t) v);
}

json_t *manifest_to_json(const struct manifest *m) {
        json_t *connect = json_array(), *paths = json_array();
        for (size_t i = 0; connect && i < m->n_connect; i++) {
                char ep[300];
                bool v6 = strchr(m->connect[i].host, ':') != NULL;
                snprintf(ep, sizeof(ep), "%s%s%s:%u", v6 ? "[" : "", m->connect[i].host, v6 ? "]" : "",
                         (unsigned) m->connect[i].port);
                json_array_append_new(connect, json_string(ep));
        }
        for (size_t i = 0; paths && i < ARRAY_SIZE(vocabulary); i++)
                if (m->ro_paths & MANIFEST_PATH_BIT(i))
                        json_array_append_new(paths, json_string(vocabulary[i]));
        return json_pack("{s:s, s:s, s:s, s:o, s:s, s:{s:s, s:o, s:o, s:o}, s:{s:o, s:o, s:o, s:o, s:o}}", "name", m->name,
                         "version", m->version, "description", m->description ? m->description : "", "command",
                         strv_json(m->command, m->n_command), "profile", m->profile ? m->profile : "default", "capabilities",
                         "network", m->net == MANIFEST_NET_RESTRICTED ? "restricted" : "none", "connect", connect,
                         "read_only", paths, "env", strv_json(m->env, m->n_env), "limits", "timeout_ms",
                         u64_or_null(m->timeout_ms), "memory", u64_or_null(m->memory), "cpu_s", u64_or_null(m->cpu_s),
                         "processes", u64_or_null(m->processes), "output", u64_or_null(m->output));
}
