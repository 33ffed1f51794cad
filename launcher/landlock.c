/* SPDX-License-Identifier: Apache-2.0 */
/* Landlock confines the job's filesystem and TCP access with rules that
 * no mount trick inside the sandbox can undo. Debian 12's
 * <linux/landlock.h> describes ABI 2, so the newer structure fields and
 * rights (ABI 3-7) are defined here. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/landlock.h>

#include "landlock.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_ABI1_ALL ((1ULL << 13) - 1)   /* EXECUTE .. MAKE_SYM */
#define LL_FS_REFER (1ULL << 13)            /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)         /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)        /* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)         /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)      /* ABI 4 */
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0)  /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)         /* ABI 6 */
#define LL_RULE_NET_PORT 2

/* Rights that make sense on a non-directory; the kernel refuses others. */
#define LL_FS_FILE_RIGHTS (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | \
                           LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)
#define LL_FS_READ (LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_EXECUTE)

/* The ABI 6 layout; the kernel accepts a shorter size from older
 * callers, and we pass the size that matches the ABI we found. */
struct ll_ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net;
        uint64_t scoped;
};

struct ll_net_port_attr {
        uint64_t allowed_access;
        uint64_t port;
};

static int ll_create_ruleset(const struct ll_ruleset_attr *attr, size_t size, uint32_t flags) {
        return (int) syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

static int ll_add_rule(int ruleset, int type, const void *attr) {
        return (int) syscall(__NR_landlock_add_rule, ruleset, type, attr, 0);
}

int landlock_abi_version(void) {
        int abi = ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        return abi < 0 ? 0 : abi;
}

static uint64_t fs_rights_for_abi(int abi) {
        uint64_t r = LL_FS_ABI1_ALL;
        if (abi >= 2)
                r |= LL_FS_REFER;
        if (abi >= 3)
                r |= LL_FS_TRUNCATE;
        if (abi >= 5)
                r |= LL_FS_IOCTL_DEV;
        return r;
}

/* Rights a destination gets, by the kind of operation that made it. */
static uint64_t fs_rights_for_op(const struct fs_op *op) {
        const uint64_t write = ~0ULL & ~LL_FS_IOCTL_DEV;

        switch (op->type) {
        case FS_RO_BIND:
        case FS_DIR:
                return LL_FS_READ;
        case FS_FILE:
                return LL_FS_READ | ((op->mode_set && (op->mode & 0222)) ? LL_FS_WRITE_FILE | LL_FS_TRUNCATE : 0);
        case FS_BIND:
        case FS_TMPFS:
        case FS_MQUEUE:
                return write;
        case FS_DEV_BIND:
                return ~0ULL;
        case FS_DEV:
                /* Listing only; the nodes, pts and shm get their own rules
                 * (add_dev_rules) so a file put under /dev by a later
                 * operation is not writable by inheritance. */
                return LL_FS_READ_DIR;
        case FS_PROC:
                /* /proc/self/... tunables (oom_score_adj, comm); the
                 * kernel-wide trees are read-only mounts (harden_proc). */
                return LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_WRITE_FILE;
        case FS_SYMLINK:
        case FS_REMOUNT_RO:
        case FS_CHDIR:
                return 0;
        }
        return 0;
}

static int add_path_rule(int ruleset, const char *path, uint64_t rights, uint64_t handled,
                         struct sbx_error *err) {
        struct landlock_path_beneath_attr attr;
        struct stat st;
        _cleanup_close_ int fd = -1;

        fd = open(path, O_PATH | O_CLOEXEC);
        if (fd < 0) {
                /* A -try bind whose source was missing leaves nothing. */
                if (errno == ENOENT)
                        return 0;
                return sbx_error_set(err, errno, "landlock: opening %s", path);
        }
        if (fstat(fd, &st) < 0)
                return sbx_error_set(err, errno, "landlock: %s", path);
        if (!S_ISDIR(st.st_mode))
                rights &= LL_FS_FILE_RIGHTS;
        rights &= handled;
        if (rights == 0)
                return 0;
        attr.allowed_access = rights;
        attr.parent_fd = fd;
        if (ll_add_rule(ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr) < 0)
                return sbx_error_set(err, errno, "landlock: rule for %s", path);
        return 0;
}

/* The minimal /dev: device nodes are read, written, truncated (a shell's
 * "> /dev/null" opens with O_TRUNC) and ioctl'd (a tty); POSIX shared
 * memory lives in a writable dev/shm. */
static int add_dev_rule(int ruleset, const char *dev, const char *name, uint64_t rights, uint64_t handled,
                        struct sbx_error *err) {
        char path[PATH_MAX];
        if ((size_t) snprintf(path, sizeof(path), "%s/%s", dev, name) >= sizeof(path))
                return sbx_error_msg(err, ENAMETOOLONG, "landlock: %s: path too long", dev);
        return add_path_rule(ruleset, path, rights, handled, err);
}

static int add_dev_rules(int ruleset, const char *dev, uint64_t handled, struct sbx_error *err) {
        static const char *const terminals[] = { PROFILE_DEV_PTMX, PROFILE_DEV_PTS, PROFILE_DEV_CONSOLE };
        const uint64_t node_rights = LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_WRITE_FILE |
                                     LL_FS_TRUNCATE | LL_FS_IOCTL_DEV;
        int r;

        for (size_t i = 0; profile_dev_nodes[i]; i++)
                if ((r = add_dev_rule(ruleset, dev, profile_dev_nodes[i], node_rights, handled, err)) < 0)
                        return r;
        for (size_t i = 0; i < ARRAY_SIZE(terminals); i++)
                if ((r = add_dev_rule(ruleset, dev, terminals[i], node_rights, handled, err)) < 0)
                        return r;
        return add_dev_rule(ruleset, dev, PROFILE_DEV_SHM, ~0ULL & ~LL_FS_IOCTL_DEV, handled, err);
}

static int add_port_rules(int ruleset, const uint16_t *ports, size_t n, uint64_t right,
                          struct sbx_error *err) {
        for (size_t i = 0; i < n; i++) {
                struct ll_net_port_attr attr = { .allowed_access = right, .port = ports[i] };
                if (ll_add_rule(ruleset, LL_RULE_NET_PORT, &attr) < 0)
                        return sbx_error_set(err, errno, "landlock: rule for TCP port %u", ports[i]);
        }
        return 0;
}

int landlock_apply(const struct profile *p, struct protections *prot, struct sbx_error *err) {
        struct ll_ruleset_attr attr = { 0 };
        size_t attr_size;
        _cleanup_close_ int ruleset = -1;
        int abi, r;

        if (p->landlock == LANDLOCK_OFF)
                return 0;

        abi = landlock_abi_version();
        if (abi <= 0) {
                if (p->landlock == LANDLOCK_REQUIRED)
                        return sbx_error_msg(err, EOPNOTSUPP,
                                             "landlock: required by the profile but not available on this kernel");
                return 0; /* best-effort: the status record shows landlock-abi 0 */
        }
        if (p->ports_set && abi < 4 && p->landlock == LANDLOCK_REQUIRED)
                return sbx_error_msg(err, EOPNOTSUPP,
                                     "landlock: TCP port rules need Landlock ABI 4, this kernel has %d", abi);

        attr.handled_access_fs = fs_rights_for_abi(abi);
        attr_size = sizeof(uint64_t);
        if (abi >= 4) {
                attr_size = 2 * sizeof(uint64_t);
                if (p->ports_set)
                        attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
        }
        if (abi >= 6) {
                attr_size = sizeof(attr);
                attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
        }

        ruleset = ll_create_ruleset(&attr, attr_size, 0);
        if (ruleset < 0) {
                if ((errno == ENOSYS || errno == EOPNOTSUPP) && p->landlock == LANDLOCK_BEST_EFFORT)
                        return 0;
                return sbx_error_set(err, errno, "landlock: creating the ruleset (ABI %d)", abi);
        }

        /* The root itself may be listed; its contents are reached through
         * the rules below. */
        r = add_path_rule(ruleset, "/", LL_FS_READ_DIR, attr.handled_access_fs, err);
        if (r < 0)
                return r;
        /* [security] sys = yes: a read-only /sys, readable here too. */
        if (p->sys) {
                r = add_path_rule(ruleset, "/sys", LL_FS_READ_FILE | LL_FS_READ_DIR, attr.handled_access_fs, err);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < p->n_fs; i++) {
                const struct fs_op *op = &p->fs[i];
                uint64_t rights = fs_rights_for_op(op);

                if (rights == 0 || !op->dest)
                        continue;
                r = add_path_rule(ruleset, op->dest, rights, attr.handled_access_fs, err);
                if (r < 0)
                        return r;
                if (op->type == FS_DEV) {
                        r = add_dev_rules(ruleset, op->dest, attr.handled_access_fs, err);
                        if (r < 0)
                                return r;
                }
        }

        if (attr.handled_access_net) {
                r = add_port_rules(ruleset, p->bind_ports, p->n_bind_ports, LL_NET_BIND_TCP, err);
                if (r < 0)
                        return r;
                r = add_port_rules(ruleset, p->connect_ports, p->n_connect_ports, LL_NET_CONNECT_TCP, err);
                if (r < 0)
                        return r;
        }

        if (syscall(__NR_landlock_restrict_self, ruleset, 0) < 0)
                return sbx_error_set(err, errno, "landlock: restricting the process");

        prot->landlock_abi = abi;
        prot->landlock_fs = true;
        prot->landlock_net = attr.handled_access_net != 0;
        prot->landlock_scoped = attr.scoped != 0;
        return 0;
}
