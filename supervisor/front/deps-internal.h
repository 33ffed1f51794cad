/* SPDX-License-Identifier: Apache-2.0 */
/* What deps-ops.c (the loop's side of jobs' packages) and deps-place.c
 * (an install's end, off the loop: the clients' locks read, release times
 * fetched, the layer moved under its lock's key) share. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "deps.h"
#include "error.h"
#include "util.h"
#include "pool.h"

struct rjob;
struct daemon;

#define DEPS_DIR "deps"
#define BY_REQUEST "by-request" /* a request's key -> its layer's (the lock's) */
#define LOCK_MAX (1u << 20)
#define READY_FILE "lock.json"
#define DEPS_INSTALL_MEMORY (4ull << 30)

/* An install in flight, and the jobs that wait for it. */
struct deps_install {
        struct list link;         /* struct deps.installs */
        struct deps *deps;
        char key[DEPS_KEY_HEX + 1];       /* the request's */
        char layer[DEPS_KEY_HEX + 1];     /* the lock's: where the layer is */
        char job[24];             /* the install job */
        struct dep_pin *pins;     /* n, the request's */
        size_t n;
        bool times;               /* release times wanted (deps_min_age) */
        uint64_t bytes;           /* the layer's files */
        char *pip_index, *npm_registry; /* where they are read */
        struct rjob **waiters;
        size_t n_waiters;
        uint64_t t0_us;
        /* the worker's part: the layer moved into place */
        struct work work;
        char *results;            /* STATE/results */
        json_t *lock;
        char why[SBX_ERROR_MAX];
        bool ok;
};

struct deps {
        struct daemon *d;
        int dir_fd;               /* STATE/deps */
        char path[4200];
        char python[64];          /* "python3.11": part of every key */
        struct list installs;
        struct deps_cache *cache; /* the layers kept */
};

/* The worker's part of an install's end (work.run): in->ok, or in->why. */
void deps_place_run(struct work *w);
