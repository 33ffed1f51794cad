/* SPDX-License-Identifier: Apache-2.0 */
/* A job's packages (sbx-supervisord(8) DEPENDENCIES), without I/O: the
 * pins of a request read and normalised (pip's NAME==VERSION, npm's
 * NAME@VERSION), checked against the tenant's pip_allow and npm_allow,
 * the key of the layer they make (the same pins from the same index and
 * registry for the same Python give the same layer, whichever tenant
 * asks), the install job's command, the lock read back from what the
 * clients wrote, and the lock checked again for each tenant that would
 * use the layer (its lists, its deps_min_age). Unit-tested. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "error.h"

enum dep_eco { DEP_PIP, DEP_NPM };

#define DEPS_NAME_MAX 214           /* npm's bound on a name; pip's names are shorter */
#define DEPS_VERSION_MAX 64
#define DEPS_PIP_HASHES_MAX 32      /* a pip pin's hashes (one per wheel it may choose) */
#define DEPS_HASH_MAX (DEPS_PIP_HASHES_MAX * 65) /* pip's, comma-separated; npm's "sha512-" and 88 base64 characters */
#define DEPS_INTEGRITY_MAX 100      /* of an entry of npm's lock */
#define DEPS_PINS_MAX 256           /* pins of one request, both kinds, whatever the tenant's cap */
#define DEPS_KEY_HEX 64
/* Where the install job leaves the packages, and where a job sees them:
 * the layer at /deps, pip's target in it as pip/, npm's prefix as npm/. */
#define DEPS_LAYER_DIR "layer"
#define DEPS_MOUNT "/deps"
#define DEPS_PIP_PATH "/deps/pip"
#define DEPS_NPM_PATH "/deps/npm/node_modules"
#define DEPS_ARTIFACT_DEPTH 16      /* directory levels of a layer collected */

/* pip: NAME==VERSION[#sha256=HEX[,HEX...]] (the wheels pip may choose:
 * one of them must be what it installs), the name normalised (PEP 503: lower
 * case, runs of "-", "_" and "." as one "-"). npm: NAME@VERSION
 * [#sha512-BASE64], NAME possibly @SCOPE/NAME. */
struct dep_pin {
        enum dep_eco eco;
        char name[DEPS_NAME_MAX + 1];
        char version[DEPS_VERSION_MAX + 1];
        char hash[DEPS_HASH_MAX + 1];        /* "" when not given */
};

const char *deps_eco_name(enum dep_eco eco);   /* "pip", "npm" */
/* Is s 64 lower-case hex digits (a key, a SHA-256)? NULL is not. */
bool deps_is_hex64(const char *s);
/* One pin of a request; -EINVAL with err naming what is wrong. */
int deps_pin_parse(enum dep_eco eco, const char *s, struct dep_pin *ret, struct sbx_error *err);
/* The pin again, canonical. */
void deps_pin_str(const struct dep_pin *p, char *buf, size_t len);
/* A pip name as pip_allow and pins compare it (PEP 503), into buf. */
void deps_normalize(const char *name, char *buf, size_t len);
/* A request's field (pip or npm, an array of pins): each checked, into a
 * NULL-terminated *list of *n strings as given; with others pins of the
 * other kind, at most DEPS_PINS_MAX in all. -EINVAL with err naming the
 * field and the pin. */
int deps_parse_field(json_t *a, enum dep_eco eco, size_t others, char ***list, size_t *n, struct sbx_error *err);
/* Are there pins of each kind among pins? */
void deps_kinds(const struct dep_pin *pins, size_t n, bool *pip, bool *npm);
/* The pins of a request's two fields into pins (DEPS_PINS_MAX), *n. */
int deps_pins_of(char *const *pip, size_t n_pip, char *const *npm, size_t n_npm, struct dep_pin *pins, size_t *n,
                 struct sbx_error *err);
/* Does t's list for eco admit name at version? false with *why (static
 * text or buf) saying why not. */
bool deps_allowed(const struct tenant *t, enum dep_eco eco, const char *name, const char *version, char *buf, size_t len,
                  const char **why);
/* An entry of npm_allow: NAME[@VERSION] with globs, NAME maybe @SCOPE/NAME.
 * Splits it (name into buf); the version pattern, or NULL. -EINVAL when
 * it is not that. */
int deps_npm_allow_split(const char *e, char *name, size_t len, const char **version);
/* The layer's key: hex SHA-256 of the index (when there are pip pins),
 * the registry (when there are npm pins), the Python (its file name,
 * "python3.11"), whether release times are recorded (a tenant with
 * deps_min_age), and the pins in order of kind and name. */
void deps_key(const char *pip_index, const char *npm_registry, const char *python, bool times, const struct dep_pin *pins,
              size_t n, char out[DEPS_KEY_HEX + 1]);
/* Is url one an install job can be restricted to (http or https, a host,
 * a port)? 0, or -EINVAL with err saying why not. */
int deps_check_url(const char *url, struct sbx_error *err);
/* The install job's request (JSON, as a client would send it): pip and
 * npm in the tenant's default profile, restricted to the index's and the
 * registry's hosts and ports, the layer and pip's report collected as
 * artifacts. NULL on a bad URL (err says why) or no memory. */
json_t *deps_install_request(const char *pip_index, const char *npm_registry, const struct dep_pin *pins, size_t n,
                             uint64_t timeout_ms, uint64_t bytes, struct sbx_error *err);
/* The lock: an array of {ecosystem, name, version, url, sha256 (pip) or
 * integrity (npm)} in order of ecosystem, name and version, from pip's --report and npm's package-lock.json (each
 * NULL when that client had no pins). Both are untrusted (the install job
 * wrote them): each pip pin installed and nothing else; each npm pin at
 * its version and integrity, and other packages (npm's resolution of
 * their dependencies) only when no pin has an integrity. NULL with err
 * when they do not say that. */
json_t *deps_lock_make(json_t *report, json_t *npm_lock, const struct dep_pin *pins, size_t n, struct sbx_error *err);
/* The layer's content address: hex SHA-256 of the lock (in the order
 * deps_lock_make() gives: by ecosystem, name, version), its members
 * sorted. The same lock, from whatever pins, names the same layer. */
void deps_lock_key(json_t *lock, char out[DEPS_KEY_HEX + 1]);
/* May t's jobs use a layer of this lock? Each package admitted by t's
 * lists and, with deps_min_age, published (its "published" time, Unix
 * seconds) at least that long before now. 0, or -EPERM with msg naming
 * each refused package and why. */
int deps_lock_admit(const struct tenant *t, json_t *lock, int64_t now, char *msg, size_t len);
/* Where the release time of a lock entry is read: the index's PEP 691
 * JSON page of the project, or the registry's document of the package.
 * -EINVAL when base or the entry will not make a URL. */
int deps_meta_url(const char *pip_index, const char *npm_registry, json_t *entry, char *buf, size_t len);
/* The entry's release time from that page (PEP 700 upload-time of the
 * file with its SHA-256; npm's time of its version), Unix seconds. -EINVAL
 * with err saying what the page lacks. */
int deps_release_time(json_t *page, json_t *entry, int64_t *ret, struct sbx_error *err);
/* An RFC 3339 time in UTC ("2024-05-01T12:00:00.123Z"), Unix seconds. */
int deps_parse_time(const char *s, int64_t *ret);
