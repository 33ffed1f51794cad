/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord.conf(5): the kinds of values keys share (paths, counts,
 * sizes, durations, booleans, ...), each within its key's bounds. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/un.h>

#include "config-keys.h"
#include "metrics.h"
#include "parse.h"
#include "util.h"

int config_kind_abs_path(struct inikey_ctx *c) {
        if (c->value[0] != '/')
                return FAIL(c, "%s: must be an absolute path", c->def->key);
        return config_set_str(inikey_field(c), c->value);
}

int config_kind_listen(struct inikey_ctx *c) {
        struct sockaddr_storage ss;
        socklen_t sl;
        if (metrics_parse_listen(c->value, &ss, &sl) < 0)
                return FAIL(c, "%s: expected ADDRESS:PORT with a numeric address (127.0.0.1:9464, [::1]:9464), got '%s'",
                            c->def->key, c->value);
        return config_set_str(inikey_field(c), c->value);
}

int config_kind_socket(struct inikey_ctx *c) {
        if (c->value[0] != '/')
                return FAIL(c, "socket: must be an absolute path");
        if (strlen(c->value) >= sizeof(((struct sockaddr_un *) NULL)->sun_path))
                return FAIL(c, "socket: path longer than %zu bytes", sizeof(((struct sockaddr_un *) NULL)->sun_path) - 1);
        return config_set_str(inikey_field(c), c->value);
}

int config_kind_socket_mode(struct inikey_ctx *c) {
        mode_t *m = inikey_field(c);
        if (parse_mode(c->value, m) < 0 || *m > 0777)
                return FAIL(c, "socket_mode: invalid mode '%s'", c->value);
        return 0;
}

int config_kind_group(struct inikey_ctx *c) {
        if (config_lookup_gid(c->value, inikey_field(c)) < 0)
                return FAIL(c, "%s: unknown group '%s'", c->def->key, c->value);
        return 0;
}

int config_kind_profile_path(struct inikey_ctx *c) {
        _cleanup_free_ char *copy = strdup(c->value);
        char *save = NULL;
        if (!copy)
                return -ENOMEM;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save))
                if (d[0] != '/')
                        return FAIL(c, "profile_path: '%s' is not an absolute path", d);
        return config_set_str(inikey_field(c), c->value);
}

/* FIRST-LAST, or none: the uids handed out one per job. */
int config_kind_job_uids(struct inikey_ctx *c) {
        uint64_t lo, hi;
        const char *dash = strchr(c->value, '-');
        char first[32];
        if (streq(c->value, "none")) {
                config_of(c)->job_uid_count = 0;
                return 0;
        }
        if (!dash || (size_t) (dash - c->value) >= sizeof(first))
                return FAIL(c, "job_uids: expected FIRST-LAST or none, got '%s'", c->value);
        memcpy(first, c->value, (size_t) (dash - c->value));
        first[dash - c->value] = '\0';
        if (parse_uint64(first, UINT32_MAX - 1, &lo) < 0 || parse_uint64(dash + 1, UINT32_MAX - 1, &hi) < 0 || hi < lo)
                return FAIL(c, "job_uids: expected FIRST-LAST or none, got '%s'", c->value);
        if (hi - lo + 1 > (1u << 20) || lo == 0 || (lo <= 65534 && hi >= 65534))
                return FAIL(c, "job_uids: '%s' must be at most 1048576 uids, without 0 and 65534", c->value);
        config_of(c)->job_uid_first = (uid_t) lo;
        config_of(c)->job_uid_count = (uint32_t) (hi - lo + 1);
        return 0;
}

/* A DNS name of lowercase labels: the proxy's hosts are PORT-SESSION.NAME. */
int config_kind_domain(struct inikey_ctx *c) {
        const char *v = c->value;
        size_t n = strlen(v);
        bool ok = n > 0 && n <= 200 && v[0] != '.' && v[0] != '-' && v[n - 1] != '.';
        for (size_t i = 0; ok && i < n; i++)
                ok = (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= '0' && v[i] <= '9') || v[i] == '-' ||
                     (v[i] == '.' && v[i + 1] != '.');
        if (!ok)
                return FAIL(c, "%s: expected a DNS name in lowercase (sbx.example.com), got '%s'", c->def->key, c->value);
        return config_set_str(inikey_field(c), c->value);
}

int config_kind_cgroup(struct inikey_ctx *c) {
        if (!streq(c->value, "auto") && !streq(c->value, "none") && c->value[0] != '/')
                return FAIL(c, "cgroup: expected auto, none or an absolute path");
        return config_set_str(inikey_field(c), c->value);
}

int config_kind_count(struct inikey_ctx *c) {
        uint64_t *dst = inikey_field(c), n;
        if ((c->def->arg & CONF_UNLIMITED) && streq(c->value, "unlimited")) {
                *dst = CONFIG_UNSET;
                return 0;
        }
        if (parse_uint64(c->value, UINT32_MAX, &n) < 0)
                return FAIL(c, "%s: invalid number '%s'", c->def->key, c->value);
        if (n < c->def->min || (c->def->max && n > c->def->max))
                return FAIL(c, "%s: expected a number from %llu to %llu, got '%s'", c->def->key, (unsigned long long) c->def->min,
                            (unsigned long long) (c->def->max ? c->def->max : UINT32_MAX), c->value);
        *dst = n;
        return 0;
}

int config_kind_size(struct inikey_ctx *c) {
        uint64_t *dst = inikey_field(c), n;
        char lo[32], hi[32];
        if ((c->def->arg & CONF_UNLIMITED) && streq(c->value, "unlimited")) {
                *dst = CONFIG_UNSET;
                return 0;
        }
        if (!c->def->min && !c->def->max) {
                if (parse_size(c->value, &n) < 0)
                        return FAIL(c, "%s: invalid size '%s'", c->def->key, c->value);
        } else if (parse_size(c->value, &n) < 0 || n < c->def->min || (c->def->max && n > c->def->max)) {
                format_size(c->def->min, lo, sizeof(lo));
                if (!c->def->max)
                        return FAIL(c, "%s: expected a size of at least %s, got '%s'", c->def->key, lo, c->value);
                return FAIL(c, "%s: expected a size between %s and %s, got '%s'", c->def->key, lo,
                            format_size(c->def->max, hi, sizeof(hi)), c->value);
        }
        *dst = n;
        return 0;
}

/* The eBPF ring buffer's size: the kernel wants a power of two (and a
 * multiple of the page size, which the minimum of 4 KiB and the power of
 * two make it on every page size up to the size itself). */
int config_kind_ring(struct inikey_ctx *c) {
        int r = config_kind_size(c);
        uint64_t n = *(uint64_t *) inikey_field(c);
        if (r < 0)
                return r;
        if (n & (n - 1))
                return FAIL(c, "%s: expected a power of two (4K, 8K, ... 1G), got '%s'", c->def->key, c->value);
        if (n < (uint64_t) sysconf(_SC_PAGESIZE))
                return FAIL(c, "%s: expected at least the page size (%ld bytes), got '%s'", c->def->key, sysconf(_SC_PAGESIZE), c->value);
        return 0;
}

int config_kind_duration(struct inikey_ctx *c) {
        uint64_t *dst = inikey_field(c), ms;
        char lo[32], hi[32];
        if (parse_duration_ms(c->value, &ms) < 0)
                return FAIL(c, "%s: invalid duration '%s'", c->def->key, c->value);
        if (c->def->max && (ms < c->def->min || ms > c->def->max))
                return FAIL(c, "%s: expected a duration from %s to %s, got '%s'", c->def->key,
                            format_duration_ms(c->def->min, lo, sizeof(lo)), format_duration_ms(c->def->max, hi, sizeof(hi)), c->value);
        if (ms < c->def->min)
                return FAIL(c, "%s: at least %s", c->def->key, format_duration_ms(c->def->min, lo, sizeof(lo)));
        *dst = ms;
        return 0;
}

int config_kind_log_format(struct inikey_ctx *c) {
        if (streq(c->value, "text"))
                config_of(c)->log_json = false;
        else if (streq(c->value, "json"))
                config_of(c)->log_json = true;
        else
                return FAIL(c, "log_format: expected 'text' or 'json', got '%s'", c->value);
        return 0;
}

int config_kind_audit_fsync(struct inikey_ctx *c) {
        if (streq(c->value, "always"))
                config_of(c)->audit_fsync = AUDIT_FSYNC_ALWAYS;
        else if (streq(c->value, "never"))
                config_of(c)->audit_fsync = AUDIT_FSYNC_NEVER;
        else
                return FAIL(c, "audit_fsync: expected 'always' or 'never', got '%s'", c->value);
        return 0;
}

int config_kind_bool(struct inikey_ctx *c) {
        if (parse_bool(c->value, inikey_field(c)) < 0)
                return FAIL(c, "%s: expected yes or no, got '%s'", c->def->key, c->value);
        return 0;
}

