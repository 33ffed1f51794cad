/* SPDX-License-Identifier: Apache-2.0 */
/* Resolution and the cache, on the event loop. A reference is resolved in
 * the tenant registry's verified index (from memory while it is younger
 * than index_ttl, else fetched: one index task per registry and bundle
 * name, however many wait) to an entry, and the entry's sha256 to a tree
 * of the cache (else downloaded and unpacked: one archive task per
 * registry, bundle and digest, however many wait; a tree is shared by
 * digest once verified). Tasks run on the bundle pool; their verdicts come
 * back here, where every waiter is told. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "bundle-internal.h"
#include "cachefs.h"
#include "fetch.h"
#include "log.h"
#include "registry.h"

enum btask_kind { BT_INDEX, BT_ARCHIVE };

struct btask {
        struct work work;
        struct bundles *b;
        struct list link;          /* in b->tasks */
        struct list waiters;       /* struct bwait.link */
        enum btask_kind kind;
        struct index_job ij;
        struct archive_job aj;
        /* A full cache file system: trees renamed away for room, deleted
         * by the one retry before it downloads again. */
        bool retried;
        char (*trash)[96];
        size_t n_trash;
        uint64_t room_bytes;
};

/* Trees to remove for room: least recently used first, until they add
 * up to this many times the archive's size (its download and its tree,
 * which may well unpack larger). */
#define ROOM_FACTOR 4

/* A verified index in memory. */
struct known {
        struct list link;
        const struct registry_conf *reg;
        struct bundle_index ix;
        uint64_t fetched_ms;       /* monotonic */
};

static void have_index(struct bundles *b, struct bwait *w, const struct bundle_index *ix, bool older, uint64_t floor);

/* ---- the cache ---------------------------------------------------------- */

struct rm_work {
        struct work work;
        int cache_fd;
        char name[96];
};

static void rm_run(struct work *w) {
        struct rm_work *r = container_of(w, struct rm_work, work);
        cachefs_remove(r->cache_fd, r->name);
}

static void rm_done(struct work *w) {
        free(container_of(w, struct rm_work, work));
}

/* Out of the cache at once (renamed away: no job can be given it any
 * more), deleted off the loop. */
static void remove_tree(struct bundles *b, struct cache_entry *e, const char *tenant, json_t *removed) {
        struct rm_work *rw = calloc(1, sizeof(*rw));
        cache_remove(&b->cache, e);
        log_info("cache: %s %s (%s, %" PRIu64 " bytes) removed", e->name, e->version, e->sha256, e->bytes);
        /* A tenant hears of the trees it used only. */
        if (removed && tenant && cache_entry_used_by(e, tenant))
                json_array_append_new(removed, json_pack("{s:s, s:s, s:s, s:s, s:I}", "sha256", e->sha256, "registry", e->registry,
                                                         "name", e->name, "version", e->version, "bytes", (json_int_t) e->bytes));
        int r = rw ? cachefs_trash(b->cache_fd, e->sha256, b->trash_seq++, rw->name, sizeof(rw->name)) : -ENOMEM;
        if (r < 0) {
                log_warning("cache: cannot remove %s: %s; it goes at the next start", e->sha256, strerror(-r));
                free(rw);
        } else {
                rw->cache_fd = b->cache_fd;
                rw->work.run = rm_run;
                rw->work.done = rm_done;
                pool_submit(&b->pool, &rw->work);
        }
        cache_entry_free(e);
}

static void save_users(struct bundles *b, const struct cache_entry *e) {
        int r = cachefs_write_meta(b->cache_fd, e);
        if (r < 0)
                log_warning("cache: %s: cannot note its users: %s", e->sha256, strerror(-r));
}

uint64_t bundle_evict(struct bundles *b, bool all, const char *tenant, json_t *removed) {
        const struct config *cfg = b->cfg;
        uint64_t freed = 0;
        struct cache_entry *e;
        while ((e = cache_victim(&b->cache, cfg->cache_size, cfg->cache_max_age_ms, now_real_ms()))) {
                freed += e->bytes;
                remove_tree(b, e, tenant, removed);
        }
        if (!all)
                return freed;
        /* Another tenant's unused tree is not this one's to remove, even
         * from a registry they share: it only stops counting as a user. */
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &b->cache.lru) {
                e = list_entry(pos, struct cache_entry, link);
                if (e->refs > 0 || !cache_entry_used_by(e, tenant))
                        continue;
                if (e->n_tenants == 1) {
                        freed += e->bytes;
                        remove_tree(b, e, tenant, removed);
                } else if (cache_entry_drop_tenant(e, tenant))
                        save_users(b, e);
        }
        return freed;
}

void bundle_unpin(struct bundles *b, struct cache_entry *e) {
        uint64_t now = now_real_ms();
        cache_unpin(&b->cache, e, now);
        if (e->refs == 0) {
                /* The last use, for the LRU order after a restart. */
                cachefs_touch(b->cache_fd, e->sha256, now);
                if (b->cache.bytes > b->cfg->cache_size)
                        bundle_evict(b, false, NULL, NULL);
        }
}

/* ---- known indexes -------------------------------------------------------- */

static struct known *known_find(struct bundles *b, const struct registry_conf *reg, const char *name) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &b->known) {
                struct known *k = list_entry(pos, struct known, link);
                if (k->reg == reg && streq(k->ix.name, name))
                        return k;
        }
        return NULL;
}

const struct bundle_index *bundle_known(struct bundles *b, const struct registry_conf *reg, const char *name) {
        struct known *k = known_find(b, reg, name);
        return k ? &k->ix : NULL;
}

static void known_free(struct known *k) {
        index_free(&k->ix);
        free(k);
}

/* Keep ix (taken) as the verified index of reg/name. */
static struct known *known_store(struct bundles *b, const struct registry_conf *reg, struct bundle_index *ix) {
        struct known *k = known_find(b, reg, ix->name);
        if (!k) {
                if (!(k = calloc(1, sizeof(*k)))) {
                        index_free(ix);
                        return NULL;
                }
                k->reg = reg;
                b->n_known++;
        } else {
                list_del(&k->link);
                index_free(&k->ix);
        }
        k->ix = *ix;
        memset(ix, 0, sizeof(*ix));
        k->fetched_ms = now_mono_ms();
        list_add_tail(&b->known, &k->link);
        while (b->n_known > KNOWN_MAX) {
                struct known *old = list_entry(b->known.next, struct known, link);
                list_del(&old->link);
                known_free(old);
                b->n_known--;
        }
        return k;
}

/* ---- telling waiters -------------------------------------------------------- */

static void tell(struct bwait *w, struct resolution *r) {
        r->resolve_us = now_mono_us() - w->t0_us;
        r->download_us = w->download_us;
        r->verify_us = w->verify_us;
        r->extract_us = w->extract_us;
        w->task = NULL;
        w->ready(w, r);
}

static void fail(struct bwait *w, const char *code, const char *msg) {
        struct resolution r = { .code = code, .msg = msg };
        tell(w, &r);
}

static void succeed(struct bundles *b, struct bwait *w, struct cache_entry *e, const char *stale_why,
                    const struct bundle_index *ix) {
        cache_pin(&b->cache, e, now_real_ms());
        int added = w->tenant ? cache_entry_add_tenant(e, w->tenant) : 0;
        if (added > 0)
                save_users(b, e);
        else if (added < 0)
                log_warning("cache: %s: cannot note tenant %s as its user: %s", e->sha256, w->tenant, strerror(-added));
        struct resolution r = {
                .entry = e,
                .from_cache = !w->downloaded,
                .stale = stale_why != NULL,
                .stale_why = stale_why,
                .serial = stale_why ? 0 : w->serial,
                .index = ix,
        };
        tell(w, &r);
}

/* The registry could not be asked: with offline = use-cached, the newest
 * cached tree the reference admits runs, marked stale. */
static void fail_or_stale(struct bundles *b, struct bwait *w, const struct reg_verdict *v) {
        char msg[1400];
        if (v->unavailable && w->reg->offline == OFFLINE_USE_CACHED) {
                struct cache_entry *e = cache_newest(&b->cache, w->reg->name, &w->ref);
                if (e) {
                        succeed(b, w, e, v->msg, NULL);
                        return;
                }
                snprintf(msg, sizeof(msg), "%s; no cached version of %s to run instead (offline = use-cached)", v->msg,
                         w->ref.name);
                fail(w, v->code, msg);
                return;
        }
        fail(w, v->code, v->msg);
}

/* ---- tasks ----------------------------------------------------------------- */

/* An index task is one registry's and bundle name's; an archive task one
 * registry's, bundle name's and digest's. A download is never shared
 * across registries: a waiter would wait on, and be told the failure of,
 * a registry (and a bundle) of another tenant. Only a verified tree is
 * shared by digest (have_entry). */
static struct btask *task_find(struct bundles *b, enum btask_kind kind, const struct registry_conf *reg, const char *name,
                               const char *sha256) {
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &b->tasks) {
                struct btask *t = list_entry(pos, struct btask, link);
                if (t->kind != kind)
                        continue;
                if (kind == BT_INDEX && t->ij.reg == reg && streq(t->ij.name, name))
                        return t;
                if (kind == BT_ARCHIVE && t->aj.reg == reg && streq(t->aj.name, name) && streq(t->aj.entry.sha256, sha256))
                        return t;
        }
        return NULL;
}

static void join(struct btask *t, struct bwait *w) {
        w->task = t;
        list_add_tail(&t->waiters, &w->link);
}

static void task_run(struct work *wk) {
        struct btask *t = container_of(wk, struct btask, work);
        for (size_t i = 0; i < t->n_trash; i++)
                cachefs_remove(t->aj.cache_fd, t->trash[i]);
        t->n_trash = 0;
        if (t->kind == BT_INDEX)
                registry_fetch_index(&t->ij);
        else
                registry_fetch_archive(&t->aj);
}

static void audit_fetch(const struct btask *t) {
        const struct reg_verdict *v = t->kind == BT_INDEX ? &t->ij.v : &t->aj.v;
        const char *name = t->kind == BT_INDEX ? t->ij.name : t->aj.name;
        const struct registry_conf *reg = t->kind == BT_INDEX ? t->ij.reg : t->aj.reg;
        json_t *rec = json_pack("{s:s, s:s, s:s, s:s, s:s}", "event", "bundle_fetch", "what",
                                t->kind == BT_INDEX ? "index" : "archive", "registry", reg->name, "bundle", name, "decision",
                                v->code ? "failed" : "verified");
        if (!rec)
                return;
        if (t->kind == BT_INDEX && !v->code)
                json_object_set_new(rec, "serial", json_integer((json_int_t) t->ij.ix.serial));
        if (t->kind == BT_ARCHIVE)
                json_object_set_new(rec, "sha256", json_string(t->aj.entry.sha256));
        if (v->code) {
                json_object_set_new(rec, "code", json_string(v->code));
                json_object_set_new(rec, "message", json_string(v->msg) ?: json_string("?"));
        }
        audit_write_deferred(rec);
        if (v->code)
                log_warning("registry %s: %s: %s: %s", reg->name, name, v->code, v->msg);
        else
                log_info("registry %s: %s: %s verified", reg->name, name, t->kind == BT_INDEX ? "index" : "archive");
}

static void index_done(struct bundles *b, struct btask *t) {
        struct index_job *ij = &t->ij;
        const struct bundle_index *ix = &ij->ix;
        if (!ij->v.code && !ij->older) {
                struct known *k = known_store(b, ij->reg, &ij->ix);
                ix = k ? &k->ix : NULL;
                if (!ix)
                        ij->v.code = E_INTERNAL;
        }
        while (!list_empty(&t->waiters)) {
                struct bwait *w = list_entry(t->waiters.next, struct bwait, link);
                list_del(&w->link);
                w->task = NULL;
                w->download_us += ij->v.download_us;
                w->verify_us += ij->v.verify_us;
                if (ij->v.code)
                        fail_or_stale(b, w, &ij->v);
                else
                        have_index(b, w, ix, ij->older, ij->floor);
        }
        index_free(&ij->ix);
}

/* The cache's file system was full: unused trees go, least recently
 * used first, and the archive is fetched once more. False when nothing
 * could be removed, or after the retry. */
static bool make_room(struct bundles *b, struct btask *t) {
        struct archive_job *aj = &t->aj;
        if (!aj->v.no_space || t->retried || atomic_load(&b->stop))
                return false;
        t->retried = true;
        uint64_t want = aj->entry.size * ROOM_FACTOR;
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &b->cache.lru) {
                struct cache_entry *e = list_entry(pos, struct cache_entry, link);
                if (t->room_bytes >= want)
                        break;
                if (e->refs > 0)
                        continue;
                char (*more)[96] = realloc(t->trash, (t->n_trash + 1) * sizeof(*more));
                if (!more)
                        break;
                t->trash = more;
                int r = cachefs_trash(b->cache_fd, e->sha256, b->trash_seq++, t->trash[t->n_trash], sizeof(t->trash[0]));
                if (r < 0) {
                        log_warning("cache: cannot remove %s: %s", e->sha256, strerror(-r));
                        continue;
                }
                log_info("cache: %s %s (%s, %" PRIu64 " bytes) removed: the cache's file system is full", e->name, e->version,
                         e->sha256, e->bytes);
                t->n_trash++;
                t->room_bytes += e->bytes;
                cache_remove(&b->cache, e);
                cache_entry_free(e);
        }
        if (t->n_trash == 0)
                return false;
        log_notice("registry %s: %s: the cache's file system was full; %zu unused trees (%" PRIu64 " bytes) removed, fetching again",
                   aj->reg->name, aj->name, t->n_trash, t->room_bytes);
        memset(&aj->v, 0, sizeof(aj->v));
        pool_submit(&b->pool, &t->work);
        return true;
}

static void archive_done(struct bundles *b, struct btask *t) {
        struct archive_job *aj = &t->aj;
        /* Not E_INTERNAL: the operator's disk, said so. */
        if (aj->v.no_space) {
                char msg[sizeof(aj->v.msg)];
                snprintf(msg, sizeof(msg), "the bundle cache's file system is full: %.900s; %s", aj->v.msg,
                         t->retried ? "removing unused trees did not make room" : "no unused tree to remove");
                snprintf(aj->v.msg, sizeof(aj->v.msg), "%s", msg);
                aj->v.code = E_CACHE_FULL;
        }
        struct cache_entry *e = TAKE_PTR(aj->installed);
        /* Two registries' downloads of one digest: the first tree in
         * place is the one kept (cachefs_commit), and the one used. */
        struct cache_entry *have = e ? cache_find(&b->cache, e->sha256) : NULL;
        if (have) {
                cache_entry_free(e);
                e = have;
        } else if (e)
                cache_add(&b->cache, e);
        while (!list_empty(&t->waiters)) {
                struct bwait *w = list_entry(t->waiters.next, struct bwait, link);
                list_del(&w->link);
                w->task = NULL;
                w->downloaded = true;
                w->download_us += aj->v.download_us;
                w->verify_us += aj->v.verify_us;
                w->extract_us += aj->v.extract_us;
                if (aj->v.code || !e)
                        fail_or_stale(b, w, &aj->v);
                else
                        succeed(b, w, e, NULL, bundle_known(b, aj->reg, aj->name));
        }
        /* A new tree may take the cache past its budget. */
        if (e && b->cache.bytes > b->cfg->cache_size)
                bundle_evict(b, false, NULL, NULL);
}

static void task_done(struct work *wk) {
        struct btask *t = container_of(wk, struct btask, work);
        struct bundles *b = t->b;
        if (t->kind == BT_ARCHIVE && make_room(b, t))
                return;
        list_del(&t->link);
        audit_fetch(t);
        if (t->kind == BT_INDEX)
                index_done(b, t);
        else
                archive_done(b, t);
        free(t->trash);
        free(t);
}

static struct btask *task_new(struct bundles *b, enum btask_kind kind, const struct registry_conf *reg, const char *name) {
        struct btask *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->b = b;
        t->kind = kind;
        list_init(&t->waiters);
        t->work.run = task_run;
        t->work.done = task_done;
        if (kind == BT_INDEX) {
                t->ij.reg = reg;
                snprintf(t->ij.name, sizeof(t->ij.name), "%s", name);
                t->ij.serials_fd = b->serials_fd;
                t->ij.stop = &b->stop;
        } else {
                const struct config *cfg = b->cfg;
                t->aj.reg = reg;
                snprintf(t->aj.name, sizeof(t->aj.name), "%s", name);
                t->aj.cache_fd = b->cache_fd;
                t->aj.max_size = cfg->bundle_max_size;
                t->aj.max_unpacked = cfg->bundle_max_unpacked;
                t->aj.max_entries = cfg->bundle_max_entries;
                t->aj.extract_timeout_ms = cfg->bundle_extract_timeout_ms;
                t->aj.stop = &b->stop;
        }
        list_add_tail(&b->tasks, &t->link);
        return t;
}

static void submit(struct bundles *b, struct btask *t) {
        log_debug("registry %s: fetching %s %s", t->kind == BT_INDEX ? t->ij.reg->name : t->aj.reg->name,
                  t->kind == BT_INDEX ? t->ij.name : t->aj.name, t->kind == BT_INDEX ? "index" : t->aj.entry.file);
        pool_submit(&b->pool, &t->work);
}

/* ---- resolution -------------------------------------------------------- */

static void have_entry(struct bundles *b, struct bwait *w, const struct index_entry *e, const struct bundle_index *ix) {
        struct cache_entry *ce = cache_find(&b->cache, e->sha256);
        if (ce) {
                succeed(b, w, ce, NULL, ix);
                return;
        }
        struct btask *t = task_find(b, BT_ARCHIVE, w->reg, w->ref.name, e->sha256);
        if (!t && atomic_load(&b->stop)) {
                fail(w, E_SHUTTING_DOWN, "the daemon is stopping");
                return;
        }
        if (!t) {
                t = task_new(b, BT_ARCHIVE, w->reg, w->ref.name);
                if (!t) {
                        fail(w, E_INTERNAL, "out of memory");
                        return;
                }
                t->aj.entry = *e;
                submit(b, t);
        }
        join(t, w);
}

static void have_index(struct bundles *b, struct bwait *w, const struct bundle_index *ix, bool older, uint64_t floor) {
        char msg[600], ref[160];
        bundle_ref_str(&w->ref, ref, sizeof(ref));
        if (older && w->ref.kind != REF_DIGEST) {
                snprintf(msg, sizeof(msg),
                         "registry %s served the index of %s with serial %" PRIu64 ", older than serial %" PRIu64
                         " already seen (a rollback); a pinned digest (%s@sha256:...) may still run from it",
                         w->reg->name, w->ref.name, ix->serial, floor, w->ref.name);
                fail(w, E_BUNDLE_ROLLBACK, msg);
                return;
        }
        const struct index_entry *e = index_resolve(ix, &w->ref);
        if (!e) {
                snprintf(msg, sizeof(msg), "registry %s has no %s (index serial %" PRIu64 " lists %zu version%s)", w->reg->name,
                         ref, ix->serial, ix->n, ix->n == 1 ? "" : "s");
                fail(w, E_NOT_FOUND, msg);
                return;
        }
        w->serial = ix->serial;
        have_entry(b, w, e, older ? NULL : ix);
}

void bundle_resolve(struct bundles *b, struct bwait *w) {
        struct known *k = known_find(b, w->reg, w->ref.name);
        w->task = NULL;
        if (atomic_load(&b->stop)) {
                fail(w, E_SHUTTING_DOWN, "the daemon is stopping");
                return;
        }
        if (k && now_mono_ms() - k->fetched_ms < w->reg->index_ttl_ms) {
                have_index(b, w, &k->ix, false, 0);
                return;
        }
        struct btask *t = task_find(b, BT_INDEX, w->reg, w->ref.name, NULL);
        if (!t) {
                t = task_new(b, BT_INDEX, w->reg, w->ref.name);
                if (!t) {
                        fail(w, E_INTERNAL, "out of memory");
                        return;
                }
                submit(b, t);
        }
        join(t, w);
}

void bundle_wait_cancel(struct bwait *w) {
        if (w->task) {
                list_del(&w->link);
                w->task = NULL;
        }
}

/* ---- the daemon's side ---------------------------------------------------- */

static void on_pool(struct source *s, uint32_t events) {
        struct bundles *b = container_of(s, struct bundles, src);
        pool_complete(&b->pool);
}

int bundles_init(struct bundles **ret, const struct config *cfg, int state_fd, struct sbx_error *err) {
        struct bundles *b = calloc(1, sizeof(*b));
        if (!b)
                return sbx_error_set(err, ENOMEM, "bundles");
        *ret = b;
        b->cfg = cfg;
        b->cache_fd = b->serials_fd = -1;
        b->pool.efd = -1;
        atomic_init(&b->stop, false);
        cache_init(&b->cache);
        list_init(&b->known);
        list_init(&b->tasks);
        if (fetch_global_init() < 0)
                return sbx_error_msg(err, EIO, "libcurl initialisation failed");
        const char *dir = cfg->state_dir;
        int r = cachefs_open(state_fd, &b->cache, &b->cache_fd, err);
        if (r < 0)
                return sbx_error_wrap(err, "state_dir %s", dir);
        if (mkdirat(state_fd, "registry", 0700) < 0 && errno != EEXIST)
                return sbx_error_set(err, errno, "state_dir %s: registry", dir);
        b->serials_fd = openat(state_fd, "registry", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (b->serials_fd < 0)
                return sbx_error_set(err, errno, "state_dir %s: registry", dir);
        int efd = pool_start(&b->pool, BUNDLE_THREADS);
        if (efd < 0)
                return sbx_error_set(err, efd, "bundle threads");
        if ((r = loop_add(&b->src, efd, EPOLLIN, on_pool)) < 0)
                return sbx_error_set(err, r, "bundle threads");
        if (b->cache.n)
                log_info("cache: %zu bundles, %" PRIu64 " bytes (budget %" PRIu64 ")", b->cache.n, b->cache.bytes,
                         cfg->cache_size);
        bundle_evict(b, false, NULL, NULL);
        return 0;
}

void bundles_stop(struct bundles *b) {
        if (b)
                atomic_store(&b->stop, true);
}

void bundles_housekeeping(struct bundles *b) {
        if (b)
                bundle_evict(b, false, NULL, NULL);
}

void bundles_cache_stats(const struct bundles *b, uint64_t *ret_bytes, uint64_t *ret_entries) {
        *ret_bytes = b ? b->cache.bytes : 0;
        *ret_entries = b ? b->cache.n : 0;
}

void bundles_done(struct bundles *b) {
        if (!b)
                return;
        atomic_store(&b->stop, true);
        if (b->src.fd > 0)
                loop_del(&b->src);
        /* Tasks in flight end at once (stopped); their waiters hear so. */
        pool_stop(&b->pool);
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &b->known) {
                struct known *k = list_entry(pos, struct known, link);
                list_del(&k->link);
                known_free(k);
        }
        cache_done(&b->cache);
        if (b->cache_fd >= 0)
                close(b->cache_fd);
        if (b->serials_fd >= 0)
                close(b->serials_fd);
        fetch_global_done();
        free(b);
}
