/* SPDX-License-Identifier: Apache-2.0 */
/* Namespaces: which ones to create, the single-id user mapping, and the
 * --info-fd record a supervisor uses to find them. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/nsfs.h>

#include "fd-util.h"
#include "launch.h"

unsigned long ns_clone_flags(const struct profile *p) {
        /* user and mount are not optional: the sandbox is built from them. */
        unsigned long f = CLONE_NEWUSER | CLONE_NEWNS;
        if (p->namespaces & PROFILE_NS_PID)
                f |= CLONE_NEWPID;
        if (p->namespaces & PROFILE_NS_NET)
                f |= CLONE_NEWNET;
        if (p->namespaces & PROFILE_NS_IPC)
                f |= CLONE_NEWIPC;
        if (p->namespaces & PROFILE_NS_UTS)
                f |= CLONE_NEWUTS;
        if (p->namespaces & PROFILE_NS_CGROUP)
                f |= CLONE_NEWCGROUP;
        return f;
}

static int write_proc_self(int proc_self, const char *name, const char *text, struct sbx_error *err) {
        int r = fd_write_at(proc_self, name, text);
        return r < 0 ? sbx_error_set(err, r, "/proc/self/%s", name) : 0;
}

int ns_write_maps(uid_t inner_uid, uid_t outer_uid, gid_t inner_gid, gid_t outer_gid,
                  struct sbx_error *err) {
        char line[64];
        struct statfs sf;

        int proc = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (proc < 0)
                return sbx_error_set(err, errno, "/proc/self");
        /* Something mounted over /proc could take our writes and hand back a
         * different mapping; only write to the real procfs. */
        if (fstatfs(proc, &sf) < 0 || sf.f_type != PROC_SUPER_MAGIC) {
                close(proc);
                return sbx_error_msg(err, EPERM, "/proc/self: not a procfs");
        }
        /* setgroups must be denied before gid_map can be written by an
         * unprivileged user, and it stops the job from dropping
         * supplementary groups used as negative permissions. */
        int r = write_proc_self(proc, "setgroups", "deny", err);
        if (r == 0) {
                snprintf(line, sizeof(line), "%u %u 1\n", (unsigned) inner_uid, (unsigned) outer_uid);
                r = write_proc_self(proc, "uid_map", line, err);
        }
        if (r == 0) {
                snprintf(line, sizeof(line), "%u %u 1\n", (unsigned) inner_gid, (unsigned) outer_gid);
                r = write_proc_self(proc, "gid_map", line, err);
        }
        close(proc);
        return r;
}

int ns_write_info(int fd, pid_t pid) {
        static const char *const names[] = { "user", "mnt", "pid", "net", "ipc", "uts", "cgroup" };
        char buf[1024], path[64];
        size_t len = 0;

        len += (size_t) snprintf(buf, sizeof(buf), "{\"" SBX_STATUS_CHILD_PID "\": %d, \"" SBX_INFO_NAMESPACES "\": {", (int) pid);
        for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
                struct stat st;
                int r;
                if (i == 0) {
                        /* The user namespace that owns the sandbox's other
                         * namespaces, asked of the mount namespace: pid 1
                         * itself may move on into a nested one to lock out
                         * further nesting. */
                        snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int) pid);
                        int mnt = open(path, O_RDONLY | O_CLOEXEC);
                        int user = mnt < 0 ? -1 : ioctl(mnt, NS_GET_USERNS);
                        r = user < 0 ? -1 : fstat(user, &st);
                        if (user >= 0)
                                close(user);
                        if (mnt >= 0)
                                close(mnt);
                } else {
                        snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int) pid, names[i]);
                        r = stat(path, &st);
                }
                if (r < 0)
                        continue;
                len += (size_t) snprintf(buf + len, sizeof(buf) - len, "%s\"%s\": %llu",
                                         buf[len - 1] == '{' ? "" : ", ", names[i],
                                         (unsigned long long) st.st_ino);
        }
        len += (size_t) snprintf(buf + len, sizeof(buf) - len, "}}\n");
        ssize_t n = write(fd, buf, len);
        return n == (ssize_t) len ? 0 : -errno;
}
