/* SPDX-License-Identifier: Apache-2.0 */
/* A bundle's index in a registry (REGISTRY/NAME/index.json): the bundle's
 * name and its published versions, each with the archive's file name, size
 * and sha256. The index is signed with minisign; the signature's trusted
 * comment carries the index's serial ("serial=N name=NAME"), which only
 * grows, so that a registry cannot hand out an older index than one
 * already seen (rollback). Also the references callers use: NAME,
 * NAME@VERSION, NAME@sha256:HEX. Pure, unit-tested, fuzzed. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "semver.h"

#define INDEX_FORMAT 1
#define INDEX_MAX_SIZE (1u << 20)
#define INDEX_MAX_VERSIONS 4096
#define INDEX_MAX_FILE 128
#define BUNDLE_NAME_MAX 64
#define SHA256_HEX 64

struct index_entry {
        char version[SEMVER_MAX + 1];
        char sha256[SHA256_HEX + 1];  /* lowercase hex */
        uint64_t size;                 /* bytes of the archive */
        char file[INDEX_MAX_FILE + 1]; /* the archive, next to index.json */
};

struct bundle_index {
        char name[BUNDLE_NAME_MAX + 1];
        struct index_entry *v;
        size_t n;
        uint64_t serial;               /* from the signature's trusted comment */
};

/* Parse index.json strictly (unknown members, wrong types, duplicates,
 * bad versions, digests or file names are errors naming the member). */
int index_parse(const char *text, size_t len, struct bundle_index *ret, struct sbx_error *err);
void index_free(struct bundle_index *ix);
/* index.json as sbx-bundle writes it (versions in semver order). */
json_t *index_to_json(const struct bundle_index *ix);

/* The highest release by semver precedence (pre-releases only when there
 * is no release), a version, or a digest; NULL when none. */
const struct index_entry *index_latest(const struct bundle_index *ix);
const struct index_entry *index_find_version(const struct bundle_index *ix, const char *version);
const struct index_entry *index_find_digest(const struct bundle_index *ix, const char *sha256);

/* The trusted comment of the index's signature: whitespace-separated
 * KEY=VALUE words of which serial=N (1 to 2^53) is required and name=NAME,
 * if present, must be the bundle's. Words of other forms (minisign's own
 * "timestamp:..." say) are ignored. */
int index_comment_serial(const char *trusted, const char *name, uint64_t *ret, struct sbx_error *err);

/* What a caller asks for. */
enum bundle_ref_kind {
        REF_LATEST,
        REF_VERSION,
        REF_DIGEST,
};

struct bundle_ref {
        char name[BUNDLE_NAME_MAX + 1];
        enum bundle_ref_kind kind;
        char version[SEMVER_MAX + 1];  /* REF_VERSION */
        char sha256[SHA256_HEX + 1];   /* REF_DIGEST, lowercase */
};

/* "NAME", "NAME@VERSION" or "NAME@sha256:HEX" (64 hex digits). */
int bundle_ref_parse(const char *s, struct bundle_ref *ret, struct sbx_error *err);
/* The reference as a caller writes it. */
void bundle_ref_str(const struct bundle_ref *r, char *buf, size_t len);
/* The entry of ix that r asks for, or NULL. */
const struct index_entry *index_resolve(const struct bundle_index *ix, const struct bundle_ref *r);

bool sha256_hex_valid(const char *s);
