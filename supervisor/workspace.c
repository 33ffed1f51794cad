/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "workspace.h"

#define WALK_MAX_DEPTH 32
#define WALK_MAX_ENTRIES 100000
/* Files kept as artifacts of one job: the record lists each, and a record
 * must stay small enough to read and send at once. */
#define ARTIFACTS_MAX_FILES 10000

/* mkdir -p for the parents of rel below dirfd, never following symlinks
 * (the directory is fresh and only the daemon writes it, but be strict). */
static int open_parent(int dirfd, const char *rel, bool create, char **ret_base, int *ret_fd) {
        _cleanup_free_ char *copy = strdup(rel);
        if (!copy)
                return -ENOMEM;
        int fd = dup(dirfd);
        if (fd < 0)
                return -errno;
        char *p = copy;
        for (;;) {
                char *slash = strchr(p, '/');
                if (!slash)
                        break;
                *slash = '\0';
                if (create && mkdirat(fd, p, 0755) < 0 && errno != EEXIST) {
                        int e = -errno;
                        close(fd);
                        return e;
                }
                int nfd = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                close(fd);
                if (nfd < 0)
                        return -errno;
                fd = nfd;
                p = slash + 1;
        }
        *ret_base = strdup(p);
        *ret_fd = fd;
        return *ret_base ? 0 : -ENOMEM;
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

static int mount_tmpfs(const struct workspace_spec *ws, struct sbx_error *err) {
        char path[4200], opts[256];
        snprintf(path, sizeof(path), "%s/%s", ws->work_path, ws->id);
        /* Sized in bytes and inodes: the job's disk quota. nosuid and
         * nodev: nothing a job leaves here (a setuid copy of a shell, a
         * device node) means anything to the host. */
        uint64_t inodes = ws->size_bytes / 1024 > 4096 ? ws->size_bytes / 1024 : 4096;
        snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu,mode=0700,uid=0,gid=0", (unsigned long long) ws->size_bytes,
                 (unsigned long long) inodes);
        if (mount("sbx-workspace", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return sbx_error_set(err, errno, "workspace %s: mount tmpfs", ws->id);
        return 0;
}

static int write_uploads(int fd, const struct run_request *run, struct sbx_error *err) {
        for (size_t i = 0; i < run->n_files; i++) {
                const struct upload *u = &run->files[i];
                _cleanup_free_ char *base = NULL;
                _cleanup_close_ int pfd = -1;
                int r = open_parent(fd, u->path, true, &base, &pfd);
                if (r < 0)
                        return sbx_error_set(err, r, "upload %s", u->path);
                _cleanup_close_ int ffd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, u->mode);
                if (ffd < 0)
                        return sbx_error_set(err, errno, "upload %s", u->path);
                r = write_all(ffd, u->data, u->len);
                if (r < 0)
                        return sbx_error_set(err, r, "upload %s", u->path);
                if (fchmod(ffd, u->mode) < 0)
                        return sbx_error_set(err, errno, "upload %s", u->path);
        }
        return 0;
}

int workspace_prepare(const struct workspace_spec *ws, bool *ret_mounted, struct sbx_error *err) {
        *ret_mounted = false;
        /* Root-owned and private until the files are in, so that nothing
         * can race symlinks into it. */
        if (mkdirat(ws->work_dirfd, ws->id, 0700) < 0)
                return sbx_error_set(err, errno, "workspace %s", ws->id);
        if (ws->own_mount) {
                int r = mount_tmpfs(ws, err);
                if (r < 0)
                        return r;
                *ret_mounted = true;
        }
        _cleanup_close_ int fd = openat(ws->work_dirfd, ws->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return sbx_error_set(err, errno, "workspace %s", ws->id);
        int r = write_uploads(fd, ws->run, err);
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
        _cleanup_free_ char *base = NULL;
        _cleanup_close_ int pfd = -1;
        int r = open_parent(c->dest, rel, true, &base, &pfd);
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
        struct collect c = { .globs = globs, .n_globs = n_globs, .cap = cap, .dest = dest_dirfd, .err = err };
        c.list = json_array();
        if (!c.list)
                return sbx_error_set(err, ENOMEM, "artifacts");
        _cleanup_close_ int fd = openat(work_dirfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r = fd < 0 ? sbx_error_set(err, errno, "workspace %s", id) : walk(&c, fd, "", 0);
        *ret = c.list;
        *ret_truncated = c.truncated;
        return r;
}

int workspace_remove(int work_dirfd, const char *work_path, const char *id) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s", work_path, id);
        /* A workspace of its own file system goes at once (the kernel frees
         * the tmpfs when the job's last reference to it is gone); a
         * directory is deleted file by file. */
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT && errno != EPERM)
                return -errno;
        return rm_rf_at(work_dirfd, id);
}
