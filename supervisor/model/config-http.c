/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord.conf(5), the keys of the HTTP API: [http] (where it
 * listens, its TLS certificate, its bounds) and one [token.NAME] section
 * per caller: a bearer token (the SHA-256 of the token) or a TLS client
 * certificate (the SHA-256 of the certificate), its tenant, scope, expiry
 * and rate. The token itself is never in the file. The certificate and
 * key are read when the daemon starts listening (front/http-api.c). */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "config-keys.h"
#include "metrics.h"
#include "parse.h"
#include "util.h"

#define CONFIG_MAX_TOKENS 1024
#define BAD(...) sbx_error_msg(err, EINVAL, __VA_ARGS__)

void config_http_defaults(struct config *c) {
        c->http_max_connections = 256;
        c->http_ip_connections = 64;
        c->http_idle_timeout_ms = 30000;
        c->http_max_headers = 16384;
}

static void token_free(struct http_token *t) {
        free(t->name);
        free(t->origin);
        free(t->tenant_name);
}

void config_http_free(struct config *c) {
        for (size_t i = 0; i < c->n_http_listen; i++)
                free(c->http_listen[i]);
        c->n_http_listen = 0;
        free(c->http_tls_cert);
        free(c->http_tls_key);
        free(c->http_tls_client_ca);
        c->http_tls_cert = c->http_tls_key = c->http_tls_client_ca = NULL;
        for (size_t i = 0; i < c->n_http_mcp_origins; i++)
                free(c->http_mcp_origins[i]);
        free(c->http_mcp_origins);
        c->http_mcp_origins = NULL;
        c->n_http_mcp_origins = 0;
        for (size_t i = 0; i < c->n_tokens; i++)
                token_free(&c->tokens[i]);
        free(c->tokens);
        c->tokens = NULL;
        c->n_tokens = 0;
}

/* The token of a [token.NAME] section, made on its first key. */
int config_token_object(struct inikey_ctx *ctx, const char *name, void **ret) {
        struct config *c = config_of(ctx);
        for (size_t i = 0; i < c->n_tokens; i++)
                if (streq(c->tokens[i].name, name)) {
                        *ret = &c->tokens[i];
                        return 0;
                }
        if (!name_valid(name))
                return FAIL(ctx, "invalid token name '%s' (letters, digits, '-' and '_')", name);
        if (c->n_tokens >= CONFIG_MAX_TOKENS)
                return FAIL(ctx, "more than %d tokens", CONFIG_MAX_TOKENS);
        struct http_token *n = realloc(c->tokens, (c->n_tokens + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        c->tokens = n;
        struct http_token *t = &n[c->n_tokens];
        memset(t, 0, sizeof(*t));
        t->name = strdup(name);
        if (asprintf(&t->origin, "%s:%u", inifile_name(ctx->f), ctx->section_line) < 0)
                t->origin = NULL;
        if (!t->name || !t->origin) {
                token_free(t);
                return -ENOMEM;
        }
        c->n_tokens++;
        *ret = t;
        return 0;
}

/* listen and listen_tls: one list, each address marked. */
static int k_listen(struct inikey_ctx *c) {
        struct config *cf = config_of(c);
        const char *key = c->def->key;
        struct sockaddr_storage ss;
        socklen_t sl;
        if (metrics_parse_listen(c->value, &ss, &sl) < 0)
                return FAIL(c, "%s: expected ADDRESS:PORT with a numeric address (127.0.0.1:8080, [::1]:8080), got '%s'", key,
                            c->value);
        if (cf->n_http_listen >= CONFIG_HTTP_MAX_LISTEN)
                return FAIL(c, "%s: more than %d addresses with listen and listen_tls", key, CONFIG_HTTP_MAX_LISTEN);
        for (size_t i = 0; i < cf->n_http_listen; i++)
                if (streq(cf->http_listen[i], c->value))
                        return FAIL(c, "%s: %s is given twice", key, c->value);
        cf->http_listen[cf->n_http_listen] = strdup(c->value);
        if (!cf->http_listen[cf->n_http_listen])
                return -ENOMEM;
        cf->http_listen_tls[cf->n_http_listen] = streq(key, "listen_tls");
        cf->n_http_listen++;
        return 0;
}

/* An origin as browsers send it: SCHEME://HOST[:PORT], nothing after. */
static int k_mcp_origin(struct inikey_ctx *c) {
        struct config *cf = config_of(c);
        const char *v = c->value, *host = strstr(v, "://");
        if (!host || (strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) || !host[3] || strpbrk(host + 3, "/?# \t"))
                return FAIL(c, "mcp_origin: expected http://HOST[:PORT] or https://HOST[:PORT], got '%s'", v);
        if (cf->n_http_mcp_origins >= 64)
                return FAIL(c, "mcp_origin: more than 64 origins");
        char **n = realloc(cf->http_mcp_origins, (cf->n_http_mcp_origins + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        cf->http_mcp_origins = n;
        if (!(n[cf->n_http_mcp_origins] = strdup(v)))
                return -ENOMEM;
        cf->n_http_mcp_origins++;
        return 0;
}

static int k_tenant(struct inikey_ctx *c) {
        if (!name_valid(c->value))
                return FAIL(c, "tenant: invalid tenant name '%s'", c->value);
        return config_set_str(&((struct http_token *) c->obj)->tenant_name, c->value);
}

static int k_sha256(struct inikey_ctx *c) {
        struct http_token *t = c->obj;
        const char *v = c->value;
        if (strncmp(v, "sha256:", 7) == 0)
                v += 7;
        if (strlen(v) != 64)
                return FAIL(c, "sha256: expected 64 hexadecimal digits (the SHA-256 of the token, as sha256sum prints it), got %zu "
                            "characters", strlen(v));
        size_t bad = strspn(v, "0123456789abcdefABCDEF");
        if (bad < 64)
                return FAIL(c, "sha256: '%c' is not a hexadecimal digit", v[bad]);
        (void) !sodium_hex2bin(t->sha256, sizeof(t->sha256), v, 64, NULL, NULL, NULL); /* checked above */
        t->has_sha256 = true;
        return 0;
}

/* 64 hexadecimal digits, or 32 pairs with ':' between (openssl x509
 * -fingerprint -sha256 prints that, after "sha256 Fingerprint="). */
static int k_cert_sha256(struct inikey_ctx *c) {
        struct http_token *t = c->obj;
        const char *v = c->value, *eq = strchr(v, '=');
        if (eq && strncasecmp(v, "sha256 Fingerprint=", 19) == 0)
                v = eq + 1;
        size_t len = strlen(v);
        const char *ignore = len == 95 ? ":" : NULL;
        size_t n = 0;
        if ((len != 64 && len != 95) || sodium_hex2bin(t->cert_sha256, sizeof(t->cert_sha256), v, len, ignore, &n, NULL) < 0 ||
            n != sizeof(t->cert_sha256))
                return FAIL(c, "cert_sha256: expected the certificate's SHA-256, as 64 hexadecimal digits or as openssl x509 "
                            "-fingerprint -sha256 prints it, got '%s'", c->value);
        t->has_cert = true;
        return 0;
}

static int k_scope(struct inikey_ctx *c) {
        struct http_token *t = c->obj;
        t->read_only = streq(c->value, "read");
        t->admin = streq(c->value, "admin");
        if (!t->read_only && !t->admin && !streq(c->value, "run"))
                return FAIL(c, "scope: expected 'read', 'run' or 'admin', got '%s'", c->value);
        return 0;
}

/* YYYY-MM-DD (its start) or YYYY-MM-DDTHH:MM:SSZ, in UTC. */
static int k_expires(struct inikey_ctx *c) {
        struct tm tm;
        memset(&tm, 0, sizeof(tm));
        const char *end = strptime(c->value, "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (!end || *end) {
                memset(&tm, 0, sizeof(tm));
                end = strptime(c->value, "%Y-%m-%d", &tm);
        }
        if (!end || *end || tm.tm_year < 70)
                return FAIL(c, "expires: expected a UTC date YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, got '%s'", c->value);
        time_t s = timegm(&tm);
        if (s <= 0)
                return FAIL(c, "expires: '%s' is not a date after 1970", c->value);
        ((struct http_token *) c->obj)->expires_s = (uint64_t) s;
        return 0;
}

#define HTTP(k, rep, fn_, ...) { .section = "http", .key = k, .repeat = INIKEY_##rep, .fn = fn_, __VA_ARGS__ }
#define TOKEN(k, rep, fn_, ...) { .section = CONFIG_TOKEN_PREFIX, .key = k, .repeat = INIKEY_##rep, .fn = fn_, __VA_ARGS__ }

static const struct inikey keys[] = {
        HTTP("listen", APPEND, k_listen),
        HTTP("listen_tls", APPEND, k_listen),
        HTTP("tls_cert", ONCE, config_kind_abs_path, .off = offsetof(struct config, http_tls_cert)),
        HTTP("tls_key", ONCE, config_kind_abs_path, .off = offsetof(struct config, http_tls_key)),
        HTTP("tls_client_ca", ONCE, config_kind_abs_path, .off = offsetof(struct config, http_tls_client_ca)),
        HTTP("max_connections", ONCE, config_kind_count, .off = offsetof(struct config, http_max_connections), .min = 1,
             .max = 65536),
        HTTP("max_ip_connections", ONCE, config_kind_count, .off = offsetof(struct config, http_ip_connections), .min = 1,
             .max = 65536),
        HTTP("idle_timeout", ONCE, config_kind_duration, .off = offsetof(struct config, http_idle_timeout_ms), .min = 1000,
             .max = 3600000),
        HTTP("max_headers", ONCE, config_kind_size, .off = offsetof(struct config, http_max_headers), .min = 4096,
             .max = 1u << 20),

        HTTP("mcp_origin", APPEND, k_mcp_origin),

        TOKEN("tenant", ONCE, k_tenant),
        TOKEN("sha256", ONCE, k_sha256),
        TOKEN("cert_sha256", ONCE, k_cert_sha256),
        TOKEN("scope", ONCE, k_scope),
        TOKEN("expires", ONCE, k_expires),
        TOKEN("rate", ONCE, config_kind_count, .off = offsetof(struct http_token, rate), .min = 1, .max = 1000000),
        TOKEN("burst", ONCE, config_kind_count, .off = offsetof(struct http_token, burst), .min = 1, .max = 1000000),
};

const struct inikey_table config_http_table = INIKEY_TABLE(keys);

int config_http_check(struct config *c, struct sbx_error *err) {
        bool tls = false;
        for (size_t i = 0; i < c->n_http_listen; i++)
                tls |= c->http_listen_tls[i];
        if (!c->http_tls_cert != !c->http_tls_key)
                return BAD("[http] %s without %s: a TLS listener needs both", c->http_tls_cert ? "tls_cert" : "tls_key",
                           c->http_tls_cert ? "tls_key" : "tls_cert");
        if (tls && !c->http_tls_cert)
                return BAD("[http] listen_tls needs tls_cert and tls_key");
        if (!tls && c->http_tls_cert)
                return BAD("[http] tls_cert and tls_key are for listen_tls addresses, and none is given");
        if (!tls && c->http_tls_client_ca)
                return BAD("[http] tls_client_ca is for listen_tls addresses, and none is given");
        for (size_t i = 0; i < c->n_tokens; i++) {
                struct http_token *t = &c->tokens[i];
                if (!t->has_sha256 && !t->has_cert)
                        return BAD("%s: [token.%s] has neither sha256 (a bearer token) nor cert_sha256 (a client certificate)",
                                   t->origin, t->name);
                if (t->has_sha256 && t->has_cert)
                        return BAD("%s: [token.%s] has both sha256 and cert_sha256: a section is one bearer token or one "
                                   "client certificate", t->origin, t->name);
                if (t->has_cert && !c->http_tls_client_ca)
                        return BAD("%s: [token.%s] cert_sha256 needs [http] tls_client_ca (the CA the certificate is checked "
                                   "against)", t->origin, t->name);
                if (!t->tenant_name)
                        return BAD("%s: [token.%s] has no tenant", t->origin, t->name);
                t->tenant = NULL;
                for (size_t j = 0; j < c->n_tenants; j++)
                        if (streq(c->tenants[j].name, t->tenant_name))
                                t->tenant = &c->tenants[j];
                if (!t->tenant)
                        return BAD("%s: [token.%s]: no tenant '%s' is configured", t->origin, t->name, t->tenant_name);
                if (t->burst && !t->rate)
                        return BAD("%s: [token.%s]: burst goes with rate", t->origin, t->name);
                if (t->rate && !t->burst)
                        t->burst = t->rate;
                for (size_t j = 0; j < i; j++) {
                        const struct http_token *o = &c->tokens[j];
                        if (t->has_sha256 && o->has_sha256 && !memcmp(o->sha256, t->sha256, sizeof(t->sha256)))
                                return BAD("%s: [token.%s] has the sha256 of [token.%s]", t->origin, t->name, o->name);
                        if (t->has_cert && o->has_cert && !memcmp(o->cert_sha256, t->cert_sha256, sizeof(t->cert_sha256)))
                                return BAD("%s: [token.%s] has the cert_sha256 of [token.%s]", t->origin, t->name, o->name);
                }
        }
        return 0;
}
