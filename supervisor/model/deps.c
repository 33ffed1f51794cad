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

static bool alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool all_of(const char *s, size_t n, const char *extra) {
        for (size_t i = 0; i < n; i++)
                if (!alnum(s[i]) && !strchr(extra, s[i]))
                        return false;
        return true;
}

bool deps_is_hex64(const char *s) {
        return s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

const char *deps_eco_name(enum dep_eco eco) {
        return eco == DEP_NPM ? "npm" : "pip";
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

/* An npm name: NAME or @SCOPE/NAME, each part letters, digits and
 * "-._~", not beginning with "." or "_". */
static bool npm_name_ok(const char *s, size_t n) {
        if (n == 0 || n > DEPS_NAME_MAX)
                return false;
        if (s[0] == '@') {
                const char *slash = memchr(s, '/', n);
                if (!slash || slash == s + 1 || slash == s + n - 1)
                        return false;
                size_t scope = (size_t) (slash - s) - 1;
                if (!all_of(s + 1, scope, "-._~") || s[1] == '.' || s[1] == '_')
                        return false;
                n -= scope + 2;
                s = slash + 1;
        }
        return all_of(s, n, "-._~") && s[0] != '.' && s[0] != '_';
}

static int parse_pip(const char *s, struct dep_pin *ret, struct sbx_error *err) {
        const char *eq = strstr(s, "==");
        const char *hash = strstr(s, "#sha256=");
        if (!eq || eq == s)
                return sbx_error_msg(err, EINVAL, "'%.64s' is not NAME==VERSION (an exact version, as pip pins it)", s);
        size_t n = (size_t) (eq - s);
        if (n > DEPS_NAME_MAX || !alnum(s[0]) || !alnum(s[n - 1]))
                return sbx_error_msg(err, EINVAL, "'%.64s': a package's name is letters, digits, '-', '_' and '.', "
                                                  "beginning and ending with a letter or digit", s);
        if (!all_of(s, n, "-_."))
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
        if (!all_of(v, vl, ".+!-_"))
                return sbx_error_msg(err, EINVAL, "'%.64s': an exact version has letters, digits and '.+!-_' only "
                                                  "(no ranges, no '*')", s);
        memcpy(ret->version, v, vl);
        ret->version[vl] = '\0';
        if (hash) {
                /* HEX[,HEX]...: each 64 lower-case hex digits */
                const char *h = hash + 8;
                size_t n_h = 0;
                for (const char *p = h;; p += 65) {
                        if (strspn(p, "0123456789abcdef") != 64 || (p[64] != '\0' && p[64] != ',') ||
                            ++n_h > DEPS_PIP_HASHES_MAX)
                                return sbx_error_msg(err, EINVAL, "'%.64s': #sha256= takes 64 lower-case hex digits, or up to %d "
                                                                  "such separated by ','", s, DEPS_PIP_HASHES_MAX);
                        if (p[64] == '\0')
                                break;
                }
                snprintf(ret->hash, sizeof(ret->hash), "%s", h);
        }
        return 0;
}

#define B64 "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

static int parse_npm(const char *s, struct dep_pin *ret, struct sbx_error *err) {
        const char *at = s[0] ? strchr(s + 1, '@') : NULL;
        const char *hash = strchr(s, '#');
        if (!at || (hash && hash < at))
                return sbx_error_msg(err, EINVAL, "'%.64s' is not NAME@VERSION (an exact version, as npm pins it)", s);
        size_t n = (size_t) (at - s);
        if (!npm_name_ok(s, n))
                return sbx_error_msg(err, EINVAL, "'%.64s': a package's name is NAME or @SCOPE/NAME, each letters, digits and "
                                                  "'-._~', not beginning with '.' or '_'", s);
        memcpy(ret->name, s, n);
        ret->name[n] = '\0';
        const char *v = at + 1, *vend = hash ? hash : v + strlen(v);
        size_t vl = (size_t) (vend - v);
        if (vl == 0 || vl > DEPS_VERSION_MAX || !alnum(v[0]) || !all_of(v, vl, ".+-"))
                return sbx_error_msg(err, EINVAL, "'%.64s': an exact version (1.2.3), letters, digits and '.+-' only (no "
                                                  "ranges, no tags)", s);
        memcpy(ret->version, v, vl);
        ret->version[vl] = '\0';
        if (hash) {
                const char *h = hash + 1;
                if (strncmp(h, "sha512-", 7) != 0 || strlen(h) != 7 + 88 || strspn(h + 7, B64) != 86 || strcmp(h + 7 + 86, "==") != 0)
                        return sbx_error_msg(err, EINVAL, "'%.64s': #sha512-BASE64 (npm's integrity: 88 characters after "
                                                          "'sha512-')", s);
                snprintf(ret->hash, sizeof(ret->hash), "%s", h);
        }
        return 0;
}

int deps_pin_parse(enum dep_eco eco, const char *s, struct dep_pin *ret, struct sbx_error *err) {
        memset(ret, 0, sizeof(*ret));
        ret->eco = eco;
        return eco == DEP_NPM ? parse_npm(s, ret, err) : parse_pip(s, ret, err);
}

void deps_pin_str(const struct dep_pin *p, char *buf, size_t len) {
        if (p->eco == DEP_NPM)
                snprintf(buf, len, "%s@%s%s%s", p->name, p->version, p->hash[0] ? "#" : "", p->hash);
        else
                snprintf(buf, len, "%s==%s%s%s", p->name, p->version, p->hash[0] ? "#sha256=" : "", p->hash);
}

int deps_parse_field(json_t *a, enum dep_eco eco, size_t others, char ***list, size_t *count, struct sbx_error *err) {
        const char *field = deps_eco_name(eco);
        size_t n = json_array_size(a);
        *list = NULL;
        *count = 0;
        if (!json_is_array(a) || n == 0 || n + others > DEPS_PINS_MAX)
                return sbx_error_msg(err, EINVAL, "field '%s': 1 to %d packages (pip and npm together)", field, DEPS_PINS_MAX);
        /* on the heap: a few hundred bytes a pin, and this may run on a
         * thread of the HTTP API */
        _cleanup_free_ struct dep_pin *pins = calloc(n, sizeof(*pins));
        if (!pins || !(*list = calloc(n + 1, sizeof(char *))))
                return sbx_error_set(err, ENOMEM, "%s", field);
        for (size_t i = 0; i < n; i++) {
                const char *s = json_string_value(json_array_get(a, i));
                struct sbx_error e;
                if (!s)
                        return sbx_error_msg(err, EINVAL, "field '%s[%zu]': expected a string", field, i);
                if (deps_pin_parse(eco, s, &pins[i], &e) < 0)
                        return sbx_error_msg(err, EINVAL, "field '%s[%zu]': %s", field, i, e.msg);
                for (size_t k = 0; k < i; k++)
                        if (streq(pins[k].name, pins[i].name))
                                return sbx_error_msg(err, EINVAL, "field '%s': '%s' is named twice", field, pins[i].name);
                if (!pins[i].hash[0] != !pins[0].hash[0])
                        return sbx_error_msg(err, EINVAL, "field '%s': a hash on every package or on none (%s)", field,
                                             eco == DEP_NPM ? "an integrity pins the whole tree" : "pip's --require-hashes");
                if (!((*list)[i] = strdup(s)))
                        return sbx_error_set(err, ENOMEM, "%s", field);
                (*count)++;
        }
        return 0;
}

void deps_kinds(const struct dep_pin *pins, size_t n, bool *pip, bool *npm) {
        *pip = *npm = false;
        for (size_t i = 0; i < n; i++) {
                *pip |= pins[i].eco == DEP_PIP;
                *npm |= pins[i].eco == DEP_NPM;
        }
}

int deps_pins_of(char *const *pip, size_t n_pip, char *const *npm, size_t n_npm, struct dep_pin *pins, size_t *n,
                 struct sbx_error *err) {
        *n = 0;
        if (n_pip + n_npm > DEPS_PINS_MAX)
                return sbx_error_msg(err, EINVAL, "more than %d packages", DEPS_PINS_MAX);
        for (size_t i = 0; i < n_pip; i++)
                if (deps_pin_parse(DEP_PIP, pip[i], &pins[(*n)++], err) < 0)
                        return -EINVAL;
        for (size_t i = 0; i < n_npm; i++)
                if (deps_pin_parse(DEP_NPM, npm[i], &pins[(*n)++], err) < 0)
                        return -EINVAL;
        return 0;
}

int deps_npm_allow_split(const char *e, char *name, size_t len, const char **version) {
        const char *at = e[0] ? strchr(e + 1, '@') : NULL;
        size_t n = at ? (size_t) (at - e) : strlen(e);
        if (n == 0 || n >= len || (at && !at[1]))
                return -EINVAL;
        memcpy(name, e, n);
        name[n] = '\0';
        *version = at ? at + 1 : NULL;
        return 0;
}

bool deps_allowed(const struct tenant *t, enum dep_eco eco, const char *name, const char *version, char *buf, size_t len,
                  const char **why) {
        char *const *list = eco == DEP_NPM ? t->npm_allow : t->pip_allow;
        size_t n_list = eco == DEP_NPM ? t->n_npm_allow : t->n_pip_allow;
        bool named = false;
        for (size_t i = 0; i < n_list; i++) {
                char pat[DEPS_NAME_MAX + 1];
                const char *vpat;
                if (eco == DEP_NPM) {
                        if (deps_npm_allow_split(list[i], pat, sizeof(pat), &vpat) < 0)
                                continue;
                } else {
                        const char *eq = strstr(list[i], "==");
                        size_t n = eq ? (size_t) (eq - list[i]) : strlen(list[i]);
                        if (n > DEPS_NAME_MAX)
                                continue;
                        memcpy(pat, list[i], n);
                        pat[n] = '\0';
                        vpat = eq ? eq + 2 : NULL;
                }
                if (fnmatch(pat, name, 0) != 0)
                        continue;
                named = true;
                if (!vpat || fnmatch(vpat, version, 0) == 0)
                        return true;
        }
        if (!named) {
                snprintf(buf, len, "not in the tenant's %s_allow", deps_eco_name(eco));
                *why = buf;
        } else {
                snprintf(buf, len, "version %s is not one the tenant's %s_allow admits for %s", version, deps_eco_name(eco), name);
                *why = buf;
        }
        return false;
}

static int pin_order(const void *a, const void *b) {
        const struct dep_pin *x = *(const struct dep_pin *const *) a, *y = *(const struct dep_pin *const *) b;
        return x->eco != y->eco ? (int) x->eco - (int) y->eco : strcmp(x->name, y->name);
}

static void hash_str(crypto_hash_sha256_state *h, const char *s) {
        crypto_hash_sha256_update(h, (const unsigned char *) s, strlen(s) + 1);
}

void deps_key(const char *pip_index, const char *npm_registry, const char *python, bool times, const struct dep_pin *pins,
              size_t n, char out[DEPS_KEY_HEX + 1]) {
        crypto_hash_sha256_state h;
        unsigned char md[crypto_hash_sha256_BYTES];
        const struct dep_pin *sorted[DEPS_PINS_MAX];
        size_t m = n < DEPS_PINS_MAX ? n : DEPS_PINS_MAX;
        bool pip, npm;
        deps_kinds(pins, m, &pip, &npm);
        for (size_t i = 0; i < m; i++)
                sorted[i] = &pins[i];
        qsort(sorted, m, sizeof(*sorted), pin_order);
        crypto_hash_sha256_init(&h);
        hash_str(&h, "sbx deps 2");
        hash_str(&h, pip && pip_index ? pip_index : "");
        hash_str(&h, npm && npm_registry ? npm_registry : "");
        hash_str(&h, pip ? python : "");
        hash_str(&h, times ? "times" : "");
        for (size_t i = 0; i < m; i++) {
                char line[DEPS_NAME_MAX + DEPS_VERSION_MAX + DEPS_HASH_MAX + 16];
                deps_pin_str(sorted[i], line, sizeof(line));
                hash_str(&h, deps_eco_name(sorted[i]->eco));
                hash_str(&h, line);
        }
        crypto_hash_sha256_final(&h, md);
        hex_encode(md, sizeof(md), out);
}

int deps_check_url(const char *url, struct sbx_error *err) {
        char endpoint[320];
        return netpolicy_url_endpoint(url, endpoint, sizeof(endpoint), err);
}

static bool add(json_t *a, const char *s) {
        return json_array_append_new(a, json_string(s)) == 0;
}

/* Each pin of eco as its client takes it on a command line: no hash. */
static bool add_pins(json_t *cmd, const struct dep_pin *pins, size_t n, enum dep_eco eco) {
        for (size_t i = 0; i < n; i++) {
                char pin[DEPS_NAME_MAX + DEPS_VERSION_MAX + 4];
                if (pins[i].eco != eco)
                        continue;
                snprintf(pin, sizeof(pin), eco == DEP_NPM ? "%s@%s" : "%s==%s", pins[i].name, pins[i].version);
                if (!add(cmd, pin))
                        return false;
        }
        return true;
}

/* pip's command: exactly the pins (--no-deps), wheels only. */
static json_t *pip_command(const char *index, const char *endpoint, const struct dep_pin *pins, size_t n, json_t *files) {
        bool hashes = false;
        json_t *cmd = json_pack("[s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s]", "python3", "-m", "pip", "install", "--isolated",
                                "--no-input", "--disable-pip-version-check", "--no-cache-dir", "--no-deps", "--only-binary", ":all:",
                                "--index-url", index, "--target", "/workspace/" DEPS_LAYER_DIR "/pip", "--report",
                                "/workspace/report.json", "--progress-bar=off");
        if (!cmd)
                return NULL;
        /* pip ignores an index over plain HTTP unless told to trust it;
         * the index is the policy's own choice (and the lock records each
         * file's hash either way) */
        if (strncmp(index, "http://", 7) == 0 && (!add(cmd, "--trusted-host") || !add(cmd, endpoint)))
                goto oom;
        for (size_t i = 0; i < n; i++)
                hashes |= pins[i].eco == DEP_PIP && pins[i].hash[0];
        if (hashes) {
                /* --require-hashes: each pin with the hash the request gave */
                size_t cap = n * (DEPS_NAME_MAX + DEPS_VERSION_MAX + DEPS_PIP_HASHES_MAX * 80 + 20) + 1, k = 0;
                char *req = malloc(cap);
                if (!req)
                        goto oom;
                req[0] = '\0';
                for (size_t i = 0; i < n; i++) {
                        if (pins[i].eco != DEP_PIP)
                                continue;
                        k += (size_t) snprintf(req + k, cap - k, "%s==%s", pins[i].name, pins[i].version);
                        for (const char *h = pins[i].hash; *h; h += h[64] ? 65 : 64)
                                k += (size_t) snprintf(req + k, cap - k, " --hash=sha256:%.64s", h);
                        k += (size_t) snprintf(req + k, cap - k, "\n");
                }
                int r = json_array_append_new(files, json_pack("{s:s, s:s}", "path", "requirements.txt", "data", req));
                free(req);
                if (r < 0 || !add(cmd, "--require-hashes") || !add(cmd, "-r") || !add(cmd, "/workspace/requirements.txt"))
                        goto oom;
        } else if (!add_pins(cmd, pins, n, DEP_PIP))
                goto oom;
        return cmd;
oom:
        json_decref(cmd);
        return NULL;
}

/* npm's command: the pins and what they depend on (the lock is checked
 * after), no scripts of any package, no links into bin, no configuration
 * but this, its cache and logs in the workspace, its retries within
 * seconds. */
static json_t *npm_command(const char *registry, const struct dep_pin *pins, size_t n, json_t *files) {
        json_t *cmd = json_pack("[s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s]", "npm", "install", "--prefix",
                                "/workspace/" DEPS_LAYER_DIR "/npm", "--registry", registry, "--ignore-scripts", "--no-audit",
                                "--no-fund", "--no-bin-links", "--no-update-notifier", "--save-exact", "--legacy-peer-deps",
                                "--cache", "/workspace/tmp/npm-cache", "--userconfig", "/workspace/tmp/npmrc", "--globalconfig",
                                "/workspace/tmp/npmrc-global", "--loglevel=warn", "--no-progress",
                                /* a refused connection is not worth npm's default
                                 * 10 s and 60 s waits between tries */
                                "--fetch-retry-mintimeout=1000", "--fetch-retry-maxtimeout=5000");
        if (!cmd || json_array_append_new(files, json_pack("{s:s, s:s}", "path", "tmp/npmrc", "data", "")) < 0 ||
            json_array_append_new(files, json_pack("{s:s, s:s}", "path", "tmp/npmrc-global", "data", "")) < 0)
                goto oom;
        if (!add_pins(cmd, pins, n, DEP_NPM))
                goto oom;
        return cmd;
oom:
        json_decref(cmd);
        return NULL;
}

/* Both: one shell runs them in turn, each word quoted. */
static char *shell_words(json_t *a, json_t *b) {
        size_t cap = 64, k = 0;
        json_t *cmds[2] = { a, b };
        for (int c = 0; c < 2; c++)
                for (size_t i = 0; i < json_array_size(cmds[c]); i++)
                        cap += 4 * strlen(json_string_value(json_array_get(cmds[c], i))) + 3;
        char *s = malloc(cap);
        if (!s)
                return NULL;
        for (int c = 0; c < 2; c++) {
                if (c)
                        k += (size_t) snprintf(s + k, cap - k, " && ");
                for (size_t i = 0; i < json_array_size(cmds[c]); i++) {
                        if (i)
                                s[k++] = ' ';
                        s[k++] = '\'';
                        for (const char *p = json_string_value(json_array_get(cmds[c], i)); *p; p++) {
                                if (*p == '\'') {
                                        memcpy(s + k, "'\\''", 4);
                                        k += 4;
                                } else
                                        s[k++] = *p;
                        }
                        s[k++] = '\'';
                }
        }
        s[k] = '\0';
        return s;
}

json_t *deps_install_request(const char *pip_index, const char *npm_registry, const struct dep_pin *pins, size_t n,
                             uint64_t timeout_ms, uint64_t bytes, struct sbx_error *err) {
        char pip_ep[320] = "", npm_ep[320] = "";
        bool pip, npm;
        deps_kinds(pins, n, &pip, &npm);
        if ((pip && (!pip_index || netpolicy_url_endpoint(pip_index, pip_ep, sizeof(pip_ep), err) < 0)) ||
            (npm && (!npm_registry || netpolicy_url_endpoint(npm_registry, npm_ep, sizeof(npm_ep), err) < 0))) {
                if ((pip && !pip_index) || (npm && !npm_registry))
                        sbx_error_msg(err, EINVAL, "no %s to install from", pip && !pip_index ? "pip_index" : "npm_registry");
                return NULL;
        }
        json_t *files = json_array(), *arts = json_array(), *allow = json_array(), *pcmd = NULL, *ncmd = NULL, *cmd = NULL;
        json_t *o = NULL;
        if (!files || !arts || !allow || (pip && !add(allow, pip_ep)) || (npm && !streq(npm_ep, pip_ep) && !add(allow, npm_ep)))
                goto oom;
        /* temporary files inside the workspace (its size bounds them) */
        if (json_array_append_new(files, json_pack("{s:s, s:s}", "path", "tmp/.keep", "data", "")) < 0)
                goto oom;
        if ((pip && !(pcmd = pip_command(pip_index, pip_ep, pins, n, files))) ||
            (npm && !(ncmd = npm_command(npm_registry, pins, n, files))))
                goto oom;
        if (pcmd && ncmd) {
                char *script = shell_words(pcmd, ncmd);
                cmd = script ? json_pack("[s, s, s]", "/bin/sh", "-ec", script) : NULL;
                free(script);
        } else
                cmd = json_incref(pcmd ? pcmd : ncmd);
        o = json_pack("{s:O, s:{s:s, s:O}, s:I, s:{s:I}, s:{s:s, s:s}}", "command", cmd, "network", "mode", "restricted", "allow",
                      allow, "timeout_ms", (json_int_t) timeout_ms, "limits", "disk", (json_int_t) (2 * bytes + (64ull << 20)),
                      "env", "TMPDIR", "/workspace/tmp", "HOME", "/workspace/tmp");
        if (!o)
                goto oom;
        /* the layer, level by level (a glob's '*' stays in one directory) */
        char glob[DEPS_ARTIFACT_DEPTH * 2 + 16] = DEPS_LAYER_DIR;
        for (int d = 0; d < DEPS_ARTIFACT_DEPTH; d++) {
                strcat(glob, "/*");
                if (!add(arts, glob))
                        goto oom;
        }
        if ((pip && !add(arts, "report.json")) || json_object_set(o, "files", files) < 0 || json_object_set(o, "artifacts", arts) < 0)
                goto oom;
        json_decref(files);
        json_decref(arts);
        json_decref(allow);
        json_decref(pcmd);
        json_decref(ncmd);
        json_decref(cmd);
        return o;
oom:
        json_decref(o);
        json_decref(files);
        json_decref(arts);
        json_decref(allow);
        json_decref(pcmd);
        json_decref(ncmd);
        json_decref(cmd);
        sbx_error_set(err, ENOMEM, "dependencies");
        return NULL;
}
