/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <limits.h>

#include "env-name.h"
#include "inikeys.h"
#include "macro.h"
#include "manifest.h"
#include "parse.h"
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

/* The manifest a key fills. */
#define MF(c) ((struct manifest *) (c)->obj)

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
static int words_clean(const struct inikey_ctx *c) {
        for (size_t i = 0; i < c->n; i++) {
                if (strlen(c->w[i].s) != c->w[i].len)
                        return inikey_fail(c, "word %zu contains a NUL byte", i + 1);
                if (!utf8_valid((const unsigned char *) c->w[i].s, c->w[i].len))
                        return inikey_fail(c, "word %zu is not valid UTF-8", i + 1);
                for (const char *s = c->w[i].s; *s; s++)
                        if ((unsigned char) *s < 0x20 || *s == 0x7f)
                                return inikey_fail(c, "word %zu contains a control character", i + 1);
        }
        return 0;
}

static int one_word(const struct inikey_ctx *c, const char *usage) {
        if (c->n != 1)
                return inikey_fail(c, "expected %s, got %zu words", usage, c->n);
        return 0;
}

static int set_string(const struct inikey_ctx *c, char **dst) {
        char *s = strdup(c->w[0].s);
        if (!s)
                return inikey_oom(c);
        free(*dst);
        *dst = s;
        return 0;
}

static int k_name(struct inikey_ctx *c) {
        int r = one_word(c, "a name");
        if (r < 0)
                return r;
        if (!bundle_name_valid(c->w[0].s))
                return inikey_fail(c, "a bundle name is 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit");
        return set_string(c, &MF(c)->name);
}

static int k_version(struct inikey_ctx *c) {
        int r = one_word(c, "a version");
        if (r < 0)
                return r;
        if (!semver_valid(c->w[0].s))
                return inikey_fail(c, "not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.2.0 or 2.0.0-rc.1)");
        return set_string(c, &MF(c)->version);
}

/* The words joined by single spaces: a line of prose. */
static int k_description(struct inikey_ctx *c) {
        size_t len = 1;
        for (size_t i = 0; i < c->n; i++)
                len += c->w[i].len + 1;
        if (len > MANIFEST_MAX_DESCRIPTION)
                return inikey_fail(c, "longer than %d bytes", MANIFEST_MAX_DESCRIPTION);
        char *s = calloc(1, len);
        if (!s)
                return inikey_oom(c);
        for (size_t i = 0; i < c->n; i++) {
                if (i)
                        strcat(s, " ");
                strcat(s, c->w[i].s);
        }
        free(MF(c)->description);
        MF(c)->description = s;
        return 0;
}

static int strv_of_words(const struct inikey_ctx *c, char ***dst, size_t *n_dst) {
        char **v = calloc(c->n + 1, sizeof(char *));
        if (!v)
                return inikey_oom(c);
        for (size_t i = 0; i < c->n; i++)
                if (!(v[i] = strdup(c->w[i].s))) {
                        strv_free(v, i);
                        return inikey_oom(c);
                }
        strv_free(*dst, *n_dst);
        *dst = v;
        *n_dst = c->n;
        return 0;
}

static int k_command(struct inikey_ctx *c) {
        if (c->n == 0)
                return inikey_fail(c, "empty command");
        if (c->n > MANIFEST_MAX_COMMAND)
                return inikey_fail(c, "more than %d words", MANIFEST_MAX_COMMAND);
        if (c->w[0].len == 0)
                return inikey_fail(c, "empty program name");
        return strv_of_words(c, &MF(c)->command, &MF(c)->n_command);
}

/* A profile name as the daemon's profile path knows it (shell, python,
 * node, or one the operator installed). */
static int k_profile(struct inikey_ctx *c) {
        int r = one_word(c, "a profile name");
        if (r < 0)
                return r;
        const char *s = c->w[0].s;
        bool ok = *s && *s != '.' && strlen(s) <= 64;
        for (; ok && *s; s++)
                ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-' ||
                     *s == '_' || *s == '.';
        if (!ok)
                return inikey_fail(c, "a profile name is 1 to 64 of letters, digits, '.', '_' and '-'");
        return set_string(c, &MF(c)->profile);
}

static int k_network(struct inikey_ctx *c) {
        int r = one_word(c, "none or restricted");
        if (r < 0)
                return r;
        if (streq(c->w[0].s, "none"))
                MF(c)->net = MANIFEST_NET_NONE;
        else if (streq(c->w[0].s, "restricted"))
                MF(c)->net = MANIFEST_NET_RESTRICTED;
        else
                return inikey_fail(c, "expected none or restricted");
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
static int k_connect(struct inikey_ctx *c) {
        struct manifest *m = c->obj;
        if (c->n == 0)
                return inikey_fail(c, "expected HOST:PORT");
        for (size_t i = 0; i < c->n; i++) {
                const char *w = c->w[i].s, *colon = strrchr(w, ':');
                uint64_t port;
                if (!colon || parse_uint64(colon + 1, 65535, &port) < 0 || port == 0)
                        return inikey_fail(c, "'%s': expected HOST:PORT with a port from 1 to 65535", w);
                size_t hl = (size_t) (colon - w);
                const char *h = w;
                if (hl >= 2 && w[0] == '[' && w[hl - 1] == ']') {
                        h++;
                        hl -= 2;
                }
                char host[256];
                if (hl == 0 || hl >= sizeof(host))
                        return inikey_fail(c, "'%s': bad host", w);
                memcpy(host, h, hl);
                host[hl] = '\0';
                if (!host_valid(host))
                        return inikey_fail(c, "'%s': bad host", w);
                if (m->n_connect >= MANIFEST_MAX_CONNECT)
                        return inikey_fail(c, "more than %d endpoints", MANIFEST_MAX_CONNECT);
                struct manifest_endpoint *t = realloc(m->connect, (m->n_connect + 1) * sizeof(*t));
                if (!t)
                        return inikey_oom(c);
                m->connect = t;
                if (!(t[m->n_connect].host = strdup(host)))
                        return inikey_oom(c);
                t[m->n_connect++].port = (uint16_t) port;
        }
        return 0;
}

static int k_read_only(struct inikey_ctx *c) {
        if (c->n == 0)
                return inikey_fail(c, "expected a path");
        for (size_t i = 0; i < c->n; i++) {
                int k = manifest_path_find(c->w[i].s);
                if (k < 0)
                        return inikey_fail(c, "'%s' is not a path a bundle may ask for (these are: %s)", c->w[i].s,
                                    manifest_paths_all());
                MF(c)->ro_paths |= MANIFEST_PATH_BIT(k);
        }
        return 0;
}


/* A set: the first line replaces, indented lines extend. */
static int k_env(struct inikey_ctx *c) {
        struct manifest *m = c->obj;
        if (!c->continuation) {
                strv_free(m->env, m->n_env);
                m->env = NULL;
                m->n_env = 0;
        }
        for (size_t i = 0; i < c->n; i++) {
                const char *w = c->w[i].s;
                if (!env_name_valid(w, strlen(w)))
                        return inikey_fail(c, "'%s' is not a variable name", w);
                if (strncmp(w, "SBX_", 4) == 0)
                        return inikey_fail(c, "'%s': SBX_* variables are the daemon's", w);
                bool dup = false;
                for (size_t k = 0; k < m->n_env; k++)
                        dup |= streq(m->env[k], w);
                if (dup)
                        continue;
                if (m->n_env >= MANIFEST_MAX_ENV)
                        return inikey_fail(c, "more than %d variables", MANIFEST_MAX_ENV);
                char **t = realloc(m->env, (m->n_env + 2) * sizeof(char *));
                if (!t)
                        return inikey_oom(c);
                m->env = t;
                if (!(t[m->n_env] = strdup(w)))
                        return inikey_oom(c);
                t[++m->n_env] = NULL;
        }
        return 0;
}

static int k_duration(struct inikey_ctx *c, uint64_t *dst, bool seconds) {
        uint64_t ms;
        int r = one_word(c, "a duration");
        if (r < 0)
                return r;
        if (parse_duration_ms(c->w[0].s, &ms) < 0 || ms == 0)
                return inikey_fail(c, "expected a positive duration (e.g. 30s, 5m)");
        *dst = seconds ? (ms + 999) / 1000 : ms;
        return 0;
}

static int k_timeout(struct inikey_ctx *c) {
        return k_duration(c, &MF(c)->timeout_ms, false);
}

static int k_cpu(struct inikey_ctx *c) {
        return k_duration(c, &MF(c)->cpu_s, true);
}

static int k_size(struct inikey_ctx *c, uint64_t *dst) {
        uint64_t n;
        int r = one_word(c, "a size");
        if (r < 0)
                return r;
        if (parse_size(c->w[0].s, &n) < 0 || n == 0 || n == UINT64_MAX)
                return inikey_fail(c, "expected a positive size (e.g. 256M)");
        *dst = n;
        return 0;
}

static int k_memory(struct inikey_ctx *c) {
        return k_size(c, &MF(c)->memory);
}

static int k_output(struct inikey_ctx *c) {
        return k_size(c, &MF(c)->output);
}

static int k_processes(struct inikey_ctx *c) {
        uint64_t n;
        int r = one_word(c, "a number");
        if (r < 0)
                return r;
        if (parse_uint64(c->w[0].s, 1u << 30, &n) < 0 || n == 0)
                return inikey_fail(c, "expected a positive number");
        MF(c)->processes = n;
        return 0;
}

#define K(s, k, rep, fn_) { .section = s, .key = k, .repeat = INIKEY_##rep, .kind = INIKEY_CUSTOM, .fn = fn_ }
static const struct inikey keys[] = {
        K("bundle", "name", ONCE, k_name),
        K("bundle", "version", ONCE, k_version),
        K("bundle", "description", ONCE, k_description),
        K("run", "command", ONCE, k_command),
        K("run", "profile", ONCE, k_profile),
        K("capabilities", "network", ONCE, k_network),
        K("capabilities", "connect", APPEND, k_connect),
        K("capabilities", "read-only", APPEND, k_read_only),
        K("capabilities", "env", SET, k_env),
        K("limits", "timeout", ONCE, k_timeout),
        K("limits", "memory", ONCE, k_memory),
        K("limits", "cpu", ONCE, k_cpu),
        K("limits", "processes", ONCE, k_processes),
        K("limits", "output", ONCE, k_output),
};
static const struct inikey_table tables[] = { INIKEY_TABLE(keys) };
static const struct inikey_format format = {
        .tables = tables,
        .n_tables = ARRAY_SIZE(tables),
        .sections = "bundle run capabilities limits",
        .words = true,
        .check = words_clean,
};

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
        int r = inikeys_parse(&format, name, copy, len, m, err);
        return r < 0 ? r : validate(m, name, err);
}

int manifest_load_file(struct manifest *m, const char *path, struct sbx_error *err) {
        int r = inikeys_load(&format, path, MANIFEST_MAX_SIZE, m, err);
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
