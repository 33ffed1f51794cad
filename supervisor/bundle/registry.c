/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cachefs.h"
#include "extract.h"
#include "unpack.h"
#include "minisign.h"
#include "proto.h"
#include "registry.h"

_printf_(3, 4) static void fail(struct reg_verdict *v, const char *code, const char *fmt, ...) {
        va_list ap;
        v->code = code;
        va_start(ap, fmt);
        vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
        va_end(ap);
}

static struct fetch_opts opts_of(const struct registry_conf *reg, const atomic_bool *stop) {
        return (struct fetch_opts) {
                .timeout_ms = reg->timeout_ms,
                .connect_timeout_ms = reg->connect_timeout_ms,
                .stall_timeout_ms = reg->stall_timeout_ms,
                .stop = stop,
        };
}

/* A transfer that failed: the registry was unreachable or failed to
 * answer (an offline policy may then use the cache), or it answered with
 * something that is not a bundle. */
static void transfer_failed(struct reg_verdict *v, const struct fetch_result *res, const char *not_found_code,
                            const char *not_found_msg) {
        switch (res->status) {
        case FETCH_NOT_FOUND:
                fail(v, not_found_code, "%s (%s)", not_found_msg, res->msg);
                return;
        case FETCH_TOO_BIG:
                fail(v, E_BUNDLE_INVALID, "%s", res->msg);
                return;
        case FETCH_STOPPED:
                fail(v, E_SHUTTING_DOWN, "%s", res->msg);
                return;
        case FETCH_LOCAL:
                fail(v, E_INTERNAL, "%s", res->msg);
                return;
        default:
                v->unavailable = true;
                fail(v, E_REGISTRY_UNAVAILABLE, "registry unreachable: %s", res->msg);
                return;
        }
}

/* STATE/registry/REGISTRY/NAME.serial: the highest serial seen. */
static uint64_t read_floor(int serials_fd, const char *reg, const char *name) {
        char path[256], *text = NULL;
        uint64_t v = 0;
        snprintf(path, sizeof(path), "%s/%s.serial", reg, name);
        if (read_file_at(serials_fd, path, 64, &text, NULL) == 0 && sscanf(text, "%" SCNu64, &v) != 1)
                v = 0;
        free(text);
        return v;
}

static int write_floor(int serials_fd, const char *reg, const char *name, uint64_t serial) {
        char file[128], text[32];
        if (mkdirat(serials_fd, reg, 0700) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_close_ int dir = openat(serials_fd, reg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return -errno;
        snprintf(file, sizeof(file), "%s.serial", name);
        int n = snprintf(text, sizeof(text), "%" PRIu64 "\n", serial);
        /* Durable before any job runs from this index: a crash must not
         * let an older index in again. */
        return write_file_durable(dir, file, text, (size_t) n, 0600, true);
}

static void verify_index(struct index_job *j, const char *text, size_t len, const char *sigtext, size_t siglen) {
        struct minisign_sig sig;
        struct sbx_error err;
        char what[160];
        uint64_t serial = 0;
        snprintf(what, sizeof(what), "%s/index.json.minisig", j->name);
        if (minisign_sig_parse(what, sigtext, siglen, &sig, &err) < 0) {
                fail(&j->v, E_BUNDLE_SIGNATURE, "registry %s: %s", j->reg->name, err.msg);
                return;
        }
        if (minisign_verify(j->reg->keys, j->reg->n_keys, &sig, text, len, &err) < 0) {
                fail(&j->v, E_BUNDLE_SIGNATURE, "registry %s: %s/index.json: %s", j->reg->name, j->name, err.msg);
                return;
        }
        if (index_comment_serial(sig.trusted, j->name, &serial, &err) < 0) {
                fail(&j->v, E_BUNDLE_INVALID, "registry %s: %s/index.json: %s", j->reg->name, j->name, err.msg);
                return;
        }
        if (index_parse(text, len, &j->ix, &err) < 0) {
                fail(&j->v, E_BUNDLE_INVALID, "registry %s: %s/%s", j->reg->name, j->name, err.msg);
                return;
        }
        if (!streq(j->ix.name, j->name)) {
                fail(&j->v, E_BUNDLE_INVALID, "registry %s: %s/index.json is the index of bundle '%s'", j->reg->name, j->name,
                     j->ix.name);
                index_free(&j->ix);
                return;
        }
        j->ix.serial = serial;
        j->floor = read_floor(j->serials_fd, j->reg->name, j->name);
        if (serial < j->floor) {
                j->older = true;
                return;
        }
        if (serial > j->floor) {
                int r = write_floor(j->serials_fd, j->reg->name, j->name, serial);
                if (r < 0) {
                        fail(&j->v, E_INTERNAL, "cannot keep the index's serial: %s", strerror(-r));
                        index_free(&j->ix);
                }
        }
}

void registry_fetch_index(struct index_job *j) {
        char url[1400];
        _cleanup_free_ char *text = NULL, *sigtext = NULL;
        size_t len = 0, siglen = 0;
        struct fetch_result res;
        struct fetch_opts o = opts_of(j->reg, j->stop);
        uint64_t t0 = now_mono_us();
        char nf[256];
        snprintf(nf, sizeof(nf), "registry %s has no bundle %s", j->reg->name, j->name);
        snprintf(url, sizeof(url), "%s/%s/index.json", j->reg->url, j->name);
        if (fetch_memory(url, &o, INDEX_MAX_SIZE, &text, &len, &res) < 0) {
                transfer_failed(&j->v, &res, E_NOT_FOUND, nf);
                j->v.download_us = now_mono_us() - t0;
                return;
        }
        snprintf(url, sizeof(url), "%s/%s/index.json.minisig", j->reg->url, j->name);
        if (fetch_memory(url, &o, MINISIGN_MAX_FILE, &sigtext, &siglen, &res) < 0) {
                snprintf(nf, sizeof(nf), "registry %s: %s/index.json is not signed", j->reg->name, j->name);
                transfer_failed(&j->v, &res, E_BUNDLE_SIGNATURE, nf);
                j->v.download_us = now_mono_us() - t0;
                return;
        }
        uint64_t t1 = now_mono_us();
        j->v.download_us = t1 - t0;
        verify_index(j, text, len, sigtext, siglen);
        j->v.verify_us = now_mono_us() - t1;
}

/* A local failure that a full cache file system explains: the caller
 * may make room and try again (bundle.c). */
static void note_space(struct archive_job *j, int errnum) {
        if (errnum == ENOSPC || errnum == EDQUOT)
                j->v.no_space = true;
}

/* The archive into an unlinked file of the cache's file system (a crash
 * leaves nothing of it), its size and digest checked against the index. */
static int download(struct archive_job *j, int *ret_fd) {
        char url[1400], name[96], rnd[17];
        unsigned char digest[32];
        char hex[65];
        struct fetch_result res;
        struct fetch_opts o = opts_of(j->reg, j->stop);
        const struct index_entry *e = &j->entry;
        uint64_t t0 = now_mono_us();
        unsigned char r8[8];
        for (int i = 0; i < 8; i++)
                r8[i] = (unsigned char) (t0 >> (i * 8));
        hex_encode(r8, sizeof(r8), rnd);
        snprintf(name, sizeof(name), ".dl-%.16s-%s", e->sha256, rnd);
        _cleanup_close_ int fd = openat(j->cache_fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                note_space(j, errno);
                fail(&j->v, E_INTERNAL, "cache: %s", strerror(errno));
                return -1;
        }
        unlinkat(j->cache_fd, name, 0);
        snprintf(url, sizeof(url), "%s/%s/%s", j->reg->url, j->name, e->file);
        /* One byte past the size the index gives tells a longer file. */
        int r = fetch_file(url, &o, fd, e->size + 1, digest, &res);
        j->v.download_us = now_mono_us() - t0;
        if (r < 0) {
                if (res.status == FETCH_TOO_BIG)
                        fail(&j->v, E_BUNDLE_INTEGRITY, "%s: more bytes than the %" PRIu64 " the signed index gives", url, e->size);
                else if (res.status == FETCH_TRUNCATED)
                        fail(&j->v, E_BUNDLE_INTEGRITY, "%s: the download was cut short: %" PRIu64 " of %" PRIu64 " bytes", url,
                             res.bytes, e->size);
                else
                        transfer_failed(&j->v, &res, E_REGISTRY_UNAVAILABLE, "the registry does not have the archive its index lists");
                if (res.status == FETCH_LOCAL)
                        note_space(j, res.local_err);
                if (res.status == FETCH_NOT_FOUND)
                        j->v.unavailable = true;
                return -1;
        }
        uint64_t t1 = now_mono_us();
        hex_encode(digest, sizeof(digest), hex);
        if (res.bytes != e->size)
                fail(&j->v, E_BUNDLE_INTEGRITY, "%s: %" PRIu64 " bytes, the signed index gives %" PRIu64, url, res.bytes, e->size);
        else if (!streq(hex, e->sha256))
                fail(&j->v, E_BUNDLE_INTEGRITY, "%s: sha256 %s, the signed index gives %s", url, hex, e->sha256);
        j->v.verify_us = now_mono_us() - t1;
        if (j->v.code)
                return -1;
        if (lseek(fd, 0, SEEK_SET) < 0) {
                fail(&j->v, E_INTERNAL, "cache: %s", strerror(errno));
                return -1;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The unpacked tree's manifest must be the bundle the index says. */
static int read_manifest(struct archive_job *j, int tree_fd, struct manifest *m) {
        _cleanup_free_ char *text = NULL;
        struct sbx_error err;
        char name[256];
        size_t len = 0;
        snprintf(name, sizeof(name), "%s:" MANIFEST_FILE, j->entry.file);
        int r = read_file_at(tree_fd, MANIFEST_FILE, MANIFEST_MAX_SIZE, &text, &len);
        if (r < 0) {
                fail(&j->v, E_BUNDLE_INVALID, "%s: %s", name,
                     r == -ENOENT ? "missing (every bundle has one at its root)"
                     : r == -ELOOP || r == -EINVAL ? "not a regular file"
                                                   : strerror(-r));
                return -1;
        }
        if (manifest_parse(m, name, text, len, &err) < 0) {
                fail(&j->v, E_BUNDLE_INVALID, "%s", err.msg);
                return -1;
        }
        if (!streq(m->name, j->name) || !streq(m->version, j->entry.version)) {
                fail(&j->v, E_BUNDLE_INVALID, "%s: the manifest is of %s %s, the index lists it as %s %s", name, m->name,
                     m->version, j->name, j->entry.version);
                return -1;
        }
        return 0;
}

static int unpack(struct archive_job *j, int fd, int tree_fd, struct extract_stats *st) {
        struct sbx_error err;
        struct unpack_limits lim = {
                .x = { .max_bytes = j->max_unpacked, .max_entries = j->max_entries, .max_path = EXTRACT_MAX_PATH },
                .timeout_ms = j->extract_timeout_ms,
        };
        uint64_t t0 = now_mono_us();
        int r = unpack_archive(NULL, fd, tree_fd, &lim, j->stop, st, &err);
        j->v.extract_us = now_mono_us() - t0;
        /* The child that overran or crashed did so on this archive. */
        if (r == -EINVAL || r == -EFBIG || r == -ETIMEDOUT || r == -ECHILD)
                fail(&j->v, E_BUNDLE_INVALID, "%s: %s", j->entry.file, err.msg);
        else if (r == -ECANCELED)
                fail(&j->v, E_SHUTTING_DOWN, "%s", err.msg);
        else if (r < 0) {
                note_space(j, -r);
                fail(&j->v, E_INTERNAL, "%s: %s", j->entry.file, err.msg);
        }
        return r;
}

void registry_fetch_archive(struct archive_job *j) {
        _cleanup_close_ int fd = -1, stage_fd = -1, tree_fd = -1;
        char staged[96];
        struct sbx_error err;
        struct extract_stats st;
        struct manifest m;
        if (j->entry.size > j->max_size) {
                fail(&j->v, E_BUNDLE_INVALID, "%s: %" PRIu64 " bytes, above this daemon's bundle_max_size of %" PRIu64,
                     j->entry.file, j->entry.size, j->max_size);
                return;
        }
        if (download(j, &fd) < 0)
                return;
        if (cachefs_stage(j->cache_fd, j->entry.sha256, staged, sizeof(staged), &stage_fd, &tree_fd, &err) < 0) {
                note_space(j, err.code);
                fail(&j->v, E_INTERNAL, "%s", err.msg);
                return;
        }
        manifest_init(&m);
        uint64_t t0 = now_mono_us();
        int r = unpack(j, fd, tree_fd, &st);
        if (r == 0)
                r = read_manifest(j, tree_fd, &m);
        if (r == 0 && fchmod(tree_fd, 0555) < 0)
                r = -errno;
        if (r == 0) {
                j->installed = cache_entry_new(j->entry.sha256, j->reg->name, j->name, j->entry.version, st.bytes, now_real_ms(), &m);
                if (!j->installed)
                        fail(&j->v, E_INTERNAL, "out of memory");
                else if (cachefs_commit(j->cache_fd, staged, stage_fd, j->installed, &err) < 0) {
                        note_space(j, err.code);
                        fail(&j->v, E_INTERNAL, "%s", err.msg);
                }
        } else if (!j->v.code) {
                note_space(j, -r);
                fail(&j->v, E_INTERNAL, "cache: %s", strerror(-r));
        }
        j->v.extract_us = now_mono_us() - t0;
        manifest_free(&m);
        if (j->v.code) {
                cache_entry_free(j->installed);
                j->installed = NULL;
                /* Nothing of a failed bundle is kept. */
                cachefs_remove(j->cache_fd, staged);
        }
}
