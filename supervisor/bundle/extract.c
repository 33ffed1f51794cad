/* SPDX-License-Identifier: Apache-2.0 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "extract.h"
#include "macro.h"

#define COMPONENT_MAX 255
#define CHUNK (64 * 1024)

struct xstate {
        struct archive *a;
        int dest;
        const struct extract_limits *lim;
        const atomic_bool *stop;
        struct extract_stats *st;
        struct sbx_error *err;
        char shown[128];      /* the entry being unpacked, printable */
        char **dirs;          /* directories made, to be made read-only at the end */
        size_t n_dirs, cap_dirs;
        char **links;         /* symbolic links, checked again once all are there */
        size_t n_links, cap_links;
        char *buf;
};

/* An entry's name for messages: printable ASCII, bounded. */
static void show(struct xstate *x, const char *name) {
        size_t j = 0;
        for (const char *p = name ? name : "(none)"; *p && j + 4 < sizeof(x->shown); p++)
                x->shown[j++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
        if (name && strlen(name) > j)
                memcpy(x->shown + j, "...", 4);
        else
                x->shown[j] = '\0';
}

_printf_(3, 4) static int refuse(struct xstate *x, int errnum, const char *fmt, ...) {
        char why[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
        return sbx_error_msg(x->err, errnum, "entry '%s': %s", x->shown, why);
}

static int push(char ***v, size_t *n, size_t *cap, const char *s) {
        if (*n == *cap) {
                size_t c = *cap ? *cap * 2 : 64;
                char **t = realloc(*v, c * sizeof(char *));
                if (!t)
                        return -ENOMEM;
                *v = t;
                *cap = c;
        }
        if (!((*v)[*n] = strdup(s)))
                return -ENOMEM;
        (*n)++;
        return 0;
}

/* The entry's path made relative and canonical ("./a//b/" is "a/b"), or
 * a refusal. "" is the tree itself. */
static int norm_path(struct xstate *x, const char *in, const char *what, char *out) {
        size_t j = 0;
        if (!in)
                return refuse(x, EINVAL, "%s without a name", what);
        if (in[0] == '/')
                return refuse(x, EINVAL, "%s is an absolute path", what);
        for (const char *s = in; *s;) {
                while (*s == '/')
                        s++;
                size_t n = strcspn(s, "/");
                if (n == 0)
                        break;
                if (n == 2 && s[0] == '.' && s[1] == '.')
                        return refuse(x, EINVAL, "%s contains '..'", what);
                if (n > COMPONENT_MAX)
                        return refuse(x, EINVAL, "%s has a component longer than %d bytes", what, COMPONENT_MAX);
                for (size_t k = 0; k < n; k++)
                        if ((unsigned char) s[k] < 0x20 || s[k] == 0x7f)
                                return refuse(x, EINVAL, "%s contains a control character", what);
                if (!(n == 1 && s[0] == '.')) {
                        if (j + n + 1 > x->lim->max_path)
                                return refuse(x, EINVAL, "%s is longer than %zu bytes", what, x->lim->max_path);
                        if (j)
                                out[j++] = '/';
                        memcpy(out + j, s, n);
                        j += n;
                }
                s += n;
        }
        out[j] = '\0';
        return 0;
}

/* The directory that holds path (made, with its parents, when create),
 * without following a symbolic link anywhere; *ret_base points into path. */
static int open_parent(struct xstate *x, char *path, bool create, const char **ret_base, int *ret_fd) {
        int fd = fcntl(x->dest, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return sbx_error_set(x->err, errno, "unpacking");
        char *p = path;
        for (;;) {
                char *slash = strchr(p, '/');
                if (!slash)
                        break;
                *slash = '\0';
                bool made = create && mkdirat(fd, p, 0755) == 0;
                int e = errno;
                if (create && !made && e != EEXIST) {
                        *slash = '/';
                        close(fd);
                        return sbx_error_set(x->err, e, "entry '%s'", x->shown);
                }
                int nfd = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                e = errno;
                close(fd);
                if (made && push(&x->dirs, &x->n_dirs, &x->cap_dirs, path) < 0) {
                        *slash = '/';
                        if (nfd >= 0)
                                close(nfd);
                        return sbx_error_set(x->err, ENOMEM, "unpacking");
                }
                *slash = '/';
                if (nfd < 0) {
                        if (e == ELOOP || e == ENOTDIR)
                                return refuse(x, EINVAL, "a directory on its path is a symbolic link or a file");
                        return e == ENOENT ? refuse(x, EINVAL, "a directory on its path does not exist")
                                           : sbx_error_set(x->err, e, "entry '%s'", x->shown);
                }
                fd = nfd;
                p = slash + 1;
        }
        *ret_base = p;
        *ret_fd = fd;
        return 0;
}

static int write_data(struct xstate *x, int fd) {
        for (;;) {
                if (atomic_load(x->stop))
                        return sbx_error_msg(x->err, ECANCELED, "unpacking stopped");
                la_ssize_t n = archive_read_data(x->a, x->buf, CHUNK);
                if (n < 0)
                        return refuse(x, EINVAL, "%s", archive_error_string(x->a) ?: "cannot read the archive");
                if (n == 0)
                        return 0;
                if ((uint64_t) n > x->lim->max_bytes - x->st->bytes)
                        return sbx_error_msg(x->err, EFBIG, "the bundle unpacks to more than %" PRIu64 " bytes (at entry '%s')",
                                             x->lim->max_bytes, x->shown);
                x->st->bytes += (uint64_t) n;
                for (la_ssize_t off = 0; off < n;) {
                        ssize_t w = write(fd, x->buf + off, (size_t) (n - off));
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0)
                                return sbx_error_set(x->err, errno, "entry '%s'", x->shown);
                        off += w;
                }
        }
}

static int make_file(struct xstate *x, struct archive_entry *e, int dir, const char *base) {
        mode_t mode = (archive_entry_perm(e) & 0111) ? 0555 : 0444;
        la_int64_t size = archive_entry_size(e);
        if (size > 0 && (uint64_t) size > x->lim->max_bytes - x->st->bytes)
                return sbx_error_msg(x->err, EFBIG, "the bundle unpacks to more than %" PRIu64 " bytes (at entry '%s')",
                                     x->lim->max_bytes, x->shown);
        _cleanup_close_ int fd = openat(dir, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return errno == EEXIST ? refuse(x, EINVAL, "the path is in the archive twice")
                                       : sbx_error_set(x->err, errno, "entry '%s'", x->shown);
        return write_data(x, fd);
}

static int make_dir(struct xstate *x, int dir, const char *base, const char *path) {
        struct stat st;
        if (mkdirat(dir, base, 0755) == 0)
                return push(&x->dirs, &x->n_dirs, &x->cap_dirs, path) < 0 ? sbx_error_set(x->err, ENOMEM, "unpacking") : 0;
        if (errno != EEXIST)
                return sbx_error_set(x->err, errno, "entry '%s'", x->shown);
        /* Made already as a parent of an earlier entry: fine. */
        if (fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                return 0;
        return refuse(x, EINVAL, "the path is in the archive twice");
}

static int make_symlink(struct xstate *x, struct archive_entry *e, int dir, const char *base, const char *path) {
        const char *target = archive_entry_symlink(e);
        size_t depth = 0;
        for (const char *p = path; *p; p++)
                depth += *p == '/';
        if (!target || !*target)
                return refuse(x, EINVAL, "a symbolic link without a target");
        if (strlen(target) > x->lim->max_path)
                return refuse(x, EINVAL, "a symbolic link's target longer than %zu bytes", x->lim->max_path);
        if (target[0] == '/')
                return refuse(x, EINVAL, "a symbolic link to an absolute path leaves the bundle");
        if (!extract_link_inside(target, depth))
                return refuse(x, EINVAL, "a symbolic link whose target leaves the bundle");
        if (symlinkat(target, dir, base) < 0)
                return errno == EEXIST ? refuse(x, EINVAL, "the path is in the archive twice")
                                       : sbx_error_set(x->err, errno, "entry '%s'", x->shown);
        return push(&x->links, &x->n_links, &x->cap_links, path) < 0 ? sbx_error_set(x->err, ENOMEM, "unpacking") : 0;
}

/* A hard link: to a file of this tree unpacked before it, never to
 * anything else (its target's name is checked like any path). */
static int make_hardlink(struct xstate *x, const char *target_in, int dir, const char *base) {
        char target[EXTRACT_MAX_PATH + 1];
        const char *tbase;
        int tdir;
        struct stat st;
        int r = norm_path(x, target_in, "the hard link's target", target);
        if (r < 0)
                return r;
        if (!*target)
                return refuse(x, EINVAL, "a hard link to the bundle's root");
        r = open_parent(x, target, false, &tbase, &tdir);
        if (r < 0)
                return r;
        if (fstatat(tdir, tbase, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) {
                close(tdir);
                return refuse(x, EINVAL, "a hard link to '%.100s', which is not a file unpacked before it", target);
        }
        r = linkat(tdir, tbase, dir, base, 0) < 0 ? -errno : 0;
        close(tdir);
        if (r == -EEXIST)
                return refuse(x, EINVAL, "the path is in the archive twice");
        return r < 0 ? sbx_error_set(x->err, -r, "entry '%s'", x->shown) : 0;
}

static const char *type_name(mode_t t) {
        switch (t) {
        case AE_IFCHR: return "a character device";
        case AE_IFBLK: return "a block device";
        case AE_IFIFO: return "a fifo";
        case AE_IFSOCK: return "a socket";
        default: return "an unknown kind of file";
        }
}

static int one_entry(struct xstate *x, struct archive_entry *e) {
        char path[EXTRACT_MAX_PATH + 1];
        const char *base;
        int dir, r;
        show(x, archive_entry_pathname(e));
        if (++x->st->entries > x->lim->max_entries)
                return sbx_error_msg(x->err, EFBIG, "the bundle has more than %" PRIu64 " entries", x->lim->max_entries);
        if ((r = norm_path(x, archive_entry_pathname(e), "the path", path)) < 0)
                return r;
        mode_t type = archive_entry_filetype(e);
        const char *hard = archive_entry_hardlink(e);
        if (archive_entry_mode(e) & (S_ISUID | S_ISGID))
                return refuse(x, EINVAL, "a setuid or setgid bit");
        if (!hard && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
                return refuse(x, EINVAL, "%s", type_name(type));
        if (!*path) {
                if (type == AE_IFDIR)
                        return 0; /* "./": the tree itself */
                return refuse(x, EINVAL, "the path names the bundle's root");
        }
        if ((r = open_parent(x, path, true, &base, &dir)) < 0)
                return r;
        if (hard)
                r = make_hardlink(x, hard, dir, base);
        else if (type == AE_IFREG)
                r = make_file(x, e, dir, base);
        else if (type == AE_IFDIR)
                r = make_dir(x, dir, base, path);
        else
                r = make_symlink(x, e, dir, base, path);
        close(dir);
        return r;
}

/* Each link followed to its end with the kernel keeping the walk beneath
 * the tree: a chain of links that each look harmless ("a" -> ".", then
 * "b" -> "a/..") still cannot lead out. A link to a missing file is fine. */
static int check_links(struct xstate *x) {
        for (size_t i = 0; i < x->n_links; i++) {
                struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH };
                show(x, x->links[i]);
                long fd = syscall(SYS_openat2, x->dest, x->links[i], &how, sizeof(how));
                if (fd >= 0) {
                        close((int) fd);
                        continue;
                }
                if (errno == ENOENT || errno == ENOTDIR)
                        continue;
                if (errno == ENOSYS)
                        return refuse(x, EINVAL, "a symbolic link, which this kernel (without openat2) cannot check");
                if (errno == EXDEV || errno == ELOOP)
                        return refuse(x, EINVAL, "a symbolic link that leads out of the bundle%s",
                                      errno == ELOOP ? " or loops" : " (through other links)");
                return sbx_error_set(x->err, errno, "entry '%s'", x->shown);
        }
        return 0;
}

/* Directories read-only now that they are filled. */
static int seal_dirs(struct xstate *x) {
        for (size_t i = x->n_dirs; i > 0; i--)
                if (fchmodat(x->dest, x->dirs[i - 1], 0555, 0) < 0)
                        return sbx_error_set(x->err, errno, "entry '%s'", x->dirs[i - 1]);
        return 0;
}

static void strv_free(char **v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

int extract_archive(int fd, int dest_fd, const struct extract_limits *lim, const atomic_bool *stop,
                    struct extract_stats *st, struct sbx_error *err) {
        struct extract_limits bounds = *lim;
        if (bounds.max_path > EXTRACT_MAX_PATH)
                bounds.max_path = EXTRACT_MAX_PATH;
        struct xstate x = { .dest = dest_fd, .lim = &bounds, .stop = stop, .st = st, .err = err };
        struct archive_entry *e;
        int r = 0;
        memset(st, 0, sizeof(*st));
        x.buf = malloc(CHUNK);
        x.a = archive_read_new();
        if (!x.buf || !x.a) {
                r = sbx_error_set(err, ENOMEM, "unpacking");
                goto out;
        }
        /* tar in its forms (ustar, pax, GNU), gzip'd or not: nothing else
         * needs to be parsed to read a bundle. */
        archive_read_support_format_tar(x.a);
        archive_read_support_filter_gzip(x.a);
        if (archive_read_open_fd(x.a, fd, CHUNK) != ARCHIVE_OK) {
                r = sbx_error_msg(err, EINVAL, "not a tar archive: %s", archive_error_string(x.a) ?: "?");
                goto out;
        }
        for (;;) {
                if (atomic_load(stop)) {
                        r = sbx_error_msg(err, ECANCELED, "unpacking stopped");
                        break;
                }
                int h = archive_read_next_header(x.a, &e);
                if (h == ARCHIVE_EOF)
                        break;
                if (h != ARCHIVE_OK && h != ARCHIVE_WARN) {
                        r = sbx_error_msg(err, EINVAL, "a broken archive after %" PRIu64 " entries: %s", st->entries,
                                          archive_error_string(x.a) ?: "?");
                        break;
                }
                if ((r = one_entry(&x, e)) < 0)
                        break;
        }
        if (r == 0)
                r = check_links(&x);
        if (r == 0)
                r = seal_dirs(&x);
out:
        if (x.a)
                archive_read_free(x.a);
        free(x.buf);
        strv_free(x.dirs, x.n_dirs);
        strv_free(x.links, x.n_links);
        return r;
}
