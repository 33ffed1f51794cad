/* SPDX-License-Identifier: Apache-2.0 */
/* The [fs] keys: ordered mount operations, their paths and options. */
#include <limits.h>
#include <string.h>

#include "parse.h"
#include "profile-keys.h"

/* Paths inside the sandbox: absolute, "//" and "." collapsed, no "..", no
 * trailing '/'. Rejecting ".." (rather than resolving it) keeps the meaning
 * lexical: the launcher resolves the result under the new root. */
static int normalise_dest(const struct inikey_ctx *c, const char *what, const char *in, char **ret) {
        size_t n = strlen(in);
        if (n == 0)
                return inikey_fail(c, "%s is empty", what);
        if (in[0] != '/')
                return inikey_fail(c, "%s '%s' must be an absolute path", what, in);
        if (n >= PATH_MAX)
                return inikey_fail(c, "%s is longer than %d bytes", what, PATH_MAX - 1);
        char *out = malloc(n + 2);
        if (!out)
                return inikey_oom(c);
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
                        return inikey_fail(c, "%s '%s' must not contain '..'", what, in);
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

static int host_path(const struct inikey_ctx *c, const char *what, const char *in, char **ret) {
        if (!*in)
                return inikey_fail(c, "%s is empty", what);
        if (in[0] != '/')
                return inikey_fail(c, "%s '%s' must be an absolute path", what, in);
        if (strlen(in) >= PATH_MAX)
                return inikey_fail(c, "%s is longer than %d bytes", what, PATH_MAX - 1);
        *ret = strdup(in);
        return *ret ? 0 : inikey_oom(c);
}

static void fs_op_clear(struct fs_op *op) {
        free(op->src);
        free(op->dest);
        free(op->data);
        free(op->origin);
}

static int fs_push(struct inikey_ctx *c, struct fs_op *op) {
        struct profile *p = kp(c);
        if (p->n_fs >= PROFILE_MAX_FS_OPS) {
                fs_op_clear(op);
                return inikey_fail(c, "too many [fs] operations (at most %d)", PROFILE_MAX_FS_OPS);
        }
        op->origin = strdup(c->origin);
        struct fs_op *t = pkey_grow(p->fs, p->n_fs, sizeof(*t));
        if (!op->origin || !t) {
                if (t)
                        p->fs = t;
                fs_op_clear(op);
                return inikey_oom(c);
        }
        p->fs = t;
        p->fs[p->n_fs++] = *op;
        return 0;
}

static struct fs_op fs_op_new(enum fs_op_type type) {
        return (struct fs_op) {
                .type = type,
                .size_bytes = PROFILE_UNSET,
                .nr_inodes = PROFILE_UNSET,
                .fd = -1,
        };
}

/* fd:N: an inherited descriptor of a detached mount tree, which the
 * launcher moves into place. A supervisor hands a job a tree the job's
 * uid could not reach by its path on the host. */
static int fd_source(const struct inikey_ctx *c, const char *in, struct fs_op *op) {
        uint64_t u;
        if (parse_uint64(in + strlen(PROFILE_FD_SOURCE), INT_MAX, &u) < 0 || u < 3)
                return inikey_fail(c, "source '%s': fd: wants a descriptor number of 3 or more", in);
        if (op->try_)
                return inikey_fail(c, "source '%s': a descriptor is not tried (the -try forms take host paths)", in);
        op->fd = (int) u;
        op->src = strdup(in);
        return op->src ? 0 : inikey_oom(c);
}

int pkey_fs_bind(struct inikey_ctx *c) {
        struct fs_op op = fs_op_new((enum fs_op_type) (c->def->arg & ~PKEY_TRY));
        int r = pkey_want_words(c, 2, 2, "SOURCE DEST");
        if (r < 0 || (r = pkey_word_cstr(c, 0, "source")) < 0 || (r = pkey_word_cstr(c, 1, "destination")) < 0)
                return r;
        op.try_ = c->def->arg & PKEY_TRY;
        if (strncmp(c->w[0].s, PROFILE_FD_SOURCE, strlen(PROFILE_FD_SOURCE)) == 0)
                r = fd_source(c, c->w[0].s, &op);
        else
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

static int fs_options(struct inikey_ctx *c, struct fs_op *op, unsigned allowed, const char *usage) {
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
                        inikey_show_value(w, shown, sizeof(shown));
                        return inikey_fail(c, "unknown option '%s' (expected %s)", shown, usage);
                }
                if (seen & which)
                        return inikey_fail(c, "option '%.*s=' given twice", (int) klen, w);
                seen |= which;
                const char *val = eq + 1;
                size_t vlen = c->w[i].len - klen - 1;
                if (which != OPT_DATA && strlen(val) != vlen)
                        return inikey_fail(c, "option '%.*s=' contains a NUL byte", (int) klen, w);
                uint64_t u;
                int r;
                switch (which) {
                case OPT_SIZE:
                        if (streq(val, "unlimited") || (r = parse_size(val, &u)) < 0 || u == 0 || u >= PROFILE_UNLIMITED)
                                return inikey_fail(c, "size= wants a size greater than 0 such as 64M, not '%s'", val);
                        op->size_bytes = u;
                        break;
                case OPT_INODES:
                        if ((r = parse_uint64(val, PROFILE_UNLIMITED - 1, &u)) < 0 || u == 0)
                                return inikey_fail(c, "nr_inodes= wants a count greater than 0, not '%s'", val);
                        op->nr_inodes = u;
                        break;
                case OPT_MODE: {
                        mode_t m;
                        if (parse_mode(val, &m) < 0)
                                return inikey_fail(c, "mode= wants an octal mode up to 07777, not '%s'", val);
                        op->mode = m;
                        op->mode_set = true;
                        break;
                }
                case OPT_FD:
                        if ((r = parse_uint64(val, INT_MAX, &u)) < 0)
                                return inikey_fail(c, "fd= wants a file descriptor number, not '%s'", val);
                        op->fd = (int) u;
                        break;
                case OPT_DATA:
                        if (vlen > PROFILE_MAX_FILE_DATA)
                                return inikey_fail(c, "data= is longer than %d bytes (pass larger files with fd=)",
                                            PROFILE_MAX_FILE_DATA);
                        op->data = malloc(vlen + 1);
                        if (!op->data)
                                return inikey_oom(c);
                        memcpy(op->data, val, vlen);
                        op->data[vlen] = '\0';
                        op->data_len = vlen;
                        break;
                }
        }
        if (op->type == FS_FILE && !(seen & (OPT_FD | OPT_DATA)))
                return inikey_fail(c, "file needs fd=N or data=TEXT");
        if ((seen & OPT_FD) && (seen & OPT_DATA))
                return inikey_fail(c, "file takes fd= or data=, not both");
        return 0;
}

int pkey_fs_dest(struct inikey_ctx *c) {
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
        int r = pkey_want_words(c, 1, opts ? 1 + 3 : 1, usage);
        if (r < 0 || (r = pkey_word_cstr(c, 0, "destination")) < 0)
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

int pkey_fs_symlink(struct inikey_ctx *c) {
        struct fs_op op = fs_op_new(FS_SYMLINK);
        int r = pkey_want_words(c, 2, 2, "TARGET LINKPATH");
        if (r < 0 || (r = pkey_word_cstr(c, 0, "target")) < 0 || (r = pkey_word_cstr(c, 1, "link path")) < 0)
                return r;
        if (c->w[0].len == 0)
                return inikey_fail(c, "symlink target is empty");
        if (c->w[0].len >= PATH_MAX)
                return inikey_fail(c, "symlink target is longer than %d bytes", PATH_MAX - 1);
        op.src = strdup(c->w[0].s);
        if (!op.src)
                return inikey_oom(c);
        r = normalise_dest(c, "link path", c->w[1].s, &op.dest);
        if (r < 0) {
                fs_op_clear(&op);
                return r;
        }
        return fs_push(c, &op);
}
