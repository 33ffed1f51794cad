/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job-secrets.h"
#include "jobs.h"
#include "redact.h"
#include "secret-store.h"
#include "secretproxy.h"
#include "util.h"

void job_secrets_unref(struct job_secrets *js) {
        if (!js || --js->refs > 0)
                return;
        for (size_t i = 0; i < js->n; i++) {
                if (js->s[i].value)
                        sodium_memzero((char *) js->s[i].value, js->s[i].len);
                free((char *) js->s[i].value);
                free((char *) js->s[i].name);
                free((char *) js->s[i].placeholder);
        }
        free(js);
}

/* A redactor of the secrets not in secrets_in_output; NULL when none is. */
static int make_redactor(const struct job_secrets *js, struct redactor **ret) {
        struct redactor *red = NULL;
        *ret = NULL;
        for (size_t i = 0; i < js->n; i++) {
                if (js->shown[i])
                        continue;
                if (!red && !(red = redactor_new()))
                        return -ENOMEM;
                int r = redactor_add(red, js->s[i].name, js->s[i].value, js->s[i].len);
                if (r < 0) {
                        redactor_free(red);
                        return r;
                }
        }
        *ret = red;
        return 0;
}

static int load(const struct rjob *rj, int state_fd, struct job_secrets **ret, struct sbx_error *err) {
        const struct run_request *run = &rj->j.req.run;
        const struct tenant *t = rj->j.tenant;
        struct job_secrets *js = calloc(1, sizeof(*js));
        if (!js)
                return sbx_error_set(err, ENOMEM, "secrets");
        js->refs = 1;
        for (size_t i = 0; i < run->n_secrets && i < SECRET_MAX_PER_JOB; i++) {
                const char *name = run->secrets[i];
                const struct secret_grant *g = tenant_secret(t, name);
                char *v = NULL;
                size_t len = 0;
                int r = g ? secret_store_get(state_fd, t->name, name, &v, &len) : -EACCES;
                if (r < 0) {
                        job_secrets_unref(js);
                        if (r == -EACCES)
                                return sbx_error_msg(err, EACCES, "secret '%s' is not granted to tenant '%s'", name, t->name);
                        if (r == -ENOENT)
                                return sbx_error_msg(err, ENOENT, "secret '%s' of tenant '%s' is not set (removed since the "
                                                                  "job was accepted?)",
                                                     name, t->name);
                        return sbx_error_set(err, -r, "secret '%s' of tenant '%s'", name, t->name);
                }
                js->s[i] = (struct launch_secret) { .name = strdup(name), .mode = g->mode, .value = v, .len = len };
                js->shown[i] = g->shown;
                js->n++;
                char *ph = g->mode == SECRET_HEADER ? malloc(len + 1) : NULL;
                if (ph) {
                        secretproxy_placeholder(ph, len);
                        ph[len] = '\0';
                        js->s[i].placeholder = ph;
                }
                if (!js->s[i].name || (g->mode == SECRET_HEADER && !ph)) {
                        job_secrets_unref(js);
                        return sbx_error_set(err, ENOMEM, "secrets");
                }
        }
        *ret = js;
        return 0;
}

/* The proxy of its header secrets, with the CA its sandbox trusts for
 * their hosts: none without header secrets. */
static int make_proxy(struct rjob *rj, const struct job_secrets *js, const char *proxy_ca, struct sbx_error *err) {
        struct secretproxy_secret ps[SECRET_MAX_PER_JOB];
        size_t n = 0;
        for (size_t i = 0; i < js->n; i++)
                if (js->s[i].mode == SECRET_HEADER)
                        ps[n++] = (struct secretproxy_secret) { .name = js->s[i].name, .value = js->s[i].value,
                                                                .placeholder = js->s[i].placeholder, .len = js->s[i].len };
        if (n == 0)
                return 0;
        if (rj->j.pol.net != NET_RESTRICTED)
                return sbx_error_msg(err, EPERM, "secret '%s' is a header secret: it needs network = restricted (its hosts are "
                                     "reached through the daemon's proxy)", ps[0].name);
        const struct tenant *t = rj->j.tenant;
        return secretproxy_new(rj->j.id, ps, n, t->secret_hosts, t->n_secret_hosts, proxy_ca, &rj->sproxy, err);
}

int job_secrets_open(struct rjob *rj, int state_fd, const char *proxy_ca, struct sbx_error *err) {
        if (rj->j.req.run.n_secrets == 0 || rj->secrets)
                return 0;
        struct job_secrets *js = NULL;
        int r = load(rj, state_fd, &js, err);
        if (r < 0)
                return r;
        if ((r = make_redactor(js, &rj->redact)) < 0) {
                job_secrets_unref(js);
                return sbx_error_set(err, -r, "secrets");
        }
        if (!rj->sproxy && (r = make_proxy(rj, js, proxy_ca, err)) < 0) {
                job_secrets_unref(js);
                redactor_free(rj->redact);
                rj->redact = NULL;
                return r;
        }
        rj->secrets = js;
        return 0;
}

int job_secrets_share(struct rjob *exec, struct rjob *box, int state_fd, const char *proxy_ca, struct sbx_error *err) {
        int r = job_secrets_open(box, state_fd, proxy_ca, err);
        if (r < 0 || !box->secrets)
                return r;
        if ((r = make_redactor(box->secrets, &exec->redact)) < 0)
                return sbx_error_set(err, -r, "secrets");
        box->secrets->refs++;
        exec->secrets = box->secrets;
        return 0;
}

json_t *job_secrets_record(const struct rjob *rj) {
        const struct job_secrets *js = rj->secrets;
        if (!js)
                return NULL;
        json_t *a = json_array();
        size_t k = 0;
        uint64_t served, refused;
        secretproxy_counts(rj->sproxy, &served, &refused);
        for (size_t i = 0; a && i < js->n; i++) {
                /* the redactor holds the redacted ones, in order */
                uint64_t hits = 0;
                if (!js->shown[i] && rj->redact)
                        hits = redactor_hits(rj->redact, k++);
                json_t *o = json_pack("{s:s, s:s, s:o}", "name", js->s[i].name, "mode", secret_mode_name(js->s[i].mode), "redacted",
                                      js->shown[i] ? json_null() : json_integer((json_int_t) hits));
                /* the sandbox's proxy: connections passed to the hosts, and refused */
                if (o && js->s[i].mode == SECRET_HEADER)
                        json_object_set_new(o, "proxy", json_pack("{s:I, s:I}", "connections", (json_int_t) served, "refused",
                                                                  (json_int_t) refused));
                json_array_append_new(a, o);
        }
        return a;
}

/* One artifact: redacted into a temporary file; where anything was
 * replaced, the file is rewritten from it and its size and digest are the
 * new ones. */
static int artifact(struct redactor *red, int adir, json_t *a) {
        const char *path = json_string_value(json_object_get(a, "path"));
        if (!path)
                return 0;
        uint64_t before = 0;
        for (size_t i = 0; i < redactor_count(red); i++)
                before += redactor_hits(red, i);
        _cleanup_close_ int fd = openat(adir, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int tmp = fd >= 0 ? openat(adir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600) : -1;
        if (fd < 0 || tmp < 0)
                return -errno;
        int64_t n = redact_fd(red, fd, tmp);
        if (n < 0)
                return (int) n;
        uint64_t after = 0;
        for (size_t i = 0; i < redactor_count(red); i++)
                after += redactor_hits(red, i);
        if (after == before)
                return 0;
        if (lseek(tmp, 0, SEEK_SET) < 0 || lseek(fd, 0, SEEK_SET) < 0 || ftruncate(fd, 0) < 0)
                return -errno;
        crypto_hash_sha256_state h;
        crypto_hash_sha256_init(&h);
        char buf[65536];
        uint64_t total = 0;
        for (;;) {
                ssize_t k = read(tmp, buf, sizeof(buf));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                int r = write_all(fd, buf, (size_t) k);
                if (r < 0)
                        return r;
                crypto_hash_sha256_update(&h, (unsigned char *) buf, (size_t) k);
                total += (uint64_t) k;
        }
        unsigned char digest[crypto_hash_sha256_BYTES];
        char hex[2 * crypto_hash_sha256_BYTES + 1];
        crypto_hash_sha256_final(&h, digest);
        hex_encode(digest, sizeof(digest), hex);
        json_object_set_new(a, "size", json_integer((json_int_t) total));
        json_object_set_new(a, "sha256", json_string(hex));
        json_object_set_new(a, "redacted", json_true());
        return 0;
}

int job_secrets_artifacts(struct rjob *rj, int adir) {
        size_t i;
        json_t *a;
        if (!rj->redact)
                return 0;
        json_array_foreach (rj->artifacts, i, a) {
                int r = artifact(rj->redact, adir, a);
                if (r < 0) {
                        /* none may stay unredacted in the state directory */
                        json_array_foreach (rj->artifacts, i, a) {
                                const char *path = json_string_value(json_object_get(a, "path"));
                                if (path)
                                        (void) unlinkat(adir, path, 0);
                        }
                        return r;
                }
        }
        return 0;
}

/* Every string of the value, keys too. */
static json_t *redact_json(struct redactor *red, json_t *v) {
        if (json_is_string(v)) {
                char *out;
                size_t n;
                if (redact_buffer(red, json_string_value(v), json_string_length(v), &out, &n) < 0)
                        return json_incref(v);
                json_t *s = json_stringn(out, n);
                free(out);
                return s ? s : json_incref(v);
        }
        if (json_is_array(v)) {
                json_t *a = json_array();
                size_t i;
                json_t *e;
                json_array_foreach (v, i, e)
                        json_array_append_new(a, redact_json(red, e));
                return a;
        }
        if (json_is_object(v)) {
                json_t *o = json_object();
                const char *k;
                json_t *e;
                json_object_foreach (v, k, e) {
                        char *key;
                        size_t n;
                        if (redact_buffer(red, k, strlen(k), &key, &n) < 0)
                                continue;
                        json_object_set_new(o, key, redact_json(red, e));
                        free(key);
                }
                return o;
        }
        return json_incref(v);
}

static void redact_str(struct redactor *red, char **s) {
        char *out;
        size_t n;
        if (*s && redact_buffer(red, *s, strlen(*s), &out, &n) == 0) {
                free(*s);
                *s = out;
        }
}

void job_secrets_value(struct rjob *rj) {
        if (!rj->redact)
                return;
        if (rj->value) {
                json_t *v = redact_json(rj->redact, rj->value);
                json_decref(rj->value);
                rj->value = v;
        }
        redact_str(rj->redact, &rj->value_error);
        redact_str(rj->redact, &rj->j.error_message);
}
