/* SPDX-License-Identifier: Apache-2.0 */
/* The command line. Profiles (--profile) are loaded first, in order; every
 * other option is then applied in order through profile_set(), so the
 * command line and profile files share one parser and one validation, and
 * --print-profile shows exactly what will run. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch.h"
#include "parse.h"

static const char default_profile_ini[] =
#include "default-profile.h"
        ;

enum opt_id {
        O_PROFILE, O_SET, O_TIMEOUT, O_SETENV, O_UNSETENV, O_KEEPENV, O_CLEARENV, O_CHDIR,
        O_HOSTNAME, O_UID, O_GID, O_FS1, O_FS2, O_FILE, O_SIZE, O_PERMS, O_UNSHARE_ALL, O_UNSHARE,
        O_SHARE, O_BOOL_YES, O_PTY, O_PASS_FD, O_STATUS_FD, O_INFO_FD, O_BLOCK_FD, O_SYNC_FD,
        O_PRINT_PROFILE, O_CHECK, O_CHECK_HOST, O_HELP, O_VERSION,
};

struct opt {
        const char *name;
        int nargs;
        enum opt_id id;
        const char *arg;  /* profile key, namespace name or section.key */
};

static const struct opt options[] = {
        { "--profile", 1, O_PROFILE, NULL },
        { "--set", 1, O_SET, NULL },
        { "--timeout", 1, O_TIMEOUT, NULL },
        { "--setenv", 2, O_SETENV, NULL },
        { "--unsetenv", 1, O_UNSETENV, NULL },
        { "--keepenv", 1, O_KEEPENV, NULL },
        { "--clearenv", 0, O_CLEARENV, NULL },
        { "--chdir", 1, O_CHDIR, NULL },
        { "--hostname", 1, O_HOSTNAME, "hostname" },
        { "--uid", 1, O_UID, "uid" },
        { "--gid", 1, O_GID, "gid" },
        { "--bind", 2, O_FS2, "bind" },
        { "--bind-try", 2, O_FS2, "bind-try" },
        { "--ro-bind", 2, O_FS2, "ro-bind" },
        { "--ro-bind-try", 2, O_FS2, "ro-bind-try" },
        { "--dev-bind", 2, O_FS2, "dev-bind" },
        { "--dev-bind-try", 2, O_FS2, "dev-bind-try" },
        { "--symlink", 2, O_FS2, "symlink" },
        { "--tmpfs", 1, O_FS1, "tmpfs" },
        { "--dir", 1, O_FS1, "dir" },
        { "--proc", 1, O_FS1, "proc" },
        { "--dev", 1, O_FS1, "dev" },
        { "--mqueue", 1, O_FS1, "mqueue" },
        { "--remount-ro", 1, O_FS1, "remount-ro" },
        { "--file", 2, O_FILE, "file" },
        { "--size", 1, O_SIZE, NULL },
        { "--perms", 1, O_PERMS, NULL },
        { "--unshare-all", 0, O_UNSHARE_ALL, NULL },
        { "--unshare-user", 0, O_UNSHARE, "user" },
        { "--unshare-pid", 0, O_UNSHARE, "pid" },
        { "--unshare-net", 0, O_UNSHARE, "net" },
        { "--unshare-ipc", 0, O_UNSHARE, "ipc" },
        { "--unshare-uts", 0, O_UNSHARE, "uts" },
        { "--unshare-cgroup", 0, O_UNSHARE, "cgroup" },
        { "--unshare-cgroup-try", 0, O_UNSHARE, "cgroup" },
        { "--share-pid", 0, O_SHARE, "pid" },
        { "--share-net", 0, O_SHARE, "net" },
        { "--share-ipc", 0, O_SHARE, "ipc" },
        { "--share-uts", 0, O_SHARE, "uts" },
        { "--share-cgroup", 0, O_SHARE, "cgroup" },
        { "--die-with-parent", 0, O_BOOL_YES, "die-with-parent" },
        { "--new-session", 0, O_BOOL_YES, "new-session" },
        { "--pty", 0, O_PTY, "yes" },
        { "--no-pty", 0, O_PTY, "no" },
        { "--pass-fd", 1, O_PASS_FD, NULL },
        { "--json-status-fd", 1, O_STATUS_FD, NULL },
        { "--info-fd", 1, O_INFO_FD, NULL },
        { "--block-fd", 1, O_BLOCK_FD, NULL },
        { "--sync-fd", 1, O_SYNC_FD, NULL },
        { "--print-profile", 0, O_PRINT_PROFILE, NULL },
        { "--check", 0, O_CHECK, NULL },
        { "--check-host", 0, O_CHECK_HOST, NULL },
        { "--help", 0, O_HELP, NULL },
        { "-h", 0, O_HELP, NULL },
        { "--version", 0, O_VERSION, NULL },
};

static void usage(FILE *f) {
        fputs("Usage: sbx-launch [--profile NAME|FILE]... [OPTION]... [--] COMMAND [ARG]...\n"
              "Run COMMAND in a sandbox built from profiles (sbx-profile(5)) and options.\n"
              "\n"
              "Profiles and checks:\n"
              "  --profile NAME|FILE     load a profile (repeatable, merged in order);\n"
              "                          without one the built-in default profile is used\n"
              "  --set SECTION.KEY=VALUE set any profile key\n"
              "  --print-profile         print the effective profile as INI and exit\n"
              "  --check                 validate profiles and options, run nothing\n"
              "  --check-host            say whether this machine gives sbx what it needs\n"
              "Namespaces and identity:\n"
              "  --unshare-all, --unshare-{user,pid,net,ipc,uts,cgroup}, --share-{pid,net,ipc,uts,cgroup}\n"
              "  --hostname NAME  --uid UID  --gid GID\n"
              "Filesystem (in order; -try forms skip a missing source):\n"
              "  --bind SRC DEST  --ro-bind SRC DEST  --dev-bind SRC DEST\n"
              "  --tmpfs DEST  --dir DEST  --symlink TARGET LINK  --proc DEST  --dev DEST\n"
              "  --mqueue DEST  --file FD DEST  --remount-ro DEST  --chdir DIR\n"
              "  --size BYTES, --perms OCTAL   apply to the next --tmpfs, --dir or --file\n"
              "Environment:\n"
              "  --clearenv  --setenv VAR VALUE  --unsetenv VAR  --keepenv VAR\n"
              "Limits and lifetime:\n"
              "  --timeout DURATION  --die-with-parent  --new-session\n"
              "Terminal:\n"
              "  --pty, --no-pty         a terminal of the job's own, relayed to the caller's\n"
              "                          (default: when stdin and stdout are terminals)\n"
              "File descriptors:\n"
              "  --pass-fd FD  --json-status-fd FD  --info-fd FD  --block-fd FD  --sync-fd FD\n"
              "  --help  --version\n"
              "\n"
              "Exit status: the command's; 128+N if killed by signal N; 124 timed out;\n"
              "125 setup failed; 126 not executable; 127 not found. See sbx-launch(1).\n",
              f);
}

static const struct opt *find_opt(const char *arg, const char **ret_inline) {
        *ret_inline = NULL;
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t) (eq - arg) : strlen(arg);
        for (size_t i = 0; i < ARRAY_SIZE(options); i++)
                if (strlen(options[i].name) == len && strncmp(options[i].name, arg, len) == 0) {
                        /* --name=value only for one-argument options */
                        if (eq && options[i].nargs != 1)
                                return NULL;
                        *ret_inline = eq ? eq + 1 : NULL;
                        return &options[i];
                }
        return NULL;
}

static void set_key(struct launch *l, const char *section, const char *key, const char *value,
                    const char *origin) {
        struct sbx_error err = { 0 };
        if (profile_set(&l->profile, section, key, value, origin, &err) < 0)
                die("profile", "%s", err.msg);
}

static int parse_fd(const char *opt, const char *s) {
        uint64_t v;
        if (parse_uint64(s, INT_MAX, &v) < 0)
                die("usage", "%s: not a file descriptor: '%s'", opt, s);
        int fd = (int) v;
        if (fcntl(fd, F_GETFD) < 0)
                die("usage", "%s %d: %s", opt, fd, strerror(errno));
        return fd;
}

/* Our own fds must not reach the command: close-on-exec (pid 1 never
 * executes anything, so it keeps them). 0, 1 and 2 are the command's
 * anyway ("--json-status-fd 2" shares stderr) and stay as they are. */
static int parse_own_fd(const char *opt, const char *s) {
        int fd = parse_fd(opt, s);
        if (fd > 2 && fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
                die("usage", "%s %d: %s", opt, fd, strerror(errno));
        return fd;
}

/* Options whose words the shell already split: taken literally, so paths
 * with spaces, quotes or '$' need no escaping. */
static void set_words(struct launch *l, const char *section, const char *key, const char *const *words,
                      size_t n, const char *origin) {
        struct sbx_error err = { 0 };
        if (profile_set_words(&l->profile, section, key, words, n, origin, &err) < 0)
                die("profile", "%s", err.msg);
}

/* A relative bind source on the command line is taken relative to the
 * caller's working directory, as bwrap does; the profile records the
 * absolute path, so --print-profile shows what is bound. Profile files
 * name absolute sources only: their meaning must not depend on where
 * sbx-launch is started. */
static char *absolute_source(const char *opt, const char *src) {
        char *abs = NULL;
        if (src[0] == '/' || !src[0] || strncmp(src, PROFILE_FD_SOURCE, strlen(PROFILE_FD_SOURCE)) == 0)
                abs = strdup(src);
        else {
                _cleanup_free_ char *cwd = getcwd(NULL, 0);
                if (!cwd || cwd[0] != '/')
                        die("usage", "%s %s: a relative source needs the working directory: %s", opt, src,
                            cwd ? "not reachable" : strerror(errno));
                /* "./job.py" and "." read better without the dot. */
                while (src[0] == '.' && src[1] == '/')
                        for (src++; *src == '/'; src++)
                                ;
                if (streq(src, "."))
                        src = "";
                if (asprintf(&abs, "%s%s%s", cwd, *src && !streq(cwd, "/") ? "/" : "", src) < 0)
                        abs = NULL;
        }
        if (!abs)
                die("usage", "%s", strerror(ENOMEM));
        return abs;
}

static void set_namespaces(struct launch *l, unsigned ns, const char *origin) {
        char buf[128] = "";
        size_t n = 0;
        for (unsigned i = 0; i < PROFILE_NS_COUNT; i++)
                if (ns & (1u << i))
                        n += (size_t) snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? " " : "", profile_ns_name(1u << i));
        set_key(l, "sandbox", "namespaces", buf, origin);
}

static void load_profiles(struct launch *l, char **argv, int cmd) {
        struct sbx_error err = { 0 };
        bool any = false;

        for (int i = 1; i < cmd; i++) {
                const char *inl;
                const struct opt *o = find_opt(argv[i], &inl);
                if (o->id == O_PROFILE) {
                        const char *name = inl ? inl : argv[i + 1];
                        _cleanup_free_ char *path = NULL;
                        if (profile_resolve(name, &path, &err) < 0 ||
                            profile_load_file(&l->profile, path, &err) < 0)
                                die("profile", "%s", err.msg);
                        any = true;
                }
                i += inl ? 0 : o->nargs;
        }
        if (!any && profile_load_string(&l->profile, "built-in default profile", default_profile_ini, &err) < 0)
                die("profile", "%s", err.msg);
}

/* Pass 1: where the command starts (a command named like an option after
 * "--" is a command), every option known and complete; --help and
 * --version answered. */
static int find_command(int argc, char **argv) {
        bool help = false, version = false, check_host = false;
        int cmd = argc;

        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *inl;
                if (streq(a, "--")) {
                        cmd = i + 1;
                        break;
                }
                if (a[0] != '-') {
                        cmd = i;
                        break;
                }
                const struct opt *o = find_opt(a, &inl);
                if (!o) {
                        fprintf(stderr, "sbx-launch: usage: unknown option '%s' (see --help)\n", a);
                        exit(SBX_EXIT_SETUP);
                }
                help |= o->id == O_HELP;
                version |= o->id == O_VERSION;
                check_host |= o->id == O_CHECK_HOST;
                if (!inl && i + o->nargs >= argc) {
                        fprintf(stderr, "sbx-launch: usage: %s needs %d argument%s\n", a, o->nargs,
                                o->nargs > 1 ? "s" : "");
                        exit(SBX_EXIT_SETUP);
                }
                i += inl ? 0 : o->nargs;
        }
        if (help) {
                usage(stdout);
                exit(0);
        }
        if (version) {
                printf("sbx-launch %s\n", PACKAGE_VERSION);
                exit(0);
        }
        if (check_host) {
                int r = hostcheck_run(stdout);
                if (r < 0)
                        die("check-host", "writing the report: %s", strerror(-r));
                exit(r > 0 ? 1 : 0);
        }
        return cmd;
}

/* --size and --perms wait for the --tmpfs, --dir or --file they modify. */
struct pending {
        uint64_t size_bytes;   /* PROFILE_UNSET: none */
        const char *perms;
};

static bool pending_any(const struct pending *pd) {
        return pd->size_bytes != PROFILE_UNSET || pd->perms;
}

/* --tmpfs/--dir/--proc/... DEST and --file FD DEST, with a pending --size
 * and --perms as options of the operation. */
static void apply_fs_dest(struct launch *l, const struct opt *o, const char *a1, const char *a2, const char *origin,
                          struct pending *pd) {
        const char *w[4];
        char fdopt[32], sizeopt[48], modeopt[32];
        size_t n = 0;

        w[n++] = o->id == O_FILE ? a2 : a1;
        if (o->id == O_FILE) {
                snprintf(fdopt, sizeof(fdopt), "fd=%d", parse_fd(o->name, a1));
                w[n++] = fdopt;
        }
        if (pending_any(pd)) {
                bool tmpfs = streq(o->arg, "tmpfs");
                if (!tmpfs && !streq(o->arg, "dir") && !streq(o->arg, "file"))
                        die("usage", "--size/--perms must come right before --tmpfs, --dir or --file");
                if (pd->size_bytes != PROFILE_UNSET && !tmpfs)
                        die("usage", "--size applies to --tmpfs only");
                if (pd->size_bytes != PROFILE_UNSET) {
                        snprintf(sizeopt, sizeof(sizeopt), "size=%llu", (unsigned long long) pd->size_bytes);
                        w[n++] = sizeopt;
                }
                if (pd->perms) {
                        snprintf(modeopt, sizeof(modeopt), "mode=%s", pd->perms);
                        w[n++] = modeopt;
                }
                *pd = (struct pending) { .size_bytes = PROFILE_UNSET };
        }
        set_words(l, "fs", o->arg, w, n, origin);
}

static void apply_set(struct launch *l, const char *a1, const char *origin) {
        const char *dot = strchr(a1, '.'), *eq = strchr(a1, '=');
        char section[64], key[64];

        if (!dot || !eq || dot > eq || dot == a1 || eq == dot + 1)
                die("usage", "--set %s: expected SECTION.KEY=VALUE", a1);
        if ((size_t) (dot - a1) >= sizeof(section) || (size_t) (eq - dot - 1) >= sizeof(key))
                die("usage", "--set %s: section or key too long", a1);
        snprintf(section, sizeof(section), "%.*s", (int) (dot - a1), a1);
        snprintf(key, sizeof(key), "%.*s", (int) (eq - dot - 1), dot + 1);
        set_key(l, section, key, eq + 1, origin);
}

static void apply_setenv(struct launch *l, const char *name, const char *value, const char *origin) {
        if (strchr(name, '='))
                die("usage", "--setenv %s: variable name contains '='", name);
        _cleanup_free_ char *kv = NULL;
        if (asprintf(&kv, "%s=%s", name, value) < 0)
                die("usage", "%s", strerror(ENOMEM));
        const char *w[] = { kv };
        set_words(l, "env", "set", w, 1, origin);
}

static void apply_pass_fd(struct launch *l, const struct opt *o, const char *a1) {
        int fd = parse_fd(o->name, a1);
        if (l->n_pass_fds >= LAUNCH_MAX_PASS_FDS)
                die("usage", "--pass-fd: at most %d", LAUNCH_MAX_PASS_FDS);
        if (fd <= 2)
                die("usage", "--pass-fd %d: 0, 1 and 2 are always passed", fd);
        if (fcntl(fd, F_SETFD, 0) < 0)
                die("usage", "--pass-fd %d: %s", fd, strerror(errno));
        l->pass_fds[l->n_pass_fds++] = fd;
}

/* Pass 2: one option, in order, as the profile key it stands for. */
static void apply_option(struct launch *l, const struct opt *o, const char *a1, const char *a2, struct pending *pd) {
        char origin[64];
        snprintf(origin, sizeof(origin), "command line: %s", o->name);

        switch (o->id) {
        case O_PROFILE:
        case O_STATUS_FD:
        case O_HELP:
        case O_VERSION:
        case O_CHECK_HOST:
                break;
        case O_SET:
                apply_set(l, a1, origin);
                break;
        case O_TIMEOUT:
                set_key(l, "limits", "timeout", a1, origin);
                break;
        case O_SETENV:
                apply_setenv(l, a1, a2, origin);
                break;
        case O_UNSETENV:
        case O_KEEPENV: {
                const char *w[] = { a1 };
                set_words(l, "env", o->id == O_KEEPENV ? "keep" : "unset", w, 1, origin);
                break;
        }
        case O_CLEARENV:
                set_key(l, "env", "clear", "yes", origin);
                break;
        case O_CHDIR: {
                const char *w[] = { a1 };
                set_words(l, "fs", "chdir", w, 1, origin);
                break;
        }
        case O_HOSTNAME:
        case O_UID:
        case O_GID:
                set_key(l, "sandbox", o->arg, a1, origin);
                break;
        case O_FS2: {
                _cleanup_free_ char *src = streq(o->arg, "symlink") ? strdup(a1) : absolute_source(o->name, a1);
                if (!src)
                        die("usage", "%s", strerror(ENOMEM));
                const char *w[] = { src, a2 };
                set_words(l, "fs", o->arg, w, 2, origin);
                break;
        }
        case O_FILE:
        case O_FS1:
                apply_fs_dest(l, o, a1, a2, origin, pd);
                break;
        case O_SIZE:
                if (parse_size(a1, &pd->size_bytes) < 0)
                        die("usage", "--size %s: not a size", a1);
                return;
        case O_PERMS: {
                mode_t m;
                if (parse_mode(a1, &m) < 0)
                        die("usage", "--perms %s: not an octal mode", a1);
                pd->perms = a1;
                return;
        }
        case O_UNSHARE_ALL:
                set_namespaces(l, PROFILE_NS_ALL, origin);
                break;
        case O_UNSHARE:
                set_namespaces(l, l->profile.namespaces | profile_ns_from_name(o->arg), origin);
                break;
        case O_SHARE:
                set_key(l, "sandbox", "share", o->arg, origin);
                break;
        case O_BOOL_YES:
                set_key(l, "sandbox", o->arg, "yes", origin);
                break;
        case O_PTY:
                set_key(l, "sandbox", "pty", o->arg, origin);
                break;
        case O_PASS_FD:
                apply_pass_fd(l, o, a1);
                break;
        case O_INFO_FD:
                l->info_fd = parse_own_fd(o->name, a1);
                break;
        case O_BLOCK_FD:
                l->block_fd = parse_own_fd(o->name, a1);
                break;
        case O_SYNC_FD:
                l->sync_fd = parse_own_fd(o->name, a1);
                break;
        case O_PRINT_PROFILE:
                l->print_profile = true;
                break;
        case O_CHECK:
                l->check = true;
                break;
        }
        if (pending_any(pd))
                die("usage", "--size/--perms must come right before --tmpfs, --dir or --file");
}

void cli_parse(struct launch *l, int argc, char **argv) {
        int cmd = find_command(argc, argv);
        int opts_end = cmd == argc ? argc : (streq(argv[cmd - 1], "--") ? cmd - 1 : cmd);

        /* The status fd first, so that profile errors reach it too. */
        for (int i = 1; i < opts_end; i++) {
                const char *inl;
                const struct opt *o = find_opt(argv[i], &inl);
                if (o->id == O_STATUS_FD)
                        launch_status_fd = l->status_fd = parse_own_fd(argv[i], inl ? inl : argv[i + 1]);
                i += inl ? 0 : o->nargs;
        }

        profile_init(&l->profile);
        load_profiles(l, argv, opts_end);

        struct pending pd = { .size_bytes = PROFILE_UNSET };
        for (int i = 1; i < opts_end; i++) {
                const char *inl;
                const struct opt *o = find_opt(argv[i], &inl);
                const char *a1 = inl ? inl : (o->nargs >= 1 ? argv[i + 1] : NULL);
                const char *a2 = o->nargs >= 2 ? argv[i + 2] : NULL;
                i += inl ? 0 : o->nargs;
                apply_option(l, o, a1, a2, &pd);
        }
        if (pending_any(&pd))
                die("usage", "--size/--perms must come right before --tmpfs, --dir or --file");

        struct sbx_error err = { 0 };
        if (profile_validate(&l->profile, &err) < 0)
                die("profile", "%s", err.msg);
        /* Recording connections takes eBPF programs on the job's cgroup,
         * which need root: asked of sbx-launch alone, it fails closed. */
        if (l->profile.net_audit && !l->print_profile)
                die("profile", "[net] audit = yes: the connection audit is attached by sbx-supervisord (eBPF on the job's cgroup); "
                               "sbx-launch alone cannot record connections");

        if (cmd >= argc && !l->print_profile && !l->check)
                die("usage", "no command given (see --help)");
        l->argv = argv + cmd;
}
