/* SPDX-License-Identifier: Apache-2.0 */
/* A bundle's manifest (sbx-manifest(5)): manifest.ini at the root of the
 * bundle, INI read by the same strict loader as profiles (file:line in
 * every message, unknown sections and keys are errors), into a validated
 * struct: who the bundle is (name, version), what runs (the command and
 * its runtime profile), and the capabilities it declares (network,
 * read-only host paths from a fixed vocabulary, environment variables the
 * caller may set, limits). What a job of the bundle may really do is that
 * declaration intersected with its tenant's policy (grant.h). Pure,
 * unit-tested, fuzzed. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define MANIFEST_FILE "manifest.ini"
#define MANIFEST_MAX_SIZE (64 * 1024)
#define MANIFEST_MAX_COMMAND 256 /* words of the command */
#define MANIFEST_MAX_CONNECT 64
#define MANIFEST_MAX_ENV 256
#define MANIFEST_MAX_DESCRIPTION 1024
#define MANIFEST_UNSET UINT64_MAX

enum manifest_net {
        MANIFEST_NET_NONE,       /* loopback only */
        MANIFEST_NET_RESTRICTED, /* the connect = host:port entries only */
};

struct manifest_endpoint {
        char *host;
        uint16_t port;
};

struct manifest {
        char *name;             /* bundle_name_valid() */
        char *version;          /* semver_valid() */
        char *description;      /* "" when not given */
        char **command;         /* NULL-terminated, at least one word */
        size_t n_command;
        char *profile;          /* the runtime profile's name */
        enum manifest_net net;
        struct manifest_endpoint *connect;
        size_t n_connect;
        unsigned ro_paths;      /* MANIFEST_PATH_BIT()s of the vocabulary */
        char **env;             /* names the caller may set */
        size_t n_env;
        /* limits the bundle declares; MANIFEST_UNSET when not given */
        uint64_t timeout_ms, memory, cpu_s, processes, output;
};

void manifest_init(struct manifest *m);
void manifest_free(struct manifest *m);

/* Parse text (len bytes) named name ("hello-1.2.0.tar.gz:manifest.ini"),
 * then validate the whole (required keys, connect only with restricted).
 * Errors name "name:line" or name. */
int manifest_parse(struct manifest *m, const char *name, const char *text, size_t len, struct sbx_error *err);
int manifest_load_file(struct manifest *m, const char *path, struct sbx_error *err);

/* The vocabulary of read-only host paths a bundle may ask for, each bound
 * at the same path inside the sandbox (when it exists on the host). */
#define MANIFEST_PATH_BIT(i) (1u << (i))
size_t manifest_paths_count(void);
const char *manifest_path_name(size_t i);
/* The index of path in the vocabulary, or -1. */
int manifest_path_find(const char *path);
/* Every path of the vocabulary, space-separated, for messages. */
const char *manifest_paths_all(void);

/* A bundle name: 1 to 64 of [a-z0-9._-], starting with a letter or digit
 * (a file name in the registry and the cache, and a word in messages). */
bool bundle_name_valid(const char *s);

/* The manifest as JSON (bundle.show). */
json_t *manifest_to_json(const struct manifest *m);
