/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's start-up cost that grows with kept results: loading the index
 * of finished jobs from STATE/results. Uses only what every version of
 * result.h has (result_index_load, _find, _find_key, _free), so that the
 * same source built against an older libsup measures the code before a
 * change (see bench/results-startup.sh).
 *
 *   results-startup create DIR N   N records shaped like the daemon's (eight
 *                                  tenants, an idempotency key on one job in
 *                                  three, an output directory each), unsynced
 *   results-startup load DIR       one load: "WALL_MS CPU_MS ENTRIES READY_MS"
 *   results-startup lookup DIR K   after a load, K lookups by id and K by
 *                                  key (repeated for 200 ms at least):
 *                                  "lookup_us_per_id lookup_us_per_key"
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "result.h"
#include "util.h"

#define TENANTS 8

static double clock_ms(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static double now_ms(void) {
        return clock_ms(CLOCK_MONOTONIC);
}

static void job_id(unsigned long i, char id[static 24]) {
        snprintf(id, 24, "j%020lx", 0x5b0000000000ul + i * 2654435761ul % 0xffffffffffful);
}

static void key_of(unsigned long i, char key[static 32]) {
        snprintf(key, 32, "deploy-%lu", i);
}

static json_t *limit(json_int_t value, const char *by) {
        return value ? json_pack("{s:I, s:s}", "value", value, "by", by) : json_pack("{s:n, s:n}", "value", "by");
}

static json_t *stream(const char *dir, const char *id, const char *name, json_int_t size) {
        char path[4200];
        snprintf(path, sizeof(path), "%s/%s/%s", dir, id, name);
        return json_pack("{s:I, s:I, s:b, s:s}", "size", size, "produced", size, "truncated", 0, "path", path);
}

/* The shape of the daemon's records (supervisor/model/record.c). */
static json_t *record(const char *dir, unsigned long i) {
        char id[24], tenant[16], created[64], started[64], ended[64], key[32];
        job_id(i, id);
        snprintf(tenant, sizeof(tenant), "tenant%lu", i % TENANTS);
        uint64_t t = 1795000000000ull + i * 37;
        format_rfc3339(t, created, sizeof(created));
        format_rfc3339(t + 8, started, sizeof(started));
        format_rfc3339(t + 44, ended, sizeof(ended));
        key_of(i, key);
        json_t *r = json_pack("{s:i, s:s, s:s, s:i, s:i, s:i, s:[s, s, s], s:s, s:s, s:i, s:n, s:b, s:b, s:n}", "v", 1, "job", id,
                              "tenant", tenant, "uid", 1000 + (int) (i % TENANTS), "job_uid", 65534, "job_gid", 65534, "command",
                              "python3", "build.py", "--release", "profile", "default", "state",
                              i % 10 ? "succeeded" : "failed", "exit_code", i % 10 ? 0 : 1, "signal", "timed_out", 0,
                              "cancelled", 0, "error");
        json_object_set_new(r, "created", json_string(created));
        json_object_set_new(r, "started", json_string(started));
        json_object_set_new(r, "ended", json_string(ended));
        json_object_set_new(r, "wall_ms", json_integer(36));
        json_object_set_new(r, "cpu_ms", json_integer(26));
        json_object_set_new(r, "peak_rss_kb", json_integer(1384));
        json_object_set_new(r, "stdout", stream(dir, id, "stdout", 120));
        json_object_set_new(r, "stderr", stream(dir, id, "stderr", 0));
        json_object_set_new(r, "artifacts", json_array());
        json_object_set_new(r, "artifacts_truncated", json_false());
        json_object_set_new(r, "limits", json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "timeout_ms", limit(60000, "supervisor"),
                                                   "memory", limit(536870912, "cgroup"), "processes", limit(256, "cgroup"),
                                                   "cpu_s", limit(0, NULL), "cpus", limit(0, NULL), "output",
                                                   limit(16777216, "supervisor")));
        json_object_set_new(r, "cgroup", json_true());
        json_object_set_new(r, "protections",
                            json_pack("{s:b, s:s, s:i, s:b, s:b, s:b, s:b, s:b, s:b, s:b}", "no-new-privs", 1, "seccomp",
                                      "default", "landlock-abi", 7, "landlock-fs", 1, "landlock-net", 0, "landlock-scoped", 1,
                                      "caps-dropped", 1, "nested-userns-blocked", 1, "proc-masked", 1, "openat2", 1));
        json_object_set_new(r, "network_events", json_array());
        json_object_set_new(r, "bundle", json_null());
        json_object_set_new(r, "idempotency_key", i % 3 ? json_null() : json_string(key));
        json_object_set_new(r, "attempt", json_integer(1));
        /* hex as a digest's, distinct per job */
        char digest[65];
        snprintf(digest, sizeof(digest), "%016lx%016lx%016lx%016lx", i * 0x9e3779b97f4a7c15ul, ~i, i * 2654435761ul, i);
        json_object_set_new(r, "request_sha256", json_string(digest));
        return r;
}

static int write_at(int dirfd, const char *name, const char *data, size_t len) {
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, data, len);
        close(fd);
        return r;
}

static int create(const char *dir, unsigned long n) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        for (unsigned long i = 0; i < n; i++) {
                char id[24], name[64];
                job_id(i, id);
                json_t *r = record(dir, i);
                char *s = r ? json_dumps(r, JSON_COMPACT) : NULL;
                json_decref(r);
                if (!s)
                        return -ENOMEM;
                size_t len = strlen(s);
                s[len++] = '\n';
                snprintf(name, sizeof(name), "%s.json", id);
                int e = write_at(dfd, name, s, len);
                free(s);
                if (e == 0 && mkdirat(dfd, id, 0700) < 0 && errno != EEXIST)
                        e = -errno;
                if (e == 0) {
                        int sub = openat(dfd, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        e = sub < 0 ? -errno : write_at(sub, "stdout", "build ok\n", 9);
                        if (sub >= 0)
                                close(sub);
                }
                if (e < 0)
                        return e;
        }
        close(dfd);
        return 0;
}

/* The load's wall-clock and CPU time (user and system: on a busy machine
 * the CPU time is the steadier figure), and how long the daemon waits
 * before it serves: the whole load, or (where result.h has
 * result_index_open) until the records the cache lacks are left to be
 * read while it serves, read here afterwards on the same thread. */
static int load(const char *dir, struct result_index *ix, double *ret_ms, double *ret_cpu_ms, double *ret_ready_ms) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        double t0 = now_ms(), c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
#ifdef RESULT_REST_BATCH
        struct result_rest *rest = NULL;
        int r = result_index_open(ix, dfd, &rest);
        *ret_ready_ms = now_ms() - t0;
        for (bool all = !rest; r == 0 && !all;) {
                result_rest_read(rest);
                r = result_rest_merge(ix, rest, &all);
        }
        result_rest_free(rest);
#else
        int r = result_index_load(ix, dfd);
        *ret_ready_ms = now_ms() - t0;
#endif
        *ret_ms = now_ms() - t0;
        *ret_cpu_ms = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
        return r;
}

int main(int argc, char **argv) {
        if (argc < 3) {
                fprintf(stderr, "usage: %s create DIR N | load DIR | lookup DIR K\n", argv[0]);
                return 2;
        }
        const char *cmd = argv[1], *dir = argv[2];
        struct result_index ix = { 0 };
        double ms, cpu_ms, ready_ms;
        int r;
        if (strcmp(cmd, "create") == 0 && argc == 4) {
                r = create(dir, strtoul(argv[3], NULL, 10));
        } else if (strcmp(cmd, "load") == 0 && argc == 3) {
                r = load(dir, &ix, &ms, &cpu_ms, &ready_ms);
                if (r == 0)
                        printf("%.1f %.1f %zu %.1f\n", ms, cpu_ms, ix.n, ready_ms);
        } else if (strcmp(cmd, "lookup") == 0 && argc == 4) {
                unsigned long k = strtoul(argv[3], NULL, 10), found = 0;
                r = load(dir, &ix, &ms, &cpu_ms, &ready_ms);
                size_t n = ix.n;
                if (r == 0 && n == 0)
                        r = -ENOENT;
                /* each batch again until it took 200 ms: short runs are
                 * mostly noise on a busy machine */
                double per_id = 0, per_key = 0;
                unsigned long reps = 0;
                for (double spent = 0; r == 0 && spent < 200; reps++) {
                        found = 0;
                        double t0 = now_ms();
                        for (unsigned long i = 0; i < k; i++) {
                                char id[24];
                                job_id(i * 7919 % n, id);
                                found += result_index_find(&ix, id) != NULL;
                        }
                        double t1 = now_ms();
                        for (unsigned long i = 0; i < k; i++) {
                                char key[32], tenant[16];
                                unsigned long j = i * 7919 % n / 3 * 3;
                                key_of(j, key);
                                snprintf(tenant, sizeof(tenant), "tenant%lu", j % TENANTS);
                                found += result_index_find_key(&ix, tenant, key) != NULL;
                        }
                        double t2 = now_ms();
                        per_id += t1 - t0;
                        per_key += t2 - t1;
                        spent += t2 - t0;
                }
                if (r == 0 && found != 2 * k) {
                        fprintf(stderr, "lookup: found %lu of %lu\n", found, 2 * k);
                        r = -ENOENT;
                }
                if (r == 0)
                        printf("%.3f %.3f\n", per_id * 1e3 / (double) (k * reps), per_key * 1e3 / (double) (k * reps));
        } else {
                fprintf(stderr, "usage: %s create DIR N | load DIR | lookup DIR K\n", argv[0]);
                return 2;
        }
        result_index_free(&ix);
        if (r < 0) {
                fprintf(stderr, "%s %s: %s\n", cmd, dir, strerror(-r));
                return 1;
        }
        return 0;
}
