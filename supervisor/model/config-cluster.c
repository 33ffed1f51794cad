/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord.conf(5), the keys of cluster mode: [cluster] (the
 * PostgreSQL database nodes share, this node's name and role, the lease of
 * a claimed job). Cluster mode is on when database or database_file is
 * set; the connection string is read from database_file when the
 * configuration is loaded, so that a password can live in a file of its
 * own (a Kubernetes Secret, say). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config-keys.h"
#include "inifile.h"
#include "util.h"

#define BAD(...) sbx_error_msg(err, EINVAL, __VA_ARGS__)
#define CONNINFO_MAX 4096

void config_cluster_defaults(struct config *c) {
        c->cluster_role = CLUSTER_BOTH;
        c->cluster_lease_ms = 15000;
        c->cluster_timeout_ms = 0; /* a third of the lease, at most 5 s */
        c->cluster_output_max = 64 * 1024;
}

void config_cluster_free(struct config *c) {
        free(c->cluster_db);
        free(c->cluster_db_file);
        free(c->cluster_node);
        free(c->cluster_advertise);
        c->cluster_db = c->cluster_db_file = c->cluster_node = c->cluster_advertise = NULL;
}

static int k_role(struct inikey_ctx *c) {
        struct config *cfg = config_of(c);
        if (streq(c->value, "both"))
                cfg->cluster_role = CLUSTER_BOTH;
        else if (streq(c->value, "api"))
                cfg->cluster_role = CLUSTER_API;
        else if (streq(c->value, "worker"))
                cfg->cluster_role = CLUSTER_WORKER;
        else
                return FAIL(c, "role: expected 'both', 'api' or 'worker', got '%s'", c->value);
        return 0;
}

static int k_node(struct inikey_ctx *c) {
        size_t n = strlen(c->value);
        if (n == 0 || n > 63)
                return FAIL(c, "node: a name of 1 to 63 characters, got %zu", n);
        for (const char *p = c->value; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' ||
                      *p == '.'))
                        return FAIL(c, "node: '%s': only letters, digits, '-', '_' and '.'", c->value);
        return config_set_str(&config_of(c)->cluster_node, c->value);
}

static int k_database(struct inikey_ctx *c) {
        if (strlen(c->value) > CONNINFO_MAX)
                return FAIL(c, "database: longer than %d bytes", CONNINFO_MAX);
        return config_set_str(&config_of(c)->cluster_db, c->value);
}

const char *config_cluster_advertise_why(const char *v) {
        const char *host = !strncmp(v, "http://", 7) ? v + 7 : !strncmp(v, "https://", 8) ? v + 8 : NULL;
        if (!host)
                return "expected http://HOST[:PORT] or https://HOST[:PORT]";
        size_t n = strlen(host);
        if (n == 0 || n > 255)
                return "a host of 1 to 255 characters";
        for (const char *p = host; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-.:[]", *p)))
                        return "only a host and a port (no path, query or user: the API's paths are added)";
        return NULL;
}

static int k_advertise(struct inikey_ctx *c) {
        const char *why = config_cluster_advertise_why(c->value);
        if (why)
                return FAIL(c, "advertise: '%s': %s", c->value, why);
        return config_set_str(&config_of(c)->cluster_advertise, c->value);
}

const char *config_cluster_role_name(int role) {
        return role == CLUSTER_API ? "api" : role == CLUSTER_WORKER ? "worker" : "both";
}

#define CLUSTER(k, rep, fn_, ...) { .section = "cluster", .key = k, .repeat = INIKEY_##rep, .fn = fn_, __VA_ARGS__ }

static const struct inikey keys[] = {
        CLUSTER("database", ONCE, k_database),
        CLUSTER("database_file", ONCE, config_kind_abs_path, .off = offsetof(struct config, cluster_db_file)),
        CLUSTER("node", ONCE, k_node),
        CLUSTER("role", ONCE, k_role),
        CLUSTER("lease", ONCE, config_kind_duration, .off = offsetof(struct config, cluster_lease_ms), .min = 1000,
                .max = 3600000),
        CLUSTER("statement_timeout", ONCE, config_kind_duration, .off = offsetof(struct config, cluster_timeout_ms),
                .min = 100, .max = 60000),
        CLUSTER("advertise", ONCE, k_advertise),
        CLUSTER("output_max", ONCE, config_kind_size, .off = offsetof(struct config, cluster_output_max), .max = 16u << 20),
};

const struct inikey_table config_cluster_table = INIKEY_TABLE(keys);

int config_cluster_check(struct config *c, struct sbx_error *err) {
        if (c->cluster_db && c->cluster_db_file)
                return BAD("%s: [cluster] has both database and database_file: give the connection string once", c->path);
        if (c->cluster_db_file) {
                _cleanup_free_ char *text = NULL;
                size_t len;
                int r = inifile_read(c->cluster_db_file, CONNINFO_MAX, &text, &len, err);
                if (r < 0) {
                        char why[SBX_ERROR_MAX];
                        snprintf(why, sizeof(why), "%s", err->msg);
                        return sbx_error_msg(err, -r, "%s: [cluster] database_file: %s", c->path, why);
                }
                while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
                        text[--len] = 0;
                if (!len || memchr(text, '\n', len) || strlen(text) != len)
                        return BAD("%s: [cluster] database_file %s: expected one line, a PostgreSQL connection string", c->path,
                                   c->cluster_db_file);
                c->cluster_db = TAKE_PTR(text);
        }
        if (!c->cluster_db) {
                if (c->cluster_node || c->cluster_role != CLUSTER_BOTH || c->cluster_advertise)
                        return BAD("%s: [cluster] has no database (database or database_file): node, role and advertise mean nothing "
                                   "without one",
                                   c->path);
                return 0;
        }
        if (!c->cluster_node) {
                char host[256];
                if (gethostname(host, sizeof(host)) < 0)
                        return sbx_error_set(err, errno, "%s: [cluster] node: the host name", c->path);
                host[sizeof(host) - 1] = 0;
                host[63] = 0;
                if (config_set_str(&c->cluster_node, host) < 0)
                        return sbx_error_set(err, ENOMEM, "%s", c->path);
        }
        if (!c->cluster_timeout_ms)
                c->cluster_timeout_ms = c->cluster_lease_ms / 3 < 5000 ? c->cluster_lease_ms / 3 : 5000;
        if (c->cluster_timeout_ms * 2 > c->cluster_lease_ms)
                return BAD("%s: [cluster] statement_timeout (%llu ms) must be at most half the lease (%llu ms): a node renews "
                           "its leases in time only if the database answers well within one",
                           c->path, (unsigned long long) c->cluster_timeout_ms, (unsigned long long) c->cluster_lease_ms);
        return 0;
}
