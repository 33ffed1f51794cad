/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cachefs.h"
#include "semver.h"

#define META_MAX 4096

static void random_hex(char out[17]) {
        unsigned char r[8];
        if (getrandom(r, sizeof(r), 0) != sizeof(r)) {
                uint64_t t = now_mono_us() ^ ((uint64_t) getpid() << 32);
                memcpy(r, &t, sizeof(r));
        }
        hex_encode(r, sizeof(r), out);
}

int cachefs_tree_mount(int cache_fd, const char *sha256) {
        char path[SHA256_HEX + sizeof("/" CACHEFS_TREE)];
        snprintf(path, sizeof(path), "%s/" CACHEFS_TREE, sha256);
        _cleanup_close_ int fd = (int) syscall(SYS_open_tree, cache_fd, path,
                                               OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT);
        if (fd < 0)
                return -errno;
        struct mount_attr ma = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
        if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &ma, sizeof(ma)) < 0)
                return -errno;
        return TAKE_FD(fd);
}

int cachefs_tree_open(int cache_fd, const char *sha256) {
        char path[SHA256_HEX + sizeof("/" CACHEFS_TREE)];
        snprintf(path, sizeof(path), "%s/" CACHEFS_TREE, sha256);
        int fd = openat(cache_fd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

char *cachefs_tree_path(const char *state_dir, const char *sha256) {
        char *p = NULL;
        return asprintf(&p, "%s/cache/%s/" CACHEFS_TREE, state_dir, sha256) < 0 ? NULL : p;
}

/* One bundle of the cache, from its meta.json and its manifest; NULL when
 * it is not whole (then it is removed). */
static struct cache_entry *load_one(int cache_fd, const char *sha) {
        _cleanup_close_ int dir = openat(cache_fd, sha, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_free_ char *text = NULL;
        struct stat st;
        struct sbx_error err;
        json_error_t je;
        if (dir < 0 || fstat(dir, &st) < 0 || read_file_at(dir, CACHEFS_META, META_MAX, &text, NULL) < 0)
                return NULL;
        /* A tree an older daemon kept open to all (0711). */
        if ((st.st_mode & 07777) != 0700)
                (void) fchmod(dir, 0700);
        json_t *meta = json_loads(text, 0, &je);
        const char *registry = NULL, *name = NULL, *version = NULL, *msha = NULL;
        json_int_t bytes = -1;
        if (!meta || json_unpack(meta, "{s:s, s:s, s:s, s:s, s:I}", "registry", &registry, "name", &name, "version", &version,
                                 "sha256", &msha, "bytes", &bytes) < 0 ||
            !streq(msha, sha) || !semver_valid(version) || bytes < 0) {
                json_decref(meta);
                return NULL;
        }
        struct manifest m;
        manifest_init(&m);
        _cleanup_close_ int tree = openat(dir, CACHEFS_TREE, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_free_ char *mtext = NULL;
        size_t mlen = 0;
        struct cache_entry *e = NULL;
        if (tree >= 0 && read_file_at(tree, MANIFEST_FILE, MANIFEST_MAX_SIZE, &mtext, &mlen) == 0 &&
            manifest_parse(&m, MANIFEST_FILE, mtext, mlen, &err) == 0)
                e = cache_entry_new(sha, registry, name, version, (uint64_t) bytes,
                                    (uint64_t) st.st_mtim.tv_sec * 1000 + (uint64_t) st.st_mtim.tv_nsec / 1000000, &m);
        /* Who used it (absent in a cache of an older daemon: then no
         * tenant's gc --all removes it, only the budget and the age). */
        json_t *users = json_object_get(meta, "tenants");
        for (size_t i = 0; e && i < json_array_size(users) && i < CACHEFS_MAX_TENANTS; i++) {
                const char *t = json_string_value(json_array_get(users, i));
                if (t && cache_entry_add_tenant(e, t) < 0) {
                        cache_entry_free(e);
                        e = NULL;
                }
        }
        manifest_free(&m);
        json_decref(meta);
        return e;
}

int cachefs_open(int state_fd, struct cache *c, int *ret_fd, struct sbx_error *err) {
        if (mkdirat(state_fd, "cache", 0700) < 0 && errno != EEXIST)
                return sbx_error_set(err, errno, "cache directory");
        _cleanup_close_ int fd = openat(state_fd, "cache", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return sbx_error_set(err, errno, "cache directory");
        /* 0711 before: a local user who knew a digest read the bundle. */
        if (fchmod(fd, 0700) < 0)
                return sbx_error_set(err, errno, "cache directory");
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_dup(fd, &d);
        if (r < 0)
                return sbx_error_set(err, r, "cache directory");
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                struct cache_entry *e = sha256_hex_valid(de->d_name) ? load_one(fd, de->d_name) : NULL;
                if (e) {
                        cache_add(c, e);
                        continue;
                }
                /* Staging or trash a crash left, or a tree that is not
                 * whole: never used, removed. */
                cachefs_remove(fd, de->d_name);
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int cachefs_stage(int cache_fd, const char *sha256, char *name_out, size_t len, int *ret_stage_fd, int *ret_tree_fd,
                  struct sbx_error *err) {
        char rnd[17];
        random_hex(rnd);
        snprintf(name_out, len, ".staging-%.16s-%s", sha256, rnd);
        if (mkdirat(cache_fd, name_out, 0700) < 0)
                return sbx_error_set(err, errno, "cache staging");
        _cleanup_close_ int stage = openat(cache_fd, name_out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (stage < 0 || mkdirat(stage, CACHEFS_TREE, 0755) < 0)
                return sbx_error_set(err, errno, "cache staging");
        int tree = openat(stage, CACHEFS_TREE, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (tree < 0)
                return sbx_error_set(err, errno, "cache staging");
        *ret_stage_fd = TAKE_FD(stage);
        *ret_tree_fd = tree;
        return 0;
}

static char *meta_text(const struct cache_entry *e, size_t *ret_len) {
        json_t *users = json_array();
        for (size_t i = 0; users && i < e->n_tenants; i++)
                json_array_append_new(users, json_string(e->tenants[i]));
        json_t *meta = json_pack("{s:s, s:s, s:s, s:s, s:I, s:o*}", "registry", e->registry, "name", e->name, "version",
                                 e->version, "sha256", e->sha256, "bytes", (json_int_t) e->bytes, "tenants", users);
        char *text = meta ? json_line(meta, ret_len) : NULL;
        json_decref(meta);
        return text;
}

int cachefs_write_meta(int cache_fd, const struct cache_entry *e) {
        size_t len = 0;
        _cleanup_free_ char *text = meta_text(e, &len);
        if (!text)
                return -ENOMEM;
        _cleanup_close_ int dir = openat(cache_fd, e->sha256, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return -errno;
        _cleanup_close_ int fd = -1;
        int r = write_file_tmp(dir, CACHEFS_META, text, len, 0644, &fd);
        if (r < 0)
                return r;
        return renameat(dir, "." CACHEFS_META ".tmp", dir, CACHEFS_META) < 0 ? -errno : 0;
}

int cachefs_commit(int cache_fd, const char *staged, int stage_fd, const struct cache_entry *e, struct sbx_error *err) {
        size_t len = 0;
        _cleanup_free_ char *text = meta_text(e, &len);
        if (!text)
                return sbx_error_set(err, ENOMEM, "cache: meta.json");
        int r = write_file_durable(stage_fd, CACHEFS_META, text, len, 0644, false);
        if (r < 0)
                return sbx_error_set(err, r, "cache: meta.json");
        /* Reached by root only; jobs get the tree as a mount. */
        if (fchmod(stage_fd, 0700) < 0)
                return sbx_error_set(err, errno, "cache");
        /* Every file of the tree on disk before its name is: one syncfs
         * instead of an fsync per file. */
        if (syncfs(stage_fd) < 0)
                return sbx_error_set(err, errno, "cache: syncfs");
        if (renameat(cache_fd, staged, cache_fd, e->sha256) < 0) {
                /* Another registry's download of the same digest was
                 * first: the same verified bytes, so that tree serves. */
                if (errno == EEXIST || errno == ENOTEMPTY) {
                        cachefs_remove(cache_fd, staged);
                        return 0;
                }
                return sbx_error_set(err, errno, "cache: rename into place");
        }
        if (fsync(cache_fd) < 0)
                return sbx_error_set(err, errno, "cache: fsync");
        return 0;
}

/* Directories of a tree are 0555: as root that does not stop removing
 * them; a daemon that is not root makes them writable first. */
static void unseal(int dirfd, const char *name, int depth) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || depth > 600 || fchmod(fd, 0700) < 0)
                return;
        _cleanup_closedir_ DIR *d = NULL;
        if (opendir_dup(fd, &d) < 0)
                return;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && !streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        unseal(fd, de->d_name, depth + 1);
}

void cachefs_remove(int cache_fd, const char *name) {
        if (geteuid() != 0)
                unseal(cache_fd, name, 0);
        rm_rf_at(cache_fd, name);
}

int cachefs_trash(int cache_fd, const char *sha256, unsigned seq, char *trash_out, size_t len) {
        char rnd[17];
        random_hex(rnd);
        snprintf(trash_out, len, ".trash-%.16s-%u-%s", sha256, seq, rnd);
        return renameat(cache_fd, sha256, cache_fd, trash_out) < 0 ? -errno : 0;
}

void cachefs_touch(int cache_fd, const char *sha256, uint64_t real_ms) {
        struct timespec ts[2] = {
                { .tv_nsec = UTIME_OMIT },
                { .tv_sec = (time_t) (real_ms / 1000), .tv_nsec = (long) (real_ms % 1000) * 1000000 },
        };
        (void) utimensat(cache_fd, sha256, ts, AT_SYMLINK_NOFOLLOW);
}
