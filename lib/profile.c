/* SPDX-License-Identifier: Apache-2.0 */
/* The profile model: defaults, freeing, whole-profile validation, equality,
 * search path, and names. Parsing lives in profile-keys.c and
 * profile-load.c, writing in profile-write.c. */
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "launch-abi.h"
#include "macro.h"
#include "profile-internal.h"

#ifndef SBX_PROFILEDIR
#define SBX_PROFILEDIR "/usr/local/share/sbx/profiles"
#endif

#define PROFILE_SUFFIX ".ini"

void profile_init(struct profile *p) {
        *p = (struct profile) {
                .namespaces = PROFILE_NS_ALL,
                .uid = PROFILE_ID_SAME,
                .gid = (gid_t) PROFILE_ID_SAME,
                .die_with_parent = true,
                .new_session = true,
                .pty = PTY_AUTO,
                .env_clear = true,
                .net = NET_NONE,
                .limits = {
                        .timeout_ms = PROFILE_UNSET,
                        .cpu_s = PROFILE_UNSET,
                        .memory_bytes = PROFILE_UNSET,
                        .data_bytes = PROFILE_UNSET,
                        .processes = PROFILE_UNSET,
                        .file_size_bytes = PROFILE_UNSET,
                        .open_files = PROFILE_UNSET,
                        .stack_bytes = PROFILE_UNSET,
                        /* No core dumps unless asked: a dump of a job may
                         * hold its secrets and lands in the host's pattern. */
                        .core_bytes = 0,
                },
                .seccomp = SECCOMP_DEFAULT,
                .landlock = LANDLOCK_BEST_EFFORT,
        };
}

void profile_free(struct profile *p) {
        if (!p)
                return;
        free(p->hostname);
        for (size_t i = 0; i < p->n_fs; i++) {
                free(p->fs[i].src);
                free(p->fs[i].dest);
                free(p->fs[i].data);
                free(p->fs[i].origin);
        }
        free(p->fs);
        for (size_t i = 0; i < p->n_env; i++) {
                free(p->env[i].name);
                free(p->env[i].value);
                free(p->env[i].origin);
        }
        free(p->env);
        free(p->bind_ports);
        free(p->connect_ports);
        for (size_t i = 0; i < p->n_seccomp_rules; i++) {
                free(p->seccomp_rules[i].name);
                free(p->seccomp_rules[i].origin);
        }
        free(p->seccomp_rules);
        free(p->caps);
        profile_init(p);
}

/* ---- validation ---------------------------------------------------------- */

/* The smallest limits a program can start under. */
#define PROFILE_MIN_MEMORY_BYTES (1024 * 1024)
#define PROFILE_MIN_DATA_BYTES (64 * 1024)
#define PROFILE_MIN_STACK_BYTES (16 * 1024)
#define PROFILE_MIN_OPEN_FILES 3  /* stdin, stdout and stderr */

/* A limit with a value: neither unset nor "unlimited". */
static bool limit_set(uint64_t v) {
        return v != PROFILE_UNSET && v != PROFILE_UNLIMITED;
}

static bool limit_below(uint64_t v, uint64_t min) {
        return limit_set(v) && v < min;
}

int profile_validate(const struct profile *p, struct sbx_error *err) {
        const struct profile_limits *l = &p->limits;

        if ((p->namespaces & (PROFILE_NS_USER | PROFILE_NS_MOUNT)) != (PROFILE_NS_USER | PROFILE_NS_MOUNT))
                return sbx_error_msg(err, EINVAL, "sandbox.namespaces: the user and mount namespaces are always new");
        if (!!(p->namespaces & PROFILE_NS_NET) != (p->net == NET_NONE))
                return sbx_error_msg(err, EINVAL, "net.mode: %s disagrees with the net namespace being %s",
                                     net_mode_name(p->net), (p->namespaces & PROFILE_NS_NET) ? "new" : "shared");
        if (p->pty == PTY_YES && !p->new_session)
                return sbx_error_msg(err, EINVAL, "sandbox.pty: a terminal of the job's own needs a new session "
                                     "(sandbox.new-session = yes)");
        if (p->hostname && !(p->namespaces & PROFILE_NS_UTS))
                return sbx_error_msg(err, EINVAL,
                                     "sandbox.hostname: setting a host name needs the uts namespace (it would "
                                     "rename the host)");
        for (size_t i = 0; i < p->n_fs; i++) {
                const struct fs_op *op = &p->fs[i];
                /* procfs may only be mounted by the user namespace that owns the
                 * pid namespace; without a new one the mount fails (EPERM), and a
                 * /proc bound from the host would show every host process. */
                if (op->type == FS_PROC && !(p->namespaces & PROFILE_NS_PID))
                        return sbx_error_msg(err, EINVAL, "%s: fs.proc: /proc needs the pid namespace "
                                             "(add pid to sandbox.namespaces)", op->origin);
                /* mqueue likewise belongs to the ipc namespace. */
                if (op->type == FS_MQUEUE && !(p->namespaces & PROFILE_NS_IPC))
                        return sbx_error_msg(err, EINVAL, "%s: fs.mqueue: an mqueue mount needs the ipc namespace "
                                             "(add ipc to sandbox.namespaces)", op->origin);
        }
        if (p->landlock == LANDLOCK_OFF && p->ports_set)
                return sbx_error_msg(err, EINVAL, "net.tcp-bind/tcp-connect: port rules are enforced by Landlock, "
                                     "which security.landlock = off turns off");

        /* Limits that make every job fail before its first instruction. */
        if (limit_below(l->memory_bytes, PROFILE_MIN_MEMORY_BYTES))
                return sbx_error_msg(err, EINVAL, "limits.memory: less than 1M cannot start a program");
        if (limit_below(l->data_bytes, PROFILE_MIN_DATA_BYTES))
                return sbx_error_msg(err, EINVAL, "limits.data: less than 64K cannot start a program");
        if (limit_below(l->stack_bytes, PROFILE_MIN_STACK_BYTES))
                return sbx_error_msg(err, EINVAL, "limits.stack: less than 16K cannot start a program");
        if (limit_set(l->stack_bytes) && limit_set(l->memory_bytes) && l->stack_bytes > l->memory_bytes)
                return sbx_error_msg(err, EINVAL, "limits.stack: larger than limits.memory");
        if (l->open_files != PROFILE_UNSET && l->open_files < PROFILE_MIN_OPEN_FILES)
                return sbx_error_msg(err, EINVAL, "limits.open-files: at least 3 (stdin, stdout and stderr)");
        if (l->processes == 0)
                return sbx_error_msg(err, EINVAL, "limits.processes: at least 1 (the command itself)");
        return 0;
}

/* ---- equality ------------------------------------------------------------ */

static bool str_eq(const char *a, const char *b) {
        return (!a && !b) || (a && b && streq(a, b));
}

static bool fs_eq(const struct fs_op *a, const struct fs_op *b) {
        return a->type == b->type && a->try_ == b->try_ && str_eq(a->src, b->src) && str_eq(a->dest, b->dest) &&
               a->size_bytes == b->size_bytes && a->nr_inodes == b->nr_inodes && a->mode_set == b->mode_set &&
               (!a->mode_set || a->mode == b->mode) && a->fd == b->fd && !a->data == !b->data &&
               a->data_len == b->data_len && (!a->data || memcmp(a->data, b->data, a->data_len) == 0);
}

bool profile_equal(const struct profile *a, const struct profile *b) {
        if (a->namespaces != b->namespaces || !str_eq(a->hostname, b->hostname) || a->uid != b->uid ||
            a->gid != b->gid || a->die_with_parent != b->die_with_parent || a->new_session != b->new_session ||
            a->pty != b->pty)
                return false;
        if (a->n_fs != b->n_fs)
                return false;
        for (size_t i = 0; i < a->n_fs; i++)
                if (!fs_eq(&a->fs[i], &b->fs[i]))
                        return false;
        if (a->env_clear != b->env_clear || a->n_env != b->n_env)
                return false;
        for (size_t i = 0; i < a->n_env; i++)
                if (a->env[i].type != b->env[i].type || !str_eq(a->env[i].name, b->env[i].name) ||
                    !str_eq(a->env[i].value, b->env[i].value))
                        return false;
        if (a->net != b->net || a->net_audit != b->net_audit || a->ports_set != b->ports_set || a->n_bind_ports != b->n_bind_ports ||
            a->n_connect_ports != b->n_connect_ports ||
            (a->n_bind_ports && memcmp(a->bind_ports, b->bind_ports, a->n_bind_ports * sizeof(uint16_t))) ||
            (a->n_connect_ports &&
             memcmp(a->connect_ports, b->connect_ports, a->n_connect_ports * sizeof(uint16_t))))
                return false;
        if (memcmp(&a->limits, &b->limits, sizeof(a->limits)) != 0)
                return false;
        if (a->seccomp != b->seccomp || a->landlock != b->landlock || a->sys != b->sys ||
            a->n_seccomp_rules != b->n_seccomp_rules || a->n_caps != b->n_caps ||
            (a->n_caps && memcmp(a->caps, b->caps, a->n_caps * sizeof(int))))
                return false;
        for (size_t i = 0; i < a->n_seccomp_rules; i++) {
                const struct seccomp_rule *x = &a->seccomp_rules[i], *y = &b->seccomp_rules[i];
                if (x->allow != y->allow || x->nr != y->nr || !str_eq(x->name, y->name) ||
                    (!x->allow && x->errnum != y->errnum))
                        return false;
        }
        return true;
}

/* ---- search path --------------------------------------------------------- */

static bool is_file(const char *path) {
        struct stat st;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int profile_find(const char *name, const char *search_path, char **ret_path, struct sbx_error *err) {
        size_t n = strlen(name);

        if (n == 0)
                return sbx_error_msg(err, EINVAL, "empty profile name");
        if (strchr(name, '/') || streq(name, ".") || streq(name, ".."))
                return sbx_error_msg(err, EINVAL, "profile name '%.64s' is not a name", name);
        if (n > NAME_MAX - strlen(PROFILE_SUFFIX))
                return sbx_error_msg(err, ENAMETOOLONG, "profile name '%.64s...' is too long", name);

        /* Every candidate is listed in the error, so a typo in the search
         * path is visible at once. */
        char looked[SBX_ERROR_MAX / 2] = "";
        size_t used = 0;
        for (const char *s = search_path ? search_path : "";;) {
                const char *e = strchrnul(s, ':');
                size_t len = (size_t) (e - s);
                if (len > 0) {
                        _cleanup_free_ char *path = NULL;
                        if (asprintf(&path, "%.*s/%s" PROFILE_SUFFIX, (int) len, s, name) < 0)
                                return sbx_error_set(err, ENOMEM, "profile %s", name);
                        if (is_file(path)) {
                                *ret_path = TAKE_PTR(path);
                                return 0;
                        }
                        int w = snprintf(looked + used, sizeof(looked) - used, "%s%s", used ? ", " : "", path);
                        if (w > 0)
                                used = used + (size_t) w < sizeof(looked) ? used + (size_t) w : sizeof(looked) - 1;
                }
                if (!*e)
                        break;
                s = e + 1;
        }
        return sbx_error_msg(err, ENOENT, "profile '%s' not found (looked for %s)", name, used ? looked : "nothing: the search path is empty");
}

int profile_resolve(const char *name, char **ret_path, struct sbx_error *err) {
        size_t n = strlen(name);
        size_t suffix = strlen(PROFILE_SUFFIX);

        if (strchr(name, '/') || (n > suffix && streq(name + n - suffix, PROFILE_SUFFIX))) {
                *ret_path = strdup(name);
                return *ret_path ? 0 : sbx_error_set(err, ENOMEM, "profile %s", name);
        }
        const char *env = getenv(SBX_ENV_PROFILE_PATH);
        _cleanup_free_ char *search = NULL;
        if (asprintf(&search, "%s%s%s", env ? env : "", env && *env ? ":" : "", SBX_PROFILEDIR) < 0)
                return sbx_error_set(err, ENOMEM, "profile %s", name);
        return profile_find(name, search, ret_path, err);
}

/* ---- names --------------------------------------------------------------- */

/* Indexed by the bit position in enum profile_ns. */
static const char *const ns_names[PROFILE_NS_COUNT] = { "user", "mount", "pid", "net", "ipc", "uts", "cgroup" };

const char *profile_ns_name(unsigned bit) {
        for (unsigned i = 0; i < PROFILE_NS_COUNT; i++)
                if (bit == 1u << i)
                        return ns_names[i];
        return NULL;
}

unsigned profile_ns_from_name(const char *name) {
        for (unsigned i = 0; i < PROFILE_NS_COUNT; i++)
                if (streq(name, ns_names[i]))
                        return 1u << i;
        return 0;
}

const char *fs_op_type_name(enum fs_op_type t) {
        static const char *const names[] = {
                [FS_BIND] = "bind", [FS_RO_BIND] = "ro-bind", [FS_DEV_BIND] = "dev-bind",
                [FS_TMPFS] = "tmpfs", [FS_DIR] = "dir", [FS_SYMLINK] = "symlink",
                [FS_FILE] = "file", [FS_PROC] = "proc", [FS_DEV] = "dev",
                [FS_MQUEUE] = "mqueue", [FS_REMOUNT_RO] = "remount-ro", [FS_CHDIR] = "chdir",
        };
        return (unsigned) t < ARRAY_SIZE(names) ? names[t] : "unknown";
}

const char *fs_op_name(const struct fs_op *op) {
        static const char *const try_names[] = {
                [FS_BIND] = "bind-try", [FS_RO_BIND] = "ro-bind-try", [FS_DEV_BIND] = "dev-bind-try",
        };
        if (op->try_ && (unsigned) op->type < ARRAY_SIZE(try_names) && try_names[op->type])
                return try_names[op->type];
        return fs_op_type_name(op->type);
}

const char *const profile_dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty", NULL };

const char *net_mode_name(enum net_mode m) {
        return m == NET_NONE ? "none" : m == NET_HOST ? "host" : "unknown";
}

const char *seccomp_mode_name(enum seccomp_mode m) {
        return m == SECCOMP_DEFAULT ? "default" : m == SECCOMP_STRICT ? "strict" : m == SECCOMP_NONE ? "none" : "unknown";
}

const char *pty_mode_name(enum profile_pty m) {
        return m == PTY_AUTO ? "auto" : m == PTY_YES ? "yes" : m == PTY_NO ? "no" : "unknown";
}

const char *landlock_mode_name(enum landlock_mode m) {
        return m == LANDLOCK_OFF ? "off" : m == LANDLOCK_BEST_EFFORT ? "best-effort" :
               m == LANDLOCK_REQUIRED ? "required" : "unknown";
}
