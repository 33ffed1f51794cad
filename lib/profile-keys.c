/* SPDX-License-Identifier: Apache-2.0 */
/* Every profile key: the value syntax (words, quotes, escapes, ${VAR}), the
 * key table and one handler per key. The loader and profile_set() both end
 * up here, so a CLI option is checked exactly like a line of a file. */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>

#include <cap-ng.h>
#include <seccomp.h>

#include "env-name.h"
#include "macro.h"
#include "parse.h"
#include "profile-internal.h"

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
        if (n == 0) {
                snprintf(errbuf, errlen, "empty variable name '${}'");
                return -EINVAL;
        }
        if (!env_name_valid(start, n)) {
                snprintf(errbuf, errlen, "bad variable name '${%.*s}'", (int) n, start);
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

int pvalue_split(const char *v, struct pwords *ret, char *errbuf, size_t errlen) {
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

/* ---- handler context and errors ---------------------------------------- */

struct keydef;

struct kctx {
        struct profile *p;
        const struct keydef *def;
        const char *origin;
        const char *raw;  /* the value as written, for messages */
        struct pword *w;
        size_t n;
        bool continuation;
        struct sbx_error *err;
};

struct keydef {
        const char *section;
        const char *key;
        enum key_kind kind;
        int (*fn)(struct kctx *c);
        int arg;
};

/* Values may hold control bytes or be 300 KiB long; quote a safe prefix. */
static void show_value(const char *raw, char *out, size_t outlen) {
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

_printf_(2, 3) static int kerr(const struct kctx *c, const char *fmt, ...) {
        char what[512], shown[80];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        show_value(c->raw ? c->raw : "", shown, sizeof(shown));
        return sbx_error_msg(c->err, EINVAL, "%s: %s.%s: %s (value '%s')", c->origin, c->def->section,
                             c->def->key, what, shown);
}

static int want_words(const struct kctx *c, size_t min, size_t max, const char *usage) {
        if (c->n < min || c->n > max)
                return kerr(c, "expected %s, got %zu word%s", usage, c->n, c->n == 1 ? "" : "s");
        return 0;
}

/* A word used as a C string must not hide a NUL byte (only data= may). */
static int word_cstr(const struct kctx *c, size_t i, const char *what) {
        if (strlen(c->w[i].s) != c->w[i].len)
                return kerr(c, "%s contains a NUL byte", what);
        return 0;
}

static int oom(const struct kctx *c) {
        return sbx_error_msg(c->err, ENOMEM, "%s: %s.%s: out of memory", c->origin, c->def->section, c->def->key);
}

/* Grow an array by one element, keeping it NULL-safe on failure. */
static void *grow(void *arr, size_t n, size_t elem) {
        return realloc(arr, (n + 1) * elem);
}

/* ---- [sandbox] --------------------------------------------------------- */

static int ns_lookup(const struct kctx *c, size_t i, unsigned *ret) {
        int r = word_cstr(c, i, "namespace");
        if (r < 0)
                return r;
        if (streq(c->w[i].s, "all")) {
                *ret = PROFILE_NS_ALL;
                return 0;
        }
        *ret = profile_ns_from_name(c->w[i].s);
        if (*ret)
                return 0;
        return kerr(c, "unknown namespace '%s' (known: user mount pid net ipc uts cgroup all)", c->w[i].s);
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
                return kerr(c, "expected namespace names to share with the host");
        for (size_t i = 0; i < c->n; i++) {
                unsigned bit;
                int r = ns_lookup(c, i, &bit);
                if (r < 0)
                        return r;
                if (bit == PROFILE_NS_ALL)
                        return kerr(c, "the user and mount namespaces are always new and cannot be shared");
                if (bit & (PROFILE_NS_USER | PROFILE_NS_MOUNT))
                        return kerr(c, "the %s namespace is always new and cannot be shared", c->w[i].s);
                c->p->namespaces &= ~bit;
        }
        ns_sync_net(c->p);
        return 0;
}

static int k_hostname(struct kctx *c) {
        int r = want_words(c, 1, 1, "one host name");
        if (r < 0 || (r = word_cstr(c, 0, "host name")) < 0)
                return r;
        const char *h = c->w[0].s;
        size_t n = strlen(h);
        if (n == 0 || n > 64)
                return kerr(c, "a host name has 1 to 64 characters");
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) h[i]) && h[i] != '-' && h[i] != '.')
                        return kerr(c, "a host name has only letters, digits, '-' and '.'");
        if (h[0] == '-' || h[0] == '.' || h[n - 1] == '-' || h[n - 1] == '.')
                return kerr(c, "a host name cannot start or end with '-' or '.'");
        char *d = strdup(h);
        if (!d)
                return oom(c);
        free(c->p->hostname);
        c->p->hostname = d;
        return 0;
}

static int k_id(struct kctx *c) {
        uint64_t v;
        int r = want_words(c, 1, 1, "one numeric id");
        if (r < 0)
                return r;
        r = parse_uint64(c->w[0].s, UINT32_MAX - 1, &v);
        if (r < 0 || strlen(c->w[0].s) != c->w[0].len)
                return kerr(c, r == -ERANGE ? "id out of range (0 to 4294967294)" : "not a number");
        if (c->def->arg == 0)
                c->p->uid = (uid_t) v;
        else
                c->p->gid = (gid_t) v;
        return 0;
}

static int get_bool(struct kctx *c, bool *ret) {
        int r = want_words(c, 1, 1, "yes or no");
        if (r < 0)
                return r;
        if (parse_bool(c->w[0].s, ret) < 0 || strlen(c->w[0].s) != c->w[0].len)
                return kerr(c, "expected a boolean: yes, no, true, false, on, off, 1 or 0");
        return 0;
}

enum {
        BOOL_DIE_WITH_PARENT,
        BOOL_NEW_SESSION,
        BOOL_ENV_CLEAR,
        BOOL_SYS,
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
        }
        return 0;
}

static int k_pty(struct kctx *c) {
        static const enum profile_pty modes[] = { PTY_AUTO, PTY_YES, PTY_NO };
        int r = want_words(c, 1, 1, "auto, yes or no");
        if (r < 0)
                return r;
        for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
                if (streq(c->w[0].s, pty_mode_name(modes[i]))) {
                        c->p->pty = modes[i];
                        return 0;
                }
        return kerr(c, "expected auto, yes or no");
}

/* ---- [fs] -------------------------------------------------------------- */

/* Paths inside the sandbox: absolute, "//" and "." collapsed, no "..", no
 * trailing '/'. Rejecting ".." (rather than resolving it) keeps the meaning
 * lexical: the launcher resolves the result under the new root. */
static int normalise_dest(const struct kctx *c, const char *what, const char *in, char **ret) {
        size_t n = strlen(in);
        if (n == 0)
                return kerr(c, "%s is empty", what);
        if (in[0] != '/')
                return kerr(c, "%s '%s' must be an absolute path", what, in);
        if (n >= PATH_MAX)
                return kerr(c, "%s is longer than %d bytes", what, PATH_MAX - 1);
        char *out = malloc(n + 2);
        if (!out)
                return oom(c);
        size_t j = 0;
        for (const char *s = in; *s;) {
                while (*s == '/')
                        s++;
                const char *e = s;
                while (*e && *e != '/')
                        e++;
                size_t len = (size_t) (e - s);
                if (len == 0)
                        break;
                if (len == 2 && s[0] == '.' && s[1] == '.') {
                        free(out);
                        return kerr(c, "%s '%s' must not contain '..'", what, in);
                }
                if (!(len == 1 && s[0] == '.')) {
                        out[j++] = '/';
                        memcpy(out + j, s, len);
                        j += len;
                }
                s = e;
        }
        if (j == 0)
                out[j++] = '/';
        out[j] = '\0';
        *ret = out;
        return 0;
}

static int host_path(const struct kctx *c, const char *what, const char *in, char **ret) {
        if (!*in)
                return kerr(c, "%s is empty", what);
        if (in[0] != '/')
                return kerr(c, "%s '%s' must be an absolute path", what, in);
        if (strlen(in) >= PATH_MAX)
                return kerr(c, "%s is longer than %d bytes", what, PATH_MAX - 1);
        *ret = strdup(in);
        return *ret ? 0 : oom(c);
}

static void fs_op_clear(struct fs_op *op) {
        free(op->src);
        free(op->dest);
        free(op->data);
        free(op->origin);
}

static int fs_push(struct kctx *c, struct fs_op *op) {
        struct profile *p = c->p;
        if (p->n_fs >= PROFILE_MAX_FS_OPS) {
                fs_op_clear(op);
                return kerr(c, "too many [fs] operations (at most %d)", PROFILE_MAX_FS_OPS);
        }
        op->origin = strdup(c->origin);
        struct fs_op *t = grow(p->fs, p->n_fs, sizeof(*t));
        if (!op->origin || !t) {
                if (t)
                        p->fs = t;
                fs_op_clear(op);
                return oom(c);
        }
        p->fs = t;
        p->fs[p->n_fs++] = *op;
        return 0;
}

static struct fs_op fs_op_new(enum fs_op_type type) {
        return (struct fs_op) {
                .type = type,
                .size = PROFILE_UNSET,
                .nr_inodes = PROFILE_UNSET,
                .fd = -1,
        };
}

static int k_fs_bind(struct kctx *c) {
        struct fs_op op = fs_op_new((enum fs_op_type) (c->def->arg & 0xff));
        int r = want_words(c, 2, 2, "SOURCE DEST");
        if (r < 0 || (r = word_cstr(c, 0, "source")) < 0 || (r = word_cstr(c, 1, "destination")) < 0)
                return r;
        op.try_ = c->def->arg & 0x100;
        r = host_path(c, "source", c->w[0].s, &op.src);
        if (r >= 0)
                r = normalise_dest(c, "destination", c->w[1].s, &op.dest);
        if (r < 0) {
                fs_op_clear(&op);
                return r;
        }
        return fs_push(c, &op);
}

/* DEST [opt=value]...: the options each kind of operation accepts. */
enum { OPT_SIZE = 1, OPT_MODE = 2, OPT_INODES = 4, OPT_FD = 8, OPT_DATA = 16 };

static int fs_options(struct kctx *c, struct fs_op *op, unsigned allowed, const char *usage) {
        unsigned seen = 0;
        for (size_t i = 1; i < c->n; i++) {
                const char *w = c->w[i].s, *eq = memchr(w, '=', c->w[i].len);
                size_t klen = eq ? (size_t) (eq - w) : 0;
                unsigned which = 0;
                static const struct {
                        const char *name;
                        unsigned bit;
                } opts[] = { { "size", OPT_SIZE }, { "mode", OPT_MODE }, { "nr_inodes", OPT_INODES },
                             { "fd", OPT_FD },     { "data", OPT_DATA } };
                for (size_t k = 0; eq && k < ARRAY_SIZE(opts); k++)
                        if (strlen(opts[k].name) == klen && memcmp(opts[k].name, w, klen) == 0)
                                which = opts[k].bit;
                if (!(which & allowed)) {
                        char shown[48];
                        show_value(w, shown, sizeof(shown));
                        return kerr(c, "unknown option '%s' (expected %s)", shown, usage);
                }
                if (seen & which)
                        return kerr(c, "option '%.*s=' given twice", (int) klen, w);
                seen |= which;
                const char *val = eq + 1;
                size_t vlen = c->w[i].len - klen - 1;
                if (which != OPT_DATA && strlen(val) != vlen)
                        return kerr(c, "option '%.*s=' contains a NUL byte", (int) klen, w);
                uint64_t u;
                int r;
                switch (which) {
                case OPT_SIZE:
                        if (streq(val, "unlimited") || (r = parse_size(val, &u)) < 0 || u == 0 || u >= PROFILE_UNLIMITED)
                                return kerr(c, "size= wants a size greater than 0 such as 64M, not '%s'", val);
                        op->size = u;
                        break;
                case OPT_INODES:
                        if ((r = parse_uint64(val, PROFILE_UNLIMITED - 1, &u)) < 0 || u == 0)
                                return kerr(c, "nr_inodes= wants a count greater than 0, not '%s'", val);
                        op->nr_inodes = u;
                        break;
                case OPT_MODE: {
                        mode_t m;
                        if (parse_mode(val, &m) < 0)
                                return kerr(c, "mode= wants an octal mode up to 07777, not '%s'", val);
                        op->mode = m;
                        op->mode_set = true;
                        break;
                }
                case OPT_FD:
                        if ((r = parse_uint64(val, INT_MAX, &u)) < 0)
                                return kerr(c, "fd= wants a file descriptor number, not '%s'", val);
                        op->fd = (int) u;
                        break;
                case OPT_DATA:
                        if (vlen > PROFILE_MAX_FILE_DATA)
                                return kerr(c, "data= is longer than %d bytes (pass larger files with fd=)",
                                            PROFILE_MAX_FILE_DATA);
                        op->data = malloc(vlen + 1);
                        if (!op->data)
                                return oom(c);
                        memcpy(op->data, val, vlen);
                        op->data[vlen] = '\0';
                        op->data_len = vlen;
                        break;
                }
        }
        if (op->type == FS_FILE && !(seen & (OPT_FD | OPT_DATA)))
                return kerr(c, "file needs fd=N or data=TEXT");
        if ((seen & OPT_FD) && (seen & OPT_DATA))
                return kerr(c, "file takes fd= or data=, not both");
        return 0;
}

static int k_fs_dest(struct kctx *c) {
        struct fs_op op = fs_op_new((enum fs_op_type) c->def->arg);
        static const struct {
                enum fs_op_type type;
                unsigned opts;
                const char *usage;
        } shapes[] = {
                { FS_TMPFS, OPT_SIZE | OPT_MODE | OPT_INODES, "DEST [size=SIZE] [mode=OCTAL] [nr_inodes=N]" },
                { FS_DIR, OPT_MODE, "DEST [mode=OCTAL]" },
                { FS_FILE, OPT_FD | OPT_DATA | OPT_MODE, "DEST fd=N|data=TEXT [mode=OCTAL]" },
                { FS_PROC, 0, "DEST" }, { FS_DEV, 0, "DEST" }, { FS_MQUEUE, 0, "DEST" },
                { FS_REMOUNT_RO, 0, "DEST" }, { FS_CHDIR, 0, "DEST" },
        };
        unsigned opts = 0;
        const char *usage = "DEST";
        for (size_t i = 0; i < ARRAY_SIZE(shapes); i++)
                if (shapes[i].type == op.type) {
                        opts = shapes[i].opts;
                        usage = shapes[i].usage;
                }
        int r = want_words(c, 1, opts ? 1 + 3 : 1, usage);
        if (r < 0 || (r = word_cstr(c, 0, "destination")) < 0)
                return r;
        r = normalise_dest(c, op.type == FS_CHDIR ? "directory" : "destination", c->w[0].s, &op.dest);
        if (r >= 0)
                r = fs_options(c, &op, opts, usage);
        if (r < 0) {
                fs_op_clear(&op);
                return r;
        }
        return fs_push(c, &op);
}

static int k_fs_symlink(struct kctx *c) {
        struct fs_op op = fs_op_new(FS_SYMLINK);
        int r = want_words(c, 2, 2, "TARGET LINKPATH");
        if (r < 0 || (r = word_cstr(c, 0, "target")) < 0 || (r = word_cstr(c, 1, "link path")) < 0)
                return r;
        if (c->w[0].len == 0)
                return kerr(c, "symlink target is empty");
        if (c->w[0].len >= PATH_MAX)
                return kerr(c, "symlink target is longer than %d bytes", PATH_MAX - 1);
        op.src = strdup(c->w[0].s);
        if (!op.src)
                return oom(c);
        r = normalise_dest(c, "link path", c->w[1].s, &op.dest);
        if (r < 0) {
                fs_op_clear(&op);
                return r;
        }
        return fs_push(c, &op);
}

/* ---- [env] ------------------------------------------------------------- */

static int env_push(struct kctx *c, enum env_op_type type, const char *name, size_t nlen, const char *value) {
        struct profile *p = c->p;
        if (p->n_env >= PROFILE_MAX_ENV_OPS)
                return kerr(c, "too many [env] operations (at most %d)", PROFILE_MAX_ENV_OPS);
        struct env_op op = { .type = type };
        op.name = strndup(name, nlen);
        op.value = value ? strdup(value) : NULL;
        op.origin = strdup(c->origin);
        struct env_op *t = grow(p->env, p->n_env, sizeof(*t));
        if (t)
                p->env = t;
        if (!op.name || (value && !op.value) || !op.origin || !t) {
                free(op.name);
                free(op.value);
                free(op.origin);
                return oom(c);
        }
        p->env[p->n_env++] = op;
        return 0;
}

static int k_env_set(struct kctx *c) {
        if (c->n == 0)
                return kerr(c, "expected NAME=VALUE");
        for (size_t i = 0; i < c->n; i++) {
                int r = word_cstr(c, i, "NAME=VALUE");
                if (r < 0)
                        return r;
                const char *eq = strchr(c->w[i].s, '=');
                if (!eq)
                        return kerr(c, "expected NAME=VALUE (quote values with spaces: NAME=\"a b\")");
                size_t nlen = (size_t) (eq - c->w[i].s);
                if (!env_name_valid(c->w[i].s, nlen))
                        return kerr(c, "bad variable name '%.*s' (letters, digits and '_', not starting with a digit)",
                                    (int) (nlen > 64 ? 64 : nlen), c->w[i].s);
                r = env_push(c, ENV_SET, c->w[i].s, nlen, eq + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int k_env_name(struct kctx *c) {
        if (c->n == 0)
                return kerr(c, "expected one or more variable names");
        for (size_t i = 0; i < c->n; i++) {
                int r = word_cstr(c, i, "variable name");
                if (r < 0)
                        return r;
                if (!env_name_valid(c->w[i].s, c->w[i].len))
                        return kerr(c, "bad variable name '%.64s' (letters, digits and '_', not starting with a digit)",
                                    c->w[i].s);
                r = env_push(c, (enum env_op_type) c->def->arg, c->w[i].s, c->w[i].len, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- [net] ------------------------------------------------------------- */

static int k_net_mode(struct kctx *c) {
        int r = want_words(c, 1, 1, "none or host");
        if (r < 0)
                return r;
        if (streq(c->w[0].s, "none"))
                c->p->net = NET_NONE;
        else if (streq(c->w[0].s, "host"))
                c->p->net = NET_HOST;
        else
                return kerr(c, "expected none or host");
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
                return kerr(c, "expected port numbers, or none");
        if (c->n == 1 && streq(c->w[0].s, "none")) {
                p->ports_set = true;
                return 0;
        }
        for (size_t i = 0; i < c->n; i++) {
                uint64_t v;
                if (parse_uint64(c->w[i].s, 65535, &v) < 0 || v == 0 || strlen(c->w[i].s) != c->w[i].len)
                        return kerr(c, "'%.32s' is not a TCP port (1 to 65535)", c->w[i].s);
                if (*n >= PROFILE_MAX_PORTS)
                        return kerr(c, "too many ports (at most %d)", PROFILE_MAX_PORTS);
                uint16_t *t = grow(*arr, *n, sizeof(*t));
                if (!t)
                        return oom(c);
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
        case LIM_MEMORY: return &l->memory;
        case LIM_DATA: return &l->data;
        case LIM_FSIZE: return &l->file_size;
        case LIM_STACK: return &l->stack;
        case LIM_CORE: return &l->core;
        case LIM_NPROC: return &l->processes;
        default: return &l->open_files;
        }
}

static int k_limit(struct kctx *c) {
        int which = c->def->arg;
        uint64_t *f = limit_field(&c->p->limits, which), v;
        int r = want_words(c, 1, 1, "one value");
        if (r < 0 || (r = word_cstr(c, 0, "value")) < 0)
                return r;
        const char *s = c->w[0].s;

        if (which == LIM_TIMEOUT) {
                if (streq(s, "none")) {
                        *f = PROFILE_UNSET;
                        return 0;
                }
                r = parse_duration_ms(s, &v);
                if (r < 0 || v >= PROFILE_UNLIMITED)
                        return kerr(c, "expected a duration such as 30s, 5m, 1500ms, or none");
                if (v == 0)
                        return kerr(c, "a timeout must be longer than 0 (write none for no timeout)");
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
                        return kerr(c, "expected a duration such as 10s or 2m, or unlimited");
                /* RLIMIT_CPU counts whole seconds. */
                if (v % 1000 != 0 || v == 0)
                        return kerr(c, "cpu time is counted in whole seconds (at least 1s)");
                *f = v / 1000;
                return 0;
        case LIM_NPROC:
        case LIM_NOFILE:
                r = parse_uint64(s, PROFILE_UNLIMITED - 1, &v);
                if (r < 0)
                        return kerr(c, r == -ERANGE ? "count too large" : "expected a count, or unlimited");
                *f = v;
                return 0;
        default:
                r = parse_size(s, &v);
                if (r < 0 || v >= PROFILE_UNLIMITED)
                        return kerr(c, r == -EINVAL ? "expected a size such as 512M or 2G, or unlimited"
                                                    : "size too large");
                *f = v;
                return 0;
        }
}

/* ---- [security] -------------------------------------------------------- */

static int k_seccomp(struct kctx *c) {
        int r = want_words(c, 1, 1, "default, strict or none");
        if (r < 0)
                return r;
        if (streq(c->w[0].s, "default"))
                c->p->seccomp = SECCOMP_DEFAULT;
        else if (streq(c->w[0].s, "strict"))
                c->p->seccomp = SECCOMP_STRICT;
        else if (streq(c->w[0].s, "none"))
                c->p->seccomp = SECCOMP_NONE;
        else
                return kerr(c, "expected default, strict or none");
        return 0;
}

static int k_landlock(struct kctx *c) {
        int r = want_words(c, 1, 1, "off, best-effort or required");
        if (r < 0)
                return r;
        if (streq(c->w[0].s, "off"))
                c->p->landlock = LANDLOCK_OFF;
        else if (streq(c->w[0].s, "best-effort"))
                c->p->landlock = LANDLOCK_BEST_EFFORT;
        else if (streq(c->w[0].s, "required"))
                c->p->landlock = LANDLOCK_REQUIRED;
        else
                return kerr(c, "expected off, best-effort or required");
        return 0;
}

static const struct {
        const char *name;
        int num;
} errno_names[] = {
        { "EPERM", EPERM }, { "ENOENT", ENOENT }, { "ESRCH", ESRCH }, { "EINTR", EINTR },
        { "EIO", EIO }, { "ENXIO", ENXIO }, { "E2BIG", E2BIG }, { "ENOEXEC", ENOEXEC },
        { "EBADF", EBADF }, { "ECHILD", ECHILD }, { "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM },
        { "EACCES", EACCES }, { "EFAULT", EFAULT }, { "EBUSY", EBUSY }, { "EEXIST", EEXIST },
        { "EXDEV", EXDEV }, { "ENODEV", ENODEV }, { "ENOTDIR", ENOTDIR }, { "EISDIR", EISDIR },
        { "EINVAL", EINVAL }, { "ENFILE", ENFILE }, { "EMFILE", EMFILE }, { "ENOTTY", ENOTTY },
        { "ETXTBSY", ETXTBSY }, { "EFBIG", EFBIG }, { "ENOSPC", ENOSPC }, { "ESPIPE", ESPIPE },
        { "EROFS", EROFS }, { "EMLINK", EMLINK }, { "EPIPE", EPIPE }, { "EDOM", EDOM },
        { "ERANGE", ERANGE }, { "EDEADLK", EDEADLK }, { "ENAMETOOLONG", ENAMETOOLONG },
        { "ENOLCK", ENOLCK }, { "ENOSYS", ENOSYS }, { "ENOTEMPTY", ENOTEMPTY }, { "ELOOP", ELOOP },
        { "ENOMSG", ENOMSG }, { "ENODATA", ENODATA }, { "ETIME", ETIME }, { "EOVERFLOW", EOVERFLOW },
        { "EILSEQ", EILSEQ }, { "ENOTSOCK", ENOTSOCK }, { "EMSGSIZE", EMSGSIZE },
        { "EPROTOTYPE", EPROTOTYPE }, { "ENOPROTOOPT", ENOPROTOOPT },
        { "EPROTONOSUPPORT", EPROTONOSUPPORT }, { "EOPNOTSUPP", EOPNOTSUPP }, { "ENOTSUP", ENOTSUP },
        { "EAFNOSUPPORT", EAFNOSUPPORT }, { "EADDRINUSE", EADDRINUSE },
        { "EADDRNOTAVAIL", EADDRNOTAVAIL }, { "ENETDOWN", ENETDOWN }, { "ENETUNREACH", ENETUNREACH },
        { "ECONNABORTED", ECONNABORTED }, { "ECONNRESET", ECONNRESET }, { "ENOBUFS", ENOBUFS },
        { "EISCONN", EISCONN }, { "ENOTCONN", ENOTCONN }, { "ETIMEDOUT", ETIMEDOUT },
        { "ECONNREFUSED", ECONNREFUSED }, { "EHOSTUNREACH", EHOSTUNREACH }, { "EALREADY", EALREADY },
        { "EINPROGRESS", EINPROGRESS }, { "ECANCELED", ECANCELED }, { "EKEYREJECTED", EKEYREJECTED },
        { "EOWNERDEAD", EOWNERDEAD }, { "EDQUOT", EDQUOT },
};

const char *profile_errno_name(int errnum) {
        for (size_t i = 0; i < ARRAY_SIZE(errno_names); i++)
                if (errno_names[i].num == errnum)
                        return errno_names[i].name;
        return NULL;
}

static int seccomp_push(struct kctx *c, bool allow, const char *name, size_t nlen, int errnum) {
        struct profile *p = c->p;
        char sys[64];

        if (nlen == 0 || nlen >= sizeof(sys))
                return kerr(c, "expected a syscall name");
        memcpy(sys, name, nlen);
        sys[nlen] = '\0';
        int nr = seccomp_syscall_resolve_name(sys);
        if (nr == __NR_SCMP_ERROR)
                return kerr(c, "unknown syscall '%s'", sys);
        /* Negative numbers are libseccomp's pseudo-syscalls: names that exist
         * on some architecture but not on the one we filter. */
        if (nr < 0)
                return kerr(c, "syscall '%s' does not exist on this architecture", sys);
        if (p->n_seccomp_rules >= PROFILE_MAX_SECCOMP_RULES)
                return kerr(c, "too many seccomp rules (at most %d)", PROFILE_MAX_SECCOMP_RULES);
        struct seccomp_rule rule = { .allow = allow, .nr = nr, .errnum = errnum };
        rule.name = strdup(sys);
        rule.origin = strdup(c->origin);
        struct seccomp_rule *t = grow(p->seccomp_rules, p->n_seccomp_rules, sizeof(*t));
        if (t)
                p->seccomp_rules = t;
        if (!rule.name || !rule.origin || !t) {
                free(rule.name);
                free(rule.origin);
                return oom(c);
        }
        p->seccomp_rules[p->n_seccomp_rules++] = rule;
        return 0;
}

static int k_seccomp_rule(struct kctx *c) {
        bool allow = c->def->arg;
        if (c->n == 0)
                return kerr(c, allow ? "expected syscall names" : "expected syscall names, each with an optional :ERRNO");
        for (size_t i = 0; i < c->n; i++) {
                int r = word_cstr(c, i, "syscall");
                if (r < 0)
                        return r;
                const char *w = c->w[i].s, *colon = strchr(w, ':');
                int errnum = EPERM;
                if (colon && allow)
                        return kerr(c, "allow takes syscall names without :ERRNO");
                if (colon) {
                        const char *e = colon + 1;
                        uint64_t v;
                        errnum = 0;
                        for (size_t k = 0; k < ARRAY_SIZE(errno_names); k++)
                                if (strcasecmp(e, errno_names[k].name) == 0)
                                        errnum = errno_names[k].num;
                        if (!errnum) {
                                if (parse_uint64(e, 4095, &v) < 0 || v == 0)
                                        return kerr(c, "'%.32s' is not an errno name (like EPERM) or number (1 to 4095)", e);
                                errnum = (int) v;
                        }
                }
                r = seccomp_push(c, allow, w, colon ? (size_t) (colon - w) : strlen(w), errnum);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int k_caps(struct kctx *c) {
        struct profile *p = c->p;
        if (!c->continuation)
                p->n_caps = 0;
        if (c->n == 1 && streq(c->w[0].s, "none") && !c->continuation)
                return 0;
        if (c->n == 0 && !c->continuation)
                return kerr(c, "expected none or capability names such as CAP_NET_BIND_SERVICE");
        for (size_t i = 0; i < c->n; i++) {
                int r = word_cstr(c, i, "capability");
                if (r < 0)
                        return r;
                const char *w = c->w[i].s, *name = w;
                if (strncasecmp(name, "cap_", 4) == 0)
                        name += 4;
                int cap = *name ? capng_name_to_capability(name) : -1;
                if (cap < 0)
                        return kerr(c, "unknown capability '%.40s' (or none)", w);
                bool dup = false;
                for (size_t k = 0; k < p->n_caps; k++)
                        dup |= p->caps[k] == cap;
                if (dup)
                        continue;
                if (p->n_caps >= PROFILE_MAX_CAPS)
                        return kerr(c, "too many capabilities (at most %d)", PROFILE_MAX_CAPS);
                int *t = grow(p->caps, p->n_caps, sizeof(*t));
                if (!t)
                        return oom(c);
                p->caps = t;
                p->caps[p->n_caps++] = cap;
        }
        return 0;
}

/* ---- the table ----------------------------------------------------------- */

#define TRY 0x100
static const struct keydef keys[] = {
        { "sandbox", "namespaces", KEY_SET, k_namespaces, 0 },
        { "sandbox", "share", KEY_LIST, k_share, 0 },
        { "sandbox", "hostname", KEY_SCALAR, k_hostname, 0 },
        { "sandbox", "uid", KEY_SCALAR, k_id, 0 },
        { "sandbox", "gid", KEY_SCALAR, k_id, 1 },
        { "sandbox", "die-with-parent", KEY_SCALAR, k_bool, BOOL_DIE_WITH_PARENT },
        { "sandbox", "new-session", KEY_SCALAR, k_bool, BOOL_NEW_SESSION },
        { "sandbox", "pty", KEY_SCALAR, k_pty, 0 },

        { "fs", "bind", KEY_LIST, k_fs_bind, FS_BIND },
        { "fs", "bind-try", KEY_LIST, k_fs_bind, FS_BIND | TRY },
        { "fs", "ro-bind", KEY_LIST, k_fs_bind, FS_RO_BIND },
        { "fs", "ro-bind-try", KEY_LIST, k_fs_bind, FS_RO_BIND | TRY },
        { "fs", "dev-bind", KEY_LIST, k_fs_bind, FS_DEV_BIND },
        { "fs", "dev-bind-try", KEY_LIST, k_fs_bind, FS_DEV_BIND | TRY },
        { "fs", "tmpfs", KEY_LIST, k_fs_dest, FS_TMPFS },
        { "fs", "dir", KEY_LIST, k_fs_dest, FS_DIR },
        { "fs", "symlink", KEY_LIST, k_fs_symlink, FS_SYMLINK },
        { "fs", "file", KEY_LIST, k_fs_dest, FS_FILE },
        { "fs", "proc", KEY_LIST, k_fs_dest, FS_PROC },
        { "fs", "dev", KEY_LIST, k_fs_dest, FS_DEV },
        { "fs", "mqueue", KEY_LIST, k_fs_dest, FS_MQUEUE },
        { "fs", "remount-ro", KEY_LIST, k_fs_dest, FS_REMOUNT_RO },
        { "fs", "chdir", KEY_LIST, k_fs_dest, FS_CHDIR },

        { "env", "clear", KEY_SCALAR, k_bool, BOOL_ENV_CLEAR },
        { "env", "set", KEY_LIST, k_env_set, ENV_SET },
        { "env", "keep", KEY_LIST, k_env_name, ENV_KEEP },
        { "env", "unset", KEY_LIST, k_env_name, ENV_UNSET },

        { "net", "mode", KEY_SCALAR, k_net_mode, 0 },
        { "net", "tcp-bind", KEY_LIST, k_ports, 0 },
        { "net", "tcp-connect", KEY_LIST, k_ports, 1 },

        { "limits", "timeout", KEY_SCALAR, k_limit, LIM_TIMEOUT },
        { "limits", "cpu", KEY_SCALAR, k_limit, LIM_CPU },
        { "limits", "memory", KEY_SCALAR, k_limit, LIM_MEMORY },
        { "limits", "data", KEY_SCALAR, k_limit, LIM_DATA },
        { "limits", "file-size", KEY_SCALAR, k_limit, LIM_FSIZE },
        { "limits", "stack", KEY_SCALAR, k_limit, LIM_STACK },
        { "limits", "core", KEY_SCALAR, k_limit, LIM_CORE },
        { "limits", "processes", KEY_SCALAR, k_limit, LIM_NPROC },
        { "limits", "open-files", KEY_SCALAR, k_limit, LIM_NOFILE },

        { "security", "seccomp", KEY_SCALAR, k_seccomp, 0 },
        { "security", "allow", KEY_LIST, k_seccomp_rule, 1 },
        { "security", "deny", KEY_LIST, k_seccomp_rule, 0 },
        { "security", "landlock", KEY_SCALAR, k_landlock, 0 },
        { "security", "capabilities", KEY_SET, k_caps, 0 },
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
        char why[256];
        int r = pvalue_split(value, &w, why, sizeof(why));
        if (r < 0) {
                struct kctx c = { .p = p, .def = &keys[idx], .origin = origin, .raw = value, .err = err };
                return r == -ENOMEM ? oom(&c) : kerr(&c, "%s", why);
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
        struct buf raw = { 0 };
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
                if ((i && buf_put(&raw, " ", 1) < 0) || buf_put(&raw, words[i], strlen(words[i])) < 0)
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
