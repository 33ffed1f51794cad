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

#include "conf.h"
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

bool config_bundle_key_known(const char *section, const char *key) {
        if (strncmp(section, CONFIG_REGISTRY_PREFIX, strlen(CONFIG_REGISTRY_PREFIX)) == 0)
                return words_contain(CONFIG_REGISTRY_KEYS, key);
        if (strncmp(section, "tenant.", 7) == 0)
                return words_contain(CONFIG_BUNDLE_TENANT_KEYS, key);
        return streq(section, "daemon") && words_contain(CONFIG_BUNDLE_DAEMON_KEYS, key);
}

#define BAD(...) sbx_error_msg(err, EINVAL, __VA_ARGS__)

static int size_key(const char *where, const char *k, const char *v, uint64_t min, uint64_t *dst, struct sbx_error *err) {
        uint64_t n;
        if (parse_size(v, &n) < 0 || n < min || n == UINT64_MAX)
                return BAD("%s: %s: expected a size of at least %" PRIu64 " bytes, got '%s'", where, k, min, v);
        *dst = n;
        return 0;
}

static int duration_key(const char *where, const char *k, const char *v, uint64_t min_ms, uint64_t *dst,
                        struct sbx_error *err) {
        uint64_t n;
        if (parse_duration_ms(v, &n) < 0 || n < min_ms)
                return BAD("%s: %s: expected a duration of at least %" PRIu64 " ms, got '%s'", where, k, min_ms, v);
        *dst = n;
        return 0;
}

int config_bundle_daemon_key(struct config *c, const char *k, const char *v, const char *where, struct sbx_error *err) {
        uint64_t n;
        if (streq(k, "cache_size"))
                return size_key(where, k, v, 1u << 20, &c->cache_size, err);
        if (streq(k, "cache_max_age"))
                return duration_key(where, k, v, 1000, &c->cache_max_age_ms, err);
        if (streq(k, "bundle_max_size"))
                return size_key(where, k, v, 1024, &c->bundle_max_size, err);
        if (streq(k, "bundle_max_unpacked"))
                return size_key(where, k, v, 1024, &c->bundle_max_unpacked, err);
        if (streq(k, "bundle_max_entries")) {
                if (parse_uint64(v, 1000000, &n) < 0 || n == 0)
                        return BAD("%s: bundle_max_entries: expected a number from 1 to 1000000, got '%s'", where, v);
                c->bundle_max_entries = n;
                return 0;
        }
        return -ENOENT;
}

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

int config_bundle_tenant_key(struct tenant *t, const char *k, const char *v, const char *where, struct sbx_error *err) {
        if (streq(k, "registry")) {
                if (!name_valid(v))
                        return BAD("%s: registry: invalid registry name '%s'", where, v);
                char *s = strdup(v);
                if (!s)
                        return -ENOMEM;
                free(t->registry_name);
                t->registry_name = s;
                return 0;
        }
        if (streq(k, "bundles_only")) {
                if (parse_bool(v, &t->bundles_only) < 0)
                        return BAD("%s: bundles_only: expected yes or no, got '%s'", where, v);
                return 0;
        }
        if (streq(k, "bundles")) {
                for (size_t i = 0; i < t->n_bundles; i++)
                        free(t->bundles[i]);
                free(t->bundles);
                t->bundles = NULL;
                t->n_bundles = 0;
                int r = words(v, add_bundle, t, where, err);
                if (r == 0 && !t->bundles)
                        return BAD("%s: bundles: expected names or *", where);
                return r;
        }
        if (streq(k, "bundle_paths")) {
                t->bundle_paths = 0;
                return streq(v, "none") ? 0 : words(v, add_path, t, where, err);
        }
        return -ENOENT;
}

static struct registry_conf *registry_get(struct config *c, const char *name, const char *where, struct sbx_error *err,
                                          int *ret) {
        for (size_t i = 0; i < c->n_registries; i++)
                if (streq(c->registries[i].name, name))
                        return &c->registries[i];
        *ret = -EINVAL;
        if (!name_valid(name)) {
                BAD("%s: invalid registry name '%s'", where, name);
                return NULL;
        }
        if (c->n_registries >= CONFIG_MAX_REGISTRIES) {
                BAD("%s: more than %d registries", where, CONFIG_MAX_REGISTRIES);
                return NULL;
        }
        struct registry_conf *n = realloc(c->registries, (c->n_registries + 1) * sizeof(*n));
        *ret = -ENOMEM;
        if (!n)
                return NULL;
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
                return NULL;
        }
        c->n_registries++;
        return r;
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

int config_registry_key(struct config *c, const char *name, const char *k, const char *v, const char *where,
                        struct sbx_error *err) {
        int e = 0;
        struct registry_conf *r = registry_get(c, name, where, err, &e);
        if (!r)
                return e;
        if (streq(k, "url"))
                return url_key(r, v, where, err);
        if (streq(k, "keys")) {
                r->n_keys = 0;
                e = words(v, add_key, r, where, err);
                if (e == 0 && r->n_keys == 0)
                        return BAD("%s: keys: expected one or more minisign public key files", where);
                return e;
        }
        if (streq(k, "offline")) {
                if (streq(v, "fail"))
                        r->offline = OFFLINE_FAIL;
                else if (streq(v, "use-cached"))
                        r->offline = OFFLINE_USE_CACHED;
                else
                        return BAD("%s: offline: expected fail or use-cached, got '%s'", where, v);
                return 0;
        }
        if (streq(k, "index_ttl")) {
                if (parse_duration_ms(v, &r->index_ttl_ms) < 0)
                        return BAD("%s: index_ttl: invalid duration '%s'", where, v);
                return 0;
        }
        if (streq(k, "timeout"))
                return duration_key(where, k, v, 100, &r->timeout_ms, err);
        if (streq(k, "connect_timeout"))
                return duration_key(where, k, v, 100, &r->connect_timeout_ms, err);
        if (streq(k, "stall_timeout"))
                return duration_key(where, k, v, 1000, &r->stall_timeout_ms, err);
        return BAD("%s: unknown key '%s' in [registry.%s]", where, k, name);
}

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
        return check_tenant(c, &c->anonymous, err);
}
