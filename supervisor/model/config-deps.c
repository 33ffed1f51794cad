/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord.conf(5), the keys of dependencies in [tenant.NAME]:
 *
 *   pip_index = URL                  the PEP 503 index its packages come from
 *   pip_allow = NAME[==VERSION]...   which may (fnmatch(3) globs)
 *   npm_registry = URL               the npm registry its packages come from
 *   npm_allow = NAME[@VERSION]...    which may (globs; NAME may be @SCOPE/NAME)
 *   deps_min_age = DURATION          how long ago a package was published, at least
 *
 * and in [daemon]:
 *
 *   deps_cache_size = SIZE           the layers kept, all tenants' together
 *   deps_max_packages = N            pins a request may name
 *   deps_max_bytes = SIZE            an installed layer's size
 *   deps_timeout = DURATION          the install job's timeout
 *
 * A new line of pip_allow or npm_allow replaces the list; continuation
 * lines add. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config-keys.h"
#include "deps.h"
#include "util.h"

void config_deps_defaults(struct config *c) {
        c->deps_cache_size = 4ull << 30;
}

void tenant_deps_defaults(struct tenant *t) {
        t->deps_max_packages = 20;
        t->deps_max_bytes = 256ull << 20;
        t->deps_timeout_ms = 5 * 60 * 1000;
}

static void free_list(char ***list, size_t *n) {
        for (size_t i = 0; i < *n; i++)
                free((*list)[i]);
        free(*list);
        *list = NULL;
        *n = 0;
}

void tenant_deps_free(struct tenant *t) {
        free(t->pip_index);
        t->pip_index = NULL;
        free(t->npm_registry);
        t->npm_registry = NULL;
        free_list(&t->pip_allow, &t->n_pip_allow);
        free_list(&t->npm_allow, &t->n_npm_allow);
}

/* checked as the install job will use it */
static int set_url(struct inikey_ctx *c, char **dst) {
        struct sbx_error err;
        if (deps_check_url(c->value, &err) < 0)
                return FAIL(c, "%s %s", c->def->key, err.msg);
        free(*dst);
        return (*dst = strdup(c->value)) ? 0 : -ENOMEM;
}

static int k_index(struct inikey_ctx *c) {
        return set_url(c, &config_tenant(c)->pip_index);
}

static int k_registry(struct inikey_ctx *c) {
        return set_url(c, &config_tenant(c)->npm_registry);
}

static int append(char ***list, size_t *n, const char *s) {
        char **a = realloc(*list, (*n + 1) * sizeof(*a));
        if (!a)
                return -ENOMEM;
        *list = a;
        if (!(a[*n] = strdup(s)))
                return -ENOMEM;
        (*n)++;
        return 0;
}

/* NAME or NAME==VERSION, each a glob; the name normalised as pins are. */
static int add_allow(struct inikey_ctx *c, const char *w) {
        struct tenant *t = config_tenant(c);
        const char *eq = strstr(w, "==");
        size_t n = eq ? (size_t) (eq - w) : strlen(w);
        char name[DEPS_NAME_MAX + 1], norm[DEPS_NAME_MAX + 1];
        if (n == 0 || n > DEPS_NAME_MAX || (eq && (!eq[2] || strlen(eq + 2) > DEPS_VERSION_MAX)))
                return FAIL(c, "pip_allow: '%.64s' is not NAME or NAME==VERSION (globs allowed: requests==2.*)", w);
        for (size_t i = 0; i < n; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.*?", w[i]))
                        return FAIL(c, "pip_allow: '%.64s': a name is letters, digits, '-', '_', '.' and globs", w);
        memcpy(name, w, n);
        name[n] = '\0';
        deps_normalize(name, norm, sizeof(norm));
        char entry[DEPS_NAME_MAX + DEPS_VERSION_MAX + 4];
        snprintf(entry, sizeof(entry), "%s%s", norm, eq ? eq : "");
        return append(&t->pip_allow, &t->n_pip_allow, entry);
}

static int k_allow(struct inikey_ctx *c) {
        struct tenant *t = config_tenant(c);
        if (!c->continuation)
                free_list(&t->pip_allow, &t->n_pip_allow);
        return config_each_word(c, add_allow);
}

/* NAME or NAME@VERSION, each a glob; NAME may be @SCOPE/NAME. */
static int add_npm_allow(struct inikey_ctx *c, const char *w) {
        struct tenant *t = config_tenant(c);
        char name[DEPS_NAME_MAX + 1];
        const char *version;
        if (deps_npm_allow_split(w, name, sizeof(name), &version) < 0 || (version && strlen(version) > DEPS_VERSION_MAX))
                return FAIL(c, "npm_allow: '%.64s' is not NAME or NAME@VERSION (globs allowed: lodash@4.*, @myorg/*)", w);
        for (const char *p = name; *p; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~@/*?", *p))
                        return FAIL(c, "npm_allow: '%.64s': a name is letters, digits, '-._~', '@SCOPE/' and globs", w);
        if (name[0] == '@' && !strchr(name, '/'))
                return FAIL(c, "npm_allow: '%.64s': a scoped name is @SCOPE/NAME", w);
        return append(&t->npm_allow, &t->n_npm_allow, w);
}

static int k_npm_allow(struct inikey_ctx *c) {
        struct tenant *t = config_tenant(c);
        if (!c->continuation)
                free_list(&t->npm_allow, &t->n_npm_allow);
        return config_each_word(c, add_npm_allow);
}

static int k_max_packages(struct inikey_ctx *c) {
        int r = config_kind_count(c);
        if (r == 0 && (config_tenant(c)->deps_max_packages == 0 || config_tenant(c)->deps_max_packages > DEPS_PINS_MAX))
                return FAIL(c, "deps_max_packages: 1 to %d", DEPS_PINS_MAX);
        return r;
}

#define TENANT(k, rep, fn_, ...) { .section = "tenant.", .key = k, .repeat = INIKEY_##rep, .fn = fn_, __VA_ARGS__ }
static const struct inikey keys[] = {
        { .section = "daemon", .key = "deps_cache_size", .kind = INIKEY_SIZE, .off = offsetof(struct config, deps_cache_size),
          .min = 1u << 20 },
        TENANT("pip_index", ONCE, k_index),
        TENANT("pip_allow", APPEND, k_allow),
        TENANT("npm_registry", ONCE, k_registry),
        TENANT("npm_allow", APPEND, k_npm_allow),
        TENANT("deps_min_age", ONCE, config_kind_duration, .off = offsetof(struct tenant, deps_min_age_ms)),
        TENANT("deps_max_packages", ONCE, k_max_packages, .off = offsetof(struct tenant, deps_max_packages)),
        TENANT("deps_max_bytes", ONCE, config_kind_size, .off = offsetof(struct tenant, deps_max_bytes)),
        TENANT("deps_timeout", ONCE, config_kind_duration, .off = offsetof(struct tenant, deps_timeout_ms)),
};
const struct inikey_table config_deps_table = INIKEY_TABLE(keys);

static int check_tenant(const struct tenant *t, struct sbx_error *err) {
        if (t->n_pip_allow && !t->pip_index)
                return sbx_error_msg(err, EINVAL, "%s: [tenant.%s] pip_allow names packages, but there is no pip_index to get "
                                     "them from", t->origin ? t->origin : "?", t->name);
        if (t->n_npm_allow && !t->npm_registry)
                return sbx_error_msg(err, EINVAL, "%s: [tenant.%s] npm_allow names packages, but there is no npm_registry to get "
                                     "them from", t->origin ? t->origin : "?", t->name);
        if (t->deps_max_bytes == 0)
                return sbx_error_msg(err, EINVAL, "%s: [tenant.%s] deps_max_bytes must be above 0", t->origin ? t->origin : "?",
                                     t->name);
        return 0;
}

int config_deps_check(struct config *c, struct sbx_error *err) {
        for (size_t i = 0; i < c->n_tenants; i++) {
                int r = check_tenant(&c->tenants[i], err);
                if (r < 0)
                        return r;
        }
        return c->anonymous ? check_tenant(c->anonymous, err) : 0;
}
