/* SPDX-License-Identifier: Apache-2.0 */
/* A job's Python packages (sbx-supervisord(8) DEPENDENCIES), without I/O:
 * a request's pins read and normalised, checked against the tenant's
 * pip_allow, the key of the layer they make (the same pins from the same
 * index for the same Python give the same layer, whichever tenant asks),
 * the install job's command, and the lock read back from pip's report.
 * Unit-tested. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "conf.h"
#include "error.h"

#define DEPS_NAME_MAX 128
#define DEPS_VERSION_MAX 64
#define DEPS_PINS_MAX 64            /* pins of one request, whatever the tenant's cap */
#define DEPS_KEY_HEX 64
/* Where the install job leaves the packages, and where a job sees them. */
#define DEPS_LAYER_DIR "layer"
#define DEPS_PIP_MOUNT "/deps/pip"
#define DEPS_ARTIFACT_DEPTH 12      /* directory levels of a layer collected */

/* NAME==VERSION[#sha256=HEX]: name normalised (PEP 503: lower case, runs
 * of "-", "_" and "." as one "-"). */
struct pip_pin {
        char name[DEPS_NAME_MAX + 1];
        char version[DEPS_VERSION_MAX + 1];
        char sha256[DEPS_KEY_HEX + 1];       /* "" when not given */
};

/* One pin of a request; -EINVAL with err naming what is wrong. */
int deps_pin_parse(const char *s, struct pip_pin *ret, struct sbx_error *err);
/* "name==version[#sha256=hex]" again, canonical. */
void deps_pin_str(const struct pip_pin *p, char *buf, size_t len);
/* A name as pip_allow and pins compare it (PEP 503), into buf. */
void deps_normalize(const char *name, char *buf, size_t len);
/* Does t's pip_allow admit p? false with *why (static text or buf) saying
 * why not. */
bool deps_allowed(const struct tenant *t, const struct pip_pin *p, char *buf, size_t len, const char **why);
/* The layer's key: hex SHA-256 of the index, the Python (its file name,
 * "python3.11"), and the pins in order of name. */
void deps_key(const char *index, const char *python, const struct pip_pin *pins, size_t n, char out[DEPS_KEY_HEX + 1]);
/* The install job's request (JSON, as a client would send it): pip in
 * the tenant's default profile, restricted to the index's host and port,
 * its report and layer collected as artifacts. NULL on a bad index URL
 * (err says why) or no memory. */
json_t *deps_install_request(const char *index, const struct pip_pin *pins, size_t n, uint64_t timeout_ms, uint64_t bytes,
                             struct sbx_error *err);
/* The lock from pip's --report (untrusted: the install job wrote it): an
 * array of {name, version, url, sha256}, each of pins and nothing else;
 * NULL with err when the report does not say that. */
json_t *deps_lock_from_report(json_t *report, const struct pip_pin *pins, size_t n, struct sbx_error *err);
