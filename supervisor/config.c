/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <grp.h>
#include <ini.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
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
        t->net_modes = NET_MODE_BIT(NET_NONE);
        t->over_limit = OVER_LIMIT_REJECT;
        t->profiles = calloc(1, sizeof(char *));
        if (t->profiles && (t->profiles[0] = strdup("default")))
                t->n_profiles = 1;
}

void tenant_free(struct tenant *t) {
        free(t->name);
        free(t->origin);
        free(t->uids);
        free(t->gids);
        for (size_t i = 0; i < t->n_profiles; i++)
                free(t->profiles[i]);
        free(t->profiles);
        free(t->default_profile);
}

void config_init(struct config *c) {
        memset(c, 0, sizeof(*c));
        c->socket_path = strdup(SBX_RUNSTATEDIR "/sbx/sbx-supervisord.sock");
        c->socket_mode = 0660;
        c->socket_gid = (gid_t) -1;
        c->state_dir = strdup(SBX_LOCALSTATEDIR "/lib/sbx");
        c->launcher = strdup(SBX_BINDIR "/sbx-launch");
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
        c->kill_grace_ms = 5000;
        c->request_timeout_ms = 30000;
        c->retention_ms = 7ull * 24 * 3600 * 1000;
        c->audit_fsync = AUDIT_FSYNC_ALWAYS;
        tenant_defaults(&c->anonymous);
        c->anonymous.name = strdup("anonymous");
}

void config_free(struct config *c) {
        free(c->path);
        free(c->socket_path);
        free(c->state_dir);
        free(c->work_dir);
        free(c->launcher);
        free(c->profile_path);
        free(c->cgroup_root);
        free(c->audit_log);
        for (size_t i = 0; i < c->n_tenants; i++)
                tenant_free(&c->tenants[i]);
        free(c->tenants);
        tenant_free(&c->anonymous);
        memset(c, 0, sizeof(*c));
}

struct parse_state {
        struct config *c;
        const char *name;
        unsigned line;
        struct sbx_error *err;
        int r;
        const char *text; /* config_load_string */
        size_t pos;
        FILE *f;
        struct tenant *cur;   /* [tenant.NAME] being parsed */
        bool anonymous_seen;
        bool in_daemon;
};

static int set_str(char **dst, const char *v) {
        char *s = strdup(v);
        if (!s)
                return -ENOMEM;
        free(*dst);
        *dst = s;
        return 0;
}

static int lookup_uid(const char *v, uid_t *ret) {
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

static int lookup_gid(const char *v, gid_t *ret) {
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

#define FAIL(...) (ps->r = sbx_error_msg(ps->err, EINVAL, "%s:%u: " __VA_ARGS__))

/* Space-separated words; calls fn on each. */
static int each_word(const char *v, int (*fn)(struct parse_state *, const char *, void *), struct parse_state *ps,
                     void *data) {
        _cleanup_free_ char *copy = strdup(v);
        char *save = NULL;
        if (!copy)
                return -ENOMEM;
        for (char *w = strtok_r(copy, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
                int r = fn(ps, w, data);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_uid(struct parse_state *ps, const char *w, void *data) {
        struct tenant *t = data;
        uid_t u;
        if (lookup_uid(w, &u) < 0)
                return FAIL("unknown user '%s'", ps->name, ps->line, w);
        if (t->n_uids >= CONFIG_MAX_IDS)
                return FAIL("too many uids (at most %d)", ps->name, ps->line, CONFIG_MAX_IDS);
        uid_t *n = realloc(t->uids, (t->n_uids + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        n[t->n_uids++] = u;
        t->uids = n;
        return 0;
}

static int add_gid(struct parse_state *ps, const char *w, void *data) {
        struct tenant *t = data;
        gid_t g;
        if (lookup_gid(w, &g) < 0)
                return FAIL("unknown group '%s'", ps->name, ps->line, w);
        if (t->n_gids >= CONFIG_MAX_IDS)
                return FAIL("too many gids (at most %d)", ps->name, ps->line, CONFIG_MAX_IDS);
        gid_t *n = realloc(t->gids, (t->n_gids + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        n[t->n_gids++] = g;
        t->gids = n;
        return 0;
}

static int add_profile(struct parse_state *ps, const char *w, void *data) {
        struct tenant *t = data;
        if (!streq(w, "*") && !name_valid(w))
                return FAIL("invalid profile name '%s'", ps->name, ps->line, w);
        if (t->n_profiles >= CONFIG_MAX_PROFILES)
                return FAIL("too many profiles (at most %d)", ps->name, ps->line, CONFIG_MAX_PROFILES);
        char **n = realloc(t->profiles, (t->n_profiles + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        t->profiles = n;
        if (!(n[t->n_profiles] = strdup(w)))
                return -ENOMEM;
        t->n_profiles++;
        return 0;
}

static int add_net(struct parse_state *ps, const char *w, void *data) {
        struct tenant *t = data;
        if (streq(w, "none"))
                t->net_modes |= NET_MODE_BIT(NET_NONE);
        else if (streq(w, "host"))
                t->net_modes |= NET_MODE_BIT(NET_HOST);
        else
                return FAIL("unknown network mode '%s' (none, host)", ps->name, ps->line, w);
        return 0;
}

/* A size cap: a size, or "unlimited" (no cap). */
static int parse_cap_size(struct parse_state *ps, const char *key, const char *v, uint64_t *dst) {
        uint64_t n;
        if (streq(v, "unlimited")) {
                *dst = CONFIG_UNSET;
                return 0;
        }
        if (parse_size(v, &n) < 0)
                return FAIL("%s: invalid size '%s'", ps->name, ps->line, key, v);
        *dst = n;
        return 0;
}

static int parse_cap_count(struct parse_state *ps, const char *key, const char *v, uint64_t *dst, bool allow_unlimited) {
        uint64_t n;
        if (allow_unlimited && streq(v, "unlimited")) {
                *dst = CONFIG_UNSET;
                return 0;
        }
        if (parse_uint64(v, UINT32_MAX, &n) < 0)
                return FAIL("%s: invalid number '%s'", ps->name, ps->line, key, v);
        *dst = n;
        return 0;
}

static int parse_dur(struct parse_state *ps, const char *key, const char *v, uint64_t *dst) {
        uint64_t n;
        if (parse_duration_ms(v, &n) < 0)
                return FAIL("%s: invalid duration '%s'", ps->name, ps->line, key, v);
        *dst = n;
        return 0;
}

static int tenant_key(struct parse_state *ps, struct tenant *t, const char *k, const char *v) {
        if (streq(k, "uids"))
                return each_word(v, add_uid, ps, t);
        if (streq(k, "gids"))
                return each_word(v, add_gid, ps, t);
        if (streq(k, "job_user")) {
                t->job_user_set = true;
                if (lookup_uid(v, &t->job_uid) < 0)
                        return FAIL("job_user: unknown user '%s'", ps->name, ps->line, v);
                if (t->job_uid == 0)
                        return FAIL("job_user: jobs never run as root", ps->name, ps->line);
                /* The user's own group, unless job_group says otherwise. */
                struct passwd *pw = getpwuid(t->job_uid);
                if (pw && !t->job_group_set && pw->pw_gid != 0)
                        t->job_gid = pw->pw_gid;
                return 0;
        }
        if (streq(k, "job_group")) {
                if (lookup_gid(v, &t->job_gid) < 0)
                        return FAIL("job_group: unknown group '%s'", ps->name, ps->line, v);
                if (t->job_gid == 0)
                        return FAIL("job_group: jobs never run as group root", ps->name, ps->line);
                t->job_group_set = true;
                return 0;
        }
        if (streq(k, "profiles")) {
                for (size_t i = 0; i < t->n_profiles; i++)
                        free(t->profiles[i]);
                t->n_profiles = 0;
                return each_word(v, add_profile, ps, t);
        }
        if (streq(k, "default_profile")) {
                if (!name_valid(v))
                        return FAIL("default_profile: invalid profile name '%s'", ps->name, ps->line, v);
                return set_str(&t->default_profile, v);
        }
        if (streq(k, "default_timeout")) {
                t->default_timeout_set = true;
                return parse_dur(ps, k, v, &t->default_timeout_ms);
        }
        if (streq(k, "max_timeout"))
                return parse_dur(ps, k, v, &t->max_timeout_ms);
        if (streq(k, "max_memory"))
                return parse_cap_size(ps, k, v, &t->max_memory);
        if (streq(k, "max_processes"))
                return parse_cap_count(ps, k, v, &t->max_processes, true);
        if (streq(k, "max_cpu")) {
                uint64_t ms = 0;
                if (streq(v, "unlimited")) {
                        t->max_cpu_s = CONFIG_UNSET;
                        return 0;
                }
                if (parse_dur(ps, k, v, &ms) < 0)
                        return ps->r;
                t->max_cpu_s = (ms + 999) / 1000;
                return 0;
        }
        if (streq(k, "max_cpus")) {
                uint64_t m;
                if (streq(v, "unlimited")) {
                        t->max_cpu_milli = CONFIG_UNSET;
                        return 0;
                }
                if (parse_cpus_milli(v, &m) < 0 || m < PROTO_CPUS_MIN_MILLI || m > PROTO_CPUS_MAX_MILLI)
                        return FAIL("max_cpus: invalid number of CPUs '%s' (0.01 to 1024, e.g. 0.5 or 2, or unlimited)",
                                    ps->name, ps->line, v);
                t->max_cpu_milli = m;
                return 0;
        }
        if (streq(k, "max_output"))
                return parse_cap_size(ps, k, v, &t->max_output);
        if (streq(k, "max_disk"))
                return parse_cap_size(ps, k, v, &t->max_disk);
        if (streq(k, "max_upload"))
                return parse_cap_size(ps, k, v, &t->max_upload);
        if (streq(k, "max_artifacts"))
                return parse_cap_size(ps, k, v, &t->max_artifacts);
        if (streq(k, "max_jobs"))
                return parse_cap_count(ps, k, v, &t->max_jobs, false);
        if (streq(k, "max_queue"))
                return parse_cap_count(ps, k, v, &t->max_queue, false);
        if (streq(k, "network")) {
                t->net_modes = 0;
                return each_word(v, add_net, ps, t);
        }
        if (streq(k, "over_limit")) {
                if (streq(v, "reject"))
                        t->over_limit = OVER_LIMIT_REJECT;
                else if (streq(v, "clamp"))
                        t->over_limit = OVER_LIMIT_CLAMP;
                else
                        return FAIL("over_limit: expected 'reject' or 'clamp', got '%s'", ps->name, ps->line, v);
                return 0;
        }
        return FAIL("unknown key '%s' in [tenant.%s]", ps->name, ps->line, k, t->name);
}

static int daemon_key(struct parse_state *ps, const char *k, const char *v) {
        struct config *c = ps->c;
        bool b;
        if (streq(k, "socket")) {
                if (v[0] != '/')
                        return FAIL("socket: must be an absolute path", ps->name, ps->line);
                if (strlen(v) >= 108)
                        return FAIL("socket: path longer than 107 bytes", ps->name, ps->line);
                return set_str(&c->socket_path, v);
        }
        if (streq(k, "socket_mode")) {
                if (parse_mode(v, &c->socket_mode) < 0 || c->socket_mode > 0777)
                        return FAIL("socket_mode: invalid mode '%s'", ps->name, ps->line, v);
                return 0;
        }
        if (streq(k, "socket_group")) {
                if (lookup_gid(v, &c->socket_gid) < 0)
                        return FAIL("socket_group: unknown group '%s'", ps->name, ps->line, v);
                return 0;
        }
        if (streq(k, "state_dir") || streq(k, "workspace_dir") || streq(k, "launcher") || streq(k, "audit_log")) {
                if (v[0] != '/')
                        return FAIL("%s: must be an absolute path", ps->name, ps->line, k);
                return set_str(streq(k, "state_dir")       ? &c->state_dir
                               : streq(k, "workspace_dir") ? &c->work_dir
                               : streq(k, "launcher")      ? &c->launcher
                                                           : &c->audit_log,
                               v);
        }
        if (streq(k, "profile_path")) {
                _cleanup_free_ char *copy = strdup(v);
                char *save = NULL;
                if (!copy)
                        return -ENOMEM;
                for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
                        if (d[0] != '/')
                                return FAIL("profile_path: '%s' is not an absolute path", ps->name, ps->line, d);
                return set_str(&c->profile_path, v);
        }
        if (streq(k, "job_uids")) {
                uint64_t lo, hi;
                const char *dash = strchr(v, '-');
                if (streq(v, "none")) {
                        c->job_uid_count = 0;
                        return 0;
                }
                char first[32];
                if (!dash || (size_t) (dash - v) >= sizeof(first))
                        return FAIL("job_uids: expected FIRST-LAST or none, got '%s'", ps->name, ps->line, v);
                memcpy(first, v, (size_t) (dash - v));
                first[dash - v] = '\0';
                if (parse_uint64(first, UINT32_MAX - 1, &lo) < 0 || parse_uint64(dash + 1, UINT32_MAX - 1, &hi) < 0 || hi < lo)
                        return FAIL("job_uids: expected FIRST-LAST or none, got '%s'", ps->name, ps->line, v);
                if (hi - lo + 1 > (1u << 20) || lo == 0 || (lo <= 65534 && hi >= 65534))
                        return FAIL("job_uids: '%s' must be at most 1048576 uids, without 0 and 65534", ps->name, ps->line, v);
                c->job_uid_first = (uid_t) lo;
                c->job_uid_count = (uint32_t) (hi - lo + 1);
                return 0;
        }
        if (streq(k, "cgroup")) {
                if (!streq(v, "auto") && !streq(v, "none") && v[0] != '/')
                        return FAIL("cgroup: expected auto, none or an absolute path", ps->name, ps->line);
                return set_str(&c->cgroup_root, v);
        }
        if (streq(k, "max_jobs"))
                return parse_cap_count(ps, k, v, &c->max_jobs, false);
        if (streq(k, "max_queue"))
                return parse_cap_count(ps, k, v, &c->max_queue, false);
        if (streq(k, "max_connections"))
                return parse_cap_count(ps, k, v, &c->max_connections, false);
        if (streq(k, "max_tenant_connections"))
                return parse_cap_count(ps, k, v, &c->max_tenant_connections, false);
        if (streq(k, "request_memory")) {
                if (parse_size(v, &c->request_memory) < 0 || c->request_memory < (1u << 20))
                        return FAIL("request_memory: expected a size of at least 1M, got '%s'", ps->name, ps->line, v);
                return 0;
        }
        if (streq(k, "max_request")) {
                if (parse_size(v, &c->max_request) < 0 || c->max_request < 1024 || c->max_request > (256u << 20))
                        return FAIL("max_request: expected a size between 1K and 256M, got '%s'", ps->name, ps->line, v);
                return 0;
        }
        if (streq(k, "client_buffer")) {
                if (parse_size(v, &c->client_buffer) < 0 || c->client_buffer < 65536)
                        return FAIL("client_buffer: expected a size of at least 64K, got '%s'", ps->name, ps->line, v);
                return 0;
        }
        if (streq(k, "kill_grace"))
                return parse_dur(ps, k, v, &c->kill_grace_ms);
        if (streq(k, "request_timeout")) {
                if (parse_dur(ps, k, v, &c->request_timeout_ms) < 0)
                        return ps->r;
                if (c->request_timeout_ms < 1000)
                        return FAIL("request_timeout: at least 1s", ps->name, ps->line);
                return 0;
        }
        if (streq(k, "retention"))
                return parse_dur(ps, k, v, &c->retention_ms);
        if (streq(k, "log_format")) {
                if (streq(v, "text"))
                        c->log_json = false;
                else if (streq(v, "json"))
                        c->log_json = true;
                else
                        return FAIL("log_format: expected 'text' or 'json', got '%s'", ps->name, ps->line, v);
                return 0;
        }
        if (streq(k, "audit_fsync")) {
                if (streq(v, "always"))
                        c->audit_fsync = AUDIT_FSYNC_ALWAYS;
                else if (streq(v, "never"))
                        c->audit_fsync = AUDIT_FSYNC_NEVER;
                else
                        return FAIL("audit_fsync: expected 'always' or 'never', got '%s'", ps->name, ps->line, v);
                return 0;
        }
        if (streq(k, "allow_unauthenticated")) {
                if (parse_bool(v, &b) < 0)
                        return FAIL("allow_unauthenticated: expected yes or no, got '%s'", ps->name, ps->line, v);
                c->allow_unauthenticated = b;
                return 0;
        }
        return FAIL("unknown key '%s' in [daemon]", ps->name, ps->line, k);
}

static int handler(void *user, const char *section, const char *name, const char *value) {
        struct parse_state *ps = user;
        struct config *c = ps->c;
        int r;

        if (ps->r < 0)
                return 0;
        if (!name) {
                /* A new section (inih calls with name NULL when built with
                 * INI_CALL_HANDLER_ON_NEW_SECTION; otherwise we notice the
                 * section on its first key below). */
                return 1;
        }
        if (streq(section, "daemon"))
                r = daemon_key(ps, name, value);
        else if (strncmp(section, "tenant.", 7) == 0) {
                const char *tn = section + 7;
                struct tenant *t = NULL;
                if (streq(tn, "anonymous"))
                        t = &c->anonymous;
                else {
                        for (size_t i = 0; i < c->n_tenants; i++)
                                if (streq(c->tenants[i].name, tn))
                                        t = &c->tenants[i];
                }
                if (!t) {
                        if (!name_valid(tn)) {
                                FAIL("invalid tenant name '%s'", ps->name, ps->line, tn);
                                return 0;
                        }
                        if (c->n_tenants >= CONFIG_MAX_TENANTS) {
                                FAIL("too many tenants (at most %d)", ps->name, ps->line, CONFIG_MAX_TENANTS);
                                return 0;
                        }
                        struct tenant *n = realloc(c->tenants, (c->n_tenants + 1) * sizeof(*n));
                        if (!n) {
                                ps->r = sbx_error_set(ps->err, ENOMEM, "%s", ps->name);
                                return 0;
                        }
                        c->tenants = n;
                        t = &n[c->n_tenants++];
                        tenant_defaults(t);
                        t->name = strdup(tn);
                        char o[512];
                        snprintf(o, sizeof(o), "%s:%u", ps->name, ps->line);
                        t->origin = strdup(o);
                }
                r = tenant_key(ps, t, name, value);
        } else
                r = FAIL("unknown section [%s]", ps->name, ps->line, section);
        if (r < 0 && ps->r == 0)
                ps->r = sbx_error_set(ps->err, r, "%s:%u", ps->name, ps->line);
        return r < 0 ? 0 : 1;
}

/* inih calls the reader once per line, so counting calls gives the line
 * number for messages even though Debian's inih does not pass it. */
static char *reader(char *buf, int size, void *stream) {
        struct parse_state *ps = stream;
        ps->line++;
        if (ps->f)
                return fgets(buf, size, ps->f);
        if (!ps->text[ps->pos])
                return NULL;
        size_t n = 0;
        while (ps->text[ps->pos] && n + 1 < (size_t) size) {
                char ch = ps->text[ps->pos++];
                buf[n++] = ch;
                if (ch == '\n')
                        break;
        }
        buf[n] = '\0';
        return buf;
}

/* inih's handler return value stops parsing only with INI_STOP_ON_FIRST_ERROR;
 * we record the first error ourselves and ignore the rest. */
static int run_parse(struct parse_state *ps) {
        int r = ini_parse_stream(reader, ps, handler, ps);
        if (ps->r < 0)
                return ps->r;
        if (r > 0) {
                /* inih counts lines it read; ours agrees. A syntax error
                 * (no '=' or an unterminated section) lands here. */
                return sbx_error_msg(ps->err, EINVAL, "%s:%d: syntax error (expected [section] or key = value)", ps->name, r);
        }
        if (r < 0)
                return sbx_error_msg(ps->err, EIO, "%s: cannot read", ps->name);
        struct config *c = ps->c;
        for (size_t i = 0; i < c->n_tenants; i++) {
                struct tenant *t = &c->tenants[i];
                if (t->n_uids == 0 && t->n_gids == 0)
                        return sbx_error_msg(ps->err, EINVAL, "%s: [tenant.%s] has neither uids nor gids", t->origin, t->name);
                if (t->net_modes == 0)
                        return sbx_error_msg(ps->err, EINVAL, "%s: [tenant.%s] allows no network mode", t->origin, t->name);
                for (size_t j = 0; j < i; j++)
                        for (size_t a = 0; a < t->n_uids; a++)
                                for (size_t b = 0; b < c->tenants[j].n_uids; b++)
                                        if (t->uids[a] == c->tenants[j].uids[b])
                                                return sbx_error_msg(ps->err, EINVAL, "%s: uid %u is already in [tenant.%s]",
                                                                     t->origin, (unsigned) t->uids[a], c->tenants[j].name);
                /* The built-in default follows a lower cap; an explicit
                 * default above the cap is a contradiction. */
                if (t->default_timeout_ms > t->max_timeout_ms && !t->default_timeout_set)
                        t->default_timeout_ms = t->max_timeout_ms;
                if (t->default_timeout_ms > t->max_timeout_ms)
                        return sbx_error_msg(ps->err, EINVAL, "%s: [tenant.%s] default_timeout is above max_timeout", t->origin, t->name);
        }
        return 0;
}

int config_load_string(struct config *c, const char *name, const char *text, struct sbx_error *err) {
        struct parse_state ps = { .c = c, .name = name, .err = err, .text = text };
        set_str(&c->path, name);
        return run_parse(&ps);
}

int config_load(struct config *c, const char *path, struct sbx_error *err) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return sbx_error_set(err, errno, "%s", path);
        struct parse_state ps = { .c = c, .name = path, .err = err, .f = f };
        set_str(&c->path, path);
        return run_parse(&ps);
}
