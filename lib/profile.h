/* SPDX-License-Identifier: Apache-2.0 */
/* The profile model (sbx-profile(5)): one validated struct that the launcher
 * acts on and the supervisor generates. Profiles are parsed from INI with
 * inih, merged in order (later files and CLI options extend or override
 * earlier ones), validated, and written back as INI.
 *
 * Code that acts on a profile never re-parses strings: every value here is
 * already checked. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "inifile.h"

/* Upper bounds on what a profile may contain (STYLE.md: limits on everything
 * a user controls). Exceeding one is a validation error naming file:line. */
/* Bytes in one physical line, and in one value joined from continued lines
 * (see inifile.h). */
#define PROFILE_MAX_LINE INIFILE_MAX_LINE
#define PROFILE_MAX_VALUE INIFILE_MAX_VALUE
#define PROFILE_MAX_FS_OPS 256    /* [fs] operations */
#define PROFILE_MAX_ENV_OPS 1024  /* [env] operations */
#define PROFILE_MAX_SECCOMP_RULES 512
#define PROFILE_MAX_CAPS 64
#define PROFILE_MAX_PORTS 64
#define PROFILE_MAX_FILE_DATA (64 * 1024) /* inline file contents */

/* "unset" marker for optional numeric settings. */
#define PROFILE_UNSET UINT64_MAX
/* "unlimited" given explicitly for an rlimit (RLIM_INFINITY). */
#define PROFILE_UNLIMITED (UINT64_MAX - 1)

#define PROFILE_ID_SAME ((uid_t) -1)

enum profile_ns {
        PROFILE_NS_USER = 1u << 0,
        PROFILE_NS_MOUNT = 1u << 1,
        PROFILE_NS_PID = 1u << 2,
        PROFILE_NS_NET = 1u << 3,
        PROFILE_NS_IPC = 1u << 4,
        PROFILE_NS_UTS = 1u << 5,
        PROFILE_NS_CGROUP = 1u << 6,
        PROFILE_NS_ALL = (1u << 7) - 1,
};
#define PROFILE_NS_COUNT 7

enum fs_op_type {
        FS_BIND,       /* bind SRC DEST (read-write) */
        FS_RO_BIND,    /* ro-bind SRC DEST */
        FS_DEV_BIND,   /* dev-bind SRC DEST (device nodes usable) */
        FS_TMPFS,      /* tmpfs DEST [size=N] [mode=OCTAL] [nr_inodes=N] */
        FS_DIR,        /* dir DEST [mode=OCTAL] */
        FS_SYMLINK,    /* symlink TARGET LINKPATH */
        FS_FILE,       /* file DEST fd=N | file DEST data=ESCAPED [mode=OCTAL] */
        FS_PROC,       /* proc DEST */
        FS_DEV,        /* dev DEST: minimal /dev (profile_dev_nodes, pts, shm) */
        FS_MQUEUE,     /* mqueue DEST */
        FS_REMOUNT_RO, /* remount-ro DEST */
        FS_CHDIR,      /* chdir DEST: working directory inside; last one wins */
};

/* A bind source naming an inherited descriptor (fd:N) of a detached
 * mount tree instead of a host path. */
#define PROFILE_FD_SOURCE "fd:"

struct fs_op {
        enum fs_op_type type;
        bool try_;           /* the -try form: a missing source is skipped */
        char *src;           /* bind source (host path), symlink target; else NULL */
        char *dest;          /* path inside the sandbox, absolute, normalised */
        uint64_t size_bytes; /* tmpfs size=, PROFILE_UNSET if not given */
        uint64_t nr_inodes;  /* tmpfs nr_inodes=, PROFILE_UNSET if not given */
        mode_t mode;         /* tmpfs/dir/file mode= */
        bool mode_set;
        int fd;              /* file fd=N, a bind's fd:N source; -1 otherwise */
        char *data;          /* file data= after unescaping; NULL otherwise */
        size_t data_len;
        char *origin;        /* "path:line" or "command line" for messages */
};

enum env_op_type {
        ENV_SET,   /* set NAME=VALUE */
        ENV_KEEP,  /* keep NAME: pass the caller's value if it has one */
        ENV_UNSET, /* unset NAME */
};

struct env_op {
        enum env_op_type type;
        char *name;
        char *value; /* ENV_SET only */
        char *origin;
};

enum net_mode {
        NET_NONE,      /* new net namespace with loopback only (default) */
        NET_HOST,      /* share the host network namespace */
};

enum seccomp_mode {
        SECCOMP_DEFAULT, /* built-in deny list (default) */
        SECCOMP_STRICT,  /* built-in allow list for compute-only jobs */
        SECCOMP_NONE,    /* no filter (no_new_privs still set) */
};

enum profile_pty {
        PTY_AUTO,  /* a terminal of its own when stdin and stdout are terminals (default) */
        PTY_YES,
        PTY_NO,
};

enum landlock_mode {
        LANDLOCK_OFF,
        LANDLOCK_BEST_EFFORT, /* default: apply what the kernel supports, report it */
        LANDLOCK_REQUIRED,    /* fail closed when unavailable */
};

struct seccomp_rule {
        bool allow;      /* allow = NAME, or deny = NAME[:ERRNO] */
        int nr;          /* native syscall number, resolved with libseccomp */
        char *name;
        int errnum;      /* deny: errno to return (default EPERM) */
        char *origin;
};

struct profile_limits {
        uint64_t timeout_ms;  /* wall clock; PROFILE_UNSET = none */
        uint64_t cpu_s;       /* RLIMIT_CPU seconds */
        uint64_t memory_bytes;     /* RLIMIT_AS */
        uint64_t data_bytes;       /* RLIMIT_DATA */
        uint64_t processes;        /* RLIMIT_NPROC */
        uint64_t file_size_bytes;  /* RLIMIT_FSIZE */
        uint64_t open_files;       /* RLIMIT_NOFILE */
        uint64_t stack_bytes;      /* RLIMIT_STACK */
        uint64_t core_bytes;       /* RLIMIT_CORE; 0 unless a profile says so */
};

struct profile {
        /* [sandbox] */
        unsigned namespaces;  /* enum profile_ns bits; USER and MOUNT always set;
                               * NET is set exactly when net == NET_NONE */
        char *hostname;       /* NULL: "sbx" when the uts namespace is new */
        uid_t uid;            /* id inside, mapped to the caller's uid */
        gid_t gid;            /* PROFILE_ID_SAME: the caller's own id */
        bool die_with_parent; /* default yes */
        bool new_session;     /* default yes */
        enum profile_pty pty; /* default auto; yes needs new_session */

        /* [fs] — executed in order */
        struct fs_op *fs;
        size_t n_fs;

        /* [env] */
        bool env_clear;       /* default yes */
        struct env_op *env;
        size_t n_env;

        /* [net] */
        enum net_mode net;
        uint16_t *bind_ports;     /* Landlock TCP bind allow list (ABI 4) */
        size_t n_bind_ports;
        uint16_t *connect_ports;  /* Landlock TCP connect allow list (ABI 4) */
        size_t n_connect_ports;
        bool ports_set;           /* any port rule given: restrict TCP */
        bool net_audit;           /* [net] audit: asked of sbx-supervisord, which attaches the
                                   * eBPF audit to the job's cgroup (sbx-launch alone refuses it) */

        /* [limits] */
        struct profile_limits limits;

        /* [security] */
        enum seccomp_mode seccomp;
        struct seccomp_rule *seccomp_rules;
        size_t n_seccomp_rules;
        enum landlock_mode landlock;
        int *caps;            /* capabilities kept inside the user namespace (CAP_* numbers) */
        size_t n_caps;
        bool sys;             /* mount a read-only /sys (default no) */
};

/* Initialise p with the built-in defaults that sbx-profile(5) documents:
 * all namespaces; uid and gid PROFILE_ID_SAME (the caller's own ids, as
 * bwrap does); env clear; net none; seccomp default; landlock best-effort;
 * core 0; die-with-parent and new-session on; every other limit unset. */
void profile_init(struct profile *p);
void profile_free(struct profile *p);

/* Parse one INI file and merge it into p (ordered lists are appended,
 * scalars overridden). Errors name "path:line: ...". On error p is still
 * valid (profile_free() works) but holds what was merged up to the error. */
int profile_load_file(struct profile *p, const char *path, struct sbx_error *err);

/* Same, from a string already in memory; name is used in messages. */
int profile_load_string(struct profile *p, const char *name, const char *text,
                        struct sbx_error *err);

/* Apply one "section.key = value" setting as if it were read from a file at
 * origin (used by CLI options such as --set and by the bwrap-like options). */
int profile_set(struct profile *p, const char *section, const char *key,
                const char *value, const char *origin, struct sbx_error *err);

/* Like profile_set, but the value is given as words taken literally: no
 * quotes, escapes or ${VAR}. For options such as --bind SRC DEST, whose
 * arguments the shell already split and expanded. */
int profile_set_words(struct profile *p, const char *section, const char *key,
                      const char *const *words, size_t n_words, const char *origin,
                      struct sbx_error *err);

/* Find a profile by name: the first NAME.ini that is a regular file in the
 * directories of search_path (colon-separated; empty entries are skipped).
 * *ret_path is malloc'd. -EINVAL for a name that is empty or holds '/',
 * -ENOENT (the message lists every path tried) when none is found. */
int profile_find(const char *name, const char *search_path, char **ret_path, struct sbx_error *err);

/* sbx-launch's --profile: a value containing '/' or ending in ".ini" is a
 * path, taken as it is; anything else a name, found with profile_find() in
 * $SBX_PROFILE_PATH, then in SBX_PROFILEDIR ($(pkgdatadir)/profiles).
 * *ret_path is malloc'd. */
int profile_resolve(const char *name_or_path, char **ret_path, struct sbx_error *err);

/* Whole-profile checks after all merging, documented in sbx-profile(5)
 * VALIDATION (e.g. fs.proc needs the pid namespace). The message names the
 * origin ("file:line") of the setting at fault where there is one. */
int profile_validate(const struct profile *p, struct sbx_error *err);

/* Write p as INI that profile_load_* reads back to an equal profile. Returns
 * 0 or -errno (that of the failed write, such as -ENOSPC, or -EIO). */
int profile_write(const struct profile *p, FILE *f);

/* Write one line "key = WORD..." spelled (quoted, escaped, wrapped) so that
 * loading it gives back exactly these literal words: for programs that
 * generate an overlay profile of a few keys, such as the supervisor. */
int profile_write_key(FILE *f, const char *key, const char *const *words, size_t n_words);


/* Deep equality, for tests of the round trip. */
bool profile_equal(const struct profile *a, const struct profile *b);

/* What a "dev" operation puts in its /dev: these host device nodes, bound
 * in (a user namespace cannot make device nodes; NULL-terminated), a
 * devpts instance of the sandbox's own at PROFILE_DEV_PTS with the link
 * PROFILE_DEV_PTMX to its ptmx, and a world-writable PROFILE_DEV_SHM. */
extern const char *const profile_dev_nodes[];
#define PROFILE_DEV_PTS "pts"
#define PROFILE_DEV_PTMX "ptmx"
#define PROFILE_DEV_SHM "shm"
/* With a terminal of the job's own (sandbox.pty), that terminal too. */
#define PROFILE_DEV_CONSOLE "console"

/* Names for messages and the status record. */
const char *fs_op_type_name(enum fs_op_type t);
/* The key of an operation, "-try" included: "bind", "ro-bind-try", ...;
 * also the launcher's step name when it fails. */
const char *fs_op_name(const struct fs_op *op);
/* "user", "mount", ... for one enum profile_ns bit; NULL for anything else. */
const char *profile_ns_name(unsigned bit);
/* The enum profile_ns bit of a namespace name; 0 when unknown. */
unsigned profile_ns_from_name(const char *name);
const char *net_mode_name(enum net_mode m);
const char *seccomp_mode_name(enum seccomp_mode m);
const char *landlock_mode_name(enum landlock_mode m);
const char *pty_mode_name(enum profile_pty m);
