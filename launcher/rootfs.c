/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox's root filesystem: a fresh tmpfs, filled by the profile's
 * [fs] operations in order, then pivot_root'ed with the old root detached.
 *
 * Every destination is resolved inside the new root one component at a
 * time with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS), creating missing directories as we go, and the
 * mount lands on the resolved fd through /proc/self/fd/N. A symlink placed at
 * a destination or in one of its parents (by an earlier bind of a
 * job-writable directory, or swapped in by a racing host process) therefore
 * makes setup fail instead of writing outside the new root (runc
 * CVE-2021-30465 and kin). Without openat2 (ENOSYS) the same walk uses
 * openat(O_NOFOLLOW) per component plus an fstat check, and the status
 * record says so. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "launch.h"

#define RESOLVE_IN_ROOT_FLAGS (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* The new root is mounted here before pivot_root. It shadows the host's
 * /tmp in our private mount namespace only, which is why every bind source
 * is opened before that mount. */
#define ROOTFS_STAGING "/tmp"

struct rootfs {
        int root;             /* O_PATH fd of the new root */
        bool openat2;         /* false once openat2 said ENOSYS */
        struct protections *prot;
        const char *step;
        struct sbx_error *err;
};

static void fdpath(char buf[static 32], int fd) {
        snprintf(buf, 32, "/proc/self/fd/%d", fd);
}

/* Open one path component (no '/') beneath dirfd without following any
 * symlink. */
static int open_component(struct rootfs *rf, int dirfd, const char *name, int flags, mode_t mode) {
        if (rf->openat2) {
                struct open_how how = {
                        .flags = (uint64_t) (flags | O_CLOEXEC),
                        .mode = (flags & O_CREAT) ? mode : 0,
                        .resolve = RESOLVE_IN_ROOT_FLAGS,
                };
                int fd = (int) syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
                if (fd >= 0 || errno != ENOSYS)
                        return fd;
                rf->openat2 = false;
        }
        if (streq(name, "..") || streq(name, ".")) {
                errno = EXDEV;
                return -1;
        }
        int fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -1;
        /* O_PATH|O_NOFOLLOW opens a symlink itself instead of failing. */
        struct stat st;
        if (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode)) {
                close(fd);
                errno = ELOOP;
                return -1;
        }
        return fd;
}

enum dest_kind {
        DEST_DIR,    /* a directory, created if missing */
        DEST_FILE,   /* a regular file, created empty if missing */
        DEST_EXIST,  /* anything that already exists */
};

/* Walk dest (absolute) beneath the new root. On success *ret_parent is the
 * parent directory's fd and name its last component (empty for "/"). */
static int resolve_parent(struct rootfs *rf, const char *dest, int *ret_parent, char name[static NAME_MAX + 1]) {
        char buf[PATH_MAX];
        if (strlen(dest) >= sizeof(buf))
                return sbx_error_msg(rf->err, ENAMETOOLONG, "%s: path too long", dest);
        strcpy(buf, dest);

        int dirfd = fcntl(rf->root, F_DUPFD_CLOEXEC, 3);
        if (dirfd < 0)
                return sbx_error_set(rf->err, errno, "%s", dest);
        name[0] = '\0';

        char *save = NULL;
        char *comp = strtok_r(buf, "/", &save);
        while (comp) {
                char *next = strtok_r(NULL, "/", &save);
                if (strlen(comp) > NAME_MAX) {
                        close(dirfd);
                        return sbx_error_msg(rf->err, ENAMETOOLONG, "%s: component too long", dest);
                }
                if (!next) {
                        strcpy(name, comp);
                        break;
                }
                int fd = open_component(rf, dirfd, comp, O_PATH | O_DIRECTORY, 0);
                if (fd < 0 && errno == ENOENT) {
                        if (mkdirat(dirfd, comp, 0755) < 0 && errno != EEXIST) {
                                int e = errno;
                                close(dirfd);
                                return sbx_error_set(rf->err, e, "%s", dest);
                        }
                        fd = open_component(rf, dirfd, comp, O_PATH | O_DIRECTORY, 0);
                }
                if (fd < 0) {
                        int e = errno;
                        close(dirfd);
                        return sbx_error_set(rf->err, e, "%s", dest);
                }
                close(dirfd);
                dirfd = fd;
                comp = next;
        }
        *ret_parent = dirfd;
        return 0;
}

/* Resolve dest to an O_PATH fd of the given kind; also returns its parent. */
static int resolve(struct rootfs *rf, const char *dest, enum dest_kind kind, mode_t mode,
                   int *ret_parent, char name[static NAME_MAX + 1], int *ret_fd) {
        int parent;
        int r = resolve_parent(rf, dest, &parent, name);
        if (r < 0)
                return r;
        if (!name[0]) {
                /* dest is "/" itself */
                *ret_parent = parent;
                *ret_fd = fcntl(rf->root, F_DUPFD_CLOEXEC, 3);
                return *ret_fd < 0 ? sbx_error_set(rf->err, errno, "%s", dest) : 0;
        }
        int flags = O_PATH | (kind == DEST_DIR ? O_DIRECTORY : 0);
        int fd = open_component(rf, parent, name, flags, 0);
        if (fd < 0 && errno == ENOENT && kind != DEST_EXIST) {
                if (kind == DEST_DIR) {
                        if (mkdirat(parent, name, mode) < 0 && errno != EEXIST)
                                goto fail;
                } else {
                        int c = open_component(rf, parent, name, O_WRONLY | O_CREAT | O_EXCL, mode);
                        if (c < 0 && errno != EEXIST)
                                goto fail;
                        if (c >= 0)
                                close(c);
                }
                fd = open_component(rf, parent, name, flags, 0);
        }
        if (fd < 0)
                goto fail;
        *ret_parent = parent;
        *ret_fd = fd;
        return 0;
fail:;
        int e = errno;
        close(parent);
        return sbx_error_set(rf->err, e, "%s", dest);
}

/* Set mount attributes on the mount whose root is parent/name (recursively
 * when asked). Falls back to a bind remount on kernels without
 * mount_setattr, keeping the flags the kernel locks in a user namespace. */
static int set_mount_attr(int parent, const char *name, uint64_t attr, bool recursive) {
        struct mount_attr ma = { .attr_set = attr };
        unsigned flags = AT_SYMLINK_NOFOLLOW | (recursive ? AT_RECURSIVE : 0) | (name[0] ? 0 : AT_EMPTY_PATH);
        if (syscall(SYS_mount_setattr, parent, name, flags, &ma, sizeof(ma)) == 0)
                return 0;
        if (errno != ENOSYS)
                return -errno;

        int fd = openat(parent, name[0] ? name : ".", O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        char p[32];
        struct statvfs sv;
        fdpath(p, fd);
        unsigned long mf = MS_REMOUNT | MS_BIND;
        if (fstatvfs(fd, &sv) == 0)
                mf |= sv.f_flag & (ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_NOATIME | ST_NODIRATIME | ST_RELATIME | ST_RDONLY);
        if (attr & MOUNT_ATTR_RDONLY)
                mf |= MS_RDONLY;
        if (attr & MOUNT_ATTR_NOSUID)
                mf |= MS_NOSUID;
        if (attr & MOUNT_ATTR_NODEV)
                mf |= MS_NODEV;
        int r = mount(NULL, p, NULL, mf, NULL) < 0 ? -errno : 0;
        close(fd);
        return r;
}

static int op_bind(struct rootfs *rf, const struct fs_op *op, int srcfd) {
        struct stat st;
        char name[NAME_MAX + 1], sp[32], dp[32];
        int parent, dst;

        if (fstat(srcfd, &st) < 0)
                return sbx_error_set(rf->err, errno, "%s", op->src);
        int r = resolve(rf, op->dest, S_ISDIR(st.st_mode) ? DEST_DIR : DEST_FILE, 0755, &parent, name, &dst);
        if (r < 0)
                return r;
        fdpath(sp, srcfd);
        fdpath(dp, dst);
        if (mount(sp, dp, NULL, MS_BIND | MS_REC, NULL) < 0)
                r = sbx_error_set(rf->err, errno, "%s -> %s", op->src, op->dest);
        close(dst);
        if (r == 0) {
                uint64_t attr = MOUNT_ATTR_NOSUID;
                if (op->type != FS_DEV_BIND)
                        attr |= MOUNT_ATTR_NODEV;
                if (op->type == FS_RO_BIND)
                        attr |= MOUNT_ATTR_RDONLY;
                r = set_mount_attr(parent, name, attr, true);
                if (r < 0)
                        r = sbx_error_set(rf->err, r, "%s: set mount flags", op->dest);
        }
        close(parent);
        return r;
}

static int op_tmpfs(struct rootfs *rf, const struct fs_op *op) {
        char name[NAME_MAX + 1], dp[32], opts[128];
        int parent, dst;
        int r = resolve(rf, op->dest, DEST_DIR, 0755, &parent, name, &dst);
        if (r < 0)
                return r;
        int n = snprintf(opts, sizeof(opts), "mode=%04o", op->mode_set ? (unsigned) op->mode : 0755u);
        if (op->size != PROFILE_UNSET)
                n += snprintf(opts + n, sizeof(opts) - (size_t) n, ",size=%llu", (unsigned long long) op->size);
        if (op->nr_inodes != PROFILE_UNSET)
                snprintf(opts + n, sizeof(opts) - (size_t) n, ",nr_inodes=%llu", (unsigned long long) op->nr_inodes);
        fdpath(dp, dst);
        if (mount("tmpfs", dp, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                r = sbx_error_set(rf->err, errno, "%s", op->dest);
        close(dst);
        close(parent);
        return r;
}

static int op_dir(struct rootfs *rf, const struct fs_op *op) {
        char name[NAME_MAX + 1], dp[32];
        int parent, dst;
        int r = resolve(rf, op->dest, DEST_DIR, 0755, &parent, name, &dst);
        if (r < 0)
                return r;
        fdpath(dp, dst);
        /* chmod through the fd: the path may be under a host bind where a
         * racing process could swap in a symlink. */
        if (op->mode_set && chmod(dp, op->mode) < 0)
                r = sbx_error_set(rf->err, errno, "%s", op->dest);
        close(dst);
        close(parent);
        return r;
}

static int op_symlink(struct rootfs *rf, const struct fs_op *op) {
        char name[NAME_MAX + 1];
        int parent;
        int r = resolve_parent(rf, op->dest, &parent, name);
        if (r < 0)
                return r;
        if (!name[0])
                r = sbx_error_msg(rf->err, EEXIST, "/: cannot be a symlink");
        else if (symlinkat(op->src, parent, name) < 0) {
                int e = errno;
                char cur[PATH_MAX];
                ssize_t n = e == EEXIST ? readlinkat(parent, name, cur, sizeof(cur) - 1) : -1;
                /* The same link already there (merged profiles) is fine. */
                if (n >= 0) {
                        cur[n] = '\0';
                        if (streq(cur, op->src))
                                e = 0;
                }
                if (e)
                        r = sbx_error_set(rf->err, e, "%s", op->dest);
        }
        close(parent);
        return r;
}

static int copy_fd(int in, int out) {
        char buf[65536];
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                for (ssize_t off = 0; off < n;) {
                        ssize_t w = write(out, buf + off, (size_t) (n - off));
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0)
                                return -errno;
                        off += w;
                }
        }
}

static int op_file(struct rootfs *rf, const struct fs_op *op) {
        char name[NAME_MAX + 1];
        int parent;
        int r = resolve_parent(rf, op->dest, &parent, name);
        if (r < 0)
                return r;
        mode_t mode = op->mode_set ? op->mode : 0644;
        /* O_EXCL: never write into something already there, such as a host
         * file bound read-write by an earlier operation. */
        int fd = name[0] ? open_component(rf, parent, name, O_WRONLY | O_CREAT | O_EXCL, mode) : -1;
        if (fd < 0) {
                r = sbx_error_set(rf->err, name[0] ? errno : EISDIR, "%s", op->dest);
                close(parent);
                return r;
        }
        if (fchmod(fd, mode) < 0)
                r = -errno;
        else if (op->fd >= 0)
                r = copy_fd(op->fd, fd);
        else if (op->data) {
                for (size_t off = 0; off < op->data_len && r == 0;) {
                        ssize_t w = write(fd, op->data + off, op->data_len - off);
                        if (w < 0 && errno != EINTR)
                                r = -errno;
                        else if (w > 0)
                                off += (size_t) w;
                }
        }
        if (r < 0)
                sbx_error_set(rf->err, r, "%s", op->dest);
        close(fd);
        close(parent);
        return r;
}

static int mount_pseudo(struct rootfs *rf, const struct fs_op *op, const char *fstype, unsigned long flags,
                        const char *data, int *ret_parent, char *ret_name) {
        char dp[32], local[NAME_MAX + 1];
        char *name = ret_name ? ret_name : local;
        int parent, dst;
        int r = resolve(rf, op->dest, DEST_DIR, 0755, &parent, name, &dst);
        if (r < 0)
                return r;
        fdpath(dp, dst);
        if (mount(fstype, dp, fstype, flags, data) < 0)
                r = sbx_error_set(rf->err, errno, "%s", op->dest);
        close(dst);
        if (r < 0 || !ret_parent)
                close(parent);
        else
                *ret_parent = parent;
        return r;
}

static int op_proc(struct rootfs *rf, const struct fs_op *op) {
        char name[NAME_MAX + 1];
        int parent;
        int r = mount_pseudo(rf, op, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, &parent, name);
        if (r < 0)
                return r;
        /* Re-open: the fd we mounted on is the directory underneath. */
        int procfd = open_component(rf, parent, name, O_PATH | O_DIRECTORY, 0);
        close(parent);
        if (procfd < 0)
                return sbx_error_set(rf->err, errno, "%s", op->dest);
        r = harden_proc(procfd, rf->prot, rf->err);
        close(procfd);
        if (r < 0)
                rf->step = "proc-mask";
        return r;
}

/* [security] sys = yes: a read-only /sys. A sysfs of our own shows the
 * sandbox's network namespace; the kernel allows it only there, so with the
 * host's network the host's /sys is bound read-only instead. */
static int op_sys(struct rootfs *rf) {
        static const struct fs_op sys = { .type = FS_DIR, .dest = "/sys" };
        char dp[32], name[NAME_MAX + 1];
        int parent, dst;
        int r = resolve(rf, sys.dest, DEST_DIR, 0755, &parent, name, &dst);
        if (r < 0)
                return r;
        fdpath(dp, dst);
        if (mount("sysfs", dp, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) {
                if (errno != EPERM)
                        r = sbx_error_set(rf->err, errno, "/sys: mount sysfs");
                else if (mount("/sys", dp, NULL, MS_BIND | MS_REC, NULL) < 0)
                        r = sbx_error_set(rf->err, errno, "/sys: bind the host's");
                else {
                        r = set_mount_attr(parent, name, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                                           true);
                        if (r < 0)
                                sbx_error_set(rf->err, -r, "/sys: make read-only");
                }
        }
        close(dst);
        close(parent);
        return r;
}

/* A minimal /dev: a small tmpfs with the harmless host devices bound in
 * (device nodes cannot be created in a user namespace), a private devpts
 * instance and a world-writable shm directory. */
static int op_dev(struct rootfs *rf, const struct fs_op *op) {
        static const char *const devices[] = { "null", "zero", "full", "random", "urandom", "tty" };
        static const struct { const char *target, *name; } links[] = {
                { "pts/ptmx", "ptmx" }, { "/proc/self/fd", "fd" }, { "/proc/self/fd/0", "stdin" },
                { "/proc/self/fd/1", "stdout" }, { "/proc/self/fd/2", "stderr" },
        };
        char name[NAME_MAX + 1], p[32], src[32];
        int parent;
        int r = mount_pseudo(rf, op, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64", &parent, name);
        if (r < 0)
                return r;
        int dev = open_component(rf, parent, name, O_PATH | O_DIRECTORY, 0);
        close(parent);
        if (dev < 0)
                return sbx_error_set(rf->err, errno, "%s", op->dest);

        for (size_t i = 0; i < ARRAY_SIZE(devices) && r == 0; i++) {
                int c = open_component(rf, dev, devices[i], O_WRONLY | O_CREAT | O_EXCL, 0444);
                if (c < 0) {
                        r = sbx_error_set(rf->err, errno, "%s/%s", op->dest, devices[i]);
                        break;
                }
                close(c);
                int t = open_component(rf, dev, devices[i], O_PATH, 0);
                if (t < 0) {
                        r = sbx_error_set(rf->err, errno, "%s/%s", op->dest, devices[i]);
                        break;
                }
                snprintf(src, sizeof(src), "/dev/%s", devices[i]);
                fdpath(p, t);
                if (mount(src, p, NULL, MS_BIND, NULL) < 0)
                        r = sbx_error_set(rf->err, errno, "%s", src);
                close(t);
        }
        if (r == 0 && (mkdirat(dev, "pts", 0755) < 0 || mkdirat(dev, "shm", 01777) < 0))
                r = sbx_error_set(rf->err, errno, "%s", op->dest);
        if (r == 0) {
                int t = open_component(rf, dev, "shm", O_PATH | O_DIRECTORY, 0);
                if (t >= 0) {
                        fdpath(p, t);
                        if (chmod(p, 01777) < 0)
                                r = sbx_error_set(rf->err, errno, "%s/shm", op->dest);
                        close(t);
                }
                t = open_component(rf, dev, "pts", O_PATH | O_DIRECTORY, 0);
                if (t < 0)
                        r = sbx_error_set(rf->err, errno, "%s/pts", op->dest);
                else {
                        fdpath(p, t);
                        /* A new devpts instance: the job sees only its own
                         * terminals. */
                        if (r == 0 && mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC,
                                            "newinstance,ptmxmode=0666,mode=620") < 0)
                                r = sbx_error_set(rf->err, errno, "%s/pts", op->dest);
                        close(t);
                }
        }
        for (size_t i = 0; i < ARRAY_SIZE(links) && r == 0; i++)
                if (symlinkat(links[i].target, dev, links[i].name) < 0)
                        r = sbx_error_set(rf->err, errno, "%s/%s", op->dest, links[i].name);
        close(dev);
        return r;
}

static int op_remount_ro(struct rootfs *rf, const struct fs_op *op) {
        char name[NAME_MAX + 1], p[32];
        int parent, dst;
        int r = resolve(rf, op->dest, DEST_EXIST, 0, &parent, name, &dst);
        if (r < 0)
                return r;
        r = set_mount_attr(parent, name, MOUNT_ATTR_RDONLY, true);
        if (r == -EINVAL) {
                /* Not a mount point yet: make it one, then flip it. */
                fdpath(p, dst);
                r = mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0 ? -errno : 0;
                if (r == 0)
                        r = set_mount_attr(parent, name, MOUNT_ATTR_RDONLY, true);
        }
        if (r < 0)
                sbx_error_set(rf->err, r, "%s", op->dest);
        close(dst);
        close(parent);
        return r;
}

const char *rootfs_chdir(const struct profile *p) {
        const char *dir = "/";
        for (size_t i = 0; i < p->n_fs; i++)
                if (p->fs[i].type == FS_CHDIR)
                        dir = p->fs[i].dest;
        return dir;
}

static bool op_has_source(const struct fs_op *op) {
        return op->type == FS_BIND || op->type == FS_RO_BIND || op->type == FS_DEV_BIND;
}

static const char *op_step(const struct fs_op *op) {
        static char buf[32];
        snprintf(buf, sizeof(buf), "%s%s", fs_op_type_name(op->type), op->try_ ? "-try" : "");
        return buf;
}

int rootfs_setup(const struct profile *p, struct protections *prot, const char **ret_step,
                 struct sbx_error *err) {
        struct rootfs rf = { .root = -1, .openat2 = true, .prot = prot, .step = "rootfs", .err = err };
        int stack_srcs[32];
        int *srcs = p->n_fs <= ARRAY_SIZE(stack_srcs) ? stack_srcs : calloc(p->n_fs, sizeof(int));
        int r = 0;

        *ret_step = "rootfs";
        if (!srcs)
                return sbx_error_set(err, ENOMEM, "rootfs");

        /* Mounts made from here on must never reach the host's mount table
         * (and host mounts appearing later must not reach us either way
         * round): slave, recursively, before anything else. */
        if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0) {
                r = sbx_error_set(err, errno, "/: make slave");
                goto out_free;
        }

        /* Open every bind source while the host tree is still whole. */
        for (size_t i = 0; i < p->n_fs; i++) {
                srcs[i] = -1;
                const struct fs_op *op = &p->fs[i];
                if (!op_has_source(op))
                        continue;
                srcs[i] = open(op->src, O_PATH | O_CLOEXEC);
                if (srcs[i] < 0 && !(op->try_ && errno == ENOENT)) {
                        r = sbx_error_set(err, errno, "%s", op->src);
                        *ret_step = op_step(op);
                        for (size_t j = 0; j < i; j++)
                                if (srcs[j] >= 0)
                                        close(srcs[j]);
                        goto out_free;
                }
        }

        if (mount("tmpfs", ROOTFS_STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0) {
                r = sbx_error_set(err, errno, "new root tmpfs on " ROOTFS_STAGING);
                goto out_close;
        }
        rf.root = open(ROOTFS_STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rf.root < 0) {
                r = sbx_error_set(err, errno, "new root");
                goto out_close;
        }

        /* Before the profile's own operations, which may bind over parts. */
        if (p->sys) {
                rf.step = *ret_step = "sys";
                r = op_sys(&rf);
        }
        for (size_t i = 0; i < p->n_fs && r == 0; i++) {
                const struct fs_op *op = &p->fs[i];
                rf.step = op_step(op);
                switch (op->type) {
                case FS_BIND:
                case FS_RO_BIND:
                case FS_DEV_BIND:
                        if (srcs[i] >= 0)
                                r = op_bind(&rf, op, srcs[i]);
                        break;
                case FS_TMPFS:
                        r = op_tmpfs(&rf, op);
                        break;
                case FS_DIR:
                        r = op_dir(&rf, op);
                        break;
                case FS_SYMLINK:
                        r = op_symlink(&rf, op);
                        break;
                case FS_FILE:
                        r = op_file(&rf, op);
                        break;
                case FS_PROC:
                        r = op_proc(&rf, op);
                        break;
                case FS_DEV:
                        r = op_dev(&rf, op);
                        break;
                case FS_MQUEUE:
                        r = mount_pseudo(&rf, op, "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, NULL, NULL);
                        break;
                case FS_REMOUNT_RO:
                        r = op_remount_ro(&rf, op);
                        break;
                case FS_CHDIR:
                        break;
                }
                if (r < 0)
                        *ret_step = rf.step;
        }
        if (r < 0)
                goto out_close;

        /* pivot_root(".", ".") stacks the old root under the new one; the
         * detach then drops it (and every host mount under it) at once. */
        rf.step = *ret_step = "pivot_root";
        if (fchdir(rf.root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0) {
                r = sbx_error_set(err, errno, ROOTFS_STAGING);
                goto out_close;
        }
        if (umount2(".", MNT_DETACH) < 0) {
                r = sbx_error_set(err, errno, "old root: detach");
                goto out_close;
        }
        if (chdir("/") < 0) {
                r = sbx_error_set(err, errno, "/");
                goto out_close;
        }
        /* The root tmpfs only holds mount points and files from the
         * profile; a job that needs to write gets an explicit tmpfs. */
        r = set_mount_attr(AT_FDCWD, "/", MOUNT_ATTR_RDONLY, false);
        if (r < 0) {
                *ret_step = "rootfs";
                sbx_error_set(err, r, "/: make read-only");
                goto out_close;
        }
        prot->openat2 = rf.openat2;

out_close:
        for (size_t i = 0; i < p->n_fs; i++)
                if (srcs[i] >= 0)
                        close(srcs[i]);
        if (rf.root >= 0)
                close(rf.root);
out_free:
        if (srcs != stack_srcs)
                free(srcs);
        return r;
}
