/* SPDX-License-Identifier: Apache-2.0 */
/* The work of resolving a bundle that blocks, done on the bundle pool's
 * threads: fetching and verifying a bundle's index (signature by a trusted
 * key, the serial in the signed trusted comment against the highest one
 * seen, kept durably in STATE/registry/REGISTRY/NAME.serial), and fetching,
 * checking (size and sha256 while it streams) and unpacking an archive
 * into the cache. Each takes what it needs by value or by pointer to what
 * does not change while it runs (the configuration) and returns a verdict
 * with the error code a job's record gives. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "conf.h"
#include "fetch.h"
#include "index.h"

struct reg_verdict {
        const char *code;          /* NULL: success; else E_* */
        bool unavailable;          /* the registry could not be asked: an offline policy may apply */
        bool no_space;             /* the cache's file system was full (ENOSPC, EDQUOT) */
        char msg[1024];
        uint64_t download_us, verify_us, extract_us;
};

struct index_job {
        /* in */
        const struct registry_conf *reg;
        char name[BUNDLE_NAME_MAX + 1];
        int serials_fd;            /* STATE/registry */
        const atomic_bool *stop;
        /* out */
        struct bundle_index ix;    /* verified (with its serial) when code is NULL */
        bool older;                /* its serial is below the highest seen: only a pinned digest may use it */
        uint64_t floor;            /* the highest serial seen before */
        struct reg_verdict v;
};

void registry_fetch_index(struct index_job *j);

struct archive_job {
        /* in */
        const struct registry_conf *reg;
        char name[BUNDLE_NAME_MAX + 1];
        struct index_entry entry;
        int cache_fd;
        uint64_t max_size, max_unpacked, max_entries;
        uint64_t extract_timeout_ms;
        const atomic_bool *stop;
        /* out */
        struct cache_entry *installed; /* in the cache directory when code is NULL */
        struct reg_verdict v;
};

void registry_fetch_archive(struct archive_job *j);
