/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord.conf(5), the keys of dependencies in [tenant.NAME]:
 *
 *   pip_index = URL                  the PEP 503 index its packages come from
 *   pip_allow = NAME[==VERSION]...   which may (fnmatch(3) globs)
 *   deps_max_packages = N            pins a request may name
 *   deps_max_bytes = SIZE            an installed layer's size
 *   deps_timeout = DURATION          the install job's timeout
 *
 * A new line of pip_allow replaces the list; continuation lines add. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config-keys.h"
#include "deps.h"
#include "util.h"

void tenant_deps_defaults(struct tenant *t) {
        t->deps_max_packages = 20;
        t->deps_max_bytes = 256ull << 20;
        t->deps_timeout_ms = 5 * 60 * 1000;
}

static void free_allow(struct tenant *t) {
        for (size_t i = 0; i < t->n_pip_allow; i++)
                free(t->pip_allow[i]);
        free(t->pip_allow);
        t->pip_allow = NULL;
        t->n_pip_allow = 0;
}

void tenant_deps_free(struct tenant *t) {
        free(t->pip_index);
        t->pip_index = NULL;
        free_allow(t);
}

static int k_index(struct inikey_ctx *c) {
        struct tenant *t = config_tenant(c);
        struct sbx_error err;
        /* checked as the install job will use it */
        json_t *probe = deps_install_request(c->value, NULL, 0, 1, 1, &err);
        if (!probe)
                return FAIL(c, "pip_index %s", err.msg);
        json_decref(probe);
        free(t->pip_index);
        return (t->pip_index = strdup(c->value)) ? 0 : -ENOMEM;
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
        char **a = realloc(t->pip_allow, (t->n_pip_allow + 1) * sizeof(*a));
        if (!a)
                return -ENOMEM;
        t->pip_allow = a;
        size_t len = strlen(norm) + (eq ? strlen(eq) : 0) + 1;
        if (!(a[t->n_pip_allow] = malloc(len)))
                return -ENOMEM;
        snprintf(a[t->n_pip_allow], len, "%s%s", norm, eq ? eq : "");
        t->n_pip_allow++;
        return 0;
}

static int k_allow(struct inikey_ctx *c) {
        if (!c->continuation)
                free_allow(config_tenant(c));
        return config_each_word(c, add_allow);
}

static int k_max_packages(struct inikey_ctx *c) {
        int r = config_kind_count(c);
        if (r == 0 && (config_tenant(c)->deps_max_packages == 0 || config_tenant(c)->deps_max_packages > DEPS_PINS_MAX))
                return FAIL(c, "deps_max_packages: 1 to %d", DEPS_PINS_MAX);
        return r;
}

#define TENANT(k, rep, fn_, ...) { .section = "tenant.", .key = k, .repeat = INIKEY_##rep, .fn = fn_, __VA_ARGS__ }
static const struct inikey keys[] = {
        TENANT("pip_index", ONCE, k_index),
        TENANT("pip_allow", APPEND, k_allow),
        TENANT("deps_max_packages", ONCE, k_max_packages, .off = offsetof(struct tenant, deps_max_packages)),
        TENANT("deps_max_bytes", ONCE, config_kind_size, .off = offsetof(struct tenant, deps_max_bytes)),
        TENANT("deps_timeout", ONCE, config_kind_duration, .off = offsetof(struct tenant, deps_timeout_ms)),
};
const struct inikey_table config_deps_table = INIKEY_TABLE(keys);

static int check_tenant(const struct tenant *t, struct sbx_error *err) {
        if (t->n_pip_allow && !t->pip_index)
                return sbx_error_msg(err, EINVAL, "%s: [tenant.%s] pip_allow names packages, but there is no pip_index to get "
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
