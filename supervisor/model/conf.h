/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord.conf(5): the daemon's settings and the tenants' policies,
 * parsed from INI with inih. Every key is checked; a bad one is an error that
 * names file:line, and the daemon refuses to start. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/types.h>

#include "error.h"
#include "minisign.h"
#include "netdeny.h"
#include "netpolicy.h"

struct urlmatch;

#define CONFIG_UNSET UINT64_MAX
#define CONFIG_MAX_TENANTS 1024
#define CONFIG_MAX_IDS 256
#define CONFIG_MAX_PROFILES 256
/* The default job_uids: above Debian's subordinate-id ranges and
 * systemd-nspawn's container ranges, below 2^31. */
#define CONFIG_JOB_UIDS_FIRST 1879048192u
#define CONFIG_JOB_UIDS_COUNT 65536u

enum audit_fsync {
        AUDIT_FSYNC_ALWAYS, /* fdatasync after every record */
        AUDIT_FSYNC_NEVER,  /* leave it to the kernel */
};

enum over_limit {
        OVER_LIMIT_REJECT, /* a request above a cap is refused (default) */
        OVER_LIMIT_CLAMP,  /* it is lowered to the cap, and the audit says so */
};

/* What a bundle job does when its registry cannot be reached. */
enum offline_policy {
        OFFLINE_FAIL,       /* the job fails, E_REGISTRY_UNAVAILABLE (default) */
        OFFLINE_USE_CACHED, /* the newest cached version that fits runs, marked stale */
};

/* [registry.NAME]: where bundles come from and whom to trust for them. */
struct registry_conf {
        char *name;
        char *origin;             /* "file:line" of the section header */
        char *url;                /* http(s):// or file://, without a trailing '/' */
        struct minisign_key *keys;
        size_t n_keys;
        enum offline_policy offline;
        uint64_t index_ttl_ms;    /* a verified index is used this long without asking again */
        uint64_t timeout_ms;      /* one transfer, whole */
        uint64_t connect_timeout_ms;
        uint64_t stall_timeout_ms; /* no byte for this long ends a transfer */
};

/* Network modes a tenant may ask for, as bits of 1 << enum net_mode. */
#define NET_MODE_BIT(m) (1u << (m))

struct tenant {
        char *name;
        char *origin;         /* "file:line" of the section header */
        unsigned slot;        /* the same for one name across reloads (config_slot_of); 0: anonymous */
        uid_t *uids;
        size_t n_uids;
        gid_t *gids;
        size_t n_gids;
        uid_t job_uid;        /* unprivileged uid the jobs run as; never 0 */
        gid_t job_gid;
        bool job_group_set;
        bool job_user_set;    /* job_user given: its jobs share it instead of a uid each */
        char **profiles;      /* allowed profile names; "*" allows any */
        size_t n_profiles;
        char *default_profile;
        uint64_t default_timeout_ms;
        bool default_timeout_set;
        uint64_t max_timeout_ms;
        uint64_t max_memory;      /* bytes; CONFIG_UNSET: no cap */
        uint64_t max_processes;
        uint64_t max_cpu_s;
        uint64_t max_cpu_milli;   /* CPU bandwidth, thousandths of a CPU; CONFIG_UNSET: no cap */
        uint64_t max_output;      /* bytes kept per stream */
        uint64_t max_disk;        /* bytes of workspace (its tmpfs' size) */
        uint64_t max_upload;      /* bytes of workspace files per request */
        uint64_t max_artifacts;   /* bytes of artifacts per job */
        uint64_t max_jobs;        /* running at once */
        uint64_t max_queue;       /* waiting at once */
        uint64_t max_sessions;    /* sessions alive at once (0: none) */
        uint64_t session_ttl_max_ms;  /* the longest a session may live */
        uint64_t session_idle_max_ms; /* the longest it may go without a request */
        uint64_t session_memory_max;  /* bytes: the memory limits of its live sessions together; CONFIG_UNSET: no cap */
        uint64_t warm;            /* sandboxes kept made ahead for its jobs (front/warm.c); 0: none */
        uint64_t warm_idle_ms;    /* how long one waits unused before it ends */
        bool session_services;    /* its sessions may expose ports through the proxy */
        uint64_t service_connections; /* open through the proxy at once, per session */
        uint64_t service_bandwidth;   /* bytes a second through the proxy, per session, both ways; CONFIG_UNSET: no cap */
        unsigned net_modes;       /* NET_MODE_BIT()s allowed */
        struct np_allow *net_allow; /* network_allow: the most a restricted job may be allowed */
        size_t n_net_allow;
        struct np_range net_deny[NETPOLICY_MAX_DENY / 2]; /* network_deny_ports: added to every restricted job's */
        size_t n_net_deny;
        uint64_t net_max_names;   /* network_max_names: distinct names a restricted job may have resolved */
        enum over_limit over_limit;
        /* bundles (config-bundle.c) */
        char *registry_name;      /* NULL: the tenant runs no bundles */
        const struct registry_conf *registry; /* resolved once the file is read */
        bool bundles_only;        /* inline commands are refused */
        char **bundles;           /* bundle names allowed; NULL: any */
        size_t n_bundles;
        unsigned bundle_paths;    /* MANIFEST_PATH_BIT()s a bundle may be granted */
        /* callbacks (config-callback.c) */
        char *cb_url;             /* the default callback URL; NULL: none */
        unsigned char *cb_secret; /* the HMAC-SHA256 key; NULL: the tenant gets no callbacks */
        size_t cb_secret_len;
        struct urlmatch *cb_allow; /* what a request's callback may name (urlmatch.h); NULL: cb_url only */
        size_t n_cb_allow;
        uint64_t cb_progress_s;   /* default seconds between progress heartbeats; 0: none */
        /* secrets (config-secret.c): what its jobs and sessions may ask for */
        struct secret_grant *secrets;
        size_t n_secrets;
        char **secrets_shown;     /* secrets_in_output: granted names left unredacted */
        size_t n_secrets_shown;
        struct secret_host *secret_hosts; /* secret_hosts: where header secrets go */
        size_t n_secret_hosts;
        /* dependencies (config-deps.c): the pip index its jobs' packages
         * come from, and which ones may */
        char *pip_index;          /* NULL: no packages */
        char **pip_allow;         /* NAME[==VERSION], fnmatch(3) globs, names normalised */
        size_t n_pip_allow;
        uint64_t deps_max_packages;
        uint64_t deps_max_bytes;  /* of an installed layer */
        uint64_t deps_timeout_ms; /* of the install job */
        char *npm_registry;       /* NULL: no npm packages */
        char **npm_allow;         /* NAME[@VERSION], fnmatch(3) globs */
        size_t n_npm_allow;
        uint64_t deps_min_age_ms; /* 0: packages of any age */
};

#define CONFIG_HTTP_MAX_LISTEN 8

/* A caller of the HTTP API: a bearer token (only its SHA-256 is
 * configured) or a TLS client certificate (its SHA-256, of the DER). */
struct http_token {
        char *name;
        char *origin;              /* "FILE:LINE" of its section */
        char *tenant_name;
        const struct tenant *tenant; /* set once the file is read */
        uint8_t sha256[32];
        bool has_sha256;
        uint8_t cert_sha256[32];
        bool has_cert;
        uint64_t expires_s;        /* seconds since the epoch; 0: never */
        bool read_only;            /* scope = read */
        bool admin;                /* scope = admin: also reload and policies */
        uint64_t rate;             /* requests a second; 0: unlimited */
        uint64_t burst;            /* requests at once above the rate */
};

struct config {
        char *path;
        char *socket_path;
        mode_t socket_mode;
        gid_t socket_gid;          /* (gid_t) -1: leave as is */
        char *state_dir;
        char *work_dir;            /* NULL: STATE/work */
        char *launcher;
        char *init;                /* sbx-init, a session's agent */
        char *user;                /* the front's user (privsep.c), or NULL: one process, as root */
        uid_t user_uid;
        gid_t user_gid;
        char *helper;              /* sbx-privd; NULL: the installed one */
        char *helper_socket;       /* a running sbx-privd's socket: the front connects, starts none */
        char *profile_path;        /* colon-separated directories */
        char *cgroup_root;         /* "auto", "none" or a cgroup2 directory */
        uid_t job_uid_first;       /* job_uids: a uid of its own per job from this range */
        uint32_t job_uid_count;    /* 0: none (every job runs as its tenant's job_user) */
        uint64_t max_jobs;
        uint64_t max_queue;
        uint64_t max_connections;
        uint64_t max_tenant_connections; /* of one tenant */
        uint64_t request_memory;   /* bytes of unfinished request lines over all clients */
        uint64_t max_request;      /* bytes in one request line */
        uint64_t client_buffer;    /* bytes queued to one slow client before it is dropped */
        uint64_t max_result_value; /* bytes of a job's $SBX_RESULT file */
        uint64_t kill_grace_ms;
        uint64_t request_timeout_ms; /* to finish a request line once begun */
        uint64_t retention_ms;
        bool log_json;
        char *audit_log;           /* NULL: no audit log */
        char *metrics_listen;      /* HOST:PORT of the metrics listener; NULL: none */
        char *service_listen;      /* HOST:PORT of the sessions' service proxy; NULL: none */
        char *service_domain;      /* Host: PORT-SESSION.DOMAIN */
        uint64_t service_timeout_ms; /* to send a request's head through the proxy */
        enum audit_fsync audit_fsync;
        bool allow_unauthenticated;
        uid_t *admins;             /* admins: callers of the socket who may reload and change policies (and root) */
        size_t n_admins;
        uint64_t network_ring;     /* bytes of the network audit's eBPF ring buffer */
        uint64_t network_events;   /* network events kept per job (more are counted) */
        uint32_t net_pool;         /* network_pool, network order; 0: none (no restricted jobs) */
        unsigned net_pool_prefix;
        uint8_t net_pool6[16];     /* network_pool6; net_pool6_prefix 0: none (restricted jobs are IPv4 only) */
        unsigned net_pool6_prefix;
        char dns_upstream[64];     /* dns_upstream as given; "" : the host's resolv.conf */
        struct sockaddr_in6 dns_upstream_addr; /* an IPv4 one as a sockaddr_in */
        uint64_t dns_upstream_timeout_ms; /* the proxy answers SERVFAIL when the upstream has not answered in this long */
        uint64_t dns_tcp_idle_ms;         /* a job's TCP connection to its proxy idle this long is closed */
        struct netdeny_net *net_deny; /* network_deny: prefixes no restricted job reaches */
        size_t n_net_deny;
        /* bundles (config-bundle.c) */
        struct registry_conf *registries;
        size_t n_registries;
        uint64_t cache_size;        /* bytes of unpacked bundles kept while unused */
        uint64_t deps_cache_size;   /* bytes of packages' layers kept (config-deps.c) */
        uint64_t cache_max_age_ms;  /* an unused bundle older than this goes */
        uint64_t bundle_max_size;   /* bytes of one archive */
        uint64_t bundle_max_unpacked; /* bytes of one unpacked bundle */
        uint64_t bundle_max_entries;  /* files, directories and links in one bundle */
        uint64_t bundle_extract_timeout_ms; /* the unpacking child is killed after this long */
        /* callbacks (config-callback.c) */
        uint64_t cb_timeout_ms;     /* one attempt */
        uint64_t cb_max_age_ms;     /* then the delivery is dead-lettered */
        uint64_t cb_backoff_ms;     /* the first retry's delay */
        uint64_t cb_backoff_max_ms; /* the longest */
        uint64_t cb_concurrency;    /* attempts in flight at once */
        uint64_t cb_memory_max;     /* pending deliveries of a tenant held in memory */

        /* cluster mode (config-cluster.c): on when cluster_db is set */
        char *cluster_db;           /* the PostgreSQL connection string (database, or read from database_file) */
        char *cluster_db_file;
        char *cluster_node;         /* this node's name (default: the host name) */
        int cluster_role;           /* CLUSTER_* */
        uint64_t cluster_lease_ms;  /* a claimed job's lease, renewed a third of it at a time */
        uint64_t cluster_timeout_ms; /* each statement's deadline */
        uint64_t cluster_output_max; /* bytes of each stream of a job's output kept in the database */
        char *cluster_advertise;    /* this node's HTTP API as other nodes' clients reach it (http[s]://HOST[:PORT]), or NULL */

        /* the HTTP API (config-http.c) */
        char *http_listen[CONFIG_HTTP_MAX_LISTEN]; /* ADDRESS:PORT each */
        bool http_listen_tls[CONFIG_HTTP_MAX_LISTEN]; /* given as listen_tls */
        size_t n_http_listen;
        char *http_tls_cert;        /* PEM files; both or neither */
        char *http_tls_key;
        char *http_tls_client_ca;   /* PEM: the CAs of client certificates ([token.NAME] cert_sha256); NULL: none asked */
        char *secret_proxy_ca;      /* PEM: CAs the header secrets' proxy trusts besides the system's; NULL: none */
        uint64_t http_max_connections; /* over all listeners */
        uint64_t http_ip_connections;  /* from one client address */
        uint64_t http_idle_timeout_ms; /* a connection silent this long is closed */
        uint64_t http_max_headers;     /* bytes of one request's head */
        char **http_mcp_origins;       /* Origin values /mcp accepts (browsers'); others are refused */
        size_t n_http_mcp_origins;
        struct http_token *tokens;
        size_t n_tokens;

        struct tenant *tenants;
        size_t n_tenants;
        /* the tenant unknown callers get when allow_unauthenticated is on */
        struct tenant *anonymous;

        /* Every key as written, in order: what a reload compares
         * (config_reload_swap). */
        struct config_entry *entries;
        size_t n_entries;
        /* Tenant names by slot, kept across reloads: slot 0 is the
         * anonymous tenant's, a name never moves to another slot. */
        char **slots;
        size_t n_slots;
        /* While the file is read: keys set by policy.set, { TENANT: { KEY:
         * VALUE } }, which replace the file's (config_load_policy). */
        const struct json_t *policy;
        const char *policy_name;
        bool policy_pass;
};

struct config_entry {
        char *section, *key, *value;
};

void config_init(struct config *c);
void config_free(struct config *c);

/* Parse path into c (after config_init). Errors name "path:line: ...". */
int config_load(struct config *c, const char *path, struct sbx_error *err);
/* Same, from text already in memory (unit tests). */
int config_load_string(struct config *c, const char *name, const char *text, struct sbx_error *err);
/* config_load, and then the keys policy.set gave ({ TENANT: { KEY: VALUE
 * } } from policy_name, or NULL), which replace the file's lines of the
 * same keys in [tenant.TENANT]; those of a tenant the file lacks are left
 * aside until it has it again. */
int config_load_policy(struct config *c, const char *path, const struct json_t *policy, const char *policy_name,
                       struct sbx_error *err);

/* The slot of tenant name: its own, or a new one at the end. -ENOMEM. */
int config_slot_of(struct config *c, const char *name, unsigned *ret);

/* A reload: fresh (read whole, validated) may change only tenants, tokens
 * and admins: -EINVAL with err naming every other key that differs (they
 * take effect at a restart); -ENOMEM. Its tenants get live's slots and
 * registries. */
int config_reload_check(struct config *live, struct config *fresh, struct sbx_error *err);
/* Then live takes fresh's tenants, tokens and admins, and fresh keeps
 * live's old ones (to be freed with it once nothing points at them). */
void config_reload_swap(struct config *live, struct config *fresh);
/* May a caller of the socket with uid reload and change policies? */
bool config_is_admin(const struct config *c, uid_t uid);
/* Is t one of c's tenants (its anonymous one included)? */
bool config_has_tenant(const struct config *c, const struct tenant *t);
/* The keys of [tenant.NAME] in a and b differ (or it is in only one). */
bool config_tenant_changed(const struct config *a, const struct config *b, const char *name);

#define CONFIG_REGISTRY_PREFIX "registry."
#define CONFIG_TOKEN_PREFIX "token."

/* config-cluster.c: cluster mode's keys ([cluster]). */
enum { CLUSTER_BOTH, CLUSTER_API, CLUSTER_WORKER };
void config_cluster_defaults(struct config *c);
void config_cluster_free(struct config *c);
/* After the file is read: reads database_file, names the node. */
int config_cluster_check(struct config *c, struct sbx_error *err);
const char *config_cluster_role_name(int role);
/* Why v is not what [cluster] advertise takes (http[s]://HOST[:PORT], no
 * path, query or user), or NULL when it is. */
const char *config_cluster_advertise_why(const char *v);

/* config-http.c: the keys of the HTTP API ([http] and [token.NAME]). */
void config_http_defaults(struct config *c);
void config_http_free(struct config *c);
/* After the file is read: every token complete and of a tenant. */
int config_http_check(struct config *c, struct sbx_error *err);

/* config-bundle.c: the keys of bundles (the table is in config-keys.h). */
void config_bundle_defaults(struct config *c);
void config_deps_defaults(struct config *c);
void config_bundle_free(struct config *c);
void tenant_bundle_free(struct tenant *t);
/* After the file is read: every registry complete, every tenant's registry
 * configured. */
int config_bundle_check(struct config *c, struct sbx_error *err);
/* The registry called name, or NULL. */
const struct registry_conf *config_registry_find(const struct config *c, const char *name);
/* Does the tenant allow bundle name? */
bool tenant_allows_bundle(const struct tenant *t, const char *name);

/* config-callback.c: the keys of callbacks, as config-bundle.c's. */
#define CONFIG_CALLBACK_MAX_URL 2048
void config_callback_defaults(struct config *c);
void tenant_callback_free(struct tenant *t);
int config_callback_check(struct config *c, struct sbx_error *err);
/* An http:// or https:// URL of at most CONFIG_CALLBACK_MAX_URL bytes with
 * a host and no spaces or control characters. */
bool callback_url_valid(const char *url);
/* May a job of t name url as its callback? 0; -EINVAL when url is not one
 * a callback may be (*ret_why says why: userinfo, a fragment, what curl
 * cannot parse); -EACCES when t does not allow it; -ENOMEM. */
int tenant_allows_callback(const struct tenant *t, const char *url, const char **ret_why);

/* config-secret.c: the keys of secrets ([tenant.NAME] secrets and
 * secrets_in_output). A secret's value is the daemon's (STATE/secrets,
 * store/secret-store.c), never the configuration's. */
#define SECRET_NAME_MAX 64
#define SECRET_VALUE_MIN 8      /* shorter would garble output when redacted */
#define SECRET_VALUE_MAX 16384
#define SECRET_MAX_PER_JOB 32
#define CONFIG_MAX_SECRETS 64
#define SECRET_HOSTS_MAX 16     /* secret_hosts entries of one tenant */
enum secret_mode { SECRET_FILE, SECRET_ENV, SECRET_HEADER };
struct secret_grant {
        char name[SECRET_NAME_MAX + 1];
        enum secret_mode mode;
        bool shown;               /* listed in secrets_in_output */
};
/* secret_hosts: a host a header secret is sent to. The job names it
 * (https://NAME/, port 443 in its sandbox); the daemon connects to NAME
 * on port 443, or to addr:port when the entry says NAME@ADDR[:PORT]. */
struct secret_host {
        char secret[SECRET_NAME_MAX + 1];
        char name[254];           /* lower case, without a final dot */
        char addr[48];            /* an IP address, or "" */
        uint16_t port;
};
void tenant_secret_free(struct tenant *t);
int config_secret_check(struct config *c, struct sbx_error *err);
/* A secret's name: a letter or '_', then letters, digits and '_', at most
 * SECRET_NAME_MAX bytes, not beginning with SBX_ (an environment name). */
bool secret_name_valid(const char *name);
const char *secret_mode_name(enum secret_mode m);
/* t's grant of secret name, or NULL. */
const struct secret_grant *tenant_secret(const struct tenant *t, const char *name);
/* A host name as secret_hosts takes it: letters, digits, '-' and '.',
 * two labels at least, not an address; lower-cased in place. */
bool secret_host_valid(char *name);

/* config-deps.c: [tenant.NAME] pip_index, pip_allow, npm_registry,
 * npm_allow, deps_max_packages, deps_max_bytes, deps_timeout,
 * deps_min_age. */
void tenant_deps_defaults(struct tenant *t);
void tenant_deps_free(struct tenant *t);
int config_deps_check(struct config *c, struct sbx_error *err);

/* Initialise a tenant with the defaults sbx-supervisord.conf(5) documents. */
void tenant_defaults(struct tenant *t);
void tenant_free(struct tenant *t);
