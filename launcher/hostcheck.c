/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-launch --check-host: whether this machine gives the caller what sbx
 * needs, each requirement probed for real (a kernel version says little:
 * distributions turn features off with sysctls, LSMs and boot options) and,
 * where one is not met, the fix. Required means sbx-launch cannot run a
 * sandbox without it; the others lose one protection or one supervisor
 * feature, which the status record and the job results then report. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>

#include "launch.h"
#include "landlock.h"
#include "macro.h"

enum hc_level { HC_OK, HC_FAIL, HC_WARN };

struct hostcheck {
        FILE *out;
        int failed;        /* required checks not met */
};

static void hc_line(struct hostcheck *hc, enum hc_level level, const char *what, const char *fix,
                    const char *fmt, ...) _printf_(5, 6);
static void hc_line(struct hostcheck *hc, enum hc_level level, const char *what, const char *fix,
                    const char *fmt, ...) {
        static const char *const tag[] = { [HC_OK] = "ok", [HC_FAIL] = "MISSING", [HC_WARN] = "missing" };
        va_list ap;

        fprintf(hc->out, "%-8s %s: ", tag[level], what);
        va_start(ap, fmt);
        vfprintf(hc->out, fmt, ap);
        va_end(ap);
        fputc('\n', hc->out);
        if (level != HC_OK && fix)
                fprintf(hc->out, "         fix: %s\n", fix);
        if (level == HC_FAIL)
                hc->failed++;
}

/* The first line of a small /proc or /sys file, without its newline; "" if
 * it cannot be read. */
static void read_line(const char *path, char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");

        buf[0] = '\0';
        if (!f || !fgets(buf, (int) size, f))
                buf[0] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
}

static int write_file(const char *path, const char *s) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        size_t len = strlen(s);

        if (fd < 0)
                return -errno;
        if (write(fd, s, len) != (ssize_t) len)
                return -errno;
        return 0;
}

/* In a child: what the launcher does first, as the caller. Answers 0, or
 * the step that failed (1..4) with errno in the second byte of the pipe. */
enum ns_step { NS_OK, NS_UNSHARE, NS_IDMAP, NS_MOUNT, NS_FORK };
static const char *const ns_step_name[] = {
        [NS_UNSHARE] = "unshare(user, mount, pid, net, ipc, uts, cgroup)",
        [NS_IDMAP] = "writing the uid and gid maps of the new user namespace",
        [NS_MOUNT] = "mounting a tmpfs in the new mount namespace",
        [NS_FORK] = "starting the first process of the new pid namespace",
};

static _noreturn_ void ns_child(int fd) {
        unsigned char res[2] = { NS_OK, 0 };
        char map[64];
        uid_t uid = getuid();
        gid_t gid = getgid();

        if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                    CLONE_NEWCGROUP) < 0) {
                res[0] = NS_UNSHARE;
                goto out;
        }
        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned) uid);
        if (write_file("/proc/self/setgroups", "deny") < 0 || write_file("/proc/self/uid_map", map) < 0) {
                res[0] = NS_IDMAP;
                goto out;
        }
        snprintf(map, sizeof(map), "0 %u 1\n", (unsigned) gid);
        if (write_file("/proc/self/gid_map", map) < 0) {
                res[0] = NS_IDMAP;
                goto out;
        }
        /* AppArmor's userns restriction (Ubuntu 23.10 on) lets unshare
         * succeed and takes the capabilities away afterwards: only a mount
         * tells. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") < 0) {
                res[0] = NS_MOUNT;
                goto out;
        }
        pid_t pid = fork();
        if (pid < 0) {
                res[0] = NS_FORK;
                goto out;
        }
        if (pid == 0)
                _exit(0);
        int st;
        if (waitpid(pid, &st, 0) < 0) {
                res[0] = NS_FORK;
                goto out;
        }
        errno = 0;
out:
        res[1] = (unsigned char) (res[0] == NS_OK ? 0 : errno);
        if (write(fd, res, sizeof(res)) != (ssize_t) sizeof(res))
                _exit(2);
        _exit(0);
}

static void ns_fix(char *buf, size_t size) {
        char v[32];

        read_line("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", v, sizeof(v));
        if (streq(v, "1")) {
                snprintf(buf, size,
                         "AppArmor restricts unprivileged user namespaces "
                         "(kernel.apparmor_restrict_unprivileged_userns = 1, Ubuntu 23.10 and later); "
                         "allow sbx-launch with an AppArmor profile, see sbx-launch(1), HOST REQUIREMENTS");
                return;
        }
        read_line("/proc/sys/kernel/unprivileged_userns_clone", v, sizeof(v));
        if (streq(v, "0")) {
                snprintf(buf, size, "sysctl -w kernel.unprivileged_userns_clone=1 (and set it in /etc/sysctl.d)");
                return;
        }
        read_line("/proc/sys/user/max_user_namespaces", v, sizeof(v));
        if (streq(v, "0")) {
                snprintf(buf, size, "sysctl -w user.max_user_namespaces=15000 (and set it in /etc/sysctl.d)");
                return;
        }
        snprintf(buf, size,
                 "a kernel with CONFIG_USER_NS and the other namespaces; in a container, "
                 "one that allows nested user namespaces (see sbx-launch(1), HOST REQUIREMENTS)");
}

static void check_namespaces(struct hostcheck *hc) {
        int p[2];
        unsigned char res[2] = { 0, 0 };
        char fix[320];

        if (pipe2(p, O_CLOEXEC) < 0) {
                hc_line(hc, HC_FAIL, "namespaces", NULL, "cannot probe: pipe: %s", strerror(errno));
                return;
        }
        pid_t pid = fork();
        if (pid < 0) {
                hc_line(hc, HC_FAIL, "namespaces", NULL, "cannot probe: fork: %s", strerror(errno));
                close(p[0]);
                close(p[1]);
                return;
        }
        if (pid == 0) {
                close(p[0]);
                ns_child(p[1]);
        }
        close(p[1]);
        ssize_t n = read(p[0], res, sizeof(res));
        close(p[0]);
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        if (n != (ssize_t) sizeof(res)) {
                hc_line(hc, HC_FAIL, "namespaces", NULL, "cannot probe: the probing process died");
                return;
        }
        if (res[0] == NS_OK) {
                hc_line(hc, HC_OK, "namespaces", NULL,
                        "user, mount, pid, net, ipc, uts and cgroup namespaces work as uid %u",
                        (unsigned) getuid());
                return;
        }
        ns_fix(fix, sizeof(fix));
        hc_line(hc, HC_FAIL, "namespaces", fix, "%s failed as uid %u: %s", ns_step_name[res[0]],
                (unsigned) getuid(), strerror(res[1]));
}

/* The AppArmor restriction is reported even where sbx-launch is allowed:
 * a machine that meets it only through a profile should say so. */
static void check_apparmor(struct hostcheck *hc) {
        char v[32];

        read_line("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", v, sizeof(v));
        if (streq(v, "1"))
                fprintf(hc->out, "%-8s %s\n", "note",
                        "apparmor: unprivileged user namespaces are restricted; sbx-launch works only "
                        "where an AppArmor profile allows it userns (see sbx-launch(1), HOST REQUIREMENTS)");
}

static void check_seccomp(struct hostcheck *hc) {
        /* With filters built in, a NULL program is EFAULT; without, EINVAL. */
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL, 0, 0) < 0 && errno == EFAULT)
                hc_line(hc, HC_OK, "seccomp", NULL, "filter mode available");
        else
                hc_line(hc, HC_FAIL, "seccomp", "a kernel with CONFIG_SECCOMP_FILTER (every distribution kernel has it)",
                        "filter mode unavailable: %s", strerror(errno));
}

static void check_landlock(struct hostcheck *hc) {
        int abi = landlock_abi_version();

        if (abi == 0) {
                hc_line(hc, HC_WARN, "landlock",
                        "Linux 5.13 or later with landlock in the LSM list (CONFIG_LSM, or boot with "
                        "lsm=landlock,... added to the current list in /sys/kernel/security/lsm)",
                        "not available; profiles with landlock = best-effort run without it, "
                        "landlock = required fails");
                return;
        }
        if (abi < 4)
                hc_line(hc, HC_WARN, "landlock", "Linux 6.7 or later",
                        "ABI %d: file system rules only, no TCP port rules (ABI 4)", abi);
        else if (abi < 6)
                hc_line(hc, HC_WARN, "landlock", "Linux 6.12 or later",
                        "ABI %d: no abstract-socket and signal scoping (ABI 6)", abi);
        else
                hc_line(hc, HC_OK, "landlock", NULL, "ABI %d", abi);
}

static void check_openat2(struct hostcheck *hc) {
        struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS };
        int fd = (int) syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how));

        if (fd >= 0) {
                close(fd);
                hc_line(hc, HC_OK, "openat2", NULL, "mount destinations are resolved with openat2");
        } else
                hc_line(hc, HC_WARN, "openat2", "Linux 5.6 or later",
                        "unavailable (%s); mount destinations are opened one component at a time with O_NOFOLLOW instead",
                        strerror(errno));
}

/* The supervisor's per-job cgroups: cgroup v2 mounted alone, with the
 * controllers the limits use. Whether the daemon's own subtree is
 * delegated is its unit's business (Delegate=yes in the shipped one). */
static void check_cgroup(struct hostcheck *hc) {
        struct statfs sf;
        char ctrl[256], fix[160];

        if (statfs("/sys/fs/cgroup", &sf) < 0 || sf.f_type != CGROUP2_SUPER_MAGIC) {
                bool hybrid = statfs("/sys/fs/cgroup/unified", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
                hc_line(hc, HC_WARN, "cgroup v2",
                        "boot with systemd.unified_cgroup_hierarchy=1 (Linux 5.14 or later for cgroup.kill)",
                        "%s; sbx-supervisord runs jobs without cgroups of their own (limits by rlimits)",
                        hybrid ? "hybrid hierarchy: cgroup v2 has no controllers" : "/sys/fs/cgroup is not cgroup v2");
                return;
        }
        read_line("/sys/fs/cgroup/cgroup.controllers", ctrl, sizeof(ctrl));
        const char *missing[3];
        size_t n = 0;
        static const char *const want[] = { "memory", "pids", "cpu" };
        for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
                char pad[sizeof(ctrl) + 2], word[16];
                snprintf(pad, sizeof(pad), " %s ", ctrl);
                snprintf(word, sizeof(word), " %s ", want[i]);
                if (!strstr(pad, word))
                        missing[n++] = want[i];
        }
        if (n > 0) {
                snprintf(fix, sizeof(fix), "a kernel with the %s controller%s (and none of them bound to cgroup v1)",
                         missing[0], n > 1 ? "s named above" : "");
                hc_line(hc, HC_WARN, "cgroup v2", fix, "mounted, but without the %s%s%s%s%s controller%s", missing[0],
                        n > 1 ? ", " : "", n > 1 ? missing[1] : "", n > 2 ? ", " : "", n > 2 ? missing[2] : "",
                        n > 1 ? "s" : "");
                return;
        }
        /* cgroup.kill (5.14) exists in every cgroup but the root one. */
        bool kill = access("/sys/fs/cgroup/init.scope/cgroup.kill", F_OK) == 0 ||
                    access("/sys/fs/cgroup/system.slice/cgroup.kill", F_OK) == 0;
        if (!kill)
                hc_line(hc, HC_WARN, "cgroup v2", "Linux 5.14 or later",
                        "no cgroup.kill: sbx-supervisord kills a job's processes one by one");
        else
                hc_line(hc, HC_OK, "cgroup v2", NULL, "unified, with the memory, pids and cpu controllers and cgroup.kill");
}

static void check_kernel(struct hostcheck *hc) {
        struct utsname u;

        if (uname(&u) == 0)
                fprintf(hc->out, "%-8s kernel: %s %s %s\n", "info", u.sysname, u.release, u.machine);
}

int hostcheck_run(FILE *out) {
        struct hostcheck hc = { .out = out };

        check_kernel(&hc);
        check_namespaces(&hc);
        check_apparmor(&hc);
        check_seccomp(&hc);
        check_landlock(&hc);
        check_openat2(&hc);
        check_cgroup(&hc);
        if (fflush(out) != 0)
                return -errno;
        return hc.failed;
}
