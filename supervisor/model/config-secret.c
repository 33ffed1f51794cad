/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord.conf(5), the keys of secrets in [tenant.NAME]:
 *
 *   secrets = NAME[:file|:env|:header]...  what its jobs and sessions may ask for
 *   secrets_in_output = NAME...            granted secrets left unredacted
 *   secret_hosts = NAME=HOST[@ADDR[:PORT]]...
 *                                          where each header secret is sent
 *
 * and [daemon] secret_proxy_ca = FILE (the CAs the proxy of header
 * secrets trusts, with the system's).
 *
 * A new line of either key replaces the list (policy set gives one line);
 * its continuation lines add to it. The values are not here: the daemon
 * keeps them (sbxctl secret set), so a configuration file never holds one. */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
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
        return m == SECRET_ENV ? "env" : m == SECRET_HEADER ? "header" : "file";
}

bool secret_host_valid(char *name) {
        size_t n = strlen(name), label = 0, labels = 1;
        bool digits_only = true;
        if (n == 0 || n > 253 || name[0] == '.' || name[n - 1] == '.' || name[0] == '-')
                return false;
        for (char *p = name; *p; p++) {
                if (*p >= 'A' && *p <= 'Z')
                        *p = (char) (*p - 'A' + 'a');
                if (*p == '.') {
                        if (label == 0 || p[-1] == '-' || p[1] == '-')
                                return false;
                        label = 0;
                        labels++;
                        continue;
                }
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-') || ++label > 63)
                        return false;
                if (*p < '0' || *p > '9')
                        digits_only = false;
        }
        /* 10.0.0.1 is an address, not a name a certificate is for */
        return labels >= 2 && !digits_only;
}

const struct secret_grant *tenant_secret(const struct tenant *t, const char *name) {
        for (size_t i = 0; i < t->n_secrets; i++)
                if (streq(t->secrets[i].name, name))
                        return &t->secrets[i];
        return NULL;
}

static void free_hosts(struct tenant *t) {
        free(t->secret_hosts);
        t->secret_hosts = NULL;
        t->n_secret_hosts = 0;
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
        free_hosts(t);
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
        else if (colon && streq(colon + 1, "header"))
                mode = SECRET_HEADER;
        else if (colon && !streq(colon + 1, "file"))
                return FAIL(c, "secrets: '%s': the way in is ':file', ':env' or ':header', not ':%s'", name, colon + 1);
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

/* ADDR[:PORT] after a host's '@': an IPv4 address, or an IPv6 one in
 * brackets; the port 443 when none is said. */
static int parse_addr(struct inikey_ctx *c, const char *s, struct secret_host *h) {
        const char *end, *port = NULL;
        unsigned char buf[16];
        char a[48];
        size_t n;
        if (s[0] == '[') {
                if (!(end = strchr(s, ']')))
                        return FAIL(c, "secret_hosts: '%s': an IPv6 address without its ']'", s);
                n = (size_t) (end - s - 1);
                s++;
                port = end[1] == ':' ? end + 2 : NULL;
                if (end[1] && !port)
                        return FAIL(c, "secret_hosts: '%s': ':PORT' or nothing after ']'", s - 1);
        } else {
                end = strchr(s, ':');
                n = end ? (size_t) (end - s) : strlen(s);
                port = end ? end + 1 : NULL;
        }
        if (n == 0 || n >= sizeof(a))
                return FAIL(c, "secret_hosts: '%s' is not an address", s);
        memcpy(a, s, n);
        a[n] = '\0';
        if (inet_pton(AF_INET, a, buf) != 1 && inet_pton(AF_INET6, a, buf) != 1)
                return FAIL(c, "secret_hosts: '%s' is not an IP address (a host's name goes before the '@')", a);
        memcpy(h->addr, a, n + 1);
        h->port = 443;
        if (port) {
                char *e;
                unsigned long p = strtoul(port, &e, 10);
                if (!*port || *e || p == 0 || p > 65535)
                        return FAIL(c, "secret_hosts: port '%s' of %s is not 1 to 65535", port, a);
                h->port = (uint16_t) p;
        }
        return 0;
}

/* NAME=HOST[@ADDR[:PORT]]: one host of a secret (a word each). */
static int add_hosts(struct inikey_ctx *c, const char *w) {
        struct tenant *t = config_tenant(c);
        const char *eq = strchr(w, '=');
        size_t n = eq ? (size_t) (eq - w) : 0;
        char name[SECRET_NAME_MAX + 1];
        struct secret_host h = { .port = 443 };
        if (!eq || n == 0 || n > SECRET_NAME_MAX || !eq[1])
                return FAIL(c, "secret_hosts: '%.64s' is not NAME=HOST[@ADDRESS[:PORT]]", w);
        memcpy(name, w, n);
        name[n] = '\0';
        if (!secret_name_valid(name))
                return FAIL(c, "secret_hosts: '%s' is not a secret's name", name);
        const char *at = strchr(eq + 1, '@');
        size_t hn = at ? (size_t) (at - eq - 1) : strlen(eq + 1);
        if (hn >= sizeof(h.name) || (memcpy(h.name, eq + 1, hn), h.name[hn] = '\0', !secret_host_valid(h.name)))
                return FAIL(c, "secret_hosts: %s: '%.*s' is not a host's name (letters, digits, '-' and '.', two labels at "
                            "least; an address goes after '@')", name, (int) (hn > 64 ? 64 : hn), eq + 1);
        if (at) {
                int r = parse_addr(c, at + 1, &h);
                if (r < 0)
                        return r;
        }
        memcpy(h.secret, name, n + 1);
        for (size_t i = 0; i < t->n_secret_hosts; i++)
                if (streq(t->secret_hosts[i].secret, name) && streq(t->secret_hosts[i].name, h.name))
                        return FAIL(c, "secret_hosts: %s: host '%s' is named twice", name, h.name);
        if (t->n_secret_hosts >= SECRET_HOSTS_MAX)
                return FAIL(c, "secret_hosts: more than %d hosts", SECRET_HOSTS_MAX);
        struct secret_host *a = realloc(t->secret_hosts, (t->n_secret_hosts + 1) * sizeof(*a));
        if (!a)
                return -ENOMEM;
        t->secret_hosts = a;
        a[t->n_secret_hosts++] = h;
        return 0;
}

static int k_hosts(struct inikey_ctx *c) {
        if (!c->continuation)
                free_hosts(config_tenant(c));
        return config_each_word(c, add_hosts);
}

#define TENANT(k, fn_) { .section = "tenant.", .key = k, .repeat = INIKEY_APPEND, .fn = fn_ }
static const struct inikey keys[] = {
        TENANT("secrets", k_secrets),
        TENANT("secrets_in_output", k_shown),
        TENANT("secret_hosts", k_hosts),
        { .section = "daemon", .key = "secret_proxy_ca", .repeat = INIKEY_ONCE, .fn = config_kind_abs_path,
          .off = offsetof(struct config, secret_proxy_ca) },
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
        for (size_t i = 0; i < t->n_secret_hosts; i++) {
                const struct secret_grant *g = tenant_secret(t, t->secret_hosts[i].secret);
                if (!g || g->mode != SECRET_HEADER)
                        return sbx_error_msg(err, EINVAL, "%s: [tenant.%s] secret_hosts names '%s', which its secrets key does "
                                             "not grant as NAME:header",
                                             t->origin ? t->origin : "?", t->name, t->secret_hosts[i].secret);
        }
        for (size_t i = 0; i < t->n_secrets; i++) {
                if (t->secrets[i].mode != SECRET_HEADER)
                        continue;
                bool any = false;
                for (size_t k = 0; k < t->n_secret_hosts && !any; k++)
                        any = streq(t->secret_hosts[k].secret, t->secrets[i].name);
                if (!any)
                        return sbx_error_msg(err, EINVAL, "%s: [tenant.%s] header secret '%s' has no host in secret_hosts "
                                             "(where is it sent?)",
                                             t->origin ? t->origin : "?", t->name, t->secrets[i].name);
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
