/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord.conf(5), the keys of secrets in [tenant.NAME]:
 *
 *   secrets = NAME[:file|:env]...     what its jobs and sessions may ask for
 *   secrets_in_output = NAME...       granted secrets left unredacted
 *
 * A new line of either key replaces the list (policy set gives one line);
 * its continuation lines add to it. The values are not here: the daemon
 * keeps them (sbxctl secret set), so a configuration file never holds one. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config-keys.h"
#include "util.h"

bool secret_name_valid(const char *name) {
        size_t n = strlen(name);
        if (n == 0 || n > SECRET_NAME_MAX || strncmp(name, "SBX_", 4) == 0)
                return false;
        if (!(name[0] == '_' || (name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z')))
                return false;
        return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

const char *secret_mode_name(enum secret_mode m) {
        return m == SECRET_ENV ? "env" : "file";
}

const struct secret_grant *tenant_secret(const struct tenant *t, const char *name) {
        for (size_t i = 0; i < t->n_secrets; i++)
                if (streq(t->secrets[i].name, name))
                        return &t->secrets[i];
        return NULL;
}

static void free_shown(struct tenant *t) {
        for (size_t i = 0; i < t->n_secrets_shown; i++)
                free(t->secrets_shown[i]);
        free(t->secrets_shown);
        t->secrets_shown = NULL;
        t->n_secrets_shown = 0;
}

void tenant_secret_free(struct tenant *t) {
        free(t->secrets);
        t->secrets = NULL;
        t->n_secrets = 0;
        free_shown(t);
}

static int add_grant(struct inikey_ctx *c, const char *w) {
        struct tenant *t = config_tenant(c);
        const char *colon = strchr(w, ':');
        size_t n = colon ? (size_t) (colon - w) : strlen(w);
        char name[SECRET_NAME_MAX + 1];
        enum secret_mode mode = SECRET_FILE;
        if (n > SECRET_NAME_MAX)
                return FAIL(c, "secrets: '%.64s...' is longer than %d bytes", w, SECRET_NAME_MAX);
        memcpy(name, w, n);
        name[n] = '\0';
        if (!secret_name_valid(name))
                return FAIL(c, "secrets: '%s' is not a secret's name (a letter or '_', then letters, digits and '_'; not SBX_...)",
                            name);
        if (colon && streq(colon + 1, "env"))
                mode = SECRET_ENV;
        else if (colon && !streq(colon + 1, "file"))
                return FAIL(c, "secrets: '%s': the way in is ':file' or ':env', not ':%s'", name, colon + 1);
        if (tenant_secret(t, name))
                return FAIL(c, "secrets: '%s' is named twice", name);
        if (t->n_secrets >= CONFIG_MAX_SECRETS)
                return FAIL(c, "secrets: more than %d", CONFIG_MAX_SECRETS);
        struct secret_grant *g = realloc(t->secrets, (t->n_secrets + 1) * sizeof(*g));
        if (!g)
                return -ENOMEM;
        t->secrets = g;
        g = &g[t->n_secrets++];
        memset(g, 0, sizeof(*g));
        memcpy(g->name, name, n + 1);
        g->mode = mode;
        return 0;
}

static int k_secrets(struct inikey_ctx *c) {
        struct tenant *t = config_tenant(c);
        if (!c->continuation) {
                free(t->secrets);
                t->secrets = NULL;
                t->n_secrets = 0;
        }
        return config_each_word(c, add_grant);
}

static int add_shown(struct inikey_ctx *c, const char *w) {
        struct tenant *t = config_tenant(c);
        if (!secret_name_valid(w))
                return FAIL(c, "secrets_in_output: '%.64s' is not a secret's name", w);
        if (t->n_secrets_shown >= CONFIG_MAX_SECRETS)
                return FAIL(c, "secrets_in_output: more than %d", CONFIG_MAX_SECRETS);
        char **a = realloc(t->secrets_shown, (t->n_secrets_shown + 1) * sizeof(*a));
        if (!a)
                return -ENOMEM;
        t->secrets_shown = a;
        if (!(a[t->n_secrets_shown] = strdup(w)))
                return -ENOMEM;
        t->n_secrets_shown++;
        return 0;
}

static int k_shown(struct inikey_ctx *c) {
        if (!c->continuation)
                free_shown(config_tenant(c));
        return config_each_word(c, add_shown);
}

#define TENANT(k, fn_) { .section = "tenant.", .key = k, .repeat = INIKEY_APPEND, .fn = fn_ }
static const struct inikey keys[] = {
        TENANT("secrets", k_secrets),
        TENANT("secrets_in_output", k_shown),
};
const struct inikey_table config_secret_table = INIKEY_TABLE(keys);

/* Every name of secrets_in_output granted by secrets: a name there alone
 * would be a typo that leaves the granted secret redacted. */
static int check_tenant(struct tenant *t, struct sbx_error *err) {
        for (size_t i = 0; i < t->n_secrets_shown; i++) {
                struct secret_grant *g = (struct secret_grant *) tenant_secret(t, t->secrets_shown[i]);
                if (!g)
                        return sbx_error_msg(err, EINVAL, "%s: [tenant.%s] secrets_in_output names '%s', which its secrets key "
                                             "does not grant",
                                             t->origin ? t->origin : "?", t->name, t->secrets_shown[i]);
                g->shown = true;
        }
        return 0;
}

int config_secret_check(struct config *c, struct sbx_error *err) {
        for (size_t i = 0; i < c->n_tenants; i++) {
                int r = check_tenant(&c->tenants[i], err);
                if (r < 0)
                        return r;
        }
        return c->anonymous ? check_tenant(c->anonymous, err) : 0;
}
