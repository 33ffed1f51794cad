/* SPDX-License-Identifier: Apache-2.0 */
/* Resource limits of the command, as rlimits (the launcher has no cgroup of
 * its own; the supervisor adds one). Applied in the command's process, so
 * pid 1 is never the one to hit them. */
#include <errno.h>
#include <sys/resource.h>

#include "launch.h"

static int set_one(int resource, const char *key, uint64_t v, bool cpu, struct sbx_error *err) {
        if (v == PROFILE_UNSET)
                return 0;
        struct rlimit rl;
        if (v == PROFILE_UNLIMITED || v >= (uint64_t) RLIM_INFINITY)
                rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
        else {
                rl.rlim_cur = (rlim_t) v;
                /* A second of grace between SIGXCPU (catchable, reported) and
                 * the kernel's SIGKILL at the hard limit. */
                rl.rlim_max = cpu ? (rlim_t) v + 1 : (rlim_t) v;
        }
        if (setrlimit(resource, &rl) < 0)
                return sbx_error_set(err, errno, "%s", key);
        return 0;
}

/* An AddressSanitizer build has reserved terabytes of shadow memory before
 * main(): under an address-space or data limit its allocator can map
 * nothing more and aborts before execve. Such builds exist to test the rest
 * of the launcher; they leave these two limits out (and the tests that hit
 * them skip, saying why). */
#if defined(__SANITIZE_ADDRESS__)
#define SBX_SKIP_VM_LIMITS 1
#else
#define SBX_SKIP_VM_LIMITS 0
#endif

int limits_apply(const struct profile *p, struct sbx_error *err) {
        const struct profile_limits *l = &p->limits;
        uint64_t memory = SBX_SKIP_VM_LIMITS ? PROFILE_UNSET : l->memory_bytes;
        uint64_t data = SBX_SKIP_VM_LIMITS ? PROFILE_UNSET : l->data_bytes;
        int r;

        if ((r = set_one(RLIMIT_CPU, "cpu", l->cpu_s, true, err)) < 0 ||
            (r = set_one(RLIMIT_AS, "memory", memory, false, err)) < 0 ||
            (r = set_one(RLIMIT_DATA, "data", data, false, err)) < 0 ||
            (r = set_one(RLIMIT_NPROC, "processes", l->processes, false, err)) < 0 ||
            (r = set_one(RLIMIT_FSIZE, "file-size", l->file_size_bytes, false, err)) < 0 ||
            (r = set_one(RLIMIT_NOFILE, "open-files", l->open_files, false, err)) < 0 ||
            (r = set_one(RLIMIT_STACK, "stack", l->stack_bytes, false, err)) < 0 ||
            (r = set_one(RLIMIT_CORE, "core", l->core_bytes == PROFILE_UNSET ? 0 : l->core_bytes, false, err)) < 0)
                return r;
        return 0;
}
