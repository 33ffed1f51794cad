/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "deps-cache.h"
#include "deps-internal.h"
#include "deps-ops.h"
#include "deps.h"
#include "dispatch.h"
#include "jobevents.h"
#include "log.h"
#include "runner.h"
#include "worker.h"

/* Which Python the jobs run: the file /usr/bin/python3 names. */
static void python_name(char *buf, size_t len) {
        char target[48];
        ssize_t n = readlink("/usr/bin/python3", target, sizeof(target) - 1);
        if (n <= 0) {
                snprintf(buf, len, "python3");
                return;
        }
        target[n] = '\0';
        const char *b = strrchr(target, '/');
        snprintf(buf, len, "%s", b ? b + 1 : target);
}

static const struct job_listener deps_listener;

static void hook_release(struct rjob *rj);
static void hook_adopt(struct rjob *rj, const char *layer);

int deps_init(struct daemon *d, struct sbx_error *err) {
        struct deps *x = calloc(1, sizeof(*x));
        if (!x)
                return sbx_error_set(err, ENOMEM, "dependencies");
        x->d = d;
        list_init(&x->installs);
        python_name(x->python, sizeof(x->python));
        snprintf(x->path, sizeof(x->path), "%s/" DEPS_DIR, d->cfg->state_dir);
        /* job uids pass through to their layer (bound by its path), but
         * list no one's */
        if (mkdirat(d->dirs.state_fd, DEPS_DIR, 0711) < 0 && errno != EEXIST) {
                free(x);
                return sbx_error_set(err, errno, "%s", x->path);
        }
        x->dir_fd = openat(d->dirs.state_fd, DEPS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (x->dir_fd < 0 || fchmod(x->dir_fd, 0711) < 0 || (mkdirat(x->dir_fd, BY_REQUEST, 0700) < 0 && errno != EEXIST)) {
                int e = errno;
                if (x->dir_fd >= 0)
                        close(x->dir_fd);
                free(x);
                return sbx_error_set(err, e, "%s/" DEPS_DIR, d->cfg->state_dir);
        }
        int r = deps_cache_open(x->dir_fd, x->path, &x->cache, err);
        if (r == 0 && (r = job_listen(&deps_listener)) < 0)
                sbx_error_set(err, -r, "dependencies: job listener");
        if (r < 0) {
                deps_cache_free(x->cache);
                close(x->dir_fd);
                free(x);
                return r;
        }
        size_t count;
        uint64_t bytes = deps_cache_bytes(x->cache, &count);
        log_info("packages: %zu layers kept, %" PRIu64 " bytes (deps_cache_size %" PRIu64 ")", count, bytes,
                 d->cfg->deps_cache_size);
        d->deps = x;
        d->deps_start = deps_job_start;
        d->deps_release = hook_release;
        d->deps_adopt = hook_adopt;
        return 0;
}

static void install_free(struct deps_install *in) {
        list_del(&in->link);
        free(in->waiters);
        free(in->pins);
        free(in->pip_index);
        free(in->npm_registry);
        free(in->results);
        json_decref(in->lock);
        free(in);
}

void deps_done(struct daemon *d) {
        struct deps *x = d->deps;
        if (!x)
                return;
        while (!list_empty(&x->installs))
                install_free(list_entry(x->installs.next, struct deps_install, link));
        deps_cache_free(x->cache);
        close(x->dir_fd);
        free(x);
        d->deps = NULL;
}

static int pins_of(const struct run_request *run, struct dep_pin *pins, size_t *n, struct sbx_error *err) {
        return deps_pins_of(run->pip, run->n_pip, run->npm, run->n_npm, pins, n, err);
}

/* Does t have where eco's packages come from? NULL, or why not. */
static const char *no_source(const struct tenant *t, const struct run_request *run) {
        if (run->n_pip && !t->pip_index)
                return "field 'pip': its tenant has no pip_index: its jobs install no Python packages";
        if (run->n_npm && !t->npm_registry)
                return "field 'npm': its tenant has no npm_registry: its jobs install no npm packages";
        return NULL;
}

int deps_admit(struct conn *c, const struct request *req, const char **code, char *msg, size_t len) {
        const struct tenant *t = c->tenant;
        const struct run_request *run = &req->run;
        const char *field = run->n_pip ? "pip" : "npm", *none = no_source(t, run);
        _cleanup_free_ struct dep_pin *pins = calloc(run->n_pip + run->n_npm + 1, sizeof(*pins));
        struct sbx_error err;
        size_t k = 0, n = 0;
        *code = E_FORBIDDEN;
        if (!pins) {
                *code = E_INTERNAL;
                snprintf(msg, len, "out of memory");
                return -EPERM;
        }
        if (run->bundle) {
                *code = E_BAD_REQUEST;
                snprintf(msg, len, "field '%s' goes with a command, not a bundle", field);
                return -EPERM;
        }
        if (none) {
                snprintf(msg, len, "%s (tenant '%s')", none, t->name);
                return -EPERM;
        }
        if (run->n_pip + run->n_npm > t->deps_max_packages) {
                *code = E_LIMIT;
                snprintf(msg, len, "fields 'pip' and 'npm': %zu packages, above the tenant's deps_max_packages (%" PRIu64 ")",
                         run->n_pip + run->n_npm, t->deps_max_packages);
                return -EPERM;
        }
        if (!c->d->caps.net_restricted) {
                *code = E_UNSUPPORTED;
                snprintf(msg, len, "field '%s': packages are installed by a job restricted to the index, and this daemon "
                                   "runs no restricted jobs: %s", field,
                         c->d->caps.no_restricted_why ? c->d->caps.no_restricted_why : "?");
                return -EPERM;
        }
        if (pins_of(run, pins, &n, &err) < 0) {
                *code = E_BAD_REQUEST;
                snprintf(msg, len, "field '%s': %s", field, err.msg);
                return -EPERM;
        }
        /* every refused pin, each with why */
        k = (size_t) snprintf(msg, len, "tenant '%s' may not install", t->name);
        bool refused = false;
        for (size_t i = 0; i < n && k < len; i++) {
                char buf[200], pin[DEPS_NAME_MAX + DEPS_VERSION_MAX + 4];
                const char *why;
                if (deps_allowed(t, pins[i].eco, pins[i].name, pins[i].version, buf, sizeof(buf), &why))
                        continue;
                pins[i].hash[0] = '\0';
                deps_pin_str(&pins[i], pin, sizeof(pin));
                k += (size_t) snprintf(msg + k, len - k, "%s %s %s (%s)", refused ? ";" : "", deps_eco_name(pins[i].eco), pin, why);
                refused = true;
        }
        return refused ? -EPERM : 0;
}

/* The lock the layer was made from, as the record shows it. */
static json_t *info(const struct deps_install *in, const char *key, json_t *lock, bool cached) {
        json_t *o = json_pack("{s:s, s:s, s:O, s:b}", "layer", key, "mount", DEPS_MOUNT, "lock", lock, "cached", cached);
        if (o && in) {
                json_object_set_new(o, "install_job", json_string(in->job));
                json_object_set_new(o, "install_ms", json_integer((json_int_t) ((now_mono_us() - in->t0_us) / 1000)));
        }
        return o;
}

/* A small file of STATE/deps, read whole: json_loadfd() reads a byte at
 * a time, a system call each (1.5 ms a job here). */
static char *read_small(struct deps *x, const char *p, size_t max, size_t *len) {
        int fd = openat(x->dir_fd, p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        char *buf = NULL;
        if (fd < 0)
                return NULL;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (size_t) st.st_size <= max &&
            (buf = malloc((size_t) st.st_size + 1))) {
                ssize_t n = read(fd, buf, (size_t) st.st_size);
                if (n != st.st_size) {
                        free(buf);
                        buf = NULL;
                } else {
                        buf[n] = '\0';
                        *len = (size_t) n;
                }
        }
        close(fd);
        return buf;
}

/* The lock of layer (64 hex digits), if it is there. */
static json_t *lock_of(struct deps *x, const char *layer) {
        char p[DEPS_KEY_HEX + 32];
        size_t n = 0;
        snprintf(p, sizeof(p), "%.64s/" READY_FILE, layer);
        _cleanup_free_ char *text = read_small(x, p, LOCK_MAX, &n);
        json_error_t je;
        json_t *lock = text ? json_loadb(text, n, 0, &je) : NULL;
        return json_is_array(lock) ? lock : (json_decref(lock), NULL);
}

/* The layer a request's key names, if one was made for it: its key (the
 * lock's) into layer, and its lock. */
static json_t *layer_of(struct deps *x, const char *key, char layer[DEPS_KEY_HEX + 1]) {
        char p[DEPS_KEY_HEX + 32];
        size_t n = 0;
        snprintf(p, sizeof(p), BY_REQUEST "/%s", key);
        _cleanup_free_ char *ref = read_small(x, p, DEPS_KEY_HEX, &n);
        if (!deps_is_hex64(ref))
                return NULL;
        memcpy(layer, ref, DEPS_KEY_HEX + 1);
        return lock_of(x, layer);
}

/* The key of the layer rj holds (its path is STATE/deps/KEY/layer). */
static const char *held_key(const struct rjob *rj, char buf[DEPS_KEY_HEX + 1]) {
        size_t n = rj->deps_layer ? strlen(rj->deps_layer) : 0, tail = strlen("/" DEPS_LAYER_DIR);
        if (n < DEPS_KEY_HEX + tail)
                return NULL;
        memcpy(buf, rj->deps_layer + n - tail - DEPS_KEY_HEX, DEPS_KEY_HEX);
        buf[DEPS_KEY_HEX] = '\0';
        return buf;
}

static void drop_layer(struct rjob *rj, struct deps *x) {
        char k[DEPS_KEY_HEX + 1];
        if (x && held_key(rj, k))
                deps_cache_unuse(x->cache, k);
        free(rj->deps_layer);
        rj->deps_layer = NULL;
}

/* rj holds layer key now (the cache removes no layer a job holds). */
static int set_layer(struct rjob *rj, struct deps *x, const char *key) {
        drop_layer(rj, x);
        if (asprintf(&rj->deps_layer, "%s/%s/" DEPS_LAYER_DIR, x->path, key) < 0) {
                rj->deps_layer = NULL;
                return -ENOMEM;
        }
        deps_cache_use(x->cache, key);
        return 0;
}

/* The job ends before it ran, with why. */
static void fail_job(struct rjob *rj, const char *code, const char *msg) {
        struct daemon *d = rj->d;
        log_info(JOB_LOG ": packages: %s: %s", JOB_LOG_ARGS(&rj->j), code, msg);
        rj->deps_wait = NULL;
        if (job_bundle_failed(&rj->j, code, msg) == 0)
                sched_remove_queued(&d->sched, &rj->j);
        runner_end(rj);
}

static bool add_waiter(struct deps_install *in, struct rjob *rj) {
        struct rjob **w = realloc(in->waiters, (in->n_waiters + 1) * sizeof(*w));
        if (!w)
                return false;
        in->waiters = w;
        w[in->n_waiters++] = rj;
        rj->deps_wait = in;
        return true;
}

static struct deps_install *start_install(struct deps *x, const struct tenant *t, const char *key, const struct dep_pin *pins,
                                          size_t n, struct sbx_error *err) {
        struct daemon *d = x->d;
        struct deps_install *in = calloc(1, sizeof(*in));
        if (!in) {
                sbx_error_set(err, ENOMEM, "install");
                return NULL;
        }
        in->deps = x;
        memcpy(in->key, key, sizeof(in->key));
        if (!(in->pins = calloc(n ? n : 1, sizeof(*pins)))) {
                free(in);
                sbx_error_set(err, ENOMEM, "install");
                return NULL;
        }
        memcpy(in->pins, pins, n * sizeof(*pins));
        in->n = n;
        in->t0_us = now_mono_us();
        in->times = t->deps_min_age_ms > 0;
        if ((t->pip_index && !(in->pip_index = strdup(t->pip_index))) ||
            (t->npm_registry && !(in->npm_registry = strdup(t->npm_registry)))) {
                sbx_error_set(err, ENOMEM, "install");
                goto fail;
        }
        json_t *req = deps_install_request(t->pip_index, t->npm_registry, pins, n, t->deps_timeout_ms, t->deps_max_bytes, err);
        if (!req)
                goto fail;
        json_object_set_new(req, "v", json_integer(PROTO_VERSION));
        json_object_set_new(req, "op", json_string("run"));
        /* The decision is the daemon's, not the tenant's caps': the index
         * is the policy's own, reached whatever network the tenant's
         * jobs may have; the other limits are the tenant's defaults. */
        struct policy_decision pol;
        struct request none;
        request_init(&none);
        if (policy_apply(t, &none.run, &d->caps, &pol, err) < 0) {
                json_decref(req);
                goto fail;
        }
        pol.timeout_ms = t->deps_timeout_ms;
        /* the tenant's cap, or more than the default: npm's Node reserves
         * more address space than 1 GiB where memory is an RLIMIT_AS */
        pol.memory = t->max_memory != CONFIG_UNSET ? t->max_memory : DEPS_INSTALL_MEMORY;
        pol.disk = 2 * t->deps_max_bytes + (64ull << 20);
        pol.artifacts = t->deps_max_bytes;
        pol.net = NET_RESTRICTED;
        pol.net_audit = true;
        pol.clamped[0] = '\0';
        struct rjob *rj = accept_internal(d, t, req, &pol, err);
        json_decref(req);
        if (!rj)
                goto fail;
        snprintf(in->job, sizeof(in->job), "%s", rj->j.id);
        list_add_tail(&x->installs, &in->link);
        log_info(JOB_LOG ": installs packages for layer %.12s", JOB_LOG_ARGS(&rj->j), key);
        return in;
fail:
        free(in->pins);
        free(in->pip_index);
        free(in->npm_registry);
        free(in);
        return NULL;
}

/* May rj's tenant use the layer of lock? If not, the job ends. */
static bool lock_admits(struct rjob *rj, json_t *lock) {
        char msg[SBX_ERROR_MAX];
        if (deps_lock_admit(rj->j.tenant, lock, (int64_t) time(NULL), msg, sizeof(msg)) == 0)
                return true;
        fail_job(rj, E_FORBIDDEN, msg);
        return false;
}

void deps_job_start(struct rjob *rj) {
        struct daemon *d = rj->d;
        struct deps *x = d->deps;
        const struct tenant *t = rj->j.tenant;
        _cleanup_free_ struct dep_pin *pins = calloc(rj->j.req.run.n_pip + rj->j.req.run.n_npm + 1, sizeof(*pins));
        struct sbx_error err;
        char key[DEPS_KEY_HEX + 1], why[200];
        const char *none = no_source(t, &rj->j.req.run);
        size_t n = 0;
        sbx_error_clear(&err);
        if (!pins) {
                fail_job(rj, E_INTERNAL, "out of memory");
                return;
        }
        if (!x || none) {
                snprintf(why, sizeof(why), "%s", none ? none : "this daemon installs no packages");
                fail_job(rj, E_FORBIDDEN, why);
                return;
        }
        if (pins_of(&rj->j.req.run, pins, &n, &err) < 0) {
                fail_job(rj, E_BAD_REQUEST, err.msg);
                return;
        }
        deps_key(t->pip_index, t->npm_registry, x->python, t->deps_min_age_ms > 0, pins, n, key);
        char layer[DEPS_KEY_HEX + 1];
        json_t *lock = layer_of(x, key, layer);
        if (lock) {
                if (!lock_admits(rj, lock)) {
                        json_decref(lock);
                        return;
                }
                json_decref(rj->deps_info);
                rj->deps_info = info(NULL, layer, lock, true);
                json_decref(lock);
                if (set_layer(rj, x, layer) < 0)
                        fail_job(rj, E_INTERNAL, "out of memory");
                return;
        }
        struct list *pos, *tmp;
        struct deps_install *in = NULL;
        list_for_each_safe(pos, tmp, &x->installs) {
                struct deps_install *i = list_entry(pos, struct deps_install, link);
                if (streq(i->key, key)) {
                        in = i;
                        break;
                }
        }
        if (!in && !(in = start_install(x, t, key, pins, n, &err))) {
                char msg[SBX_ERROR_MAX + 64];
                snprintf(msg, sizeof(msg), "its packages' install could not start: %s", err.msg);
                fail_job(rj, E_DEPS, msg);
                return;
        }
        if (!add_waiter(in, rj)) {
                fail_job(rj, E_INTERNAL, "out of memory");
                return;
        }
        job_transition(&rj->j, JEV_FETCH, NULL);
}

static void drop_waiter(struct deps_install *in, struct rjob *rj) {
        for (size_t i = 0; i < in->n_waiters; i++)
                if (in->waiters[i] == rj) {
                        in->waiters[i] = in->waiters[--in->n_waiters];
                        break;
                }
        rj->deps_wait = NULL;
}

/* A job that waited ends before its install did (cancelled, the daemon
 * stopping). The install job's own end is heard by the listener, which
 * finds its install by the job's id. */
static void hook_release(struct rjob *rj) {
        if (rj->deps_wait)
                drop_waiter(rj->deps_wait, rj);
        if (rj->deps_layer)
                drop_layer(rj, rj->d->deps);
}

/* A session's sandbox that outlived the daemon holds its layer still (the
 * journal's start line named it). */
static void hook_adopt(struct rjob *rj, const char *layer) {
        struct deps *x = rj->d->deps;
        json_t *lock = x && deps_is_hex64(layer) ? lock_of(x, layer) : NULL;
        if (lock && set_layer(rj, x, layer) == 0) {
                json_decref(rj->deps_info);
                rj->deps_info = info(NULL, layer, lock, true);
        } else
                log_warning(JOB_LOG ": its packages' layer %.12s is not known here", JOB_LOG_ARGS(&rj->j), layer);
        json_decref(lock);
}

static void place_done(struct work *w) {
        struct deps_install *in = container_of(w, struct deps_install, work);
        struct deps *x = in->deps;
        char msg[SBX_ERROR_MAX + 128];
        if (!in->ok) {
                log_warning("packages of layer %.12s (install job %s): %s", in->key, in->job, in->why);
                snprintf(msg, sizeof(msg), "its packages could not be installed (install job %s): %s", in->job, in->why);
        }
        if (in->ok)
                deps_cache_add(x->cache, in->layer, in->bytes, x->d->cfg->deps_cache_size);
        /* whoever still waits */
        while (in->n_waiters > 0) {
                struct rjob *rj = in->waiters[--in->n_waiters];
                rj->deps_wait = NULL;
                if (!in->ok) {
                        fail_job(rj, E_DEPS, msg);
                        continue;
                }
                if (!lock_admits(rj, in->lock))
                        continue;
                json_decref(rj->deps_info);
                rj->deps_info = info(in, in->layer, in->lock, false);
                if (set_layer(rj, x, in->layer) < 0) {
                        fail_job(rj, E_INTERNAL, "out of memory");
                        continue;
                }
                if (rj->j.state == JOB_FETCHING)
                        job_transition(&rj->j, JEV_FETCHED, NULL);
        }
        install_free(in);
        runner_schedule(x->d);
}

static struct deps_install *install_of(struct rjob *rj, const char *id) {
        struct deps *x = rj->d->deps;
        struct list *pos, *tmp;
        if (!x)
                return NULL;
        list_for_each_safe(pos, tmp, &x->installs) {
                struct deps_install *in = list_entry(pos, struct deps_install, link);
                if (streq(in->job, id))
                        return in;
        }
        return NULL;
}

static void on_end(struct rjob *rj, json_t *rec) {
        struct deps_install *in = install_of(rj, rj->j.id);
        if (!in)
                return;
        const char *state = json_string_value(json_object_get(rec, "state"));
        if (!state || !streq(state, "succeeded")) {
                const char *m = json_string_value(json_object_get(json_object_get(rec, "error"), "message"));
                snprintf(in->why, sizeof(in->why), "the install %s%s%s (its output is the install job's)", state ? state : "failed",
                         m ? ": " : "", m ? m : "");
                place_done(&in->work);
                return;
        }
        if (json_is_true(json_object_get(rec, "artifacts_truncated"))) {
                snprintf(in->why, sizeof(in->why), "the layer is larger than deps_max_bytes (%" PRIu64 " bytes) or 10,000 files",
                         rj->j.tenant->deps_max_bytes);
                place_done(&in->work);
                return;
        }
        free(in->results);
        if (asprintf(&in->results, "%s/results", rj->d->cfg->state_dir) < 0) {
                in->results = NULL;
                snprintf(in->why, sizeof(in->why), "out of memory");
                place_done(&in->work);
                return;
        }
        in->work.run = deps_place_run;
        in->work.done = place_done;
        worker_submit(&in->work);
}

/* Its record could not be written: the jobs waiting for it hear so. */
static void on_fail(struct rjob *rj, const char *code, const char *msg) {
        struct deps_install *in = install_of(rj, rj->j.id);
        if (!in)
                return;
        snprintf(in->why, sizeof(in->why), "%s: %s", code, msg);
        place_done(&in->work);
}

static const struct job_listener deps_listener = { .end = on_end, .fail = on_fail };
