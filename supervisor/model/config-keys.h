/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord.conf(5)'s key table, inside the configuration module:
 * what a key's parser is handed (config.c reads the file and finds the
 * key; config-kinds.c parses the kinds of values many keys share;
 * config-net.c the network keys). Not for use outside config*.c. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "inikeys.h"

/* In a key's arg: "unlimited" is a value (CONFIG_UNSET). */
#define CONF_UNLIMITED 1

/* The file's configuration, and the tenant a [tenant.NAME] key is of
 * (NULL in [daemon]). */
static inline struct config *config_of(const struct inikey_ctx *c) {
        return c->user;
}
static inline struct tenant *config_tenant(const struct inikey_ctx *c) {
        return c->obj != c->user ? c->obj : NULL;
}

#define FAIL(c, ...) inifile_fail((c)->f, (c)->line, __VA_ARGS__)

/* The keys of bundles and registries (config-bundle.c) and of callbacks
 * (config-callback.c). */
extern const struct inikey_table config_bundle_table, config_callback_table, config_http_table, config_secret_table,
        config_deps_table, config_cluster_table;
/* The registry of a [registry.NAME] section, made on its first key. */
int config_registry_object(struct inikey_ctx *c, const char *name, void **ret);
/* The token of a [token.NAME] section (config-http.c), made on its first key. */
int config_token_object(struct inikey_ctx *c, const char *name, void **ret);

int config_set_str(char **dst, const char *v);
int config_lookup_uid(const char *v, uid_t *ret);
int config_lookup_gid(const char *v, gid_t *ret);
/* Words separated by spaces, tabs or commas; calls fn on each. */
int config_each_word(struct inikey_ctx *c, int (*fn)(struct inikey_ctx *, const char *));

/* config-kinds.c: the value kinds; each reads c->v into the key's field
 * (inikey_field()) within the key's bounds, or fails naming the line. */
int config_kind_abs_path(struct inikey_ctx *c);
int config_kind_listen(struct inikey_ctx *c);
int config_kind_socket(struct inikey_ctx *c);
int config_kind_socket_mode(struct inikey_ctx *c);
int config_kind_group(struct inikey_ctx *c);
int config_kind_profile_path(struct inikey_ctx *c);
int config_kind_job_uids(struct inikey_ctx *c);
int config_kind_cgroup(struct inikey_ctx *c);
int config_kind_count(struct inikey_ctx *c);
int config_kind_size(struct inikey_ctx *c);
int config_kind_ring(struct inikey_ctx *c);
int config_kind_duration(struct inikey_ctx *c);
int config_kind_log_format(struct inikey_ctx *c);
int config_kind_audit_fsync(struct inikey_ctx *c);
int config_kind_bool(struct inikey_ctx *c);
int config_kind_domain(struct inikey_ctx *c);

/* config-net.c: the network keys of [daemon] and of tenants. */
int config_net_modes(struct inikey_ctx *c);
int config_net_allow(struct inikey_ctx *c);
int config_net_deny_ports(struct inikey_ctx *c);
int config_net_pool(struct inikey_ctx *c);
int config_net_pool6(struct inikey_ctx *c);
int config_net_dns_upstream(struct inikey_ctx *c);
int config_net_deny(struct inikey_ctx *c);
int config_net_max_names(struct inikey_ctx *c);
/* Once the file is read: a tenant's network_allow entry that reaches only
 * what restricted jobs never reach (netdeny.h, but the host's addresses)
 * is a mistake, said at once. */
int config_net_check(const struct config *c, struct sbx_error *err);
