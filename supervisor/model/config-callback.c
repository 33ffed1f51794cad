/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord.conf(5), the keys of callbacks: in [daemon] how
 * deliveries are tried (timeout, backoff, how long before they are given
 * up, how many at once); in a tenant, its default callback URL, the file
 * with the secret its deliveries are signed with, and the URL prefixes a
 * request may name. The secret is read while the file is read: a daemon
 * never starts with a secret it cannot use. A request names only URLs the
 * tenant allows, so a tenant cannot make the daemon post to any host it
 * can reach. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-keys.h"
#include "parse.h"
#include "proto.h"
#include "urlmatch.h"
#include "util.h"

#define SECRET_MIN 16
#define SECRET_MAX 1024
#define MAX_ALLOW 32

#define BAD(...) sbx_error_msg(err, EINVAL, __VA_ARGS__)

void config_callback_defaults(struct config *c) {
        c->cb_timeout_ms = 10000;
        c->cb_max_age_ms = 24ull * 3600 * 1000;
        c->cb_backoff_ms = 1000;
        c->cb_backoff_max_ms = 300000;
        c->cb_concurrency = 8;
        c->cb_memory_max = 1000;
}

void tenant_callback_free(struct tenant *t) {
        free(t->cb_url);
        if (t->cb_secret)
                explicit_bzero(t->cb_secret, t->cb_secret_len);
        free(t->cb_secret);
        for (size_t i = 0; i < t->n_cb_allow; i++)
                urlmatch_done(&t->cb_allow[i]);
        free(t->cb_allow);
        t->cb_url = NULL;
        t->cb_secret = NULL;
        t->cb_allow = NULL;
        t->n_cb_allow = 0;
}

/* A first look without libcurl, for the protocol parser (sbxctl links it):
 * what is allowed is decided by urlmatch_parse() in
 * tenant_allows_callback(). The scheme in any case, as curl reads it. */
bool callback_url_valid(const char *url) {
        size_t n = strlen(url), skip;
        if (n > CONFIG_CALLBACK_MAX_URL)
                return false;
        if (strncasecmp(url, "http://", 7) == 0)
                skip = 7;
        else if (strncasecmp(url, "https://", 8) == 0)
                skip = 8;
        else
                return false;
        if (url[skip] == '\0' || url[skip] == '/' || url[skip] == ':')
                return false;
        for (const char *p = url; *p; p++)
                if ((unsigned char) *p <= ' ' || *p == 0x7f)
                        return false;
        return true;
}

int tenant_allows_callback(const struct tenant *t, const char *url, const char **ret_why) {
        struct urlmatch u;
        int r = urlmatch_parse(url, &u, ret_why);
        if (r < 0)
                return r;
        bool ok = false;
        if (!t->cb_secret)
                ok = false;
        else if (!t->cb_allow)
                ok = t->cb_url && streq(t->cb_url, url);
        else
                for (size_t i = 0; i < t->n_cb_allow && !ok; i++)
                        ok = urlmatch_allows(&t->cb_allow[i], &u);
        urlmatch_done(&u);
        return ok ? 0 : -EACCES;
}

/* The secret: the file's bytes without a final newline, 16 to 1024 of
 * them, in a file that only its owner may read (it signs deliveries). */
static int read_secret(struct tenant *t, const char *path, const char *where, struct sbx_error *err) {
        if (path[0] != '/')
                return BAD("%s: callback_secret_file: must be an absolute path", where);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return sbx_error_set(err, errno, "%s: callback_secret_file %s", where, path);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return sbx_error_set(err, errno, "%s: callback_secret_file %s", where, path);
        if (!S_ISREG(st.st_mode) || (st.st_mode & 0077))
                return BAD("%s: callback_secret_file %s: must be a regular file readable by its owner only (mode 0600 or 0400)",
                           where, path);
        char buf[SECRET_MAX + 2];
        size_t len = 0;
        while (len < sizeof(buf)) {
                ssize_t n = read(fd, buf + len, sizeof(buf) - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return sbx_error_set(err, errno, "%s: callback_secret_file %s", where, path);
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        if (len > 0 && buf[len - 1] == '\n')
                len--;
        if (len < SECRET_MIN || len > SECRET_MAX) {
                explicit_bzero(buf, len);
                return BAD("%s: callback_secret_file %s: the secret must be %d to %d bytes", where, path, SECRET_MIN, SECRET_MAX);
        }
        if (t->cb_secret)
                explicit_bzero(t->cb_secret, t->cb_secret_len);
        free(t->cb_secret);
        t->cb_secret = malloc(len);
        if (!t->cb_secret)
                return -ENOMEM;
        memcpy(t->cb_secret, buf, len);
        t->cb_secret_len = len;
        explicit_bzero(buf, len);
        return 0;
}

/* Each prefix is parsed as the request's URL will be, and compared part
 * by part (urlmatch.h); an entry curl reads otherwise than its writer
 * meant is refused here, not at the first request. */
static int set_allow(struct tenant *t, const char *v, const char *where, struct sbx_error *err) {
        _cleanup_free_ char *copy = strdup(v);
        char *save = NULL;
        if (!copy)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_cb_allow; i++)
                urlmatch_done(&t->cb_allow[i]);
        free(t->cb_allow);
        t->n_cb_allow = 0;
        t->cb_allow = calloc(MAX_ALLOW, sizeof(*t->cb_allow));
        if (!t->cb_allow)
                return -ENOMEM;
        for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
                const char *why = NULL;
                if (t->n_cb_allow == MAX_ALLOW)
                        return BAD("%s: callback_allow: more than %d prefixes", where, MAX_ALLOW);
                if (!callback_url_valid(w))
                        return BAD("%s: callback_allow: '%.64s' is not an http:// or https:// URL prefix with a host", where, w);
                int r = urlmatch_parse(w, &t->cb_allow[t->n_cb_allow], &why);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return BAD("%s: callback_allow: '%.64s': %s", where, w, why);
                t->n_cb_allow++;
                why = urlmatch_rule_check(&t->cb_allow[t->n_cb_allow - 1]);
                if (why)
                        return BAD("%s: callback_allow: '%.64s': %s", where, w, why);
        }
        if (t->n_cb_allow == 0)
                return BAD("%s: callback_allow: expected URL prefixes", where);
        return 0;
}

static int k_url(struct inikey_ctx *c) {
        struct urlmatch u;
        const char *why = NULL, *v = c->value;
        if (!callback_url_valid(v))
                return sbx_error_msg(c->err, EINVAL,
                                     "%s: callback_url: expected an http:// or https:// URL with a host, at most %d bytes, "
                                     "got '%.64s'",
                                     c->origin, CONFIG_CALLBACK_MAX_URL, v);
        int r = urlmatch_parse(v, &u, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sbx_error_msg(c->err, EINVAL, "%s: callback_url: '%.64s': %s", c->origin, v, why);
        urlmatch_done(&u);
        return config_set_str(&((struct tenant *) c->obj)->cb_url, v);
}

static int k_secret(struct inikey_ctx *c) {
        return read_secret(c->obj, c->value, c->origin, c->err);
}

static int k_allow(struct inikey_ctx *c) {
        return set_allow(c->obj, c->value, c->origin, c->err);
}

static int k_progress(struct inikey_ctx *c) {
        uint64_t ms;
        if (parse_duration_ms(c->value, &ms) < 0 || ms % 1000 || ms / 1000 > PROTO_MAX_PROGRESS)
                return sbx_error_msg(c->err, EINVAL,
                                     "%s: callback_progress: expected whole seconds from 0s to %ds between heartbeats (0s: "
                                     "no progress callbacks), got '%s'",
                                     c->origin, PROTO_MAX_PROGRESS, c->value);
        ((struct tenant *) c->obj)->cb_progress_s = ms / 1000;
        return 0;
}

#define DAEMON(k, kind_, f, ...) { .section = "daemon", .key = k, .kind = INIKEY_##kind_, .off = offsetof(struct config, f), __VA_ARGS__ }
#define TENANT(k, fn_) { .section = "tenant.", .key = k, .fn = fn_ }
static const struct inikey keys[] = {
        DAEMON("callback_timeout", DURATION, cb_timeout_ms, .min = 100),
        DAEMON("callback_max_age", DURATION, cb_max_age_ms, .min = 1000),
        DAEMON("callback_backoff", DURATION, cb_backoff_ms, .min = 10),
        DAEMON("callback_backoff_max", DURATION, cb_backoff_max_ms, .min = 10),
        DAEMON("callback_concurrency", UINT, cb_concurrency, .min = 1, .max = 256),
        DAEMON("callback_memory_max", UINT, cb_memory_max, .min = 1, .max = 1000000),
        TENANT("callback_url", k_url),
        TENANT("callback_secret_file", k_secret),
        TENANT("callback_allow", k_allow),
        TENANT("callback_progress", k_progress),
};
const struct inikey_table config_callback_table = INIKEY_TABLE(keys);

int config_callback_check(struct config *c, struct sbx_error *err) {
        if (c->cb_backoff_max_ms < c->cb_backoff_ms)
                return BAD("%s: callback_backoff_max is below callback_backoff", c->path);
        for (size_t i = 0; i < c->n_tenants; i++) {
                const struct tenant *t = &c->tenants[i];
                if ((t->cb_url || t->cb_allow) && !t->cb_secret)
                        return BAD("%s: [tenant.%s] names callback URLs but has no callback_secret_file: its deliveries "
                                   "could not be signed",
                                   t->origin, t->name);
        }
        return 0;
}
