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
#include "inifile.h"

enum conf_section {
        SEC_DAEMON,
        SEC_TENANT,
};

enum conf_kind {
        CONF_SCALAR,  /* one line */
        CONF_LIST,    /* words; an indented line adds more */
};

struct conf_key;

/* One key line (or indented continuation) being applied. */
struct cctx {
        struct inifile *f;
        struct config *c;
        struct tenant *t;      /* the section's tenant; NULL in [daemon] */
        const struct conf_key *def;
        const char *v;
        unsigned line;
        bool continuation;
};

struct conf_key {
        enum conf_section section;
        const char *key;
        enum conf_kind kind;
        int (*fn)(struct cctx *c);
        size_t off;            /* the field, in struct config or struct tenant */
        uint64_t min, max;     /* bounds of numbers, sizes and durations; 0 = none */
        bool unlimited;        /* "unlimited" is a value (CONFIG_UNSET) */
};

#define FAIL(c, ...) inifile_fail((c)->f, (c)->line, __VA_ARGS__)

void *config_field(const struct cctx *c);
int config_set_str(char **dst, const char *v);
int config_lookup_uid(const char *v, uid_t *ret);
int config_lookup_gid(const char *v, gid_t *ret);
/* Words separated by spaces, tabs or commas; calls fn on each. */
int config_each_word(struct cctx *c, int (*fn)(struct cctx *, const char *));

/* config-kinds.c: the value kinds; each reads c->v into the key's field
 * (config_field()) within the key's bounds, or fails naming the line. */
int config_kind_abs_path(struct cctx *c);
int config_kind_listen(struct cctx *c);
int config_kind_socket(struct cctx *c);
int config_kind_socket_mode(struct cctx *c);
int config_kind_group(struct cctx *c);
int config_kind_profile_path(struct cctx *c);
int config_kind_job_uids(struct cctx *c);
int config_kind_cgroup(struct cctx *c);
int config_kind_count(struct cctx *c);
int config_kind_size(struct cctx *c);
int config_kind_ring(struct cctx *c);
int config_kind_duration(struct cctx *c);
int config_kind_log_format(struct cctx *c);
int config_kind_audit_fsync(struct cctx *c);
int config_kind_bool(struct cctx *c);

/* config-net.c: the network keys of [daemon] and of tenants. */
int config_net_modes(struct cctx *c);
int config_net_allow(struct cctx *c);
int config_net_deny_ports(struct cctx *c);
int config_net_pool(struct cctx *c);
int config_net_pool6(struct cctx *c);
int config_net_dns_upstream(struct cctx *c);
int config_net_dns_timeout(struct cctx *c);
int config_net_deny(struct cctx *c);
int config_net_max_names(struct cctx *c);
/* Once the file is read: a tenant's network_allow entry that reaches only
 * what restricted jobs never reach (netdeny.h, but the host's addresses)
 * is a mistake, said at once. */
int config_net_check(const struct config *c, struct sbx_error *err);
