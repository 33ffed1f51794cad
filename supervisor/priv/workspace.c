/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "util.h"
#include "workspace.h"
#include "wscrypt.h"

#define WALK_MAX_DEPTH 32
#define WALK_MAX_ENTRIES 100000
/* Files kept as artifacts of one job: the record lists each, and a record
 * must stay small enough to read and send at once. */
#define ARTIFACTS_MAX_FILES 10000

/* The open directories of the last path written below a root, one fd per
 * component: the next path reuses those it shares and opens only the rest.
 * Uploads are written in sorted order and artifacts in the order of a
 * depth-first walk, so each directory is made and opened once: 1,024
 * uploads on one 64-deep path used to cost 196,608 mkdirat/openat/close
 * calls on a worker thread (about 150 ms of a CPU per request, which
 * left other tenants' work waiting for a CPU); now 192 and one create
 * per file. Never follows a symlink (the tree is fresh and only the
 * daemon writes it, but be strict). */
struct dirpath {
        int root;      /* not owned */
        int *fds;      /* fds[i]: the directory of components 0..i */
        size_t *ends;  /* ends[i]: offset in path just past component i */
        size_t depth, cap;
        char *path;    /* the open directories' relative path */
        size_t path_cap;
};

static void dirpath_pop(struct dirpath *dp, size_t depth) {
        while (dp->depth > depth)
                close(dp->fds[--dp->depth]);
}

static void dirpath_free(struct dirpath *dp) {
        dirpath_pop(dp, 0);
        free(dp->fds);
        free(dp->ends);
        free(dp->path);
}

static int dirpath_push(struct dirpath *dp, const char *rel, size_t start, size_t end, bool create) {
        char name[NAME_MAX + 1];
        if (end - start > NAME_MAX)
                return -ENAMETOOLONG;
        memcpy(name, rel + start, end - start);
        name[end - start] = '\0';
        if (dp->depth == dp->cap) {
                size_t nc = dp->cap ? dp->cap * 2 : 16;
                int *f = realloc(dp->fds, nc * sizeof(*f));
                if (!f)
                        return -ENOMEM;
                dp->fds = f;
                size_t *e = realloc(dp->ends, nc * sizeof(*e));
                if (!e)
                        return -ENOMEM;
                dp->ends = e;
                dp->cap = nc;
        }
        int top = dp->depth ? dp->fds[dp->depth - 1] : dp->root;
        if (create && mkdirat(top, name, 0755) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(top, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        dp->fds[dp->depth] = fd;
        dp->ends[dp->depth++] = end;
        return 0;
}

/* Make (with create) and open the parent directories of rel, "mkdir -p"
 * style; *ret_fd is the parent (borrowed: valid until the next call) and
 * *ret_base the last component, pointing into rel. */
static int dirpath_enter(struct dirpath *dp, const char *rel, bool create, const char **ret_base, int *ret_fd) {
        const char *last = strrchr(rel, '/');
        size_t dlen = last ? (size_t) (last - rel) : 0;
        /* Component i is shared when rel has the same text up to its end
         * and a separator right after it. */
        size_t keep = 0;
        while (keep < dp->depth) {
                size_t end = dp->ends[keep];
                if (end > dlen || rel[end] != '/' || memcmp(dp->path, rel, end) != 0)
                        break;
                keep++;
        }
        dirpath_pop(dp, keep);
        if (dlen + 1 > dp->path_cap) {
                char *n = realloc(dp->path, dlen + 1);
                if (!n)
                        return -ENOMEM;
                dp->path = n;
                dp->path_cap = dlen + 1;
        }
        memcpy(dp->path, rel, dlen);
        dp->path[dlen] = '\0';
        size_t start = keep ? dp->ends[keep - 1] + 1 : 0;
        while (last && start <= dlen) {
                const char *slash = memchr(rel + start, '/', dlen - start + 1);
                size_t end = (size_t) (slash - rel);
                int r = dirpath_push(dp, rel, start, end, create);
                if (r < 0) {
                        dirpath_pop(dp, 0);
                        return r;
                }
                start = end + 1;
        }
        *ret_base = last ? last + 1 : rel;
        *ret_fd = dp->depth ? dp->fds[dp->depth - 1] : dp->root;
        return 0;
}

static int chown_tree(int fd, uid_t uid, gid_t gid, int depth) {
        if (depth > WALK_MAX_DEPTH)
                return -ELOOP;
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_dup(fd, &d);
        if (r < 0)
                return r;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fchownat(fd, de->d_name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0 && r == 0)
                        r = -errno;
                if (de->d_type == DT_DIR) {
                        _cleanup_close_ int sub = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                chown_tree(sub, uid, gid, depth + 1);
                }
        }
        return r;
}

static int mount_tmpfs(const struct workspace_spec *ws, bool *ret_noswap, struct sbx_error *err) {
        char path[4200], opts[256];
        snprintf(path, sizeof(path), "%s/%s", ws->work_path, ws->id);
        /* Sized in bytes and inodes: the job's disk quota. nosuid and
         * nodev: nothing a job leaves here (a setuid copy of a shell, a
         * device node) means anything to the host. noswap (Linux 6.4 on):
         * its pages are never written to a swap device, so a job's files
         * reach no disk; a kernel without it refuses the option (EINVAL)
         * and the workspace is mounted without, which the record says. */
        uint64_t inodes = ws->size_bytes / 1024 > 4096 ? ws->size_bytes / 1024 : 4096;
        int n = snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu,mode=0700,uid=0,gid=0", (unsigned long long) ws->size_bytes,
                         (unsigned long long) inodes);
        snprintf(opts + n, sizeof(opts) - (size_t) n, ",noswap");
        *ret_noswap = true;
        if (mount("sbx-workspace", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) == 0)
                return 0;
        if (errno != EINVAL)
                return sbx_error_set(err, errno, "workspace %s: mount tmpfs", ws->id);
        opts[n] = 0;
        *ret_noswap = false;
        if (mount("sbx-workspace", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return sbx_error_set(err, errno, "workspace %s: mount tmpfs", ws->id);
        return 0;
}

static int upload_cmp(const void *a, const void *b) {
        const struct upload *x = *(const struct upload *const *) a, *y = *(const struct upload *const *) b;
        return strcmp(x->path, y->path);
}

int workspace_write_uploads(int fd, const struct run_request *run, struct sbx_error *err) {
        if (run->n_files == 0)
                return 0;
        /* In sorted order the files of one directory come together (the
         * paths sharing a prefix are one run of a sorted list). */
        _cleanup_free_ const struct upload **order = calloc(run->n_files, sizeof(*order));
        if (!order)
                return sbx_error_set(err, ENOMEM, "uploads");
        for (size_t i = 0; i < run->n_files; i++)
                order[i] = &run->files[i];
        qsort(order, run->n_files, sizeof(*order), upload_cmp);
        struct dirpath dp = { .root = fd };
        int r = 0;
        for (size_t i = 0; i < run->n_files && r == 0; i++) {
                const struct upload *u = order[i];
                const char *base;
                int pfd;
                r = dirpath_enter(&dp, u->path, true, &base, &pfd);
                if (r < 0) {
                        r = sbx_error_set(err, r, "upload %s", u->path);
                        break;
                }
                _cleanup_close_ int ffd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, u->mode);
                if (ffd < 0)
                        r = sbx_error_set(err, errno, "upload %s", u->path);
                else if ((r = write_all(ffd, u->data, u->len)) < 0)
                        r = sbx_error_set(err, r, "upload %s", u->path);
                else if (fchmod(ffd, u->mode) < 0)
                        r = sbx_error_set(err, errno, "upload %s", u->path);
        }
        dirpath_free(&dp);
        return r;
}

int workspace_prepare(const struct workspace_spec *ws, struct workspace_made *ret, struct sbx_error *err) {
        *ret = (struct workspace_made) { 0 };
        /* Root-owned and private until the files are in, so that nothing
         * can race symlinks into it. */
        if (mkdirat(ws->work_dirfd, ws->id, 0700) < 0)
                return sbx_error_set(err, errno, "workspace %s", ws->id);
        if (ws->own_mount) {
                int r = mount_tmpfs(ws, &ret->noswap, err);
                if (r < 0)
                        return r;
                ret->mounted = true;
        }
        _cleanup_close_ int fd = openat(ws->work_dirfd, ws->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return sbx_error_set(err, errno, "workspace %s", ws->id);
        /* On a disk: encrypted before the first file goes in, where the
         * file system can; where it cannot, the record says so. */
        int r;
        if (!ws->own_mount) {
                r = wscrypt_lock_new(fd);
                if (r == 0)
                        ret->encrypted = true;
                else if (r != -EOPNOTSUPP && r != -ENOTTY && r != -EINVAL)
                        log_warning("workspace %s: not encrypted: %s", ws->id, strerror(-r));
        }
        r = workspace_write_uploads(fd, ws->run, err);
        if (r < 0)
                return r;
        r = chown_tree(fd, ws->uid, ws->gid, 0);
        if (r < 0)
                return sbx_error_set(err, r, "workspace %s: chown", ws->id);
        if (fchown(fd, ws->uid, ws->gid) < 0)
                return sbx_error_set(err, errno, "workspace %s: chown", ws->id);
        return 0;
}

struct collect {
        char *const *globs;
        size_t n_globs;
        uint64_t cap;
        uint64_t used;
        unsigned entries;
        int dest;
        struct dirpath dp; /* below dest */
        json_t *list;
        bool truncated;
        struct sbx_error *err;
};

static bool matches(struct collect *c, const char *rel) {
        for (size_t i = 0; i < c->n_globs; i++)
                if (fnmatch(c->globs[i], rel, FNM_PATHNAME) == 0)
                        return true;
        return false;
}

static int copy_one(struct collect *c, int dirfd, const char *name, const char *rel) {
        /* O_NOFOLLOW: a symlink planted by the job is not followed out of
         * the workspace; O_NONBLOCK: a FIFO cannot stall the daemon. */
        _cleanup_close_ int in = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (in < 0)
                return 0;
        struct stat st;
        if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        if ((uint64_t) st.st_size > c->cap - c->used || json_array_size(c->list) >= ARTIFACTS_MAX_FILES) {
                c->truncated = true;
                return 0;
        }
        const char *base;
        int pfd;
        int r = dirpath_enter(&c->dp, rel, true, &base, &pfd);
        if (r < 0)
                return sbx_error_set(c->err, r, "artifact %s", rel);
        _cleanup_close_ int out = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (out < 0)
                return sbx_error_set(c->err, errno, "artifact %s", rel);
        crypto_hash_sha256_state h;
        crypto_hash_sha256_init(&h);
        char buf[65536];
        uint64_t total = 0;
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return sbx_error_set(c->err, errno, "artifact %s", rel);
                }
                if (n == 0)
                        break;
                /* The file may have grown since fstat (a straggler); the
                 * cap holds regardless. */
                if (total + (uint64_t) n > c->cap - c->used) {
                        c->truncated = true;
                        unlinkat(pfd, base, 0);
                        return 0;
                }
                r = write_all(out, buf, (size_t) n);
                if (r < 0)
                        return sbx_error_set(c->err, r, "artifact %s", rel);
                crypto_hash_sha256_update(&h, (unsigned char *) buf, (size_t) n);
                total += (uint64_t) n;
        }
        /* Not synced one by one: the caller syncs the file system once
         * for all of them. */
        unsigned char digest[crypto_hash_sha256_BYTES];
        char hex[2 * crypto_hash_sha256_BYTES + 1];
        crypto_hash_sha256_final(&h, digest);
        hex_encode(digest, sizeof(digest), hex);
        c->used += total;
        json_array_append_new(c->list, json_pack("{s:s, s:I, s:s}", "path", rel, "size", (json_int_t) total, "sha256", hex));
        return 0;
}

static int walk(struct collect *c, int dirfd, const char *prefix, int depth) {
        if (depth > WALK_MAX_DEPTH)
                return 0;
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_dup(dirfd, &d);
        if (r < 0)
                return r;
        struct dirent *de;
        while (r == 0 && (de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (++c->entries > WALK_MAX_ENTRIES) {
                        c->truncated = true;
                        break;
                }
                char rel[4096];
                if (snprintf(rel, sizeof(rel), "%s%s%s", prefix, *prefix ? "/" : "", de->d_name) >= (int) sizeof(rel))
                        continue;
                if (de->d_type == DT_DIR) {
                        _cleanup_close_ int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                r = walk(c, sub, rel, depth + 1);
                } else if ((de->d_type == DT_REG || de->d_type == DT_UNKNOWN) && matches(c, rel))
                        r = copy_one(c, dirfd, de->d_name, rel);
        }
        return r;
}

int workspace_collect(int work_dirfd, const char *id, char *const *globs, size_t n_globs, uint64_t cap, int dest_dirfd,
                      json_t **ret, bool *ret_truncated, struct sbx_error *err) {
        struct collect c = { .globs = globs, .n_globs = n_globs, .cap = cap, .dest = dest_dirfd, .dp = { .root = dest_dirfd },
                             .err = err };
        c.list = json_array();
        if (!c.list)
                return sbx_error_set(err, ENOMEM, "artifacts");
        _cleanup_close_ int fd = openat(work_dirfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r = fd < 0 ? sbx_error_set(err, errno, "workspace %s", id) : walk(&c, fd, "", 0);
        dirpath_free(&c.dp);
        *ret = c.list;
        *ret_truncated = c.truncated;
        return r;
}

int workspace_read_value(int dirfd, const char *id, const char *name, uint64_t max, json_t **ret, char **ret_why) {
        *ret = NULL;
        *ret_why = NULL;
        _cleanup_close_ int dir = openat(dirfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return -errno;
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT)
                return 0;
        struct stat st;
        int r = 0;
        if (fd < 0)
                r = asprintf(ret_why, "%s: %s", name, errno == ELOOP ? "a symbolic link (not followed)" : strerror(errno));
        else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                r = asprintf(ret_why, "%s: not a regular file", name);
        else if ((uint64_t) st.st_size > max)
                r = asprintf(ret_why, "%s: %llu bytes, more than max_result_value (%llu)", name, (unsigned long long) st.st_size,
                             (unsigned long long) max);
        else {
                _cleanup_free_ char *buf = malloc((size_t) st.st_size + 1);
                ssize_t n = buf ? pread(fd, buf, (size_t) st.st_size + 1, 0) : -1;
                json_error_t je;
                if (n < 0)
                        r = asprintf(ret_why, "%s: %s", name, buf ? strerror(errno) : "out of memory");
                else if ((uint64_t) n > (uint64_t) st.st_size) /* it grew: the job is gone, so it cannot; a size is a size */
                        r = asprintf(ret_why, "%s: it changed while it was read", name);
                else if (!(*ret = json_loadb(buf, (size_t) n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je)))
                        r = asprintf(ret_why, "%s: not valid JSON: line %d column %d: %s", name, je.line, je.column, je.text);
                else
                        return 0;
        }
        if (r < 0)
                *ret_why = NULL;
        return -EINVAL;
}

int workspace_remove(int work_dirfd, const char *work_path, const char *id) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", work_path, id);
        /* A workspace of its own file system goes at once (the kernel frees
         * the tmpfs when the job's last reference to it is gone); a
         * directory is deleted file by file. */
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT && errno != EPERM)
                return -errno;
        /* An encrypted one's key goes last, whatever the deletion left. */
        _cleanup_close_ int fd = openat(work_dirfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r = rm_rf_at(work_dirfd, id);
        if (fd >= 0) {
                int k = wscrypt_forget(fd);
                if (k < 0)
                        log_warning("workspace %s: its key could not be removed: %s", id, strerror(-k));
        }
        return r;
}
