/* SPDX-License-Identifier: Apache-2.0 */
/* The profile's key table and the keys of [sandbox], [env], [net] and
 * [limits] ([fs] and [security] have files of their own, the value syntax
 * too). The loader and profile_set() both end up here, so a CLI option is
 * checked exactly like a line of a file. */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>

#include "env-name.h"
#include "parse.h"
#include "profile-keys.h"

/* Values may hold control bytes or be 300 KiB long: a safe prefix. */
void pkey_show_value(const char *raw, char *out, size_t outlen) {
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

int pkey_err(const struct kctx *c, const char *fmt, ...) {
        char what[512], shown[80];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        pkey_show_value(c->raw ? c->raw : "", shown, sizeof(shown));
        return sbx_error_msg(c->err, EINVAL, "%s: %s.%s: %s (value '%s')", c->origin, c->def->section,
                             c->def->key, what, shown);
}

int pkey_want_words(const struct kctx *c, size_t min, size_t max, const char *usage) {
        if (c->n < min || c->n > max)
                return pkey_err(c, "expected %s, got %zu word%s", usage, c->n, c->n == 1 ? "" : "s");
        return 0;
}

int pkey_word_cstr(const struct kctx *c, size_t i, const char *what) {
        if (strlen(c->w[i].s) != c->w[i].len)
                return pkey_err(c, "%s contains a NUL byte", what);
        return 0;
}

int pkey_oom(const struct kctx *c) {
        return sbx_error_msg(c->err, ENOMEM, "%s: %s.%s: out of memory", c->origin, c->def->section, c->def->key);
}

void *pkey_grow(void *arr, size_t n, size_t elem) {
        return realloc(arr, (n + 1) * elem);
}

/* ---- [sandbox] --------------------------------------------------------- */

static int ns_lookup(const struct kctx *c, size_t i, unsigned *ret) {
        int r = pkey_word_cstr(c, i, "namespace");
        if (r < 0)
                return r;
        if (streq(c->w[i].s, "all")) {
                *ret = PROFILE_NS_ALL;
                return 0;
        }
        *ret = profile_ns_from_name(c->w[i].s);
        if (*ret)
                return 0;
        return pkey_err(c, "unknown namespace '%s' (known: user mount pid net ipc uts cgroup all)", c->w[i].s);
}

/* The net namespace and [net] mode say one thing twice; keep them in step
 * so the launcher can read either. */
static void ns_sync_net(struct profile *p) {
        p->net = (p->namespaces & PROFILE_NS_NET) ? NET_NONE : NET_HOST;
}

static int k_namespaces(struct kctx *c) {
        unsigned set = c->continuation ? c->p->namespaces : 0;
        for (size_t i = 0; i < c->n; i++) {
                unsigned bit;
                int r = ns_lookup(c, i, &bit);
                if (r < 0)
                        return r;
                set |= bit;
        }
        /* The launcher is built on the user and mount namespaces; they are
         * implied, not optional. */
        c->p->namespaces = set | PROFILE_NS_USER | PROFILE_NS_MOUNT;
        ns_sync_net(c->p);
        return 0;
}

static int k_share(struct kctx *c) {
        if (c->n == 0)
                return pkey_err(c, "expected namespace names to share with the host");
        for (size_t i = 0; i < c->n; i++) {
                unsigned bit;
                int r = ns_lookup(c, i, &bit);
                if (r < 0)
                        return r;
                if (bit == PROFILE_NS_ALL)
                        return pkey_err(c, "the user and mount namespaces are always new and cannot be shared");
                if (bit & (PROFILE_NS_USER | PROFILE_NS_MOUNT))
                        return pkey_err(c, "the %s namespace is always new and cannot be shared", c->w[i].s);
                c->p->namespaces &= ~bit;
        }
        ns_sync_net(c->p);
        return 0;
}

static int k_hostname(struct kctx *c) {
        int r = pkey_want_words(c, 1, 1, "one host name");
        if (r < 0 || (r = pkey_word_cstr(c, 0, "host name")) < 0)
                return r;
        const char *h = c->w[0].s;
        size_t n = strlen(h);
        if (n == 0 || n > 64)
                return pkey_err(c, "a host name has 1 to 64 characters");
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) h[i]) && h[i] != '-' && h[i] != '.')
                        return pkey_err(c, "a host name has only letters, digits, '-' and '.'");
        if (h[0] == '-' || h[0] == '.' || h[n - 1] == '-' || h[n - 1] == '.')
                return pkey_err(c, "a host name cannot start or end with '-' or '.'");
        char *d = strdup(h);
        if (!d)
                return pkey_oom(c);
        free(c->p->hostname);
        c->p->hostname = d;
        return 0;
}

static int k_id(struct kctx *c) {
        uint64_t v;
        int r = pkey_want_words(c, 1, 1, "one numeric id");
        if (r < 0)
                return r;
        r = parse_uint64(c->w[0].s, UINT32_MAX - 1, &v);
        if (r < 0 || strlen(c->w[0].s) != c->w[0].len)
                return pkey_err(c, r == -ERANGE ? "id out of range (0 to 4294967294)" : "not a number");
        if (c->def->arg == 0)
                c->p->uid = (uid_t) v;
        else
                c->p->gid = (gid_t) v;
        return 0;
}

static int get_bool(struct kctx *c, bool *ret) {
        int r = pkey_want_words(c, 1, 1, "yes or no");
        if (r < 0)
                return r;
        if (parse_bool(c->w[0].s, ret) < 0 || strlen(c->w[0].s) != c->w[0].len)
                return pkey_err(c, "expected a boolean: yes, no, true, false, on, off, 1 or 0");
        return 0;
}

enum {
        BOOL_DIE_WITH_PARENT,
        BOOL_NEW_SESSION,
        BOOL_ENV_CLEAR,
        BOOL_SYS,
        BOOL_NET_AUDIT,
};

static int k_bool(struct kctx *c) {
        bool b;
        int r = get_bool(c, &b);
        if (r < 0)
                return r;
        switch (c->def->arg) {
        case BOOL_DIE_WITH_PARENT: c->p->die_with_parent = b; break;
        case BOOL_NEW_SESSION: c->p->new_session = b; break;
        case BOOL_ENV_CLEAR: c->p->env_clear = b; break;
        case BOOL_SYS: c->p->sys = b; break;
        case BOOL_NET_AUDIT: c->p->net_audit = b; break;
        }
        return 0;
}

static int k_pty(struct kctx *c) {
        static const enum profile_pty modes[] = { PTY_AUTO, PTY_YES, PTY_NO };
        int r = pkey_want_words(c, 1, 1, "auto, yes or no");
        if (r < 0)
                return r;
        for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
                if (streq(c->w[0].s, pty_mode_name(modes[i]))) {
                        c->p->pty = modes[i];
                        return 0;
                }
        return pkey_err(c, "expected auto, yes or no");
}

/* ---- [env] ------------------------------------------------------------- */

static int env_push(struct kctx *c, enum env_op_type type, const char *name, size_t nlen, const char *value) {
        struct profile *p = c->p;
        if (p->n_env >= PROFILE_MAX_ENV_OPS)
                return pkey_err(c, "too many [env] operations (at most %d)", PROFILE_MAX_ENV_OPS);
        struct env_op op = { .type = type };
        op.name = strndup(name, nlen);
        op.value = value ? strdup(value) : NULL;
        op.origin = strdup(c->origin);
        struct env_op *t = pkey_grow(p->env, p->n_env, sizeof(*t));
        if (t)
                p->env = t;
        if (!op.name || (value && !op.value) || !op.origin || !t) {
                free(op.name);
                free(op.value);
                free(op.origin);
                return pkey_oom(c);
        }
        p->env[p->n_env++] = op;
        return 0;
}

static int k_env_set(struct kctx *c) {
        if (c->n == 0)
                return pkey_err(c, "expected NAME=VALUE");
        for (size_t i = 0; i < c->n; i++) {
                int r = pkey_word_cstr(c, i, "NAME=VALUE");
                if (r < 0)
                        return r;
                const char *eq = strchr(c->w[i].s, '=');
                if (!eq)
                        return pkey_err(c, "expected NAME=VALUE (quote values with spaces: NAME=\"a b\")");
                size_t nlen = (size_t) (eq - c->w[i].s);
                if (!env_name_valid(c->w[i].s, nlen))
                        return pkey_err(c, "bad variable name '%.*s' (letters, digits and '_', not starting with a digit)",
                                    (int) (nlen > 64 ? 64 : nlen), c->w[i].s);
                r = env_push(c, ENV_SET, c->w[i].s, nlen, eq + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int k_env_name(struct kctx *c) {
        if (c->n == 0)
                return pkey_err(c, "expected one or more variable names");
        for (size_t i = 0; i < c->n; i++) {
                int r = pkey_word_cstr(c, i, "variable name");
                if (r < 0)
                        return r;
                if (!env_name_valid(c->w[i].s, c->w[i].len))
                        return pkey_err(c, "bad variable name '%.64s' (letters, digits and '_', not starting with a digit)",
                                    c->w[i].s);
                r = env_push(c, (enum env_op_type) c->def->arg, c->w[i].s, c->w[i].len, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- [net] ------------------------------------------------------------- */

static int k_net_mode(struct kctx *c) {
        int r = pkey_want_words(c, 1, 1, "none or host");
        if (r < 0)
                return r;
        if (streq(c->w[0].s, "none"))
                c->p->net = NET_NONE;
        else if (streq(c->w[0].s, "host"))
                c->p->net = NET_HOST;
        else
                return pkey_err(c, "expected none or host");
        if (c->p->net == NET_HOST)
                c->p->namespaces &= ~(unsigned) PROFILE_NS_NET;
        else
                c->p->namespaces |= PROFILE_NS_NET;
        return 0;
}

static int k_ports(struct kctx *c) {
        struct profile *p = c->p;
        bool bind = c->def->arg == 0;
        uint16_t **arr = bind ? &p->bind_ports : &p->connect_ports;
        size_t *n = bind ? &p->n_bind_ports : &p->n_connect_ports;

        if (c->n == 0)
                return pkey_err(c, "expected port numbers, or none");
        if (c->n == 1 && streq(c->w[0].s, "none")) {
                p->ports_set = true;
                return 0;
        }
        for (size_t i = 0; i < c->n; i++) {
                uint64_t v;
                if (parse_uint64(c->w[i].s, UINT16_MAX, &v) < 0 || v == 0 || strlen(c->w[i].s) != c->w[i].len)
                        return pkey_err(c, "'%.32s' is not a TCP port (1 to %u)", c->w[i].s, UINT16_MAX);
                if (*n >= PROFILE_MAX_PORTS)
                        return pkey_err(c, "too many ports (at most %d)", PROFILE_MAX_PORTS);
                uint16_t *t = pkey_grow(*arr, *n, sizeof(*t));
                if (!t)
                        return pkey_oom(c);
                *arr = t;
                (*arr)[(*n)++] = (uint16_t) v;
        }
        p->ports_set = true;
        return 0;
}

/* ---- [limits] ---------------------------------------------------------- */

enum {
        LIM_TIMEOUT, LIM_CPU, LIM_MEMORY, LIM_DATA, LIM_FSIZE, LIM_STACK, LIM_CORE, LIM_NPROC, LIM_NOFILE,
};

static uint64_t *limit_field(struct profile_limits *l, int which) {
        switch (which) {
        case LIM_TIMEOUT: return &l->timeout_ms;
        case LIM_CPU: return &l->cpu_s;
        case LIM_MEMORY: return &l->memory_bytes;
        case LIM_DATA: return &l->data_bytes;
        case LIM_FSIZE: return &l->file_size_bytes;
        case LIM_STACK: return &l->stack_bytes;
        case LIM_CORE: return &l->core_bytes;
        case LIM_NPROC: return &l->processes;
        default: return &l->open_files;
        }
}

static int k_limit(struct kctx *c) {
        int which = c->def->arg;
        uint64_t *f = limit_field(&c->p->limits, which), v;
        int r = pkey_want_words(c, 1, 1, "one value");
        if (r < 0 || (r = pkey_word_cstr(c, 0, "value")) < 0)
                return r;
        const char *s = c->w[0].s;

        if (which == LIM_TIMEOUT) {
                if (streq(s, "none")) {
                        *f = PROFILE_UNSET;
                        return 0;
                }
                r = parse_duration_ms(s, &v);
                if (r < 0 || v >= PROFILE_UNLIMITED)
                        return pkey_err(c, "expected a duration such as 30s, 5m, 1500ms, or none");
                if (v == 0)
                        return pkey_err(c, "a timeout must be longer than 0 (write none for no timeout)");
                *f = v;
                return 0;
        }
        if (streq(s, "unlimited")) {
                *f = PROFILE_UNLIMITED;
                return 0;
        }
        switch (which) {
        case LIM_CPU:
                r = parse_duration_ms(s, &v);
                if (r < 0)
                        return pkey_err(c, "expected a duration such as 10s or 2m, or unlimited");
                /* RLIMIT_CPU counts whole seconds. */
                if (v % 1000 != 0 || v == 0)
                        return pkey_err(c, "cpu time is counted in whole seconds (at least 1s)");
                *f = v / 1000;
                return 0;
        case LIM_NPROC:
        case LIM_NOFILE:
                r = parse_uint64(s, PROFILE_UNLIMITED - 1, &v);
                if (r < 0)
                        return pkey_err(c, r == -ERANGE ? "count too large" : "expected a count, or unlimited");
                *f = v;
                return 0;
        default:
                r = parse_size(s, &v);
                if (r < 0 || v >= PROFILE_UNLIMITED)
                        return pkey_err(c, r == -EINVAL ? "expected a size such as 512M or 2G, or unlimited"
                                                    : "size too large");
                *f = v;
                return 0;
        }
}

/* ---- the table ----------------------------------------------------------- */

#define TRY PKEY_TRY
static const struct keydef keys[] = {
        { "sandbox", "namespaces", KEY_SET, k_namespaces, 0 },
        { "sandbox", "share", KEY_LIST, k_share, 0 },
        { "sandbox", "hostname", KEY_SCALAR, k_hostname, 0 },
        { "sandbox", "uid", KEY_SCALAR, k_id, 0 },
        { "sandbox", "gid", KEY_SCALAR, k_id, 1 },
        { "sandbox", "die-with-parent", KEY_SCALAR, k_bool, BOOL_DIE_WITH_PARENT },
        { "sandbox", "new-session", KEY_SCALAR, k_bool, BOOL_NEW_SESSION },
        { "sandbox", "pty", KEY_SCALAR, k_pty, 0 },

        { "fs", "bind", KEY_LIST, pkey_fs_bind, FS_BIND },
        { "fs", "bind-try", KEY_LIST, pkey_fs_bind, FS_BIND | TRY },
        { "fs", "ro-bind", KEY_LIST, pkey_fs_bind, FS_RO_BIND },
        { "fs", "ro-bind-try", KEY_LIST, pkey_fs_bind, FS_RO_BIND | TRY },
        { "fs", "dev-bind", KEY_LIST, pkey_fs_bind, FS_DEV_BIND },
        { "fs", "dev-bind-try", KEY_LIST, pkey_fs_bind, FS_DEV_BIND | TRY },
        { "fs", "tmpfs", KEY_LIST, pkey_fs_dest, FS_TMPFS },
        { "fs", "dir", KEY_LIST, pkey_fs_dest, FS_DIR },
        { "fs", "symlink", KEY_LIST, pkey_fs_symlink, FS_SYMLINK },
        { "fs", "file", KEY_LIST, pkey_fs_dest, FS_FILE },
        { "fs", "proc", KEY_LIST, pkey_fs_dest, FS_PROC },
        { "fs", "dev", KEY_LIST, pkey_fs_dest, FS_DEV },
        { "fs", "mqueue", KEY_LIST, pkey_fs_dest, FS_MQUEUE },
        { "fs", "remount-ro", KEY_LIST, pkey_fs_dest, FS_REMOUNT_RO },
        { "fs", "chdir", KEY_LIST, pkey_fs_dest, FS_CHDIR },

        { "env", "clear", KEY_SCALAR, k_bool, BOOL_ENV_CLEAR },
        { "env", "set", KEY_LIST, k_env_set, ENV_SET },
        { "env", "keep", KEY_LIST, k_env_name, ENV_KEEP },
        { "env", "unset", KEY_LIST, k_env_name, ENV_UNSET },

        { "net", "mode", KEY_SCALAR, k_net_mode, 0 },
        { "net", "tcp-bind", KEY_LIST, k_ports, 0 },
        { "net", "tcp-connect", KEY_LIST, k_ports, 1 },
        { "net", "audit", KEY_SCALAR, k_bool, BOOL_NET_AUDIT },

        { "limits", "timeout", KEY_SCALAR, k_limit, LIM_TIMEOUT },
        { "limits", "cpu", KEY_SCALAR, k_limit, LIM_CPU },
        { "limits", "memory", KEY_SCALAR, k_limit, LIM_MEMORY },
        { "limits", "data", KEY_SCALAR, k_limit, LIM_DATA },
        { "limits", "file-size", KEY_SCALAR, k_limit, LIM_FSIZE },
        { "limits", "stack", KEY_SCALAR, k_limit, LIM_STACK },
        { "limits", "core", KEY_SCALAR, k_limit, LIM_CORE },
        { "limits", "processes", KEY_SCALAR, k_limit, LIM_NPROC },
        { "limits", "open-files", KEY_SCALAR, k_limit, LIM_NOFILE },

        { "security", "seccomp", KEY_SCALAR, pkey_seccomp, 0 },
        { "security", "allow", KEY_LIST, pkey_seccomp_rule, 1 },
        { "security", "deny", KEY_LIST, pkey_seccomp_rule, 0 },
        { "security", "landlock", KEY_SCALAR, pkey_landlock, 0 },
        { "security", "capabilities", KEY_SET, pkey_caps, 0 },
        { "security", "sys", KEY_SCALAR, k_bool, BOOL_SYS },
};

_Static_assert(ARRAY_SIZE(keys) <= PROFILE_KEYS_MAX, "the loader's per-key table is large enough");

bool profile_section_known(const char *section) {
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                if (streq(keys[i].section, section))
                        return true;
        return false;
}

void profile_section_keys(const char *section, char *buf, size_t len) {
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

int profile_key_find(const char *section, const char *key) {
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                if (streq(keys[i].section, section) && streq(keys[i].key, key))
                        return (int) i;
        return profile_section_known(section) ? -1 : -2;
}

enum key_kind profile_key_kind(int idx) {
        return keys[idx].kind;
}

static int apply_words(struct profile *p, int idx, const char *raw, struct pwords *w, const char *origin,
                       bool continuation, struct sbx_error *err) {
        struct kctx c = {
                .p = p, .def = &keys[idx], .origin = origin, .raw = raw,
                .w = w->v, .n = w->n, .continuation = continuation, .err = err,
        };
        return keys[idx].fn(&c);
}

int profile_apply_value(struct profile *p, int idx, const char *value, const char *origin, bool continuation,
                        struct sbx_error *err) {
        struct pwords w = { 0 };
        struct sbx_error why = { 0 };
        int r = pvalue_split(value, &w, &why);
        if (r < 0) {
                struct kctx c = { .p = p, .def = &keys[idx], .origin = origin, .raw = value, .err = err };
                return r == -ENOMEM ? pkey_oom(&c) : pkey_err(&c, "%s", why.msg);
        }
        r = apply_words(p, idx, value, &w, origin, continuation, err);
        pwords_free(&w);
        return r;
}

static int key_lookup_err(const char *section, const char *key, const char *origin, struct sbx_error *err) {
        int idx = profile_key_find(section, key);
        if (idx == -2)
                return sbx_error_msg(err, EINVAL, "%s: unknown section [%s]", origin, section);
        if (idx == -1) {
                char known[512];
                profile_section_keys(section, known, sizeof(known));
                return sbx_error_msg(err, EINVAL, "%s: %s.%s: unknown key (known in [%s]: %s)", origin, section, key,
                                     section, known);
        }
        return idx;
}

int profile_set(struct profile *p, const char *section, const char *key, const char *value, const char *origin,
                struct sbx_error *err) {
        int idx = key_lookup_err(section, key, origin, err);
        if (idx < 0)
                return idx;
        return profile_apply_value(p, idx, value ? value : "", origin, false, err);
}

int profile_set_words(struct profile *p, const char *section, const char *key, const char *const *words,
                      size_t n_words, const char *origin, struct sbx_error *err) {
        int idx = key_lookup_err(section, key, origin, err);
        if (idx < 0)
                return idx;
        struct pwords w = { 0 };
        struct pbuf raw = { 0 };
        int r = 0;

        w.v = calloc(n_words ? n_words : 1, sizeof(*w.v));
        if (!w.v)
                return sbx_error_msg(err, ENOMEM, "%s: out of memory", origin);
        w.cap = n_words;
        for (size_t i = 0; i < n_words && r >= 0; i++) {
                w.v[i].s = strdup(words[i]);
                if (!w.v[i].s) {
                        r = -ENOMEM;
                        break;
                }
                w.v[i].len = strlen(words[i]);
                w.n++;
                if ((i && pbuf_put(&raw, " ", 1) < 0) || pbuf_put(&raw, words[i], strlen(words[i])) < 0)
                        r = -ENOMEM;
        }
        if (r < 0)
                r = sbx_error_msg(err, ENOMEM, "%s: out of memory", origin);
        else
                r = apply_words(p, idx, raw.s ? raw.s : "", &w, origin, false, err);
        free(raw.s);
        pwords_free(&w);
        return r;
}
