/* SPDX-License-Identifier: Apache-2.0 */
/* Resource limits of the command, as rlimits (the launcher has no cgroup of
 * its own; the supervisor adds one). Applied in the command's process, so
 * pid 1 is never the one to hit them, then read back: the status record
 * reports what the kernel holds, never what the profile merely asked. */
#include <errno.h>
#include <sys/resource.h>

#include "launch.h"

/* The [limits] keys that are rlimits, in the order of enum limit_id. */
static const struct {
        const char *key;
        int resource;
        const char *per;
} rlimit_keys[LIMIT_COUNT] = {
        [LIMIT_CPU] = { "cpu", RLIMIT_CPU, "process" },
        [LIMIT_MEMORY] = { "memory", RLIMIT_AS, "process" },
        [LIMIT_DATA] = { "data", RLIMIT_DATA, "process" },
        /* Counted per user and user namespace since Linux 5.14 (ucounts):
         * in the sandbox's own user namespace, a cap for this sandbox. */
        [LIMIT_PROCESSES] = { "processes", RLIMIT_NPROC, "sandbox" },
        [LIMIT_FILE_SIZE] = { "file-size", RLIMIT_FSIZE, "file" },
        [LIMIT_OPEN_FILES] = { "open-files", RLIMIT_NOFILE, "process" },
        [LIMIT_STACK] = { "stack", RLIMIT_STACK, "process" },
        [LIMIT_CORE] = { "core", RLIMIT_CORE, "process" },
};

const char *limits_key(enum limit_id id) {
        return rlimit_keys[id].key;
}

const char *limits_per(enum limit_id id) {
        return rlimit_keys[id].per;
}

/* The profile's value for id; PROFILE_UNSET leaves the inherited rlimit. */
static uint64_t wanted(const struct profile *p, enum limit_id id) {
        const struct profile_limits *l = &p->limits;
        switch (id) {
        case LIMIT_CPU: return l->cpu_s;
        case LIMIT_MEMORY: return SBX_SKIP_VM_LIMITS ? PROFILE_UNSET : l->memory_bytes;
        case LIMIT_DATA: return SBX_SKIP_VM_LIMITS ? PROFILE_UNSET : l->data_bytes;
        case LIMIT_PROCESSES: return l->processes;
        case LIMIT_FILE_SIZE: return l->file_size_bytes;
        case LIMIT_OPEN_FILES: return l->open_files;
        case LIMIT_STACK: return l->stack_bytes;
        case LIMIT_CORE: return l->core_bytes == PROFILE_UNSET ? 0 : l->core_bytes;
        case LIMIT_COUNT: break;
        }
        return PROFILE_UNSET;
}

int limits_apply(const struct profile *p, struct sbx_error *err) {
        for (int id = 0; id < LIMIT_COUNT; id++) {
                uint64_t v = wanted(p, (enum limit_id) id);
                struct rlimit rl;

                if (v == PROFILE_UNSET)
                        continue;
                if (v == PROFILE_UNLIMITED || v >= (uint64_t) RLIM_INFINITY)
                        rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
                else {
                        rl.rlim_cur = (rlim_t) v;
                        /* A second of grace between SIGXCPU (catchable,
                         * reported) and the kernel's SIGKILL at the hard
                         * limit. */
                        rl.rlim_max = id == LIMIT_CPU ? (rlim_t) v + 1 : (rlim_t) v;
                }
                /* "unlimited" cannot lift a hard limit the caller was
                 * given (raising it needs CAP_SYS_RESOURCE): it means as
                 * high as allowed. The kernel gives every process a hard
                 * RLIMIT_NPROC, and the daemon asks for unlimited processes
                 * where the job cgroup's pids.max bounds them. */
                if (rl.rlim_max == RLIM_INFINITY && setrlimit(rlimit_keys[id].resource, &rl) < 0 && errno == EPERM &&
                    getrlimit(rlimit_keys[id].resource, &rl) == 0)
                        rl.rlim_cur = rl.rlim_max;
                if (setrlimit(rlimit_keys[id].resource, &rl) < 0)
                        return sbx_error_set(err, errno, "%s", rlimit_keys[id].key);
        }
        return 0;
}

void limits_read_back(uint64_t ret_cur[LIMIT_COUNT]) {
        for (int id = 0; id < LIMIT_COUNT; id++) {
                struct rlimit rl;
                if (getrlimit(rlimit_keys[id].resource, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                        ret_cur[id] = LIMIT_NONE;
                else
                        ret_cur[id] = (uint64_t) rl.rlim_cur;
        }
}
