/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord.conf(5), the keys of bundles: [registry.NAME] sections
 * (where bundles come from, whose signatures to trust, what to do when the
 * registry is unreachable), the cache's budget and the bounds on one
 * bundle in [daemon], and each tenant's bundle policy. Public keys are
 * read and checked while the file is read: a daemon never starts with a
 * key it cannot use. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config-keys.h"
#include "manifest.h"
#include "parse.h"
#include "util.h"

#define CONFIG_MAX_REGISTRIES 64
#define CONFIG_MAX_KEYS 16
#define CONFIG_MAX_URL 1024

void config_bundle_defaults(struct config *c) {
        c->cache_size = 1ull << 30;
        c->cache_max_age_ms = 30ull * 24 * 3600 * 1000;
        c->bundle_max_size = 256ull << 20;
        c->bundle_max_unpacked = 512ull << 20;
        c->bundle_max_entries = 10000;
        c->bundle_extract_timeout_ms = 5 * 60 * 1000;
}

static void registry_free(struct registry_conf *r) {
        free(r->name);
        free(r->origin);
        free(r->url);
        free(r->keys);
}

void config_bundle_free(struct config *c) {
        for (size_t i = 0; i < c->n_registries; i++)
                registry_free(&c->registries[i]);
        free(c->registries);
        c->registries = NULL;
        c->n_registries = 0;
}

void tenant_bundle_free(struct tenant *t) {
        free(t->registry_name);
        for (size_t i = 0; i < t->n_bundles; i++)
                free(t->bundles[i]);
        free(t->bundles);
        t->registry_name = NULL;
        t->bundles = NULL;
        t->n_bundles = 0;
}

const struct registry_conf *config_registry_find(const struct config *c, const char *name) {
        for (size_t i = 0; i < c->n_registries; i++)
                if (streq(c->registries[i].name, name))
                        return &c->registries[i];
        return NULL;
}

bool tenant_allows_bundle(const struct tenant *t, const char *name) {
        if (!t->bundles)
                return true;
        for (size_t i = 0; i < t->n_bundles; i++)
                if (streq(t->bundles[i], "*") || streq(t->bundles[i], name))
                        return true;
        return false;
}

#define BAD(...) sbx_error_msg(err, EINVAL, __VA_ARGS__)

/* Space-separated words of v, each handed to fn. */
static int words(const char *v, int (*fn)(void *data, const char *w, const char *where, struct sbx_error *err), void *data,
                 const char *where, struct sbx_error *err) {
        _cleanup_free_ char *copy = strdup(v);
        char *save = NULL;
        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
                int r = fn(data, w, where, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_bundle(void *data, const char *w, const char *where, struct sbx_error *err) {
        struct tenant *t = data;
        if (!streq(w, "*") && !bundle_name_valid(w))
                return BAD("%s: bundles: '%s' is not a bundle name", where, w);
        if (t->n_bundles >= CONFIG_MAX_PROFILES)
                return BAD("%s: bundles: more than %d names", where, CONFIG_MAX_PROFILES);
        char **n = realloc(t->bundles, (t->n_bundles + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        t->bundles = n;
        if (!(n[t->n_bundles] = strdup(w)))
                return -ENOMEM;
        t->n_bundles++;
        return 0;
}

static int add_path(void *data, const char *w, const char *where, struct sbx_error *err) {
        struct tenant *t = data;
        if (streq(w, "*")) {
                for (size_t i = 0; i < manifest_paths_count(); i++)
                        t->bundle_paths |= MANIFEST_PATH_BIT(i);
                return 0;
        }
        int k = manifest_path_find(w);
        if (k < 0)
                return BAD("%s: bundle_paths: '%s' is not one of the paths bundles may ask for (%s)", where, w,
                           manifest_paths_all());
        t->bundle_paths |= MANIFEST_PATH_BIT(k);
        return 0;
}

static int k_registry(struct inikey_ctx *c) {
        if (!name_valid(c->value))
                return sbx_error_msg(c->err, EINVAL, "%s: registry: invalid registry name '%s'", c->origin, c->value);
        return config_set_str(&((struct tenant *) c->obj)->registry_name, c->value);
}

static int k_bundles(struct inikey_ctx *c) {
        struct tenant *t = c->obj;
        for (size_t i = 0; i < t->n_bundles; i++)
                free(t->bundles[i]);
        free(t->bundles);
        t->bundles = NULL;
        t->n_bundles = 0;
        int r = words(c->value, add_bundle, t, c->origin, c->err);
        if (r == 0 && !t->bundles)
                return sbx_error_msg(c->err, EINVAL, "%s: bundles: expected names or *", c->origin);
        return r;
}

static int k_bundle_paths(struct inikey_ctx *c) {
        struct tenant *t = c->obj;
        t->bundle_paths = 0;
        return streq(c->value, "none") ? 0 : words(c->value, add_path, t, c->origin, c->err);
}

int config_registry_object(struct inikey_ctx *ctx, const char *name, void **ret) {
        struct config *c = config_of(ctx);
        struct sbx_error *err = ctx->err;
        const char *where = ctx->origin;
        for (size_t i = 0; i < c->n_registries; i++)
                if (streq(c->registries[i].name, name)) {
                        *ret = &c->registries[i];
                        return 0;
                }
        if (!name_valid(name))
                return BAD("%s: invalid registry name '%s'", where, name);
        if (c->n_registries >= CONFIG_MAX_REGISTRIES)
                return BAD("%s: more than %d registries", where, CONFIG_MAX_REGISTRIES);
        struct registry_conf *n = realloc(c->registries, (c->n_registries + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        c->registries = n;
        struct registry_conf *r = &n[c->n_registries];
        memset(r, 0, sizeof(*r));
        r->offline = OFFLINE_FAIL;
        r->index_ttl_ms = 60 * 1000;
        r->timeout_ms = 5 * 60 * 1000;
        r->connect_timeout_ms = 10 * 1000;
        r->stall_timeout_ms = 30 * 1000;
        r->name = strdup(name);
        r->origin = strdup(where);
        if (!r->name || !r->origin) {
                registry_free(r);
                return -ENOMEM;
        }
        c->n_registries++;
        *ret = r;
        return 0;
}

static int add_key(void *data, const char *w, const char *where, struct sbx_error *err) {
        struct registry_conf *r = data;
        struct minisign_key k;
        if (w[0] != '/')
                return BAD("%s: keys: '%s' is not an absolute path", where, w);
        if (r->n_keys >= CONFIG_MAX_KEYS)
                return BAD("%s: keys: more than %d keys", where, CONFIG_MAX_KEYS);
        if (minisign_key_load(w, &k, err) < 0) {
                sbx_error_wrap(err, "%s: keys", where);
                /* -ENOENT means "not my key" to the caller. */
                return -EINVAL;
        }
        struct minisign_key *n = realloc(r->keys, (r->n_keys + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        r->keys = n;
        n[r->n_keys++] = k;
        return 0;
}

static int url_key(struct registry_conf *r, const char *v, const char *where, struct sbx_error *err) {
        size_t n = strlen(v);
        if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0 && strncmp(v, "file:///", 8) != 0)
                return BAD("%s: url: expected an http://, https:// or file:/// URL, got '%s'", where, v);
        if (n > CONFIG_MAX_URL)
                return BAD("%s: url: longer than %d bytes", where, CONFIG_MAX_URL);
        for (const char *p = v; *p; p++)
                if ((unsigned char) *p <= ' ' || *p == 0x7f || *p == '?' || *p == '#')
                        return BAD("%s: url: no spaces, control characters, '?' or '#' in a registry URL", where);
        while (n > 8 && v[n - 1] == '/')
                n--;
        char *s = strndup(v, n);
        if (!s)
                return -ENOMEM;
        free(r->url);
        r->url = s;
        return 0;
}

static int k_url(struct inikey_ctx *c) {
        return url_key(c->obj, c->value, c->origin, c->err);
}

static int k_keys(struct inikey_ctx *c) {
        struct registry_conf *r = c->obj;
        r->n_keys = 0;
        int e = words(c->value, add_key, r, c->origin, c->err);
        if (e == 0 && r->n_keys == 0)
                return sbx_error_msg(c->err, EINVAL, "%s: keys: expected one or more minisign public key files", c->origin);
        return e;
}

static const char *const offline_names[] = { [OFFLINE_FAIL] = "fail", [OFFLINE_USE_CACHED] = "use-cached", NULL };

#define DAEMON(k, kind_, f, ...) { .section = "daemon", .key = k, .kind = INIKEY_##kind_, .off = offsetof(struct config, f), __VA_ARGS__ }
#define TENANT(k, ...) { .section = "tenant.", .key = k, __VA_ARGS__ }
#define REGISTRY(k, ...) { .section = CONFIG_REGISTRY_PREFIX, .key = k, __VA_ARGS__ }
#define IN_REGISTRY(f) .off = offsetof(struct registry_conf, f)
static const struct inikey keys[] = {
        DAEMON("cache_size", SIZE, cache_size, .min = 1u << 20),
        DAEMON("cache_max_age", DURATION, cache_max_age_ms, .min = 1000),
        DAEMON("bundle_max_size", SIZE, bundle_max_size, .min = 1024),
        DAEMON("bundle_max_unpacked", SIZE, bundle_max_unpacked, .min = 1024),
        DAEMON("bundle_max_entries", UINT, bundle_max_entries, .min = 1, .max = 1000000),
        DAEMON("bundle_extract_timeout", DURATION, bundle_extract_timeout_ms, .min = 10, .max = 24 * 3600 * 1000),
        TENANT("registry", .fn = k_registry),
        TENANT("bundles_only", .kind = INIKEY_BOOL, .off = offsetof(struct tenant, bundles_only)),
        TENANT("bundles", .fn = k_bundles),
        TENANT("bundle_paths", .fn = k_bundle_paths),
        REGISTRY("url", .fn = k_url),
        REGISTRY("keys", .fn = k_keys),
        REGISTRY("offline", .kind = INIKEY_ENUM, IN_REGISTRY(offline), .names = offline_names),
        REGISTRY("index_ttl", .kind = INIKEY_DURATION, IN_REGISTRY(index_ttl_ms)),
        REGISTRY("timeout", .kind = INIKEY_DURATION, IN_REGISTRY(timeout_ms), .min = 100),
        REGISTRY("connect_timeout", .kind = INIKEY_DURATION, IN_REGISTRY(connect_timeout_ms), .min = 100),
        REGISTRY("stall_timeout", .kind = INIKEY_DURATION, IN_REGISTRY(stall_timeout_ms), .min = 1000),
};
const struct inikey_table config_bundle_table = INIKEY_TABLE(keys);

static int check_tenant(struct config *c, struct tenant *t, struct sbx_error *err) {
        if (!t->registry_name) {
                if (t->bundles_only)
                        return BAD("%s: [tenant.%s] is bundles_only but names no registry", t->origin ? t->origin : c->path,
                                   t->name);
                return 0;
        }
        t->registry = config_registry_find(c, t->registry_name);
        if (!t->registry)
                return BAD("%s: [tenant.%s] registry = %s, but there is no [registry.%s]", t->origin ? t->origin : c->path,
                           t->name, t->registry_name, t->registry_name);
        return 0;
}

int config_bundle_check(struct config *c, struct sbx_error *err) {
        for (size_t i = 0; i < c->n_registries; i++) {
                const struct registry_conf *r = &c->registries[i];
                if (!r->url)
                        return BAD("%s: [registry.%s] has no url", r->origin, r->name);
                if (r->n_keys == 0)
                        return BAD("%s: [registry.%s] has no keys: its indexes could not be verified", r->origin, r->name);
        }
        for (size_t i = 0; i < c->n_tenants; i++) {
                int r = check_tenant(c, &c->tenants[i], err);
                if (r < 0)
                        return r;
        }
        return check_tenant(c, c->anonymous, err);
}
