/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"
#include "macro.h"
#include "manifest.h"
#include "parse.h"

bool sha256_hex_valid(const char *s) {
        if (strlen(s) != SHA256_HEX)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

/* A file name next to index.json: no directory, no hidden file. */
static bool file_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > INDEX_MAX_FILE || s[0] == '.')
                return false;
        for (const char *p = s; *p; p++)
                if (!(isalnum((unsigned char) *p) || *p == '.' || *p == '_' || *p == '-' || *p == '+'))
                        return false;
        return true;
}

void index_free(struct bundle_index *ix) {
        free(ix->v);
        memset(ix, 0, sizeof(*ix));
}

static int parse_entry(json_t *e, size_t i, struct index_entry *out, struct sbx_error *err) {
        const char *version = NULL, *sha = NULL, *file = NULL;
        json_int_t size = -1;
        json_error_t je;
        if (!json_is_object(e))
                return sbx_error_msg(err, EINVAL, "index.json: versions[%zu]: expected an object", i);
        if (json_unpack_ex(e, &je, JSON_STRICT, "{s:s, s:s, s:I, s:s}", "version", &version, "sha256", &sha, "size", &size,
                           "file", &file) < 0)
                return sbx_error_msg(err, EINVAL, "index.json: versions[%zu]: %s", i, je.text);
        if (!semver_valid(version))
                return sbx_error_msg(err, EINVAL, "index.json: versions[%zu].version: not a semantic version", i);
        if (!sha256_hex_valid(sha))
                return sbx_error_msg(err, EINVAL, "index.json: versions[%zu].sha256: expected 64 lowercase hex digits", i);
        if (size <= 0)
                return sbx_error_msg(err, EINVAL, "index.json: versions[%zu].size: must be positive", i);
        if (!file_valid(file))
                return sbx_error_msg(err, EINVAL, "index.json: versions[%zu].file: must be a plain file name", i);
        snprintf(out->version, sizeof(out->version), "%s", version);
        snprintf(out->sha256, sizeof(out->sha256), "%s", sha);
        snprintf(out->file, sizeof(out->file), "%s", file);
        out->size = (uint64_t) size;
        return 0;
}

int index_parse(const char *text, size_t len, struct bundle_index *ret, struct sbx_error *err) {
        json_error_t je;
        json_t *versions = NULL;
        const char *name = NULL;
        json_int_t format = 0;
        memset(ret, 0, sizeof(*ret));
        if (len > INDEX_MAX_SIZE)
                return sbx_error_msg(err, EFBIG, "index.json: larger than %u bytes", INDEX_MAX_SIZE);
        json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        if (!root)
                return sbx_error_msg(err, EINVAL, "index.json: malformed JSON at byte %d: %s", je.position, je.text);
        int r = 0;
        if (json_unpack_ex(root, &je, JSON_STRICT, "{s:I, s:s, s:o}", "format", &format, "name", &name, "versions",
                           &versions) < 0)
                r = sbx_error_msg(err, EINVAL, "index.json: %s", je.text);
        else if (format != INDEX_FORMAT)
                r = sbx_error_msg(err, EINVAL, "index.json: format %" PRId64 " is not one this daemon reads (%d)",
                                  (int64_t) format, INDEX_FORMAT);
        else if (!bundle_name_valid(name))
                r = sbx_error_msg(err, EINVAL, "index.json: name: not a bundle name");
        else if (!json_is_array(versions))
                r = sbx_error_msg(err, EINVAL, "index.json: versions: expected an array");
        else if (json_array_size(versions) > INDEX_MAX_VERSIONS)
                r = sbx_error_msg(err, EINVAL, "index.json: more than %d versions", INDEX_MAX_VERSIONS);
        size_t n = r == 0 ? json_array_size(versions) : 0;
        if (r == 0) {
                snprintf(ret->name, sizeof(ret->name), "%s", name);
                ret->v = calloc(n ? n : 1, sizeof(*ret->v));
                if (!ret->v)
                        r = sbx_error_msg(err, ENOMEM, "index.json: out of memory");
        }
        for (size_t i = 0; r == 0 && i < n; i++) {
                r = parse_entry(json_array_get(versions, i), i, &ret->v[i], err);
                for (size_t k = 0; r == 0 && k < i; k++)
                        if (semver_cmp(ret->v[k].version, ret->v[i].version) == 0)
                                r = sbx_error_msg(err, EINVAL, "index.json: versions[%zu]: version %s is listed twice", i,
                                                  ret->v[i].version);
                if (r == 0)
                        ret->n++;
        }
        json_decref(root);
        if (r < 0)
                index_free(ret);
        return r;
}

static int cmp_entries(const void *a, const void *b) {
        return semver_cmp(((const struct index_entry *) a)->version, ((const struct index_entry *) b)->version);
}

json_t *index_to_json(const struct bundle_index *ix) {
        struct index_entry *sorted = calloc(ix->n ? ix->n : 1, sizeof(*sorted));
        json_t *arr = json_array();
        if (!sorted || !arr) {
                free(sorted);
                json_decref(arr);
                return NULL;
        }
        memcpy(sorted, ix->v, ix->n * sizeof(*sorted));
        qsort(sorted, ix->n, sizeof(*sorted), cmp_entries);
        for (size_t i = 0; i < ix->n; i++)
                json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:s}", "version", sorted[i].version, "sha256",
                                                     sorted[i].sha256, "size", (json_int_t) sorted[i].size, "file",
                                                     sorted[i].file));
        free(sorted);
        return json_pack("{s:i, s:s, s:o}", "format", INDEX_FORMAT, "name", ix->name, "versions", arr);
}

const struct index_entry *index_latest(const struct bundle_index *ix) {
        const struct index_entry *best = NULL, *best_pre = NULL;
        for (size_t i = 0; i < ix->n; i++) {
                const struct index_entry *e = &ix->v[i];
                /* A '-' before any '+' marks a pre-release. */
                bool pre = e->version[strcspn(e->version, "-+")] == '-';
                const struct index_entry **slot = pre ? &best_pre : &best;
                if (!*slot || semver_cmp(e->version, (*slot)->version) > 0)
                        *slot = e;
        }
        return best ? best : best_pre;
}

const struct index_entry *index_find_version(const struct bundle_index *ix, const char *version) {
        for (size_t i = 0; i < ix->n; i++)
                if (streq(ix->v[i].version, version))
                        return &ix->v[i];
        return NULL;
}

const struct index_entry *index_find_digest(const struct bundle_index *ix, const char *sha256) {
        for (size_t i = 0; i < ix->n; i++)
                if (streq(ix->v[i].sha256, sha256))
                        return &ix->v[i];
        return NULL;
}

const struct index_entry *index_resolve(const struct bundle_index *ix, const struct bundle_ref *r) {
        switch (r->kind) {
        case REF_LATEST:
                return index_latest(ix);
        case REF_VERSION:
                return index_find_version(ix, r->version);
        case REF_DIGEST:
                return index_find_digest(ix, r->sha256);
        }
        return NULL;
}

int index_comment_serial(const char *trusted, const char *name, uint64_t *ret, struct sbx_error *err) {
        bool have = false;
        const char *s = trusted;
        while (*s) {
                s += strspn(s, " \t");
                size_t n = strcspn(s, " \t");
                if (n == 0)
                        break;
                char word[256];
                if (n >= sizeof(word))
                        return sbx_error_msg(err, EINVAL, "trusted comment: a word longer than %zu bytes", sizeof(word) - 1);
                memcpy(word, s, n);
                word[n] = '\0';
                s += n;
                if (strncmp(word, "serial=", 7) == 0) {
                        uint64_t v;
                        if (have)
                                return sbx_error_msg(err, EINVAL, "trusted comment: serial= given twice");
                        if (parse_uint64(word + 7, 1ull << 53, &v) < 0 || v == 0)
                                return sbx_error_msg(err, EINVAL, "trusted comment: serial must be a number from 1 to 2^53");
                        *ret = v;
                        have = true;
                } else if (strncmp(word, "name=", 5) == 0 && !streq(word + 5, name)) {
                        return sbx_error_msg(err, EINVAL, "trusted comment: the signature is for bundle '%.64s', not '%s'",
                                             word + 5, name);
                }
        }
        if (!have)
                return sbx_error_msg(err, EINVAL, "trusted comment: no serial=N (sign with minisign -t 'serial=N name=%s')", name);
        return 0;
}

int bundle_ref_parse(const char *s, struct bundle_ref *ret, struct sbx_error *err) {
        memset(ret, 0, sizeof(*ret));
        const char *at = strchr(s, '@');
        size_t nl = at ? (size_t) (at - s) : strlen(s);
        if (nl == 0 || nl > BUNDLE_NAME_MAX)
                return sbx_error_msg(err, EINVAL, "'%.80s' is not a bundle name (NAME, NAME@VERSION or NAME@sha256:HEX)", s);
        memcpy(ret->name, s, nl);
        ret->name[nl] = '\0';
        if (!bundle_name_valid(ret->name))
                return sbx_error_msg(err, EINVAL, "'%s' is not a bundle name (a-z, 0-9, '.', '_' and '-')", ret->name);
        if (!at) {
                ret->kind = REF_LATEST;
                return 0;
        }
        const char *v = at + 1;
        if (strncmp(v, "sha256:", 7) == 0) {
                char hex[SHA256_HEX + 1];
                size_t hl = strlen(v + 7);
                if (hl != SHA256_HEX)
                        return sbx_error_msg(err, EINVAL, "'%.100s': a digest is sha256: and 64 hex digits", s);
                for (size_t i = 0; i < hl; i++)
                        hex[i] = (char) tolower((unsigned char) v[7 + i]);
                hex[hl] = '\0';
                if (!sha256_hex_valid(hex))
                        return sbx_error_msg(err, EINVAL, "'%.100s': a digest is sha256: and 64 hex digits", s);
                ret->kind = REF_DIGEST;
                memcpy(ret->sha256, hex, sizeof(hex));
                return 0;
        }
        if (!semver_valid(v))
                return sbx_error_msg(err, EINVAL, "'%.100s': '%.64s' is not a semantic version", s, v);
        ret->kind = REF_VERSION;
        snprintf(ret->version, sizeof(ret->version), "%s", v);
        return 0;
}

void bundle_ref_str(const struct bundle_ref *r, char *buf, size_t len) {
        switch (r->kind) {
        case REF_LATEST:
                snprintf(buf, len, "%s", r->name);
                break;
        case REF_VERSION:
                snprintf(buf, len, "%s@%s", r->name, r->version);
                break;
        case REF_DIGEST:
                snprintf(buf, len, "%s@sha256:%s", r->name, r->sha256);
                break;
        }
}
