/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <sys/un.h>

#include "config-keys.h"
#include "metrics.h"
#include "inifile.h"
#include "netpolicy.h"
#include "parse.h"
#include "profile.h"
#include "proto.h"
#include "util.h"

#ifndef SBX_SYSCONFDIR
#define SBX_SYSCONFDIR "/etc"
#endif
#ifndef SBX_RUNSTATEDIR
#define SBX_RUNSTATEDIR "/run"
#endif
#ifndef SBX_LOCALSTATEDIR
#define SBX_LOCALSTATEDIR "/var"
#endif
#ifndef SBX_BINDIR
#define SBX_BINDIR "/usr/bin"
#endif
#ifndef SBX_PROFILEDIR
#define SBX_PROFILEDIR "/usr/share/sbx/profiles"
#endif

#define NOBODY_ID 65534

void tenant_defaults(struct tenant *t) {
        memset(t, 0, sizeof(*t));
        struct passwd *pw = getpwnam("nobody");
        t->job_uid = pw ? pw->pw_uid : NOBODY_ID;
        t->job_gid = pw ? pw->pw_gid : NOBODY_ID;
        t->default_timeout_ms = 60 * 1000;
        t->max_timeout_ms = 60 * 60 * 1000;
        /* A tenant without caps still has some: a job cannot take the
         * host's memory or process table (sbx-supervisord.conf(5)). */
        t->max_memory = 4ull << 30;
        t->max_processes = 1024;
        t->max_cpu_s = CONFIG_UNSET;
        t->max_cpu_milli = CONFIG_UNSET;
        t->max_output = 16u << 20;
        t->max_disk = 1ull << 30;
        t->max_upload = 16u << 20;
        t->max_artifacts = 64u << 20;
        t->max_jobs = 8;
        t->max_queue = 64;
        t->max_sessions = 4;
        t->session_ttl_max_ms = 60 * 60 * 1000;
        t->session_idle_max_ms = 15 * 60 * 1000;
        t->session_memory_max = CONFIG_UNSET;
        t->warm_idle_ms = 10 * 60 * 1000;
        t->service_connections = 16;
        t->service_bandwidth = CONFIG_UNSET;
        t->net_modes = NET_MODE_BIT(NET_NONE);
        t->net_max_names = 256;
        t->over_limit = OVER_LIMIT_REJECT;
        t->profiles = calloc(1, sizeof(char *));
        if (t->profiles && (t->profiles[0] = strdup("default")))
                t->n_profiles = 1;
        tenant_deps_defaults(t);
}

void tenant_free(struct tenant *t) {
        free(t->name);
        free(t->origin);
        free(t->uids);
        free(t->gids);
        for (size_t i = 0; i < t->n_profiles; i++)
                free(t->profiles[i]);
        free(t->profiles);
        free(t->net_allow);
        free(t->default_profile);
        tenant_bundle_free(t);
        tenant_callback_free(t);
        tenant_secret_free(t);
        tenant_deps_free(t);
}

void config_init(struct config *c) {
        memset(c, 0, sizeof(*c));
        c->socket_path = strdup(SBX_RUNSTATEDIR "/sbx/sbx-supervisord.sock");
        c->socket_mode = 0660;
        c->socket_gid = (gid_t) -1;
        c->state_dir = strdup(SBX_LOCALSTATEDIR "/lib/sbx");
        c->launcher = strdup(SBX_BINDIR "/sbx-launch");
        c->init = strdup(SBX_LIBEXECDIR "/sbx-init");
        c->profile_path = strdup(SBX_SYSCONFDIR "/sbx/profiles:" SBX_PROFILEDIR);
        c->cgroup_root = strdup("auto");
        c->job_uid_first = CONFIG_JOB_UIDS_FIRST;
        c->job_uid_count = CONFIG_JOB_UIDS_COUNT;
        c->max_jobs = 16;
        c->max_queue = 1024;
        c->max_connections = 4096;
        c->max_tenant_connections = 1024;
        c->request_memory = 64u << 20;
        c->max_request = 4u << 20;
        c->client_buffer = 8u << 20;
        c->max_result_value = 1u << 20;
        c->kill_grace_ms = 5000;
        c->network_ring = 256u << 10;
        c->network_events = 1000;
        c->dns_upstream_timeout_ms = 2000;
        c->dns_tcp_idle_ms = 10000;
        c->request_timeout_ms = 30000;
        c->service_timeout_ms = 10000;
        c->retention_ms = 7ull * 24 * 3600 * 1000;
        c->audit_fsync = AUDIT_FSYNC_ALWAYS;
        c->anonymous = malloc(sizeof(*c->anonymous));
        if (c->anonymous) {
                tenant_defaults(c->anonymous);
                c->anonymous->name = strdup("anonymous");
        }
        config_bundle_defaults(c);
        config_deps_defaults(c);
        config_callback_defaults(c);
        config_http_defaults(c);
        config_cluster_defaults(c);
}

void config_free(struct config *c) {
        free(c->path);
        free(c->socket_path);
        free(c->state_dir);
        free(c->secret_proxy_ca);
        free(c->work_dir);
        free(c->launcher);
        free(c->init);
        free(c->user);
        free(c->helper);
        free(c->helper_socket);
        free(c->profile_path);
        free(c->cgroup_root);
        free(c->audit_log);
        free(c->metrics_listen);
        free(c->service_listen);
        free(c->service_domain);
        free(c->net_deny);
        free(c->admins);
        for (size_t i = 0; i < c->n_tenants; i++)
                tenant_free(&c->tenants[i]);
        free(c->tenants);
        if (c->anonymous)
                tenant_free(c->anonymous);
        free(c->anonymous);
        for (size_t i = 0; i < c->n_entries; i++) {
                free(c->entries[i].section);
                free(c->entries[i].key);
                free(c->entries[i].value);
        }
        free(c->entries);
        for (size_t i = 0; i < c->n_slots; i++)
                free(c->slots[i]);
        free(c->slots);
        config_bundle_free(c);
        config_http_free(c);
        config_cluster_free(c);
        memset(c, 0, sizeof(*c));
}

/* ---- reading: the shared INI reader (lib/inifile.h) and a key table ---- */

#define CONFIG_MAX_FILE_SIZE (1024 * 1024)

int config_set_str(char **dst, const char *v) {
        char *s = strdup(v);
        if (!s)
                return -ENOMEM;
        free(*dst);
        *dst = s;
        return 0;
}

int config_lookup_uid(const char *v, uid_t *ret) {
        uint64_t n;
        if (parse_uint64(v, UINT32_MAX - 1, &n) == 0) {
                *ret = (uid_t) n;
                return 0;
        }
        struct passwd *pw = getpwnam(v);
        if (!pw)
                return -ENOENT;
        *ret = pw->pw_uid;
        return 0;
}

int config_lookup_gid(const char *v, gid_t *ret) {
        uint64_t n;
        if (parse_uint64(v, UINT32_MAX - 1, &n) == 0) {
                *ret = (gid_t) n;
                return 0;
        }
        struct group *gr = getgrnam(v);
        if (!gr)
                return -ENOENT;
        *ret = gr->gr_gid;
        return 0;
}

/* Words separated by spaces, tabs or commas; calls fn on each. */
int config_each_word(struct inikey_ctx *c, int (*fn)(struct inikey_ctx *, const char *)) {
        _cleanup_free_ char *copy = strdup(c->value);
        char *save = NULL;
        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
                int r = fn(c, w);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- tenant keys ---- */

/* A user name or uid appended to a list of at most CONFIG_MAX_IDS. */
static int append_uid(struct inikey_ctx *c, const char *w, const char *what, uid_t **ids, size_t *n) {
        uid_t u;
        if (config_lookup_uid(w, &u) < 0)
                return FAIL(c, "%sunknown user '%s'", what, w);
        if (*n >= CONFIG_MAX_IDS)
                return FAIL(c, "%stoo many uids (at most %d)", what, CONFIG_MAX_IDS);
        uid_t *a = realloc(*ids, (*n + 1) * sizeof(*a));
        if (!a)
                return -ENOMEM;
        a[(*n)++] = u;
        *ids = a;
        return 0;
}

static int add_uid(struct inikey_ctx *c, const char *w) {
        struct tenant *t = config_tenant(c);
        return append_uid(c, w, "", &t->uids, &t->n_uids);
}

static int add_admin(struct inikey_ctx *c, const char *w) {
        struct config *cf = config_of(c);
        return append_uid(c, w, "admins: ", &cf->admins, &cf->n_admins);
}

static int k_admins(struct inikey_ctx *c) {
        return config_each_word(c, add_admin);
}

static int add_gid(struct inikey_ctx *c, const char *w) {
        struct tenant *t = config_tenant(c);
        gid_t g;
        if (config_lookup_gid(w, &g) < 0)
                return FAIL(c, "unknown group '%s'", w);
        if (t->n_gids >= CONFIG_MAX_IDS)
                return FAIL(c, "too many gids (at most %d)", CONFIG_MAX_IDS);
        gid_t *n = realloc(t->gids, (t->n_gids + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        n[t->n_gids++] = g;
        t->gids = n;
        return 0;
}

static int add_profile(struct inikey_ctx *c, const char *w) {
        struct tenant *t = config_tenant(c);
        if (!streq(w, "*") && !name_valid(w))
                return FAIL(c, "invalid profile name '%s'", w);
        if (t->n_profiles >= CONFIG_MAX_PROFILES)
                return FAIL(c, "too many profiles (at most %d)", CONFIG_MAX_PROFILES);
        char **n = realloc(t->profiles, (t->n_profiles + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        t->profiles = n;
        if (!(n[t->n_profiles] = strdup(w)))
                return -ENOMEM;
        t->n_profiles++;
        return 0;
}

static int k_uids(struct inikey_ctx *c) {
        return config_each_word(c, add_uid);
}

static int k_gids(struct inikey_ctx *c) {
        return config_each_word(c, add_gid);
}

/* A new "profiles =" line replaces the list (the default "default"); its
 * indented continuation lines add to it. */
static int k_profiles(struct inikey_ctx *c) {
        struct tenant *t = config_tenant(c);
        if (!c->continuation) {
                for (size_t i = 0; i < t->n_profiles; i++)
                        free(t->profiles[i]);
                t->n_profiles = 0;
        }
        return config_each_word(c, add_profile);
}

static int k_job_user(struct inikey_ctx *c) {
        struct tenant *t = config_tenant(c);
        t->job_user_set = true;
        if (config_lookup_uid(c->value, &t->job_uid) < 0)
                return FAIL(c, "job_user: unknown user '%s'", c->value);
        if (t->job_uid == 0)
                return FAIL(c, "job_user: jobs never run as root");
        /* The user's own group, unless job_group says otherwise. */
        struct passwd *pw = getpwuid(t->job_uid);
        if (pw && !t->job_group_set && pw->pw_gid != 0)
                t->job_gid = pw->pw_gid;
        return 0;
}

/* The front's user: never root, and its own group. */
static int k_user(struct inikey_ctx *c) {
        struct config *cf = c->obj;
        struct passwd *pw = getpwnam(c->value);
        if (!pw)
                return FAIL(c, "user: unknown user '%s'", c->value);
        if (pw->pw_uid == 0 || pw->pw_gid == 0)
                return FAIL(c, "user: '%s' is root or in root's group: the front runs without privilege", c->value);
        free(cf->user);
        cf->user = strdup(c->value);
        cf->user_uid = pw->pw_uid;
        cf->user_gid = pw->pw_gid;
        return cf->user ? 0 : -ENOMEM;
}

static int k_job_group(struct inikey_ctx *c) {
        struct tenant *t = config_tenant(c);
        if (config_lookup_gid(c->value, &t->job_gid) < 0)
                return FAIL(c, "job_group: unknown group '%s'", c->value);
        if (t->job_gid == 0)
                return FAIL(c, "job_group: jobs never run as group root");
        t->job_group_set = true;
        return 0;
}

static int k_default_profile(struct inikey_ctx *c) {
        if (!name_valid(c->value))
                return FAIL(c, "default_profile: invalid profile name '%s'", c->value);
        return config_set_str(&config_tenant(c)->default_profile, c->value);
}

static int k_default_timeout(struct inikey_ctx *c) {
        config_tenant(c)->default_timeout_set = true;
        return config_kind_duration(c);
}

static int k_max_cpu(struct inikey_ctx *c) {
        uint64_t ms = 0;
        if (streq(c->value, "unlimited")) {
                config_tenant(c)->max_cpu_s = CONFIG_UNSET;
                return 0;
        }
        if (parse_duration_ms(c->value, &ms) < 0)
                return FAIL(c, "max_cpu: invalid duration '%s'", c->value);
        config_tenant(c)->max_cpu_s = (ms + 999) / 1000;
        return 0;
}

static int k_max_cpus(struct inikey_ctx *c) {
        uint64_t m;
        if (streq(c->value, "unlimited")) {
                config_tenant(c)->max_cpu_milli = CONFIG_UNSET;
                return 0;
        }
        if (parse_cpus_milli(c->value, &m) < 0 || m < PROTO_CPUS_MIN_MILLI || m > PROTO_CPUS_MAX_MILLI)
                return FAIL(c, "max_cpus: invalid number of CPUs '%s' (0.01 to 1024, e.g. 0.5 or 2, or unlimited)", c->value);
        config_tenant(c)->max_cpu_milli = m;
        return 0;
}

static int k_over_limit(struct inikey_ctx *c) {
        if (streq(c->value, "reject"))
                config_tenant(c)->over_limit = OVER_LIMIT_REJECT;
        else if (streq(c->value, "clamp"))
                config_tenant(c)->over_limit = OVER_LIMIT_CLAMP;
        else
                return FAIL(c, "over_limit: expected 'reject' or 'clamp', got '%s'", c->value);
        return 0;
}

/* ---- the table ---- */

#define DAEMON(k, rep, fn_, ...) { .section = "daemon", .key = k, .repeat = INIKEY_##rep, .fn = fn_, __VA_ARGS__ }
#define TENANT(k, rep, fn_, ...) { .section = TENANT_PREFIX, .key = k, .repeat = INIKEY_##rep, .fn = fn_, __VA_ARGS__ }
#define IN_CONFIG(f) .off = offsetof(struct config, f)
#define IN_TENANT(f) .off = offsetof(struct tenant, f)

#define TENANT_PREFIX "tenant."

static const struct inikey keys[] = {
        DAEMON("socket", ONCE, config_kind_socket, IN_CONFIG(socket_path)),
        DAEMON("socket_mode", ONCE, config_kind_socket_mode, IN_CONFIG(socket_mode)),
        DAEMON("socket_group", ONCE, config_kind_group, IN_CONFIG(socket_gid)),
        DAEMON("state_dir", ONCE, config_kind_abs_path, IN_CONFIG(state_dir)),
        DAEMON("workspace_dir", ONCE, config_kind_abs_path, IN_CONFIG(work_dir)),
        DAEMON("launcher", ONCE, config_kind_abs_path, IN_CONFIG(launcher)),
        DAEMON("init", ONCE, config_kind_abs_path, IN_CONFIG(init)),
        DAEMON("user", ONCE, k_user),
        DAEMON("helper", ONCE, config_kind_abs_path, IN_CONFIG(helper)),
        DAEMON("helper_socket", ONCE, config_kind_abs_path, IN_CONFIG(helper_socket)),
        DAEMON("profile_path", ONCE, config_kind_profile_path, IN_CONFIG(profile_path)),
        DAEMON("cgroup", ONCE, config_kind_cgroup, IN_CONFIG(cgroup_root)),
        DAEMON("max_jobs", ONCE, config_kind_count, IN_CONFIG(max_jobs)),
        DAEMON("max_queue", ONCE, config_kind_count, IN_CONFIG(max_queue)),
        DAEMON("max_connections", ONCE, config_kind_count, IN_CONFIG(max_connections)),
        DAEMON("max_tenant_connections", ONCE, config_kind_count, IN_CONFIG(max_tenant_connections)),
        DAEMON("request_memory", ONCE, config_kind_size, IN_CONFIG(request_memory), .min = 1u << 20),
        DAEMON("job_uids", ONCE, config_kind_job_uids),
        DAEMON("max_request", ONCE, config_kind_size, IN_CONFIG(max_request), .min = 1024, .max = 256u << 20),
        DAEMON("client_buffer", ONCE, config_kind_size, IN_CONFIG(client_buffer), .min = 64 * 1024),
        DAEMON("max_result_value", ONCE, config_kind_size, IN_CONFIG(max_result_value), .min = 1024, .max = 64u << 20),
        DAEMON("kill_grace", ONCE, config_kind_duration, IN_CONFIG(kill_grace_ms)),
        DAEMON("network_ring", ONCE, config_kind_ring, IN_CONFIG(network_ring), .min = 4096, .max = 1u << 30),
        DAEMON("network_events", ONCE, config_kind_count, IN_CONFIG(network_events)),
        DAEMON("network_pool", ONCE, config_net_pool),
        DAEMON("network_pool6", ONCE, config_net_pool6),
        DAEMON("dns_upstream", ONCE, config_net_dns_upstream),
        /* dns_upstream_timeout: past it the proxy answers SERVFAIL, so that
         * the job's resolver fails at once instead of at its own timeouts
         * (glibc's: 5 s, twice). dns_tcp_idle_timeout: a job's TCP
         * connection to its proxy idle this long is closed (it holds one of
         * the job's 8). */
        DAEMON("dns_upstream_timeout", ONCE, config_kind_duration, IN_CONFIG(dns_upstream_timeout_ms), .min = 100, .max = 30000),
        DAEMON("dns_tcp_idle_timeout", ONCE, config_kind_duration, IN_CONFIG(dns_tcp_idle_ms), .min = 1000, .max = 300000),
        DAEMON("network_deny", APPEND, config_net_deny),
        DAEMON("request_timeout", ONCE, config_kind_duration, IN_CONFIG(request_timeout_ms), .min = 1000),
        DAEMON("retention", ONCE, config_kind_duration, IN_CONFIG(retention_ms)),
        DAEMON("log_format", ONCE, config_kind_log_format),
        DAEMON("audit_log", ONCE, config_kind_abs_path, IN_CONFIG(audit_log)),
        DAEMON("audit_fsync", ONCE, config_kind_audit_fsync),
        DAEMON("metrics_listen", ONCE, config_kind_listen, IN_CONFIG(metrics_listen)),
        DAEMON("service_listen", ONCE, config_kind_listen, IN_CONFIG(service_listen)),
        DAEMON("service_domain", ONCE, config_kind_domain, IN_CONFIG(service_domain)),
        DAEMON("service_timeout", ONCE, config_kind_duration, IN_CONFIG(service_timeout_ms), .min = 100),
        DAEMON("allow_unauthenticated", ONCE, config_kind_bool, IN_CONFIG(allow_unauthenticated)),
        DAEMON("admins", APPEND, k_admins),

        TENANT("uids", APPEND, k_uids),
        TENANT("gids", APPEND, k_gids),
        TENANT("job_user", ONCE, k_job_user),
        TENANT("job_group", ONCE, k_job_group),
        TENANT("profiles", APPEND, k_profiles),
        TENANT("default_profile", ONCE, k_default_profile),
        TENANT("default_timeout", ONCE, k_default_timeout, IN_TENANT(default_timeout_ms)),
        TENANT("max_timeout", ONCE, config_kind_duration, IN_TENANT(max_timeout_ms)),
        TENANT("max_memory", ONCE, config_kind_size, IN_TENANT(max_memory), .arg = CONF_UNLIMITED),
        TENANT("max_processes", ONCE, config_kind_count, IN_TENANT(max_processes), .arg = CONF_UNLIMITED),
        TENANT("max_cpu", ONCE, k_max_cpu),
        TENANT("max_cpus", ONCE, k_max_cpus),
        TENANT("max_output", ONCE, config_kind_size, IN_TENANT(max_output), .arg = CONF_UNLIMITED),
        TENANT("max_disk", ONCE, config_kind_size, IN_TENANT(max_disk), .arg = CONF_UNLIMITED),
        TENANT("max_upload", ONCE, config_kind_size, IN_TENANT(max_upload), .arg = CONF_UNLIMITED),
        TENANT("max_artifacts", ONCE, config_kind_size, IN_TENANT(max_artifacts), .arg = CONF_UNLIMITED),
        TENANT("max_jobs", ONCE, config_kind_count, IN_TENANT(max_jobs)),
        TENANT("max_queue", ONCE, config_kind_count, IN_TENANT(max_queue)),
        TENANT("max_sessions", ONCE, config_kind_count, IN_TENANT(max_sessions)),
        TENANT("session_ttl_max", ONCE, config_kind_duration, IN_TENANT(session_ttl_max_ms), .min = 1000),
        TENANT("session_idle_max", ONCE, config_kind_duration, IN_TENANT(session_idle_max_ms), .min = 1000),
        TENANT("session_memory_max", ONCE, config_kind_size, IN_TENANT(session_memory_max), .arg = CONF_UNLIMITED),
        TENANT("warm", ONCE, config_kind_count, IN_TENANT(warm), .max = 64),
        TENANT("warm_idle", ONCE, config_kind_duration, IN_TENANT(warm_idle_ms), .min = 1000),
        TENANT("session_services", ONCE, config_kind_bool, IN_TENANT(session_services)),
        TENANT("service_connections", ONCE, config_kind_count, IN_TENANT(service_connections)),
        TENANT("service_bandwidth", ONCE, config_kind_size, IN_TENANT(service_bandwidth), .arg = CONF_UNLIMITED,
               .min = 1024, .max = 1ull << 40),
        TENANT("network", APPEND, config_net_modes),
        TENANT("network_allow", APPEND, config_net_allow),
        TENANT("network_deny_ports", APPEND, config_net_deny_ports),
        TENANT("network_max_names", ONCE, config_net_max_names, IN_TENANT(net_max_names)),
        TENANT("over_limit", ONCE, k_over_limit),
};

/* ---- sections ---- */

/* The tenant of a [tenant.NAME] section, made on its first key. */
static int section_tenant(struct inikey_ctx *c, const char *tn, struct tenant **ret) {
        struct config *cf = config_of(c);
        if (streq(tn, "anonymous")) {
                *ret = cf->anonymous;
                return 0;
        }
        for (size_t i = 0; i < cf->n_tenants; i++)
                if (streq(cf->tenants[i].name, tn)) {
                        *ret = &cf->tenants[i];
                        return 0;
                }
        if (!name_valid(tn))
                return FAIL(c, "invalid tenant name '%s'", tn);
        if (cf->n_tenants >= CONFIG_MAX_TENANTS)
                return FAIL(c, "too many tenants (at most %d)", CONFIG_MAX_TENANTS);
        struct tenant *n = realloc(cf->tenants, (cf->n_tenants + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        cf->tenants = n;
        struct tenant *t = &n[cf->n_tenants++];
        tenant_defaults(t);
        t->name = strdup(tn);
        if (asprintf(&t->origin, "%s:%u", inifile_name(c->f), c->section_line) < 0)
                t->origin = NULL;
        if (!t->name || !t->origin || !t->profiles)
                return -ENOMEM;
        *ret = t;
        return 0;
}

/* Each line of a key as written, for a reload to compare. */
static int remember(struct config *cf, const struct inikey_ctx *c) {
        struct config_entry *n = realloc(cf->entries, (cf->n_entries + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        cf->entries = n;
        struct config_entry *e = &n[cf->n_entries];
        e->section = strdup(c->section);
        e->key = strdup(c->def->key);
        e->value = strdup(c->value ? c->value : "");
        cf->n_entries++;
        return e->section && e->key && e->value ? 0 : -ENOMEM;
}

/* What a section's keys fill: the configuration, a tenant or a registry. */
static int section_object(struct inikey_ctx *c, void **ret) {
        struct config *cf = config_of(c);
        /* a key policy.set gave replaces the file's lines of it */
        if (cf->policy && !cf->policy_pass && strncmp(c->section, TENANT_PREFIX, strlen(TENANT_PREFIX)) == 0) {
                json_t *tkeys = json_object_get((json_t *) cf->policy, c->section + strlen(TENANT_PREFIX));
                if (json_object_get(tkeys, c->def->key))
                        return 1;
        }
        if (remember(cf, c) < 0)
                return -ENOMEM;
        if (strncmp(c->section, TENANT_PREFIX, strlen(TENANT_PREFIX)) == 0)
                return section_tenant(c, c->section + strlen(TENANT_PREFIX), (struct tenant **) ret);
        if (strncmp(c->section, CONFIG_REGISTRY_PREFIX, strlen(CONFIG_REGISTRY_PREFIX)) == 0)
                return config_registry_object(c, c->section + strlen(CONFIG_REGISTRY_PREFIX), ret);
        if (strncmp(c->section, CONFIG_TOKEN_PREFIX, strlen(CONFIG_TOKEN_PREFIX)) == 0)
                return config_token_object(c, c->section + strlen(CONFIG_TOKEN_PREFIX), ret);
        *ret = c->user;
        return 0;
}

/* Checks across keys and tenants, once the whole file is read. */
static int config_validate(struct config *c, struct sbx_error *err) {
        for (size_t i = 0; i < c->n_tenants; i++) {
                struct tenant *t = &c->tenants[i];
                if (t->n_uids == 0 && t->n_gids == 0)
                        return sbx_error_msg(err, EINVAL, "%s: [tenant.%s] has neither uids nor gids", t->origin, t->name);
                if (t->net_modes == 0)
                        return sbx_error_msg(err, EINVAL, "%s: [tenant.%s] allows no network mode", t->origin, t->name);
                for (size_t j = 0; j < i; j++)
                        for (size_t a = 0; a < t->n_uids; a++)
                                for (size_t b = 0; b < c->tenants[j].n_uids; b++)
                                        if (t->uids[a] == c->tenants[j].uids[b])
                                                return sbx_error_msg(err, EINVAL, "%s: uid %u is already in [tenant.%s]",
                                                                     t->origin, (unsigned) t->uids[a], c->tenants[j].name);
                /* The built-in default follows a lower cap; an explicit
                 * default above the cap is a contradiction. */
                if (t->default_timeout_ms > t->max_timeout_ms && !t->default_timeout_set)
                        t->default_timeout_ms = t->max_timeout_ms;
                if (t->default_timeout_ms > t->max_timeout_ms)
                        return sbx_error_msg(err, EINVAL, "%s: [tenant.%s] default_timeout is above max_timeout", t->origin, t->name);
                /* Each sandbox of its pool holds one of its max_jobs: one
                 * at least is left for the jobs that run cold. */
                if (t->warm && t->warm >= t->max_jobs)
                        return sbx_error_msg(err, EINVAL,
                                             "%s: [tenant.%s] warm = %" PRIu64 " holds as many sandboxes as max_jobs (%" PRIu64
                                             ") lets it run: at most %" PRIu64,
                                             t->origin, t->name, t->warm, t->max_jobs, t->max_jobs ? t->max_jobs - 1 : 0);
        }
        if (c->helper_socket && !c->user)
                return sbx_error_msg(err, EINVAL, "helper_socket %s: goes with user (the user the front runs as, whom sbx-privd serves)",
                                     c->helper_socket);
        if (c->helper_socket && c->helper)
                return sbx_error_msg(err, EINVAL, "helper_socket %s: the front connects to a running sbx-privd there; helper (a "
                                     "program for the front to start) does not go with it", c->helper_socket);
        int r = config_net_check(c, err);
        if (r < 0)
                return r;
        r = config_bundle_check(c, err);
        if (r >= 0)
                r = config_callback_check(c, err);
        if (r >= 0)
                r = config_secret_check(c, err);
        if (r >= 0)
                r = config_deps_check(c, err);
        if (r >= 0)
                r = config_cluster_check(c, err);
        return r < 0 ? r : config_http_check(c, err);
}

/* The keys of policy.set, as lines of their tenants' sections. */
static int load_policy(struct config *c, const struct inikey_format *fmt, struct sbx_error *err) {
        const char *tn, *key;
        json_t *tkeys, *v;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return sbx_error_set(err, ENOMEM, "%s", c->policy_name);
        json_object_foreach ((json_t *) c->policy, tn, tkeys) {
                bool known = false;
                for (size_t i = 0; i < c->n_tenants && !known; i++)
                        known = streq(c->tenants[i].name, tn);
                /* a tenant the file no longer has: its keys wait for it
                 * (no tenant at all allows less than any of them) */
                if (!known && !streq(tn, "anonymous"))
                        continue;
                fprintf(f, "[" TENANT_PREFIX "%s]\n", tn);
                json_object_foreach (tkeys, key, v)
                        fprintf(f, "%s = %s\n", key, json_string_value(v));
        }
        if (fclose(f) != 0) {
                free(text);
                return sbx_error_set(err, ENOMEM, "%s", c->policy_name);
        }
        c->policy_pass = true;
        int r = inikeys_parse(fmt, c->policy_name, text, len, c, err);
        c->policy_pass = false;
        free(text);
        return r;
}

static int load_text(struct config *c, const char *name, const char *text, size_t len, struct sbx_error *err) {
        const struct inikey_table tables[] = { INIKEY_TABLE(keys), config_bundle_table, config_callback_table,
                                               config_http_table, config_secret_table,
                                               config_deps_table, config_cluster_table };
        const struct inikey_format fmt = {
                .tables = tables,
                .n_tables = ARRAY_SIZE(tables),
                .sections = "daemon, http, cluster, " TENANT_PREFIX "NAME, " CONFIG_REGISTRY_PREFIX "NAME, " CONFIG_TOKEN_PREFIX "NAME",
                .last_wins = true,
                .object = section_object,
        };
        if (config_set_str(&c->path, name) < 0)
                return sbx_error_set(err, ENOMEM, "%s", name);
        if (!c->anonymous || !c->anonymous->name)
                return sbx_error_set(err, ENOMEM, "%s", name);
        int r = inikeys_parse(&fmt, name, text, len, c, err);
        if (r >= 0 && c->policy)
                r = load_policy(c, &fmt, err);
        c->policy = NULL;
        if (r >= 0)
                r = config_validate(c, err);
        if (r < 0)
                return r;
        /* slot 0 is the anonymous tenant's, then the file's in order */
        unsigned slot;
        if (config_slot_of(c, c->anonymous->name, &slot) < 0)
                return sbx_error_set(err, ENOMEM, "%s", name);
        for (size_t i = 0; i < c->n_tenants; i++)
                if (config_slot_of(c, c->tenants[i].name, &c->tenants[i].slot) < 0)
                        return sbx_error_set(err, ENOMEM, "%s", name);
        return 0;
}

int config_load_string(struct config *c, const char *name, const char *text, struct sbx_error *err) {
        return load_text(c, name, text, strlen(text), err);
}

int config_load_policy(struct config *c, const char *path, const struct json_t *policy, const char *policy_name,
                       struct sbx_error *err) {
        c->policy = json_object_size((json_t *) policy) ? policy : NULL;
        c->policy_name = policy_name;
        return config_load(c, path, err);
}

int config_load(struct config *c, const char *path, struct sbx_error *err) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = inifile_read(path, CONFIG_MAX_FILE_SIZE, &text, &len, err);
        return r < 0 ? r : load_text(c, path, text, len, err);
}
