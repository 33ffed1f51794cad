/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "deps-cache.h"
#include "deps.h"
#include "log.h"
#include "util.h"
#include "worker.h"

#define BY_REQUEST "by-request"
#define READY_FILE "lock.json"
#define GC_PREFIX ".gc-"

struct layer {
        char key[DEPS_KEY_HEX + 1];
        uint64_t bytes;
        int64_t used;         /* last use, Unix seconds */
        unsigned users;       /* jobs that hold it */
};

struct deps_cache {
        int dir_fd;
        char path[4200];
        struct layer *v;
        size_t n, cap;
        uint64_t bytes;
        unsigned gc_seq;
        bool warned;          /* over the bound with every layer held: said once */
};

/* A layer out of the way, removed off the loop. */
struct gc {
        struct work work;
        char path[4300];      /* STATE/deps/.gc-KEY.N */
        char refs[4300];      /* STATE/deps/by-request */
        char key[DEPS_KEY_HEX + 1];
};

static _Thread_local uint64_t tree_bytes;

static int count_one(const char *p, const struct stat *st, int type, struct FTW *f) {
        (void) p;
        (void) f;
        if (type == FTW_F)
                tree_bytes += (uint64_t) st->st_size;
        return 0;
}

static int remove_one(const char *p, const struct stat *st, int type, struct FTW *f) {
        (void) st;
        (void) type;
        (void) f;
        return remove(p) < 0 && errno != ENOENT ? -1 : 0;
}

static struct layer *find(struct deps_cache *c, const char *key) {
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->v[i].key, key))
                        return &c->v[i];
        return NULL;
}

static struct layer *add(struct deps_cache *c, const char *key, uint64_t bytes, int64_t used) {
        if (c->n == c->cap) {
                size_t cap = c->cap ? 2 * c->cap : 16;
                struct layer *v = realloc(c->v, cap * sizeof(*v));
                if (!v)
                        return NULL;
                c->v = v;
                c->cap = cap;
        }
        struct layer *l = &c->v[c->n++];
        memset(l, 0, sizeof(*l));
        snprintf(l->key, sizeof(l->key), "%s", key);
        l->bytes = bytes;
        l->used = used;
        c->bytes += bytes;
        return l;
}

int deps_cache_open(int dir_fd, const char *path, struct deps_cache **ret, struct sbx_error *err) {
        struct deps_cache *c = calloc(1, sizeof(*c));
        if (!c)
                return sbx_error_set(err, ENOMEM, "packages' layers");
        c->dir_fd = dir_fd;
        snprintf(c->path, sizeof(c->path), "%s", path);
        int fd = dup(dir_fd);
        DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
        if (!dir) {
                if (fd >= 0)
                        close(fd);
                free(c);
                return sbx_error_set(err, errno, "%s", path);
        }
        struct dirent *e;
        while ((e = readdir(dir))) {
                char p[4500], lockp[DEPS_KEY_HEX + 16];
                struct stat st;
                /* half made (an install's move) or half removed (a crash) */
                if (strncmp(e->d_name, GC_PREFIX, strlen(GC_PREFIX)) == 0 ||
                    (strlen(e->d_name) > 4 && streq(e->d_name + strlen(e->d_name) - 4, ".tmp"))) {
                        snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
                        if (nftw(p, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
                                log_warning("packages: removing %s: %s", p, strerror(errno));
                        continue;
                }
                if (!deps_is_hex64(e->d_name))
                        continue;
                snprintf(lockp, sizeof(lockp), "%.64s/" READY_FILE, e->d_name);
                if (fstatat(dir_fd, lockp, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                snprintf(p, sizeof(p), "%s/%.64s/" DEPS_LAYER_DIR, path, e->d_name);
                tree_bytes = 0;
                nftw(p, count_one, 16, FTW_PHYS);
                if (!add(c, e->d_name, tree_bytes, (int64_t) st.st_mtime)) {
                        closedir(dir);
                        deps_cache_free(c);
                        return sbx_error_set(err, ENOMEM, "packages' layers");
                }
        }
        closedir(dir);
        *ret = c;
        return 0;
}

void deps_cache_free(struct deps_cache *c) {
        if (!c)
                return;
        free(c->v);
        free(c);
}

void deps_cache_use(struct deps_cache *c, const char *key) {
        struct layer *l = find(c, key);
        char lockp[DEPS_KEY_HEX + 16];
        if (!l && !(l = add(c, key, 0, 0)))
                return;
        l->users++;
        l->used = (int64_t) time(NULL);
        /* the last use survives a restart: the lock's times */
        snprintf(lockp, sizeof(lockp), "%.64s/" READY_FILE, key);
        utimensat(c->dir_fd, lockp, NULL, AT_SYMLINK_NOFOLLOW);
}

void deps_cache_unuse(struct deps_cache *c, const char *key) {
        struct layer *l = find(c, key);
        if (l && l->users > 0)
                l->users--;
}

uint64_t deps_cache_bytes(const struct deps_cache *c, size_t *count) {
        if (count)
                *count = c->n;
        return c->bytes;
}

/* ---- removal, off the loop ---- */

static void gc_run(struct work *w) {
        struct gc *g = container_of(w, struct gc, work);
        if (nftw(g->path, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
                log_warning("packages: removing %s: %s", g->path, strerror(errno));
        /* the requests' keys that named it */
        DIR *dir = opendir(g->refs);
        struct dirent *e;
        while (dir && (e = readdir(dir))) {
                char buf[DEPS_KEY_HEX + 1];
                if (!deps_is_hex64(e->d_name))
                        continue;
                int fd = openat(dirfd(dir), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                ssize_t n = fd >= 0 ? read(fd, buf, DEPS_KEY_HEX) : -1;
                if (fd >= 0)
                        close(fd);
                if (n == DEPS_KEY_HEX && memcmp(buf, g->key, DEPS_KEY_HEX) == 0)
                        unlinkat(dirfd(dir), e->d_name, 0);
        }
        if (dir)
                closedir(dir);
}

static void gc_done(struct work *w) {
        free(container_of(w, struct gc, work));
}

/* Layer i out of the list and out of the way (a rename: no job finds it
 * from now on), its files removed by a worker. */
static void evict(struct deps_cache *c, size_t i) {
        struct layer l = c->v[i];
        char name[DEPS_KEY_HEX + 32];
        struct gc *g = calloc(1, sizeof(*g));
        snprintf(name, sizeof(name), GC_PREFIX "%s.%u", l.key, c->gc_seq++);
        if (!g || renameat(c->dir_fd, l.key, c->dir_fd, name) < 0) {
                log_warning("packages: layer %.12s could not be removed: %s", l.key, g ? strerror(errno) : "out of memory");
                free(g);
                /* out of the count all the same: it is not tried again and again */
        } else {
                snprintf(g->path, sizeof(g->path), "%s/%s", c->path, name);
                snprintf(g->refs, sizeof(g->refs), "%s/" BY_REQUEST, c->path);
                memcpy(g->key, l.key, sizeof(g->key));
                g->work.run = gc_run;
                g->work.done = gc_done;
                worker_submit(&g->work);
                log_info("packages: layer %.12s removed (%" PRIu64 " bytes, last used %" PRId64 " s ago): the layers held more "
                         "than deps_cache_size", l.key, l.bytes, (int64_t) time(NULL) - l.used);
        }
        c->bytes -= l.bytes;
        c->v[i] = c->v[--c->n];
}

void deps_cache_add(struct deps_cache *c, const char *key, uint64_t bytes, uint64_t cap) {
        struct layer *l = find(c, key);
        if (l) {
                /* made again from other pins, or known from a use */
                c->bytes = c->bytes - l->bytes + bytes;
                l->bytes = bytes;
        } else if (!add(c, key, bytes, (int64_t) time(NULL)))
                return;
        while (c->bytes > cap) {
                size_t best = c->n;
                for (size_t i = 0; i < c->n; i++)
                        if (c->v[i].users == 0 && !streq(c->v[i].key, key) && (best == c->n || c->v[i].used < c->v[best].used))
                                best = i;
                if (best == c->n) {
                        if (!c->warned)
                                log_warning("packages: the layers hold %" PRIu64 " bytes, more than deps_cache_size (%" PRIu64
                                            "), and every other one is held by a job", c->bytes, cap);
                        c->warned = true;
                        return;
                }
                evict(c, best);
        }
        c->warned = false;
}
