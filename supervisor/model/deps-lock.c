/* SPDX-License-Identifier: Apache-2.0 */
/* What comes back from an install (deps.h): the lock read from what pip
 * and npm wrote, checked for each tenant that would use the layer, and
 * the packages' release times read from the index and registry pages. */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deps.h"
#include "util.h"

/* Is sha one of list's (HEX[,HEX]...)? */
static bool hash_listed(const char *list, const char *sha) {
        for (const char *p = list; *p; p += p[64] ? 65 : 64)
                if (strncmp(p, sha, 64) == 0)
                        return true;
        return false;
}

/* pip's report: each pip pin once, nothing else. */
static int lock_pip(json_t *lock, json_t *report, const struct dep_pin *pins, size_t n, struct sbx_error *err) {
        json_t *install = json_object_get(report, "install");
        size_t want = 0;
        bool seen[DEPS_PINS_MAX] = { false };
        for (size_t i = 0; i < n; i++)
                want += pins[i].eco == DEP_PIP;
        if (!json_is_array(install) || json_array_size(install) != want)
                return sbx_error_msg(err, EINVAL, "pip's report lists %zu packages installed, not the %zu asked for",
                                     json_array_size(install), want);
        for (size_t i = 0; i < want; i++) {
                json_t *it = json_array_get(install, i);
                json_t *meta = json_object_get(it, "metadata"), *dl = json_object_get(it, "download_info");
                const char *name = json_string_value(json_object_get(meta, "name"));
                const char *version = json_string_value(json_object_get(meta, "version"));
                const char *url = json_string_value(json_object_get(dl, "url"));
                const char *sha = json_string_value(json_object_get(json_object_get(json_object_get(dl, "archive_info"), "hashes"),
                                                                    "sha256"));
                char norm[DEPS_NAME_MAX + 1];
                size_t k;
                if (!name || !version || !url || !deps_is_hex64(sha))
                        return sbx_error_msg(err, EINVAL, "pip's report: entry %zu lacks a name, version, URL or SHA-256", i);
                deps_normalize(name, norm, sizeof(norm));
                for (k = 0; k < n; k++)
                        if (pins[k].eco == DEP_PIP && !seen[k] && streq(pins[k].name, norm) && streq(pins[k].version, version))
                                break;
                if (k == n)
                        return sbx_error_msg(err, EINVAL, "pip's report: %.128s %.64s was not asked for", name, version);
                if (pins[k].hash[0] && !hash_listed(pins[k].hash, sha))
                        return sbx_error_msg(err, EINVAL, "pip's report: %s %s has SHA-256 %s, not a pinned one", norm, version, sha);
                seen[k] = true;
                if (json_array_append_new(lock, json_pack("{s:s, s:s, s:s, s:s, s:s}", "ecosystem", "pip", "name", norm, "version",
                                                          version, "url", url, "sha256", sha)) < 0)
                        return sbx_error_set(err, ENOMEM, "lock");
        }
        return 0;
}

/* npm's package-lock.json: each npm pin at its version (and integrity);
 * the rest only without integrities. */
static int lock_npm(json_t *lock, json_t *npm_lock, const struct dep_pin *pins, size_t n, struct sbx_error *err) {
        json_t *pkgs = json_object_get(npm_lock, "packages"), *v;
        const char *path;
        bool seen[DEPS_PINS_MAX] = { false }, integrities = false;
        size_t count = 0;
        for (size_t i = 0; i < n; i++)
                integrities |= pins[i].eco == DEP_NPM && pins[i].hash[0];
        if (!json_is_object(pkgs))
                return sbx_error_msg(err, EINVAL, "npm's package-lock.json has no packages");
        json_object_foreach(pkgs, path, v) {
                if (!*path)
                        continue;           /* the install's own package.json */
                const char *base = path;
                /* the name is what follows the last node_modules/ */
                for (const char *p = path; (p = strstr(p, "node_modules/")); p += 13)
                        base = p + 13;
                const char *version = json_string_value(json_object_get(v, "version"));
                const char *url = json_string_value(json_object_get(v, "resolved"));
                const char *integrity = json_string_value(json_object_get(v, "integrity"));
                char pin[DEPS_NAME_MAX + DEPS_VERSION_MAX + 2];
                struct dep_pin p;
                struct sbx_error e;
                if (strncmp(path, "node_modules/", 13) != 0 || json_is_true(json_object_get(v, "link")))
                        return sbx_error_msg(err, EINVAL, "npm's lock: '%.128s' is not a package in node_modules", path);
                snprintf(pin, sizeof(pin), "%s@%s", base, version ? version : "");
                if (!version || deps_pin_parse(DEP_NPM, pin, &p, &e) < 0)
                        return sbx_error_msg(err, EINVAL, "npm's lock: '%.128s': %s", path, version ? e.msg : "no version");
                /* an alias ("x": "npm:other@1") sits under one name and is
                 * another: its real name is the one the lists judge */
                const char *real = json_string_value(json_object_get(v, "name"));
                if (real && !streq(real, p.name))
                        return sbx_error_msg(err, EINVAL, "npm's lock: '%.128s' is an alias of %.128s (aliases are refused)", path,
                                             real);
                if (!url || !integrity || strlen(integrity) > DEPS_INTEGRITY_MAX)
                        return sbx_error_msg(err, EINVAL, "npm's lock: %s@%s has no URL or integrity", p.name, p.version);
                size_t k;
                /* a pin may be installed twice (nested), at its version */
                for (k = 0; k < n; k++)
                        if (pins[k].eco == DEP_NPM && streq(pins[k].name, p.name))
                                break;
                if (k < n && streq(pins[k].version, p.version)) {
                        if (pins[k].hash[0] && !streq(pins[k].hash, integrity))
                                return sbx_error_msg(err, EINVAL, "%s@%s has integrity %.100s, not the pinned one", p.name,
                                                     p.version, integrity);
                        seen[k] = true;
                } else if (integrities)
                        return sbx_error_msg(err, EINVAL, "%s@%s was installed as a dependency but not pinned (with integrities, "
                                             "every package of the tree is pinned)", p.name, p.version);
                if (++count > 4 * DEPS_PINS_MAX)
                        return sbx_error_msg(err, EINVAL, "npm installed more than %d packages", 4 * DEPS_PINS_MAX);
                if (json_array_append_new(lock, json_pack("{s:s, s:s, s:s, s:s, s:s}", "ecosystem", "npm", "name", p.name, "version",
                                                          p.version, "url", url, "integrity", integrity)) < 0)
                        return sbx_error_set(err, ENOMEM, "lock");
        }
        for (size_t k = 0; k < n; k++)
                if (pins[k].eco == DEP_NPM && !seen[k])
                        return sbx_error_msg(err, EINVAL, "npm's lock has no %s@%s", pins[k].name, pins[k].version);
        return 0;
}

static int entry_order(const void *a, const void *b);

/* The lock in a canonical order (npm's document has none). */
static json_t *sort_lock(json_t *lock, struct sbx_error *err) {
        size_t n = json_array_size(lock);
        json_t **v = calloc(n ? n : 1, sizeof(*v)), *out = json_array();
        if (!v || !out) {
                free(v);
                json_decref(out);
                json_decref(lock);
                sbx_error_set(err, ENOMEM, "lock");
                return NULL;
        }
        for (size_t i = 0; i < n; i++)
                v[i] = json_array_get(lock, i);
        qsort(v, n, sizeof(*v), entry_order);
        int r = 0;
        for (size_t i = 0; i < n && r == 0; i++)
                r = json_array_append(out, v[i]);
        free(v);
        json_decref(lock);
        if (r < 0) {
                json_decref(out);
                sbx_error_set(err, ENOMEM, "lock");
                return NULL;
        }
        return out;
}

json_t *deps_lock_make(json_t *report, json_t *npm_lock, const struct dep_pin *pins, size_t n, struct sbx_error *err) {
        json_t *lock = json_array();
        bool pip, npm;
        deps_kinds(pins, n, &pip, &npm);
        if (!lock) {
                sbx_error_set(err, ENOMEM, "lock");
                return NULL;
        }
        if ((pip && lock_pip(lock, report, pins, n, err) < 0) || (npm && lock_npm(lock, npm_lock, pins, n, err) < 0)) {
                json_decref(lock);
                return NULL;
        }
        return sort_lock(lock, err);
}

static int entry_order(const void *a, const void *b) {
        json_t *x = *(json_t *const *) a, *y = *(json_t *const *) b;
        static const char *const keys[] = { "ecosystem", "name", "version", "url" };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                const char *p = json_string_value(json_object_get(x, keys[i]));
                const char *q = json_string_value(json_object_get(y, keys[i]));
                int c = strcmp(p ? p : "", q ? q : "");
                if (c)
                        return c;
        }
        return 0;
}

void deps_lock_key(json_t *lock, char out[DEPS_KEY_HEX + 1]) {
        crypto_hash_sha256_state h;
        unsigned char md[crypto_hash_sha256_BYTES];
        char *text = json_dumps(lock, JSON_COMPACT | JSON_SORT_KEYS);
        crypto_hash_sha256_init(&h);
        crypto_hash_sha256_update(&h, (const unsigned char *) "sbx lock 1", 11);
        if (text)
                crypto_hash_sha256_update(&h, (const unsigned char *) text, strlen(text));
        free(text);
        crypto_hash_sha256_final(&h, md);
        hex_encode(md, sizeof(md), out);
}

int deps_lock_admit(const struct tenant *t, json_t *lock, int64_t now, char *msg, size_t len) {
        size_t k = (size_t) snprintf(msg, len, "tenant '%s' may not use", t->name), i;
        bool refused = false;
        json_t *e;
        if (!json_is_array(lock)) {
                snprintf(msg, len, "the layer's lock is not a list of packages");
                return -EPERM;
        }
        json_array_foreach(lock, i, e) {
                const char *eco = json_string_value(json_object_get(e, "ecosystem"));
                const char *name = json_string_value(json_object_get(e, "name"));
                const char *version = json_string_value(json_object_get(e, "version"));
                json_t *pub = json_object_get(e, "published");
                char buf[200], when[32];
                const char *why = NULL;
                if (!eco || !name || !version || !(streq(eco, "npm") || streq(eco, "pip")))
                        why = "the layer's lock does not say what it is";
                else if (!deps_allowed(t, streq(eco, "npm") ? DEP_NPM : DEP_PIP, name, version, buf, sizeof(buf), &why))
                        ;
                else if (t->deps_min_age_ms && !json_is_integer(pub))
                        why = "its release time is not known (deps_min_age)";
                else if (t->deps_min_age_ms && now - json_integer_value(pub) < (int64_t) (t->deps_min_age_ms / 1000)) {
                        time_t tt = (time_t) json_integer_value(pub);
                        struct tm tm;
                        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&tt, &tm));
                        snprintf(buf, sizeof(buf), "published %s, less than the tenant's deps_min_age ago", when);
                        why = buf;
                }
                if (!why)
                        continue;
                if (k < len)
                        k += (size_t) snprintf(msg + k, len - k, "%s %s %s%s%s (%s)", refused ? ";" : "", eco ? eco : "?",
                                               name ? name : "?", eco && streq(eco, "npm") ? "@" : "==", version ? version : "?",
                                               why);
                refused = true;
        }
        return refused ? -EPERM : 0;
}

int deps_meta_url(const char *pip_index, const char *npm_registry, json_t *entry, char *buf, size_t len) {
        const char *eco = json_string_value(json_object_get(entry, "ecosystem"));
        const char *name = json_string_value(json_object_get(entry, "name"));
        bool npm = eco && streq(eco, "npm");
        const char *base = npm ? npm_registry : pip_index;
        struct sbx_error err;
        if (!eco || !name || !base || deps_check_url(base, &err) < 0)
                return -EINVAL;
        size_t bl = strlen(base);
        const char *sep = bl && base[bl - 1] == '/' ? "" : "/";
        int r;
        if (npm) {
                const char *slash = strchr(name, '/');
                r = slash ? snprintf(buf, len, "%s%s%.*s%%2f%s", base, sep, (int) (slash - name), name, slash + 1)
                          : snprintf(buf, len, "%s%s%s", base, sep, name);
        } else {
                char norm[DEPS_NAME_MAX + 1];
                deps_normalize(name, norm, sizeof(norm));
                r = snprintf(buf, len, "%s%s%s/", base, sep, norm);
        }
        return r < 0 || (size_t) r >= len ? -EINVAL : 0;
}

static int digits(const char *s, int n) {
        int v = 0;
        for (int i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                v = v * 10 + (s[i] - '0');
        }
        return v;
}

int deps_parse_time(const char *s, int64_t *ret) {
        struct tm tm = { 0 };
        /* YYYY-MM-DDTHH:MM:SS, each field its digits exactly */
        if (!s || strlen(s) < 19 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':')
                return -EINVAL;
        tm.tm_year = digits(s, 4);
        tm.tm_mon = digits(s + 5, 2);
        tm.tm_mday = digits(s + 8, 2);
        tm.tm_hour = digits(s + 11, 2);
        tm.tm_min = digits(s + 14, 2);
        tm.tm_sec = digits(s + 17, 2);
        s += 19;
        if (*s == '.') {
                s++;
                if (!(*s >= '0' && *s <= '9'))
                        return -EINVAL;
                while (*s >= '0' && *s <= '9')
                        s++;
        }
        if (!streq(s, "Z") && !streq(s, "+00:00"))
                return -EINVAL;
        if (tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour < 0 ||
            tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 || tm.tm_sec < 0 || tm.tm_sec > 60)
                return -EINVAL;
        int mday = tm.tm_mday, mon = tm.tm_mon;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        time_t t = timegm(&tm);
        /* no day the month does not have (timegm would roll it over) */
        if (tm.tm_mday != mday || tm.tm_mon != mon - 1)
                return -EINVAL;
        *ret = (int64_t) t;
        return 0;
}

int deps_release_time(json_t *page, json_t *entry, int64_t *ret, struct sbx_error *err) {
        const char *eco = json_string_value(json_object_get(entry, "ecosystem"));
        const char *name = json_string_value(json_object_get(entry, "name"));
        const char *version = json_string_value(json_object_get(entry, "version"));
        const char *t = NULL;
        if (!eco || !name || !version)
                return sbx_error_msg(err, EINVAL, "a lock entry without its name");
        if (streq(eco, "npm"))
                t = json_string_value(json_object_get(json_object_get(page, "time"), version));
        else {
                const char *sha = json_string_value(json_object_get(entry, "sha256"));
                size_t i;
                json_t *f;
                json_array_foreach(json_object_get(page, "files"), i, f) {
                        const char *h = json_string_value(json_object_get(json_object_get(f, "hashes"), "sha256"));
                        if (sha && h && streq(h, sha)) {
                                t = json_string_value(json_object_get(f, "upload-time"));
                                break;
                        }
                }
        }
        if (!t)
                return sbx_error_msg(err, EINVAL, "%s %s %s: the %s gives no release time for it%s", eco, name, version,
                                     streq(eco, "npm") ? "registry" : "index",
                                     streq(eco, "npm") ? "" : " (a PEP 691 JSON page with PEP 700 upload-time)");
        if (deps_parse_time(t, ret) < 0)
                return sbx_error_msg(err, EINVAL, "%s %s %s: release time '%.40s' is not an RFC 3339 time", eco, name, version, t);
        return 0;
}
