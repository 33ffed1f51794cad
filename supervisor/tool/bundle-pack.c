/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-bundle pack: a directory with its manifest.ini into a reproducible
 * archive. The same tree gives the same bytes whenever and by whomever it
 * is packed: entries in byte order of their paths, one fixed time
 * (SOURCE_DATE_EPOCH, or 0), owner root, modes normalised (directories
 * 0755, files 0644 or 0755 if executable, links 0777), ustar/pax without
 * access or change times, gzip without a time stamp. What the daemon
 * would refuse to unpack is refused here first, naming the file. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle-tool.h"
#include "extract.h"
#include "manifest.h"

struct pentry {
        char *path;           /* relative to the bundle's root */
        struct stat st;
        char *target;         /* a symbolic link's */
};

struct plist {
        struct pentry *v;
        size_t n, cap;
};

static void plist_free(struct plist *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->v[i].path);
                free(l->v[i].target);
        }
        free(l->v);
}

static int cmp_paths(const void *a, const void *b) {
        return strcmp(((const struct pentry *) a)->path, ((const struct pentry *) b)->path);
}

/* How many directories below the bundle's root rel's link stands. */
static size_t link_depth(const char *rel) {
        size_t d = 0;
        for (const char *p = rel; *p; p++)
                d += *p == '/';
        return d;
}

static int add(struct plist *l, const char *root, const char *rel, int dirfd, const char *name) {
        struct pentry e = { 0 };
        if (fstatat(dirfd, name, &e.st, AT_SYMLINK_NOFOLLOW) < 0)
                return tool_err(errno, "%s/%s", root, rel);
        if (strlen(rel) > EXTRACT_MAX_PATH || strlen(name) > 255)
                return tool_err(0, "%s/%s: path longer than the daemon unpacks (%d bytes)", root, rel, EXTRACT_MAX_PATH);
        for (const char *p = rel; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        return tool_err(0, "%s/%s: a control character in the name", root, rel);
        if (e.st.st_mode & (S_ISUID | S_ISGID))
                return tool_err(0, "%s/%s: setuid or setgid: the daemon refuses such files", root, rel);
        if (S_ISLNK(e.st.st_mode)) {
                char buf[EXTRACT_MAX_PATH + 1];
                ssize_t n = readlinkat(dirfd, name, buf, sizeof(buf) - 1);
                if (n < 0)
                        return tool_err(errno, "%s/%s", root, rel);
                buf[n] = '\0';
                if ((size_t) n >= sizeof(buf) - 1)
                        return tool_err(0, "%s/%s: a link target longer than %d bytes", root, rel, EXTRACT_MAX_PATH);
                if (!extract_link_inside(buf, link_depth(rel)))
                        return tool_err(0, "%s/%s -> %s: the link leads out of the bundle", root, rel, buf);
                if (!(e.target = strdup(buf)))
                        return tool_err(ENOMEM, "pack");
        } else if (!S_ISREG(e.st.st_mode) && !S_ISDIR(e.st.st_mode))
                return tool_err(0, "%s/%s: only files, directories and symbolic links go into a bundle", root, rel);
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 64;
                struct pentry *t = realloc(l->v, cap * sizeof(*t));
                if (!t)
                        return tool_err(ENOMEM, "pack");
                l->v = t;
                l->cap = cap;
        }
        if (!(e.path = strdup(rel)))
                return tool_err(ENOMEM, "pack");
        l->v[l->n++] = e;
        return 0;
}

/* Every entry below dirfd, depth first, never following a link. */
static int walk(struct plist *l, const char *root, const char *prefix, int fd, int depth) {
        if (depth > 256)
                return tool_err(0, "%s/%s: directories nested too deep", root, prefix);
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return tool_err(errno, "%s/%s", root, prefix);
        }
        struct dirent *de;
        int r = 0;
        while (r == 0 && (de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                char rel[EXTRACT_MAX_PATH * 2];
                snprintf(rel, sizeof(rel), "%s%s%s", prefix, *prefix ? "/" : "", de->d_name);
                r = add(l, root, rel, dirfd(d), de->d_name);
                if (r == 0 && S_ISDIR(l->v[l->n - 1].st.st_mode)) {
                        int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        r = sub < 0 ? tool_err(errno, "%s/%s", root, rel) : walk(l, root, rel, sub, depth + 1);
                }
        }
        closedir(d);
        return r;
}

static int write_entry(struct archive *a, int root_fd, const struct pentry *e, time_t mtime) {
        struct archive_entry *ae = archive_entry_new();
        int r = 0;
        if (!ae)
                return tool_err(ENOMEM, "pack");
        archive_entry_set_pathname(ae, e->path);
        archive_entry_set_mtime(ae, mtime, 0);
        archive_entry_set_uid(ae, 0);
        archive_entry_set_gid(ae, 0);
        if (S_ISDIR(e->st.st_mode)) {
                archive_entry_set_filetype(ae, AE_IFDIR);
                archive_entry_set_perm(ae, 0755);
        } else if (S_ISLNK(e->st.st_mode)) {
                archive_entry_set_filetype(ae, AE_IFLNK);
                archive_entry_set_perm(ae, 0777);
                archive_entry_set_symlink(ae, e->target);
        } else {
                archive_entry_set_filetype(ae, AE_IFREG);
                archive_entry_set_perm(ae, (e->st.st_mode & 0111) ? 0755 : 0644);
                archive_entry_set_size(ae, e->st.st_size);
        }
        if (archive_write_header(a, ae) != ARCHIVE_OK)
                r = tool_err(0, "%s: %s", e->path, archive_error_string(a));
        if (r == 0 && S_ISREG(e->st.st_mode)) {
                int fd = openat(root_fd, e->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                char buf[65536];
                off_t left = e->st.st_size;
                if (fd < 0)
                        r = tool_err(errno, "%s", e->path);
                while (r == 0 && left > 0) {
                        ssize_t n = read(fd, buf, sizeof(buf) < (size_t) left ? sizeof(buf) : (size_t) left);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0) {
                                r = tool_err(n < 0 ? errno : 0, "%s: %s", e->path, n < 0 ? "read" : "changed while packing");
                                break;
                        }
                        if (archive_write_data(a, buf, (size_t) n) != n)
                                r = tool_err(0, "%s: %s", e->path, archive_error_string(a));
                        left -= n;
                }
                if (fd >= 0)
                        close(fd);
        }
        archive_entry_free(ae);
        return r;
}

static time_t fixed_time(void) {
        const char *s = getenv("SOURCE_DATE_EPOCH");
        char *end = NULL;
        long long v = s ? strtoll(s, &end, 10) : 0;
        return s && *s && end && !*end && v >= 0 ? (time_t) v : 0;
}

static int write_archive(const char *out, int root_fd, const struct plist *l) {
        struct archive *a = archive_write_new();
        int r = 0;
        if (!a)
                return tool_err(ENOMEM, "pack");
        archive_write_set_format_pax_restricted(a);
        archive_write_add_filter_gzip(a);
        /* No time stamp in the gzip header: the same tree, the same bytes. */
        if (archive_write_set_filter_option(a, "gzip", "timestamp", NULL) != ARCHIVE_OK ||
            archive_write_open_filename(a, out) != ARCHIVE_OK)
                r = tool_err(0, "%s: %s", out, archive_error_string(a));
        time_t mtime = fixed_time();
        for (size_t i = 0; r == 0 && i < l->n; i++)
                r = write_entry(a, root_fd, &l->v[i], mtime);
        if (archive_write_close(a) != ARCHIVE_OK && r == 0)
                r = tool_err(0, "%s: %s", out, archive_error_string(a));
        archive_write_free(a);
        return r;
}

int tool_pack(const char *dir, const char *out_arg) {
        struct manifest m;
        struct sbx_error err;
        struct plist l = { 0 };
        char path[4200], out[4200], tmp[4300];
        int r;
        snprintf(path, sizeof(path), "%s/%s", dir, MANIFEST_FILE);
        manifest_init(&m);
        if (manifest_load_file(&m, path, &err) < 0) {
                manifest_free(&m);
                return tool_err(0, "%s", err.msg);
        }
        int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0) {
                manifest_free(&m);
                return tool_err(errno, "%s", dir);
        }
        if (out_arg)
                snprintf(out, sizeof(out), "%s", out_arg);
        else
                snprintf(out, sizeof(out), "%s-%s.tar.gz", m.name, m.version);
        int wfd = fcntl(root, F_DUPFD_CLOEXEC, 3);
        r = wfd < 0 ? tool_err(errno, "%s", dir) : walk(&l, dir, "", wfd, 0);
        if (r == 0) {
                qsort(l.v, l.n, sizeof(*l.v), cmp_paths);
                snprintf(tmp, sizeof(tmp), "%s.tmp", out);
                r = write_archive(tmp, root, &l);
                if (r == 0 && rename(tmp, out) < 0)
                        r = tool_err(errno, "%s", out);
                if (r < 0)
                        unlink(tmp);
        }
        if (r == 0) {
                char hex[65];
                uint64_t size = 0;
                r = tool_sha256_file(out, hex, &size);
                if (r == 0)
                        printf("%s: %s %s, %zu entries, %" PRIu64 " bytes, sha256 %s\n", out, m.name, m.version, l.n, size, hex);
        }
        close(root);
        plist_free(&l);
        manifest_free(&m);
        return r;
}
