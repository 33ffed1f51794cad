/* SPDX-License-Identifier: Apache-2.0 */
/* What a job is made of on the host: a cgroup below the helper's root and
 * a tmpfs workspace below the helper's directory, both named by the helper
 * and reached through the descriptors of their parents. Neither parent is
 * writable by a job uid or by the front, so no one can plant a symlink or
 * a directory where the helper makes one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd-util.h"
#include "jobfs.h"
#include "macro.h"

/* A small control file (cgroup.events, cgroup.controllers). */
static int read_small(int dirfd, const char *name, char *buf, size_t len) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = pread(fd, buf, len - 1, 0);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return 0;
}

static bool has_word(const char *list, const char *w) {
        size_t n = strlen(w);
        for (const char *s = list; (s = strstr(s, w)); s += n)
                if ((s == list || s[-1] == ' ') && (s[n] == ' ' || s[n] == '\n' || s[n] == '\0'))
                        return true;
        return false;
}

unsigned jobfs_cgroup_controllers(int root_fd) {
        char buf[512];
        unsigned have = 0;
        if (read_small(root_fd, "cgroup.controllers", buf, sizeof(buf)) < 0)
                return 0;
        if (has_word(buf, "memory") && fd_write_at(root_fd, "cgroup.subtree_control", "+memory") == 0)
                have |= PRIVD_LIMIT_MEMORY;
        if (has_word(buf, "pids") && fd_write_at(root_fd, "cgroup.subtree_control", "+pids") == 0)
                have |= PRIVD_LIMIT_PIDS;
        if (has_word(buf, "cpu") && fd_write_at(root_fd, "cgroup.subtree_control", "+cpu") == 0)
                have |= PRIVD_LIMIT_CPU;
        return have;
}

int jobfs_cgroup_make(int root_fd, const char *name, unsigned have, const struct privd_job_open *m, int *ret_fd,
                      unsigned *ret_limits) {
        char v[64];
        unsigned limits = 0;
        /* A leftover of the same name (a helper that died) is not reused:
         * its processes are not this job's. */
        if (mkdirat(root_fd, name, 0755) < 0)
                return -errno;
        int fd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                int r = -errno;
                unlinkat(root_fd, name, AT_REMOVEDIR);
                return r;
        }
        if ((have & PRIVD_LIMIT_MEMORY) && m->memory_max) {
                snprintf(v, sizeof(v), "%" PRIu64, m->memory_max);
                if (fd_write_at(fd, "memory.max", v) == 0) {
                        (void) fd_write_at(fd, "memory.swap.max", "0");
                        limits |= PRIVD_LIMIT_MEMORY;
                }
        }
        if ((have & PRIVD_LIMIT_PIDS) && m->pids_max) {
                snprintf(v, sizeof(v), "%" PRIu64, m->pids_max);
                if (fd_write_at(fd, "pids.max", v) == 0)
                        limits |= PRIVD_LIMIT_PIDS;
        }
        /* QUOTA microseconds of CPU time in every 100 ms. */
        if ((have & PRIVD_LIMIT_CPU) && m->cpu_milli) {
                snprintf(v, sizeof(v), "%" PRIu64 " 100000", m->cpu_milli * 100);
                if (fd_write_at(fd, "cpu.max", v) == 0)
                        limits |= PRIVD_LIMIT_CPU;
        }
        *ret_fd = fd;
        *ret_limits = limits;
        return 0;
}

static bool populated(int cg_fd) {
        char buf[256];
        if (read_small(cg_fd, "cgroup.events", buf, sizeof(buf)) < 0)
                return false;
        return !strstr(buf, "populated 0");
}

int jobfs_cgroup_kill(int cg_fd) {
        return fd_write_at(cg_fd, "cgroup.kill", "1");
}

int jobfs_cgroup_wait_empty(int cg_fd) {
        for (int i = 0; i < 200 && populated(cg_fd); i++)
                poll(NULL, 0, 10);
        return populated(cg_fd) ? -EBUSY : 0;
}

/* Kill, wait (at most about 2 s) until no process is left, remove. */
int jobfs_cgroup_remove(int root_fd, int cg_fd, const char *name) {
        (void) jobfs_cgroup_kill(cg_fd);
        (void) jobfs_cgroup_wait_empty(cg_fd);
        if (unlinkat(root_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int jobfs_workspace_make(int ws_fd, const char *name, uid_t uid, gid_t gid, uint64_t bytes, bool *ret_noswap, int *ret_fd) {
        char v[32];
        if (mkdirat(ws_fd, name, 0700) < 0)
                return -errno;
        /* The new mount API: the tmpfs is made and attached by descriptor,
         * so no path is looked up in a directory anyone else can change.
         * Sized in bytes and inodes (the job's disk quota); nosuid and
         * nodev, so nothing a job leaves there (a setuid shell, a device
         * node) means anything to the host; root directory owned by
         * uid:gid (the front's, until WS_HANDOVER), mode 0700. */
        _cleanup_close_ int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
        if (fs < 0)
                return -errno;
        uint64_t inodes = bytes / 1024 > 4096 ? bytes / 1024 : 4096;
        snprintf(v, sizeof(v), "%" PRIu64, bytes);
        if (fsconfig(fs, FSCONFIG_SET_STRING, "size", v, 0) < 0)
                return -errno;
        snprintf(v, sizeof(v), "%" PRIu64, inodes);
        if (fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", v, 0) < 0 || fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0700", 0) < 0)
                return -errno;
        snprintf(v, sizeof(v), "%u", (unsigned) uid);
        if (fsconfig(fs, FSCONFIG_SET_STRING, "uid", v, 0) < 0)
                return -errno;
        snprintf(v, sizeof(v), "%u", (unsigned) gid);
        if (fsconfig(fs, FSCONFIG_SET_STRING, "gid", v, 0) < 0)
                return -errno;
        /* noswap (Linux 6.4 on): its pages never go to a swap device; an
         * older kernel refuses the flag, and the front is told. */
        *ret_noswap = fsconfig(fs, FSCONFIG_SET_FLAG, "noswap", NULL, 0) == 0;
        if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                return -errno;
        _cleanup_close_ int mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
        if (mnt < 0)
                return -errno;
        if (move_mount(mnt, "", ws_fd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return -errno;
        struct open_how how = {
                .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        int fd = (int) syscall(SYS_openat2, ws_fd, name, &how, sizeof(how));
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

int jobfs_workspace_remove(const char *ws_path, int ws_fd, const char *name) {
        char path[4200];
        /* umount2 takes a path: the helper's own directory (from its
         * command line, root-owned, checked at start) and the name it made. */
        snprintf(path, sizeof(path), "%s/%s", ws_path, name);
        /* EINVAL: not a mount point (a JOB_OPEN that failed before it). */
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                return -errno;
        if (unlinkat(ws_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

/* Kernel filesystems whose directories a front's uid may own (its own
 * /proc/PID, a delegated cgroup) but that are no bundle: the job would
 * see the front's process or its cgroup's files. */
static bool pseudo_fs(int fd) {
        static const long types[] = { PROC_SUPER_MAGIC, SYSFS_MAGIC,  CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC, DEVPTS_SUPER_MAGIC,
                                      DEBUGFS_MAGIC,    TRACEFS_MAGIC, SECURITYFS_MAGIC,  BPF_FS_MAGIC,        NSFS_MAGIC };
        struct statfs sf;
        if (fstatfs(fd, &sf) < 0)
                return true;
        for (size_t i = 0; i < ARRAY_SIZE(types); i++)
                if ((long) sf.f_type == types[i])
                        return true;
        return false;
}

static bool sha256_name(const char *s) {
        size_t n = 0;
        for (; s[n]; n++)
                if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return false;
        return n == 64;
}

/* The same directory as st, found by name in the helper's own mount
 * namespace: CACHE/<sha256>/tree, each name checked, reached with
 * openat2 beneath the cache without symlinks and without crossing a
 * mount (so nothing mounted over a tree is taken for it), and kept only
 * if it is the very inode the front sent. */
static int cache_find(const char *cache, const struct stat *st, char *why, size_t why_len) {
        _cleanup_close_ int cfd = open(cache, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0) {
                snprintf(why, why_len, "bundle cache %s", cache);
                return -errno;
        }
        int dup_fd = fcntl(cfd, F_DUPFD_CLOEXEC, 3);
        DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
        if (!d) {
                if (dup_fd >= 0)
                        close(dup_fd);
                snprintf(why, why_len, "bundle cache %s", cache);
                return -errno;
        }
        int found = -ENOENT;
        for (struct dirent *de; found < 0 && (de = readdir(d));) {
                char path[80];
                if (!sha256_name(de->d_name))
                        continue;
                memcpy(path, de->d_name, 64);
                memcpy(path + 64, "/tree", sizeof("/tree"));
                struct open_how how = {
                        .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
                };
                int fd = (int) syscall(SYS_openat2, cfd, path, &how, sizeof(how));
                struct stat t;
                if (fd >= 0 && fstat(fd, &t) == 0 && t.st_dev == st->st_dev && t.st_ino == st->st_ino)
                        found = fd;
                else if (fd >= 0)
                        close(fd);
        }
        closedir(d);
        if (found < 0)
                snprintf(why, why_len, "in another mount namespace, and no tree of %s is that directory", cache);
        return found;
}

int jobfs_bundle_mount(int dir_fd, uid_t front, const char *cache, char *why, size_t why_len) {
        struct stat st;
        if (fstat(dir_fd, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode)) {
                snprintf(why, why_len, "not a directory");
                return -ENOTDIR;
        }
        /* The front's own cache, never a directory of root's (/, /etc) or
         * of a job's uid: the front could name those, not write them. */
        if (st.st_uid != front) {
                snprintf(why, why_len, "a directory owned by uid %u, not the front's %u", (unsigned) st.st_uid, (unsigned) front);
                return -EPERM;
        }
        if (pseudo_fs(dir_fd)) {
                snprintf(why, why_len, "a directory of a kernel filesystem (proc, sysfs, cgroup...)");
                return -EPERM;
        }
        /* Not AT_RECURSIVE: the clone is that one filesystem's tree below
         * the directory, without what is mounted inside it. */
        _cleanup_close_ int mnt = (int) syscall(SYS_open_tree, dir_fd, "",
                                                OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_NO_AUTOMOUNT);
        /* A mount of another mount namespace cannot be cloned (EINVAL):
         * the front's, when it runs in a unit of its own (ProtectSystem=
         * and the like). The helper then takes the same directory from
         * the cache as it sees it itself. */
        if (mnt < 0 && errno == EINVAL && cache) {
                _cleanup_close_ int same = cache_find(cache, &st, why, why_len);
                if (same < 0)
                        return same;
                mnt = (int) syscall(SYS_open_tree, same, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_NO_AUTOMOUNT);
        }
        if (mnt < 0) {
                snprintf(why, why_len, "open_tree");
                return -errno;
        }
        struct mount_attr ma = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };
        if (syscall(SYS_mount_setattr, mnt, "", AT_EMPTY_PATH, &ma, sizeof(ma)) < 0) {
                snprintf(why, why_len, "mount_setattr");
                return -errno;
        }
        return TAKE_FD(mnt);
}

/* Entries named by the helper: job-p<slot>-<gen>. */
static bool ours(const char *name) {
        return strncmp(name, "job-p", 5) == 0 && name[5] >= '0' && name[5] <= '9';
}

int jobfs_sweep(int cg_root_fd, const char *ws_path, int ws_fd) {
        int n = 0;
        int dup_fd = fcntl(cg_root_fd, F_DUPFD_CLOEXEC, 3);
        DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
        if (!d) {
                if (dup_fd >= 0)
                        close(dup_fd);
                return -errno;
        }
        for (struct dirent *de; (de = readdir(d));) {
                if (!ours(de->d_name))
                        continue;
                _cleanup_close_ int fd = openat(cg_root_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0 && jobfs_cgroup_remove(cg_root_fd, fd, de->d_name) == 0)
                        n++;
        }
        closedir(d);
        dup_fd = fcntl(ws_fd, F_DUPFD_CLOEXEC, 3);
        d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
        if (!d) {
                if (dup_fd >= 0)
                        close(dup_fd);
                return -errno;
        }
        for (struct dirent *de; (de = readdir(d));)
                if (ours(de->d_name) && jobfs_workspace_remove(ws_path, ws_fd, de->d_name) == 0)
                        n++;
        closedir(d);
        return n;
}
