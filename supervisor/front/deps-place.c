/* SPDX-License-Identifier: Apache-2.0 */
/* The end of an install, on a worker thread: what pip and npm left (the
 * install job's artifacts, untrusted) read into the layer's lock, each
 * package's release time fetched when a tenant wants them, the layer's
 * files made readable by every job uid and counted, then moved under its
 * lock's key, and the request's key made to name it. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "deps-internal.h"
#include "fetch.h"
#include "macro.h"
#include "util.h"

static _Thread_local uint64_t layer_bytes;

static int chmod_one(const char *path, const struct stat *st, int type, struct FTW *f) {
        (void) f;
        if (type == FTW_SL)
                return 0;
        if (type == FTW_F)
                layer_bytes += (uint64_t) st->st_size;
        return chmod(path, type == FTW_D || type == FTW_DP ? 0755 : ((st->st_mode & 0100) ? 0755 : 0644)) < 0 ? -1 : 0;
}

/* A JSON file the install job left (untrusted; bounded). */
static json_t *load_artifact(const char *path, const char *what, char *why, size_t len) {
        json_error_t je;
        json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
        if (!o)
                snprintf(why, len, "%s left no %s: %s", what, path ? strrchr(path, '/') + 1 : "?", je.text);
        return o;
}

/* Each package's release time from the index or registry, into its lock
 * entry ("published"), for the tenants with deps_min_age. */
static int release_times(struct deps_install *in, char *why, size_t len) {
        size_t i;
        json_t *e;
        json_array_foreach(in->lock, i, e) {
                char url[1024];
                char *body = NULL;
                size_t blen = 0;
                struct fetch_result res;
                struct sbx_error err;
                bool npm = streq(json_string_value(json_object_get(e, "ecosystem")), "npm");
                struct fetch_opts o = { .timeout_ms = 30000, .connect_timeout_ms = 5000, .stall_timeout_ms = 10000,
                                        .accept = npm ? "application/json" : "application/vnd.pypi.simple.v1+json" };
                int64_t t;
                if (deps_meta_url(in->pip_index, in->npm_registry, e, url, sizeof(url)) < 0) {
                        snprintf(why, len, "no URL to read %s's release time from", json_string_value(json_object_get(e, "name")));
                        return -EINVAL;
                }
                if (fetch_memory(url, &o, 64u << 20, &body, &blen, &res) < 0) {
                        snprintf(why, len, "release times: %s", res.msg);
                        return -EIO;
                }
                json_error_t je;
                json_t *page = json_loadb(body, blen, 0, &je);
                free(body);
                if (!page) {
                        snprintf(why, len, "release times: %.600s is not JSON (%s)", url, je.text);
                        return -EINVAL;
                }
                int r = deps_release_time(page, e, &t, &err);
                json_decref(page);
                if (r < 0) {
                        snprintf(why, len, "%s", err.msg);
                        return r;
                }
                json_object_set_new(e, "published", json_integer((json_int_t) t));
        }
        return 0;
}

void deps_place_run(struct work *w) {
        struct deps_install *in = container_of(w, struct deps_install, work);
        struct deps *x = in->deps;
        _cleanup_free_ char *report = NULL, *npm_lock = NULL, *layer = NULL, *tmp = NULL, *tmp_layer = NULL, *lockp = NULL,
                            *dest = NULL, *ref = NULL, *ref_tmp = NULL;
        struct sbx_error err;
        struct stat st;
        bool pip, npm;
        json_t *rep = NULL, *nl = NULL;
        sbx_error_clear(&err);
        deps_kinds(in->pins, in->n, &pip, &npm);
        /* a name of this install's own: one a crash left is not in the way */
        if (asprintf(&report, "%s/%s/artifacts/report.json", in->results, in->job) < 0 ||
            asprintf(&npm_lock, "%s/%s/artifacts/" DEPS_LAYER_DIR "/npm/package-lock.json", in->results, in->job) < 0 ||
            asprintf(&layer, "%s/%s/artifacts/" DEPS_LAYER_DIR, in->results, in->job) < 0 ||
            asprintf(&ref, "%s/" BY_REQUEST "/%s", x->path, in->key) < 0 ||
            asprintf(&ref_tmp, "%s/" BY_REQUEST "/%s.%s.tmp", x->path, in->key, in->job) < 0) {
                snprintf(in->why, sizeof(in->why), "out of memory");
                return;
        }
        if ((pip && !(rep = load_artifact(report, "pip", in->why, sizeof(in->why)))) ||
            (npm && !(nl = load_artifact(npm_lock, "npm", in->why, sizeof(in->why))))) {
                json_decref(rep);
                return;
        }
        in->lock = deps_lock_make(rep, nl, in->pins, in->n, &err);
        json_decref(rep);
        json_decref(nl);
        if (!in->lock) {
                snprintf(in->why, sizeof(in->why), "%s", err.msg);
                return;
        }
        if (in->times && release_times(in, in->why, sizeof(in->why)) < 0)
                return;
        /* the layer is named by its lock: other pins that come to the same
         * packages find the layer made already */
        deps_lock_key(in->lock, in->layer);
        if (asprintf(&tmp, "%s/%s.%s.tmp", x->path, in->layer, in->job) < 0 || asprintf(&tmp_layer, "%s/" DEPS_LAYER_DIR, tmp) < 0 ||
            asprintf(&lockp, "%s/" READY_FILE, tmp) < 0 || asprintf(&dest, "%s/%s", x->path, in->layer) < 0) {
                snprintf(in->why, sizeof(in->why), "out of memory");
                return;
        }
        if (lstat(layer, &st) < 0 || !S_ISDIR(st.st_mode)) {
                snprintf(in->why, sizeof(in->why), "the install left no files");
                return;
        }
        /* the layer readable by every job uid (and its size) */
        layer_bytes = 0;
        if (nftw(layer, chmod_one, 16, FTW_PHYS) != 0) {
                snprintf(in->why, sizeof(in->why), "the layer's modes: %s", strerror(errno));
                return;
        }
        in->bytes = layer_bytes;
        if (lstat(dest, &st) < 0) {
                /* in a directory of its own, then under its key at once */
                if ((mkdir(tmp, 0755) < 0 && errno != EEXIST) || rename(layer, tmp_layer) < 0 ||
                    json_dump_file(in->lock, lockp, JSON_COMPACT) < 0 || chmod(lockp, 0644) < 0 ||
                    (rename(tmp, dest) < 0 && errno != ENOTEMPTY && errno != EEXIST)) {
                        snprintf(in->why, sizeof(in->why), "placing the layer in %.1000s: %s", x->path, strerror(errno));
                        return;
                }
        }
        /* then the request's key to it (written whole, then renamed) */
        FILE *f = fopen(ref_tmp, "we");
        bool bad = !f || fputs(in->layer, f) < 0;
        if (f && fclose(f) != 0)
                bad = true;
        if (bad || rename(ref_tmp, ref) < 0) {
                snprintf(in->why, sizeof(in->why), "recording the layer of request %.12s: %s", in->key, strerror(errno));
                return;
        }
        in->ok = true;
}
