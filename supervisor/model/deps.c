/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fnmatch.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deps.h"
#include "netpolicy.h"
#include "util.h"

static bool name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

static bool alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

void deps_normalize(const char *name, char *buf, size_t len) {
        size_t k = 0;
        for (const char *p = name; *p && k + 1 < len; p++) {
                if (*p == '-' || *p == '_' || *p == '.') {
                        if (k > 0 && buf[k - 1] == '-')
                                continue;
                        buf[k++] = '-';
                } else
                        buf[k++] = (char) (*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        }
        buf[k] = '\0';
}

int deps_pin_parse(const char *s, struct pip_pin *ret, struct sbx_error *err) {
        const char *eq = strstr(s, "==");
        const char *hash = strstr(s, "#sha256=");
        memset(ret, 0, sizeof(*ret));
        if (!eq || eq == s)
                return sbx_error_msg(err, EINVAL, "'%.64s' is not NAME==VERSION (an exact version, as pip pins it)", s);
        size_t n = (size_t) (eq - s);
        if (n > DEPS_NAME_MAX || !alnum(s[0]) || !alnum(s[n - 1]))
                return sbx_error_msg(err, EINVAL, "'%.64s': a package's name is letters, digits, '-', '_' and '.', "
                                                  "beginning and ending with a letter or digit", s);
        for (size_t i = 0; i < n; i++)
                if (!name_char(s[i]))
                        return sbx_error_msg(err, EINVAL, "'%.64s': a package's name is letters, digits, '-', '_' and '.'", s);
        char raw[DEPS_NAME_MAX + 1];
        memcpy(raw, s, n);
        raw[n] = '\0';
        deps_normalize(raw, ret->name, sizeof(ret->name));
        const char *v = eq + 2, *vend = hash ? hash : v + strlen(v);
        size_t vl = (size_t) (vend - v);
        if (vl == 0 || vl > DEPS_VERSION_MAX || !alnum(v[0]))
                return sbx_error_msg(err, EINVAL, "'%.64s': the version is 1 to %d characters, beginning with a letter or digit",
                                     s, DEPS_VERSION_MAX);
        for (size_t i = 0; i < vl; i++)
                if (!(alnum(v[i]) || v[i] == '.' || v[i] == '+' || v[i] == '!' || v[i] == '-' || v[i] == '_'))
                        return sbx_error_msg(err, EINVAL, "'%.64s': an exact version has letters, digits and '.+!-_' only "
                                                          "(no ranges, no '*')", s);
        memcpy(ret->version, v, vl);
        ret->version[vl] = '\0';
        if (hash) {
                const char *h = hash + 8;
                if (strlen(h) != DEPS_KEY_HEX || strspn(h, "0123456789abcdef") != DEPS_KEY_HEX)
                        return sbx_error_msg(err, EINVAL, "'%.64s': #sha256= takes 64 lower-case hex digits", s);
                memcpy(ret->sha256, h, DEPS_KEY_HEX + 1);
        }
        return 0;
}

void deps_pin_str(const struct pip_pin *p, char *buf, size_t len) {
        snprintf(buf, len, "%s==%s%s%s", p->name, p->version, p->sha256[0] ? "#sha256=" : "", p->sha256);
}

bool deps_allowed(const struct tenant *t, const struct pip_pin *p, char *buf, size_t len, const char **why) {
        bool named = false;
        for (size_t i = 0; i < t->n_pip_allow; i++) {
                char pat[DEPS_NAME_MAX + 1];
                const char *e = t->pip_allow[i], *eq = strstr(e, "==");
                size_t n = eq ? (size_t) (eq - e) : strlen(e);
                if (n > DEPS_NAME_MAX)
                        continue;
                memcpy(pat, e, n);
                pat[n] = '\0';
                if (fnmatch(pat, p->name, 0) != 0)
                        continue;
                named = true;
                if (!eq || fnmatch(eq + 2, p->version, 0) == 0)
                        return true;
        }
        if (!named)
                *why = "not in the tenant's pip_allow";
        else {
                snprintf(buf, len, "version %s is not one the tenant's pip_allow admits for %s", p->version, p->name);
                *why = buf;
        }
        return false;
}

void deps_key(const char *index, const char *python, const struct pip_pin *pins, size_t n, char out[DEPS_KEY_HEX + 1]) {
        crypto_hash_sha256_state h;
        unsigned char md[crypto_hash_sha256_BYTES];
        const struct pip_pin *sorted[DEPS_PINS_MAX];
        size_t m = n < DEPS_PINS_MAX ? n : DEPS_PINS_MAX;
        for (size_t i = 0; i < m; i++)
                sorted[i] = &pins[i];
        /* in order of name (few: an insertion sort) */
        for (size_t i = 1; i < m; i++)
                for (size_t k = i; k > 0 && strcmp(sorted[k - 1]->name, sorted[k]->name) > 0; k--) {
                        const struct pip_pin *x = sorted[k];
                        sorted[k] = sorted[k - 1];
                        sorted[k - 1] = x;
                }
        crypto_hash_sha256_init(&h);
        crypto_hash_sha256_update(&h, (const unsigned char *) "sbx deps 1\npip\n", 15);
        crypto_hash_sha256_update(&h, (const unsigned char *) index, strlen(index) + 1);
        crypto_hash_sha256_update(&h, (const unsigned char *) python, strlen(python) + 1);
        for (size_t i = 0; i < m; i++) {
                char line[DEPS_NAME_MAX + DEPS_VERSION_MAX + DEPS_KEY_HEX + 16];
                deps_pin_str(sorted[i], line, sizeof(line));
                crypto_hash_sha256_update(&h, (const unsigned char *) line, strlen(line) + 1);
        }
        crypto_hash_sha256_final(&h, md);
        hex_encode(md, sizeof(md), out);
}

json_t *deps_install_request(const char *index, const struct pip_pin *pins, size_t n, uint64_t timeout_ms, uint64_t bytes,
                             struct sbx_error *err) {
        char endpoint[320];
        bool hashes = n > 0 && pins[0].sha256[0];
        if (netpolicy_url_endpoint(index, endpoint, sizeof(endpoint), err) < 0)
                return NULL;
        json_t *cmd = json_pack("[s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s]", "python3", "-m", "pip", "install", "--isolated",
                                "--no-input", "--disable-pip-version-check", "--no-cache-dir", "--no-deps", "--only-binary", ":all:",
                                "--index-url", index, "--target", "/workspace/" DEPS_LAYER_DIR, "--report", "/workspace/report.json",
                                "--progress-bar=off");
        json_t *files = json_array(), *arts = json_array();
        json_t *o = json_pack("{s:o, s:{s:s, s:[s]}, s:I, s:{s:I}, s:{s:s}}", "command", cmd, "network", "mode", "restricted",
                              "allow", endpoint, "timeout_ms", (json_int_t) timeout_ms, "limits", "disk",
                              (json_int_t) (2 * bytes + (64ull << 20)), "env", "TMPDIR", "/workspace/tmp");
        if (!o || !files || !arts)
                goto oom;
        /* pip ignores an index over plain HTTP unless told to trust it;
         * the index is the policy's own choice (and the lock records each
         * file's hash either way) */
        if (strncmp(index, "http://", 7) == 0 &&
            (json_array_append_new(cmd, json_string("--trusted-host")) < 0 || json_array_append_new(cmd, json_string(endpoint)) < 0))
                goto oom;
        /* pip's temporary files inside the workspace (its size bounds them) */
        if (json_array_append_new(files, json_pack("{s:s, s:s}", "path", "tmp/.keep", "data", "")) < 0)
                goto oom;
        if (hashes) {
                /* --require-hashes: each pin with the hash the request gave */
                size_t cap = n * (DEPS_NAME_MAX + DEPS_VERSION_MAX + DEPS_KEY_HEX + 20) + 1, k = 0;
                char *req = malloc(cap);
                if (!req)
                        goto oom;
                for (size_t i = 0; i < n; i++)
                        k += (size_t) snprintf(req + k, cap - k, "%s==%s --hash=sha256:%s\n", pins[i].name, pins[i].version,
                                               pins[i].sha256);
                int r = json_array_append_new(files, json_pack("{s:s, s:s}", "path", "requirements.txt", "data", req));
                free(req);
                if (r < 0 || json_array_append_new(cmd, json_string("--require-hashes")) < 0 ||
                    json_array_append_new(cmd, json_string("-r")) < 0 ||
                    json_array_append_new(cmd, json_string("/workspace/requirements.txt")) < 0)
                        goto oom;
        } else
                for (size_t i = 0; i < n; i++) {
                        char pin[DEPS_NAME_MAX + DEPS_VERSION_MAX + 4];
                        snprintf(pin, sizeof(pin), "%s==%s", pins[i].name, pins[i].version);
                        if (json_array_append_new(cmd, json_string(pin)) < 0)
                                goto oom;
                }
        /* the layer, level by level (a glob's '*' stays in one directory) */
        char glob[DEPS_ARTIFACT_DEPTH * 2 + 16] = DEPS_LAYER_DIR;
        for (int d = 0; d < DEPS_ARTIFACT_DEPTH; d++) {
                strcat(glob, "/*");
                if (json_array_append_new(arts, json_string(glob)) < 0)
                        goto oom;
        }
        if (json_array_append_new(arts, json_string("report.json")) < 0 || json_object_set_new(o, "files", files) < 0 ||
            json_object_set_new(o, "artifacts", arts) < 0) {
                files = arts = NULL;
                goto oom;
        }
        return o;
oom:
        json_decref(o);
        json_decref(files);
        json_decref(arts);
        sbx_error_set(err, ENOMEM, "dependencies");
        return NULL;
}

json_t *deps_lock_from_report(json_t *report, const struct pip_pin *pins, size_t n, struct sbx_error *err) {
        json_t *install = json_object_get(report, "install");
        if (!json_is_array(install) || json_array_size(install) != n) {
                sbx_error_msg(err, EINVAL, "pip's report lists %zu packages installed, not the %zu asked for",
                              json_array_size(install), n);
                return NULL;
        }
        json_t *lock = json_array();
        bool seen[DEPS_PINS_MAX] = { false };
        for (size_t i = 0; lock && i < n; i++) {
                json_t *it = json_array_get(install, i);
                json_t *meta = json_object_get(it, "metadata"), *dl = json_object_get(it, "download_info");
                const char *name = json_string_value(json_object_get(meta, "name"));
                const char *version = json_string_value(json_object_get(meta, "version"));
                const char *url = json_string_value(json_object_get(dl, "url"));
                const char *sha = json_string_value(json_object_get(json_object_get(json_object_get(dl, "archive_info"), "hashes"),
                                                                    "sha256"));
                char norm[DEPS_NAME_MAX + 1];
                size_t k;
                if (!name || !version || !url || !sha || strlen(sha) != DEPS_KEY_HEX || strspn(sha, "0123456789abcdef") != DEPS_KEY_HEX) {
                        sbx_error_msg(err, EINVAL, "pip's report: entry %zu lacks a name, version, URL or SHA-256", i);
                        goto bad;
                }
                deps_normalize(name, norm, sizeof(norm));
                for (k = 0; k < n; k++)
                        if (!seen[k] && streq(pins[k].name, norm) && streq(pins[k].version, version))
                                break;
                if (k == n) {
                        sbx_error_msg(err, EINVAL, "pip's report: %.128s %.64s was not asked for", name, version);
                        goto bad;
                }
                if (pins[k].sha256[0] && !streq(pins[k].sha256, sha)) {
                        sbx_error_msg(err, EINVAL, "pip's report: %s %s has SHA-256 %s, not the pinned one", norm, version, sha);
                        goto bad;
                }
                seen[k] = true;
                if (json_array_append_new(lock, json_pack("{s:s, s:s, s:s, s:s}", "name", norm, "version", version, "url", url,
                                                          "sha256", sha)) < 0)
                        goto bad;
        }
        if (!lock)
                sbx_error_set(err, ENOMEM, "lock");
        return lock;
bad:
        json_decref(lock);
        return NULL;
}
