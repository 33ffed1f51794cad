/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "tree-check.h"

bool extract_link_inside(const char *target, size_t depth) {
        long d = (long) depth;
        if (target[0] == '/')
                return false;
        for (const char *s = target; *s;) {
                while (*s == '/')
                        s++;
                size_t n = strcspn(s, "/");
                if (n == 0)
                        break;
                if (n == 2 && s[0] == '.' && s[1] == '.')
                        d--;
                else if (!(n == 1 && s[0] == '.'))
                        d++;
                if (d < 0)
                        return false;
                s += n;
        }
        return true;
}

struct walk {
        int tree;
        const struct extract_limits *lim;
        struct extract_stats *st;
        struct sbx_error *err;
        char path[EXTRACT_MAX_PATH + 1];
};

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

static int bad(struct walk *w, int errnum, const char *why) {
        return sbx_error_msg(w->err, errnum, "the unpacked tree: entry '%.300s': %s", w->path, why);
}

static int link_ok(struct walk *w, int dir, const char *name, size_t depth) {
        char target[EXTRACT_MAX_PATH + 1];
        ssize_t n = readlinkat(dir, name, target, sizeof(target) - 1);
        if (n < 0)
                return sbx_error_set(w->err, errno, "the unpacked tree: entry '%.300s'", w->path);
        target[n] = '\0';
        if (!extract_link_inside(target, depth))
                return bad(w, EINVAL, "a symbolic link whose target leaves the bundle");
        struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH };
        long fd = syscall(SYS_openat2, w->tree, w->path, &how, sizeof(how));
        if (fd >= 0) {
                close((int) fd);
                return 0;
        }
        if (errno == ENOENT || errno == ENOTDIR)
                return 0;
        return errno == EXDEV || errno == ELOOP ? bad(w, EINVAL, "a symbolic link that leads out of the bundle or loops")
                                                : sbx_error_set(w->err, errno, "the unpacked tree: entry '%.300s'", w->path);
}

/* dir (owned, closed here) is w->path, len bytes of it, depth levels down. */
static int walk_dir(struct walk *w, int dir, size_t len, size_t depth) {
        _cleanup_(closedirp) DIR *d = fdopendir(dir);
        struct dirent *e;
        if (!d) {
                close(dir);
                return sbx_error_set(w->err, errno, "the unpacked tree");
        }
        while ((errno = 0, e = readdir(d))) {
                struct stat st;
                int r = 0;
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                        continue;
                size_t n = strlen(e->d_name);
                if (len + !!len + n > w->lim->max_path)
                        return bad(w, EINVAL, "a path longer than the bound");
                if (len)
                        w->path[len] = '/';
                memcpy(w->path + len + !!len, e->d_name, n + 1);
                if (++w->st->entries > w->lim->max_entries)
                        return sbx_error_msg(w->err, EFBIG, "the unpacked tree has more than %" PRIu64 " entries", w->lim->max_entries);
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return sbx_error_set(w->err, errno, "the unpacked tree: entry '%.300s'", w->path);
                if (st.st_mode & (S_ISUID | S_ISGID | S_ISVTX))
                        return bad(w, EINVAL, "a setuid, setgid or sticky bit");
                if (S_ISREG(st.st_mode)) {
                        uint64_t share = ((uint64_t) st.st_size + st.st_nlink - 1) / (st.st_nlink ? st.st_nlink : 1);
                        if (share > w->lim->max_bytes - w->st->bytes)
                                return sbx_error_msg(w->err, EFBIG, "the unpacked tree holds more than %" PRIu64 " bytes", w->lim->max_bytes);
                        w->st->bytes += share;
                } else if (S_ISLNK(st.st_mode)) {
                        r = link_ok(w, dirfd(d), e->d_name, depth);
                } else if (S_ISDIR(st.st_mode)) {
                        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0)
                                return sbx_error_set(w->err, errno, "the unpacked tree: entry '%.300s'", w->path);
                        r = walk_dir(w, sub, len + !!len + n, depth + 1);
                } else {
                        r = bad(w, EINVAL, "neither a file, a directory nor a symbolic link");
                }
                if (r < 0)
                        return r;
                w->path[len] = '\0';
        }
        return errno ? sbx_error_set(w->err, errno, "the unpacked tree") : 0;
}

int tree_check(int tree_fd, const struct extract_limits *lim, struct extract_stats *st, struct sbx_error *err) {
        struct walk w = { .tree = tree_fd, .lim = lim, .st = st, .err = err };
        int dir = openat(tree_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        memset(st, 0, sizeof(*st));
        if (dir < 0)
                return sbx_error_set(err, errno, "the unpacked tree");
        return walk_dir(&w, dir, 0, 0);
}
