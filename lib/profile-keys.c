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

int pkey_want_words(const struct inikey_ctx *c, size_t min, size_t max, const char *usage) {
        if (c->n < min || c->n > max)
                return inikey_fail(c, "expected %s, got %zu word%s", usage, c->n, c->n == 1 ? "" : "s");
        return 0;
}

int pkey_word_cstr(const struct inikey_ctx *c, size_t i, const char *what) {
        if (strlen(c->w[i].s) != c->w[i].len)
                return inikey_fail(c, "%s contains a NUL byte", what);
        return 0;
}

void *pkey_grow(void *arr, size_t n, size_t elem) {
        return realloc(arr, (n + 1) * elem);
}

/* ---- [sandbox] --------------------------------------------------------- */

static int ns_lookup(const struct inikey_ctx *c, size_t i, unsigned *ret) {
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
        return inikey_fail(c, "unknown namespace '%s' (known: user mount pid net ipc uts cgroup all)", c->w[i].s);
}

/* The net namespace and [net] mode say one thing twice; keep them in step
 * so the launcher can read either. */
static void ns_sync_net(struct profile *p) {
        p->net = (p->namespaces & PROFILE_NS_NET) ? NET_NONE : NET_HOST;
}

static int k_namespaces(struct inikey_ctx *c) {
        unsigned set = c->continuation ? kp(c)->namespaces : 0;
        for (size_t i = 0; i < c->n; i++) {
                unsigned bit;
                int r = ns_lookup(c, i, &bit);
                if (r < 0)
                        return r;
                set |= bit;
        }
        /* The launcher is built on the user and mount namespaces; they are
         * implied, not optional. */
        kp(c)->namespaces = set | PROFILE_NS_USER | PROFILE_NS_MOUNT;
        ns_sync_net(kp(c));
        return 0;
}

static int k_share(struct inikey_ctx *c) {
        if (c->n == 0)
                return inikey_fail(c, "expected namespace names to share with the host");
        for (size_t i = 0; i < c->n; i++) {
                unsigned bit;
                int r = ns_lookup(c, i, &bit);
                if (r < 0)
                        return r;
                if (bit == PROFILE_NS_ALL)
                        return inikey_fail(c, "the user and mount namespaces are always new and cannot be shared");
                if (bit & (PROFILE_NS_USER | PROFILE_NS_MOUNT))
                        return inikey_fail(c, "the %s namespace is always new and cannot be shared", c->w[i].s);
                kp(c)->namespaces &= ~bit;
        }
        ns_sync_net(kp(c));
        return 0;
}

static int k_hostname(struct inikey_ctx *c) {
        int r = pkey_want_words(c, 1, 1, "one host name");
        if (r < 0 || (r = pkey_word_cstr(c, 0, "host name")) < 0)
                return r;
        const char *h = c->w[0].s;
        size_t n = strlen(h);
        if (n == 0 || n > 64)
                return inikey_fail(c, "a host name has 1 to 64 characters");
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) h[i]) && h[i] != '-' && h[i] != '.')
                        return inikey_fail(c, "a host name has only letters, digits, '-' and '.'");
        if (h[0] == '-' || h[0] == '.' || h[n - 1] == '-' || h[n - 1] == '.')
                return inikey_fail(c, "a host name cannot start or end with '-' or '.'");
        char *d = strdup(h);
        if (!d)
                return inikey_oom(c);
        free(kp(c)->hostname);
        kp(c)->hostname = d;
        return 0;
}

static int k_id(struct inikey_ctx *c) {
        uint64_t v;
        int r = pkey_want_words(c, 1, 1, "one numeric id");
        if (r < 0)
                return r;
        r = parse_uint64(c->w[0].s, UINT32_MAX - 1, &v);
        if (r < 0 || strlen(c->w[0].s) != c->w[0].len)
                return inikey_fail(c, r == -ERANGE ? "id out of range (0 to 4294967294)" : "not a number");
        if (c->def->arg == 0)
                kp(c)->uid = (uid_t) v;
        else
                kp(c)->gid = (gid_t) v;
        return 0;
}

static int get_bool(struct inikey_ctx *c, bool *ret) {
        int r = pkey_want_words(c, 1, 1, "yes or no");
        if (r < 0)
                return r;
        if (parse_bool(c->w[0].s, ret) < 0 || strlen(c->w[0].s) != c->w[0].len)
                return inikey_fail(c, "expected a boolean: yes, no, true, false, on, off, 1 or 0");
        return 0;
}

enum {
        BOOL_DIE_WITH_PARENT,
        BOOL_NEW_SESSION,
        BOOL_ENV_CLEAR,
        BOOL_SYS,
        BOOL_NET_AUDIT,
};

static int k_bool(struct inikey_ctx *c) {
        bool b;
        int r = get_bool(c, &b);
        if (r < 0)
                return r;
        switch (c->def->arg) {
        case BOOL_DIE_WITH_PARENT: kp(c)->die_with_parent = b; break;
        case BOOL_NEW_SESSION: kp(c)->new_session = b; break;
        case BOOL_ENV_CLEAR: kp(c)->env_clear = b; break;
        case BOOL_SYS: kp(c)->sys = b; break;
        case BOOL_NET_AUDIT: kp(c)->net_audit = b; break;
        }
        return 0;
}

static int k_pty(struct inikey_ctx *c) {
        static const enum profile_pty modes[] = { PTY_AUTO, PTY_YES, PTY_NO };
        int r = pkey_want_words(c, 1, 1, "auto, yes or no");
        if (r < 0)
                return r;
        for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
                if (streq(c->w[0].s, pty_mode_name(modes[i]))) {
                        kp(c)->pty = modes[i];
                        return 0;
                }
        return inikey_fail(c, "expected auto, yes or no");
}

/* ---- [env] ------------------------------------------------------------- */

static int env_push(struct inikey_ctx *c, enum env_op_type type, const char *name, size_t nlen, const char *value) {
        struct profile *p = kp(c);
        if (p->n_env >= PROFILE_MAX_ENV_OPS)
                return inikey_fail(c, "too many [env] operations (at most %d)", PROFILE_MAX_ENV_OPS);
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
                return inikey_oom(c);
        }
        p->env[p->n_env++] = op;
        return 0;
}

static int k_env_set(struct inikey_ctx *c) {
        if (c->n == 0)
                return inikey_fail(c, "expected NAME=VALUE");
        for (size_t i = 0; i < c->n; i++) {
                int r = pkey_word_cstr(c, i, "NAME=VALUE");
                if (r < 0)
                        return r;
                const char *eq = strchr(c->w[i].s, '=');
                if (!eq)
                        return inikey_fail(c, "expected NAME=VALUE (quote values with spaces: NAME=\"a b\")");
                size_t nlen = (size_t) (eq - c->w[i].s);
                if (!env_name_valid(c->w[i].s, nlen))
                        return inikey_fail(c, "bad variable name '%.*s' (letters, digits and '_', not starting with a digit)",
                                    (int) (nlen > 64 ? 64 : nlen), c->w[i].s);
                r = env_push(c, ENV_SET, c->w[i].s, nlen, eq + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int k_env_name(struct inikey_ctx *c) {
        if (c->n == 0)
                return inikey_fail(c, "expected one or more variable names");
        for (size_t i = 0; i < c->n; i++) {
                int r = pkey_word_cstr(c, i, "variable name");
                if (r < 0)
                        return r;
                if (!env_name_valid(c->w[i].s, c->w[i].len))
                        return inikey_fail(c, "bad variable name '%.64s' (letters, digits and '_', not starting with a digit)",
                                    c->w[i].s);
                r = env_push(c, (enum env_op_type) c->def->arg, c->w[i].s, c->w[i].len, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- [net] ------------------------------------------------------------- */

static int k_net_mode(struct inikey_ctx *c) {
        int r = pkey_want_words(c, 1, 1, "none or host");
        if (r < 0)
                return r;
        if (streq(c->w[0].s, "none"))
                kp(c)->net = NET_NONE;
        else if (streq(c->w[0].s, "host"))
                kp(c)->net = NET_HOST;
        else
                return inikey_fail(c, "expected none or host");
        if (kp(c)->net == NET_HOST)
                kp(c)->namespaces &= ~(unsigned) PROFILE_NS_NET;
        else
                kp(c)->namespaces |= PROFILE_NS_NET;
        return 0;
}

static int k_ports(struct inikey_ctx *c) {
        struct profile *p = kp(c);
        bool bind = c->def->arg == 0;
        uint16_t **arr = bind ? &p->bind_ports : &p->connect_ports;
        size_t *n = bind ? &p->n_bind_ports : &p->n_connect_ports;

        if (c->n == 0)
                return inikey_fail(c, "expected port numbers, or none");
        if (c->n == 1 && streq(c->w[0].s, "none")) {
                p->ports_set = true;
                return 0;
        }
        for (size_t i = 0; i < c->n; i++) {
                uint64_t v;
                if (parse_uint64(c->w[i].s, UINT16_MAX, &v) < 0 || v == 0 || strlen(c->w[i].s) != c->w[i].len)
                        return inikey_fail(c, "'%.32s' is not a TCP port (1 to %u)", c->w[i].s, UINT16_MAX);
                if (*n >= PROFILE_MAX_PORTS)
                        return inikey_fail(c, "too many ports (at most %d)", PROFILE_MAX_PORTS);
                uint16_t *t = pkey_grow(*arr, *n, sizeof(*t));
                if (!t)
                        return inikey_oom(c);
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

static int k_limit(struct inikey_ctx *c) {
        int which = c->def->arg;
        uint64_t *f = limit_field(&kp(c)->limits, which), v;
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
                        return inikey_fail(c, "expected a duration such as 30s, 5m, 1500ms, or none");
                if (v == 0)
                        return inikey_fail(c, "a timeout must be longer than 0 (write none for no timeout)");
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
                        return inikey_fail(c, "expected a duration such as 10s or 2m, or unlimited");
                /* RLIMIT_CPU counts whole seconds. */
                if (v % 1000 != 0 || v == 0)
                        return inikey_fail(c, "cpu time is counted in whole seconds (at least 1s)");
                *f = v / 1000;
                return 0;
        case LIM_NPROC:
        case LIM_NOFILE:
                r = parse_uint64(s, PROFILE_UNLIMITED - 1, &v);
                if (r < 0)
                        return inikey_fail(c, r == -ERANGE ? "count too large" : "expected a count, or unlimited");
                *f = v;
                return 0;
        default:
                r = parse_size(s, &v);
                if (r < 0 || v >= PROFILE_UNLIMITED)
                        return inikey_fail(c, r == -EINVAL ? "expected a size such as 512M or 2G, or unlimited"
                                                    : "size too large");
                *f = v;
                return 0;
        }
}

/* ---- the table ----------------------------------------------------------- */

#define TRY PKEY_TRY
#define K(s, k, rep, fn_, arg_) \
        { .section = s, .key = k, .repeat = INIKEY_##rep, .kind = INIKEY_CUSTOM, .fn = fn_, .arg = arg_ }
static const struct inikey keys[] = {
        K("sandbox", "namespaces", SET, k_namespaces, 0),
        K("sandbox", "share", APPEND, k_share, 0),
        K("sandbox", "hostname", ONCE, k_hostname, 0),
        K("sandbox", "uid", ONCE, k_id, 0),
        K("sandbox", "gid", ONCE, k_id, 1),
        K("sandbox", "die-with-parent", ONCE, k_bool, BOOL_DIE_WITH_PARENT),
        K("sandbox", "new-session", ONCE, k_bool, BOOL_NEW_SESSION),
        K("sandbox", "pty", ONCE, k_pty, 0),

        K("fs", "bind", APPEND, pkey_fs_bind, FS_BIND),
        K("fs", "bind-try", APPEND, pkey_fs_bind, FS_BIND | TRY),
        K("fs", "ro-bind", APPEND, pkey_fs_bind, FS_RO_BIND),
        K("fs", "ro-bind-try", APPEND, pkey_fs_bind, FS_RO_BIND | TRY),
        K("fs", "dev-bind", APPEND, pkey_fs_bind, FS_DEV_BIND),
        K("fs", "dev-bind-try", APPEND, pkey_fs_bind, FS_DEV_BIND | TRY),
        K("fs", "tmpfs", APPEND, pkey_fs_dest, FS_TMPFS),
        K("fs", "dir", APPEND, pkey_fs_dest, FS_DIR),
        K("fs", "symlink", APPEND, pkey_fs_symlink, FS_SYMLINK),
        K("fs", "file", APPEND, pkey_fs_dest, FS_FILE),
        K("fs", "proc", APPEND, pkey_fs_dest, FS_PROC),
        K("fs", "dev", APPEND, pkey_fs_dest, FS_DEV),
        K("fs", "mqueue", APPEND, pkey_fs_dest, FS_MQUEUE),
        K("fs", "remount-ro", APPEND, pkey_fs_dest, FS_REMOUNT_RO),
        K("fs", "chdir", APPEND, pkey_fs_dest, FS_CHDIR),

        K("env", "clear", ONCE, k_bool, BOOL_ENV_CLEAR),
        K("env", "set", APPEND, k_env_set, ENV_SET),
        K("env", "keep", APPEND, k_env_name, ENV_KEEP),
        K("env", "unset", APPEND, k_env_name, ENV_UNSET),

        K("net", "mode", ONCE, k_net_mode, 0),
        K("net", "tcp-bind", APPEND, k_ports, 0),
        K("net", "tcp-connect", APPEND, k_ports, 1),
        K("net", "audit", ONCE, k_bool, BOOL_NET_AUDIT),

        K("limits", "timeout", ONCE, k_limit, LIM_TIMEOUT),
        K("limits", "cpu", ONCE, k_limit, LIM_CPU),
        K("limits", "memory", ONCE, k_limit, LIM_MEMORY),
        K("limits", "data", ONCE, k_limit, LIM_DATA),
        K("limits", "file-size", ONCE, k_limit, LIM_FSIZE),
        K("limits", "stack", ONCE, k_limit, LIM_STACK),
        K("limits", "core", ONCE, k_limit, LIM_CORE),
        K("limits", "processes", ONCE, k_limit, LIM_NPROC),
        K("limits", "open-files", ONCE, k_limit, LIM_NOFILE),

        K("security", "seccomp", ONCE, pkey_seccomp, 0),
        K("security", "allow", APPEND, pkey_seccomp_rule, 1),
        K("security", "deny", APPEND, pkey_seccomp_rule, 0),
        K("security", "landlock", ONCE, pkey_landlock, 0),
        K("security", "capabilities", SET, pkey_caps, 0),
        K("security", "sys", ONCE, k_bool, BOOL_SYS),
};

static const struct inikey_table tables[] = { INIKEY_TABLE(keys) };
const struct inikey_format profile_format = {
        .tables = tables,
        .n_tables = ARRAY_SIZE(tables),
        .sections = "sandbox fs env net limits security",
        .words = true,
        .expand_vars = true,
};

static int apply(struct profile *p, const char *section, const char *key, const char *value, struct iniword *w,
                 size_t n, const char *origin, struct sbx_error *err) {
        int why = 0;
        const struct inikey *k = inikeys_find(&profile_format, section, key, &why);
        if (!k)
                return inikeys_unknown(&profile_format, section, key, why, origin, err);
        struct inikey_ctx c = {
                .def = k, .section = section, .value = value, .origin = origin, .obj = p, .user = p,
                .w = w, .n = n, .err = err,
        };
        return inikeys_apply(&profile_format, &c);
}

int profile_set(struct profile *p, const char *section, const char *key, const char *value, const char *origin,
                struct sbx_error *err) {
        return apply(p, section, key, value ? value : "", NULL, 0, origin, err);
}

int profile_set_words(struct profile *p, const char *section, const char *key, const char *const *words,
                      size_t n_words, const char *origin, struct sbx_error *err) {
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
                r = apply(p, section, key, raw.s ? raw.s : "", w.v, w.n, origin, err);
        free(raw.s);
        pwords_free(&w);
        return r;
}
