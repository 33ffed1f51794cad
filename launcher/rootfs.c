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

#include "fd-util.h"
#include "launch.h"

#define RESOLVE_IN_ROOT_FLAGS (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* The new root is mounted here before pivot_root. It shadows the host's
 * /tmp in our private mount namespace only, which is why every bind source
 * is opened before that mount. */
#define ROOTFS_STAGING "/tmp"

/* The minimal /dev is a tmpfs that only holds a few nodes, links and two
 * directories: small, and bounded in inodes. */
#define DEV_TMPFS_OPTIONS "mode=0755,size=64k,nr_inodes=64"
/* A devpts instance of the sandbox's own: its ptmx usable by all, new
 * terminals readable and writable by their owner, writable by the group. */
#define DEVPTS_OPTIONS "newinstance,ptmxmode=0666,mode=620"
#define DEV_SHM_MODE 01777

#define DEFAULT_DIR_MODE 0755
#define DEFAULT_FILE_MODE 0644

/* "/proc/self/fd/" and an int. */
#define FD_PATH_MAX 32

struct rootfs {
        int root;             /* O_PATH fd of the new root */
        const struct pty *console;  /* the job's terminal, or NULL */
        bool openat2;         /* false once openat2 said ENOSYS */
        struct protections *prot;
        const char *step;
        struct sbx_error *err;
};

static void fd_path(char buf[static FD_PATH_MAX], int fd) {
        snprintf(buf, FD_PATH_MAX, "/proc/self/fd/%d", fd);
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
        _cleanup_close_ int fd = openat(dirfd, name, flags | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -1;
        /* O_PATH|O_NOFOLLOW opens a symlink itself instead of failing. */
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -1;
        if (S_ISLNK(st.st_mode)) {
                errno = ELOOP;
                return -1;
        }
        return TAKE_FD(fd);
}

/* A directory beneath dirfd, made when missing. */
static int open_or_make_dir(struct rootfs *rf, int dirfd, const char *name, mode_t mode) {
        int fd = open_component(rf, dirfd, name, O_PATH | O_DIRECTORY, 0);
        if (fd >= 0 || errno != ENOENT)
                return fd;
        if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
                return -1;
        return open_component(rf, dirfd, name, O_PATH | O_DIRECTORY, 0);
}

enum dest_kind {
        DEST_DIR,    /* a directory, created if missing */
        DEST_FILE,   /* a regular file, created empty if missing */
        DEST_EXIST,  /* anything that already exists */
};

/* A destination resolved beneath the new root. */
struct dest {
        int parent;                /* its parent directory */
        char name[NAME_MAX + 1];   /* its last component; "" for "/" itself */
        int fd;                    /* O_PATH fd of the destination, or -1 */
};

static void dest_done(struct dest *d) {
        closep(&d->parent);
        closep(&d->fd);
}

#define _cleanup_dest_ _cleanup_(dest_done)
#define DEST_INIT { .parent = -1, .fd = -1 }

/* Walk dest (absolute) beneath the new root down to its parent, making
 * missing directories. */
static int resolve_parent(struct rootfs *rf, const char *path, struct dest *d) {
        char buf[PATH_MAX];
        if (strlen(path) >= sizeof(buf))
                return sbx_error_msg(rf->err, ENAMETOOLONG, "%s: path too long", path);
        strcpy(buf, path);

        _cleanup_close_ int dirfd = fcntl(rf->root, F_DUPFD_CLOEXEC, 3);
        if (dirfd < 0)
                return sbx_error_set(rf->err, errno, "%s", path);
        d->name[0] = '\0';

        char *save = NULL;
        for (char *comp = strtok_r(buf, "/", &save), *next; comp; comp = next) {
                next = strtok_r(NULL, "/", &save);
                if (strlen(comp) > NAME_MAX)
                        return sbx_error_msg(rf->err, ENAMETOOLONG, "%s: component too long", path);
                if (!next) {
                        strcpy(d->name, comp);
                        break;
                }
                int fd = open_or_make_dir(rf, dirfd, comp, DEFAULT_DIR_MODE);
                if (fd < 0)
                        return sbx_error_set(rf->err, errno, "%s", path);
                closep(&dirfd);
                dirfd = fd;
        }
        d->parent = TAKE_FD(dirfd);
        return 0;
}

/* Resolve path to an O_PATH fd of the given kind, made when missing. */
static int resolve(struct rootfs *rf, const char *path, enum dest_kind kind, mode_t mode, struct dest *d) {
        int r = resolve_parent(rf, path, d);
        if (r < 0)
                return r;
        if (!d->name[0]) {
                /* path is "/" itself */
                d->fd = fcntl(rf->root, F_DUPFD_CLOEXEC, 3);
                return d->fd < 0 ? sbx_error_set(rf->err, errno, "%s", path) : 0;
        }
        int flags = O_PATH | (kind == DEST_DIR ? O_DIRECTORY : 0);
        d->fd = open_component(rf, d->parent, d->name, flags, 0);
        if (d->fd < 0 && errno == ENOENT && kind != DEST_EXIST) {
                if (kind == DEST_DIR) {
                        if (mkdirat(d->parent, d->name, mode) < 0 && errno != EEXIST)
                                return sbx_error_set(rf->err, errno, "%s", path);
                } else {
                        _cleanup_close_ int c = open_component(rf, d->parent, d->name, O_WRONLY | O_CREAT | O_EXCL, mode);
                        if (c < 0 && errno != EEXIST)
                                return sbx_error_set(rf->err, errno, "%s", path);
                }
                d->fd = open_component(rf, d->parent, d->name, flags, 0);
        }
        return d->fd < 0 ? sbx_error_set(rf->err, errno, "%s", path) : 0;
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

        _cleanup_close_ int fd = openat(parent, name[0] ? name : ".", O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        char p[FD_PATH_MAX];
        struct statvfs sv;
        fd_path(p, fd);
        unsigned long mf = MS_REMOUNT | MS_BIND;
        if (fstatvfs(fd, &sv) == 0)
                mf |= sv.f_flag & (ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_NOATIME | ST_NODIRATIME | ST_RELATIME | ST_RDONLY);
        if (attr & MOUNT_ATTR_RDONLY)
                mf |= MS_RDONLY;
        if (attr & MOUNT_ATTR_NOSUID)
                mf |= MS_NOSUID;
        if (attr & MOUNT_ATTR_NODEV)
                mf |= MS_NODEV;
        return mount(NULL, p, NULL, mf, NULL) < 0 ? -errno : 0;
}

static int op_bind(struct rootfs *rf, const struct fs_op *op, int srcfd) {
        _cleanup_dest_ struct dest d = DEST_INIT;
        struct stat st;
        char sp[FD_PATH_MAX], dp[FD_PATH_MAX];

        if (fstat(srcfd, &st) < 0)
                return sbx_error_set(rf->err, errno, "%s", op->src);
        int r = resolve(rf, op->dest, S_ISDIR(st.st_mode) ? DEST_DIR : DEST_FILE, DEFAULT_DIR_MODE, &d);
        if (r < 0)
                return r;
        fd_path(sp, srcfd);
        fd_path(dp, d.fd);
        if (op->fd >= 0) {
                /* A tree from outside our mount namespace cannot be the
                 * source of a bind here (EINVAL); a detached one (made by
                 * open_tree(2) with OPEN_TREE_CLONE) can be moved in. */
                if (syscall(SYS_move_mount, srcfd, "", d.fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                        return sbx_error_set(rf->err, errno, "%s -> %s%s", op->src, op->dest,
                                             errno == EINVAL ? " (not a detached mount tree from open_tree(2))" : "");
        } else if (mount(sp, dp, NULL, MS_BIND | MS_REC, NULL) < 0)
                return sbx_error_set(rf->err, errno, "%s -> %s", op->src, op->dest);
        uint64_t attr = MOUNT_ATTR_NOSUID;
        if (op->type != FS_DEV_BIND)
                attr |= MOUNT_ATTR_NODEV;
        if (op->type == FS_RO_BIND)
                attr |= MOUNT_ATTR_RDONLY;
        r = set_mount_attr(d.parent, d.name, attr, true);
        return r < 0 ? sbx_error_set(rf->err, r, "%s: set mount flags", op->dest) : 0;
}

static int op_tmpfs(struct rootfs *rf, const struct fs_op *op) {
        _cleanup_dest_ struct dest d = DEST_INIT;
        char dp[FD_PATH_MAX], opts[128];
        int r = resolve(rf, op->dest, DEST_DIR, DEFAULT_DIR_MODE, &d);
        if (r < 0)
                return r;
        int n = snprintf(opts, sizeof(opts), "mode=%04o", op->mode_set ? (unsigned) op->mode : DEFAULT_DIR_MODE);
        if (op->size_bytes != PROFILE_UNSET)
                n += snprintf(opts + n, sizeof(opts) - (size_t) n, ",size=%llu", (unsigned long long) op->size_bytes);
        if (op->nr_inodes != PROFILE_UNSET)
                snprintf(opts + n, sizeof(opts) - (size_t) n, ",nr_inodes=%llu", (unsigned long long) op->nr_inodes);
        fd_path(dp, d.fd);
        if (mount("tmpfs", dp, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return sbx_error_set(rf->err, errno, "%s", op->dest);
        return 0;
}

static int op_dir(struct rootfs *rf, const struct fs_op *op) {
        _cleanup_dest_ struct dest d = DEST_INIT;
        char dp[FD_PATH_MAX];
        int r = resolve(rf, op->dest, DEST_DIR, DEFAULT_DIR_MODE, &d);
        if (r < 0)
                return r;
        fd_path(dp, d.fd);
        /* chmod through the fd: the path may be under a host bind where a
         * racing process could swap in a symlink. */
        if (op->mode_set && chmod(dp, op->mode) < 0)
                return sbx_error_set(rf->err, errno, "%s", op->dest);
        return 0;
}

static int op_symlink(struct rootfs *rf, const struct fs_op *op) {
        _cleanup_dest_ struct dest d = DEST_INIT;
        int r = resolve_parent(rf, op->dest, &d);
        if (r < 0)
                return r;
        if (!d.name[0])
                return sbx_error_msg(rf->err, EEXIST, "/: cannot be a symlink");
        if (symlinkat(op->src, d.parent, d.name) == 0)
                return 0;
        int e = errno;
        if (e == EEXIST) {
                /* The same link already there (merged profiles) is fine. */
                char cur[PATH_MAX];
                ssize_t n = readlinkat(d.parent, d.name, cur, sizeof(cur) - 1);
                if (n >= 0) {
                        cur[n] = '\0';
                        if (streq(cur, op->src))
                                return 0;
                }
        }
        return sbx_error_set(rf->err, e, "%s", op->dest);
}

static int op_file(struct rootfs *rf, const struct fs_op *op) {
        _cleanup_dest_ struct dest d = DEST_INIT;
        int r = resolve_parent(rf, op->dest, &d);
        if (r < 0)
                return r;
        if (!d.name[0])
                return sbx_error_set(rf->err, EISDIR, "%s", op->dest);
        mode_t mode = op->mode_set ? op->mode : DEFAULT_FILE_MODE;
        /* O_EXCL: never write into something already there, such as a host
         * file bound read-write by an earlier operation. */
        _cleanup_close_ int fd = open_component(rf, d.parent, d.name, O_WRONLY | O_CREAT | O_EXCL, mode);
        if (fd < 0)
                return sbx_error_set(rf->err, errno, "%s", op->dest);
        if (fchmod(fd, mode) < 0)
                r = -errno;
        else if (op->fd >= 0)
                r = fd_copy(op->fd, fd);
        else if (op->data)
                r = fd_write_all(fd, op->data, op->data_len);
        return r < 0 ? sbx_error_set(rf->err, r, "%s", op->dest) : 0;
}

/* Mount a pseudo file system at op->dest; d keeps where it landed. */
static int mount_pseudo(struct rootfs *rf, const struct fs_op *op, const char *fstype, unsigned long flags,
                        const char *data, struct dest *d) {
        char dp[FD_PATH_MAX];
        int r = resolve(rf, op->dest, DEST_DIR, DEFAULT_DIR_MODE, d);
        if (r < 0)
                return r;
        fd_path(dp, d->fd);
        if (mount(fstype, dp, fstype, flags, data) < 0)
                return sbx_error_set(rf->err, errno, "%s", op->dest);
        /* The fd we mounted on is the directory underneath. */
        closep(&d->fd);
        d->fd = open_component(rf, d->parent, d->name, O_PATH | O_DIRECTORY, 0);
        return d->fd < 0 ? sbx_error_set(rf->err, errno, "%s", op->dest) : 0;
}

static int op_mqueue(struct rootfs *rf, const struct fs_op *op) {
        _cleanup_dest_ struct dest d = DEST_INIT;
        return mount_pseudo(rf, op, "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, &d);
}

static int op_proc(struct rootfs *rf, const struct fs_op *op) {
        _cleanup_dest_ struct dest d = DEST_INIT;
        int r = mount_pseudo(rf, op, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, &d);
        if (r < 0)
                return r;
        r = harden_proc(d.fd, rf->prot, rf->err);
        if (r < 0)
                rf->step = "proc-mask";
        return r;
}

/* [security] sys = yes: a read-only /sys. A sysfs of our own shows the
 * sandbox's network namespace; the kernel allows it only there, so with the
 * host's network the host's /sys is bound read-only instead. */
static int op_sys(struct rootfs *rf) {
        _cleanup_dest_ struct dest d = DEST_INIT;
        char dp[FD_PATH_MAX];
        int r = resolve(rf, "/sys", DEST_DIR, DEFAULT_DIR_MODE, &d);
        if (r < 0)
                return r;
        fd_path(dp, d.fd);
        if (mount("sysfs", dp, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0)
                return 0;
        if (errno != EPERM)
                return sbx_error_set(rf->err, errno, "/sys: mount sysfs");
        if (mount("/sys", dp, NULL, MS_BIND | MS_REC, NULL) < 0)
                return sbx_error_set(rf->err, errno, "/sys: bind the host's");
        r = set_mount_attr(d.parent, d.name, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                           true);
        return r < 0 ? sbx_error_set(rf->err, r, "/sys: make read-only") : 0;
}

/* Bind src (the host's /dev/NAME when NULL) onto an empty file dev/NAME. */
static int dev_bind_node(struct rootfs *rf, int dev, const char *dest, const char *name, const char *src) {
        char host[FD_PATH_MAX + NAME_MAX], p[FD_PATH_MAX];
        _cleanup_close_ int c = open_component(rf, dev, name, O_WRONLY | O_CREAT | O_EXCL, 0444);
        if (c < 0)
                return sbx_error_set(rf->err, errno, "%s/%s", dest, name);
        _cleanup_close_ int t = open_component(rf, dev, name, O_PATH, 0);
        if (t < 0)
                return sbx_error_set(rf->err, errno, "%s/%s", dest, name);
        if (!src) {
                snprintf(host, sizeof(host), "/dev/%s", name);
                src = host;
        }
        fd_path(p, t);
        if (mount(src, p, NULL, MS_BIND, NULL) < 0)
                return sbx_error_set(rf->err, errno, "%s", src);
        return 0;
}

/* The job's terminal comes from the host's devpts, which is not mounted
 * inside: without a name there, ttyname(3) and tty(1) would say "not a
 * tty". It is bound by its name in our own mount namespace (a descriptor
 * opened in the launcher's cannot be the source of a bind mount here),
 * after checking that the name still is that terminal. */
static int dev_console(struct rootfs *rf, int dev, const char *dest) {
        struct stat want, got;
        char src[FD_PATH_MAX];

        if (!rf->console || rf->console->slave < 0 || !rf->console->name[0])
                return 0;
        _cleanup_close_ int fd = open(rf->console->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &got) < 0 || fstat(rf->console->slave, &want) < 0 || !S_ISCHR(got.st_mode) ||
            got.st_rdev != want.st_rdev || got.st_ino != want.st_ino || got.st_dev != want.st_dev)
                return 0;
        fd_path(src, fd);
        return dev_bind_node(rf, dev, dest, PROFILE_DEV_CONSOLE, src);
}

/* A new directory in the fresh /dev tmpfs (nothing is there yet). */
static int make_dir(struct rootfs *rf, int dev, const char *name, mode_t mode) {
        if (mkdirat(dev, name, mode) < 0)
                return -1;
        return open_component(rf, dev, name, O_PATH | O_DIRECTORY, 0);
}

static int dev_dirs(struct rootfs *rf, int dev, const char *dest) {
        char p[FD_PATH_MAX];
        _cleanup_close_ int shm = make_dir(rf, dev, PROFILE_DEV_SHM, DEV_SHM_MODE);
        if (shm < 0)
                return sbx_error_set(rf->err, errno, "%s/" PROFILE_DEV_SHM, dest);
        /* mkdir's mode went through the umask. */
        fd_path(p, shm);
        if (chmod(p, DEV_SHM_MODE) < 0)
                return sbx_error_set(rf->err, errno, "%s/" PROFILE_DEV_SHM, dest);
        _cleanup_close_ int pts = make_dir(rf, dev, PROFILE_DEV_PTS, DEFAULT_DIR_MODE);
        if (pts < 0)
                return sbx_error_set(rf->err, errno, "%s/" PROFILE_DEV_PTS, dest);
        /* A new devpts instance: the job sees only its own terminals. */
        fd_path(p, pts);
        if (mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC, DEVPTS_OPTIONS) < 0)
                return sbx_error_set(rf->err, errno, "%s/" PROFILE_DEV_PTS, dest);
        return 0;
}

/* A minimal /dev: a small tmpfs with the harmless host devices bound in
 * (device nodes cannot be created in a user namespace), a private devpts
 * instance and a world-writable shm directory. */
static int op_dev(struct rootfs *rf, const struct fs_op *op) {
        static const struct { const char *target, *name; } links[] = {
                { PROFILE_DEV_PTS "/ptmx", PROFILE_DEV_PTMX }, { "/proc/self/fd", "fd" },
                { "/proc/self/fd/0", "stdin" }, { "/proc/self/fd/1", "stdout" }, { "/proc/self/fd/2", "stderr" },
        };
        _cleanup_dest_ struct dest d = DEST_INIT;
        int r = mount_pseudo(rf, op, "tmpfs", MS_NOSUID | MS_NOEXEC, DEV_TMPFS_OPTIONS, &d);
        if (r < 0)
                return r;
        for (size_t i = 0; profile_dev_nodes[i]; i++) {
                r = dev_bind_node(rf, d.fd, op->dest, profile_dev_nodes[i], NULL);
                if (r < 0)
                        return r;
        }
        r = dev_console(rf, d.fd, op->dest);
        if (r < 0)
                return r;
        r = dev_dirs(rf, d.fd, op->dest);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ARRAY_SIZE(links); i++)
                if (symlinkat(links[i].target, d.fd, links[i].name) < 0)
                        return sbx_error_set(rf->err, errno, "%s/%s", op->dest, links[i].name);
        return 0;
}

static int op_remount_ro(struct rootfs *rf, const struct fs_op *op) {
        _cleanup_dest_ struct dest d = DEST_INIT;
        char p[FD_PATH_MAX];
        int r = resolve(rf, op->dest, DEST_EXIST, 0, &d);
        if (r < 0)
                return r;
        r = set_mount_attr(d.parent, d.name, MOUNT_ATTR_RDONLY, true);
        if (r == -EINVAL) {
                /* Not a mount point yet: make it one, then flip it. */
                fd_path(p, d.fd);
                r = mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0 ? -errno : 0;
                if (r == 0)
                        r = set_mount_attr(d.parent, d.name, MOUNT_ATTR_RDONLY, true);
        }
        return r < 0 ? sbx_error_set(rf->err, r, "%s", op->dest) : 0;
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

static int apply_op(struct rootfs *rf, const struct fs_op *op, int srcfd) {
        switch (op->type) {
        case FS_BIND:
        case FS_RO_BIND:
        case FS_DEV_BIND:
                /* A -try source that was missing: nothing to bind. */
                return srcfd >= 0 ? op_bind(rf, op, srcfd) : 0;
        case FS_TMPFS:
                return op_tmpfs(rf, op);
        case FS_DIR:
                return op_dir(rf, op);
        case FS_SYMLINK:
                return op_symlink(rf, op);
        case FS_FILE:
                return op_file(rf, op);
        case FS_PROC:
                return op_proc(rf, op);
        case FS_DEV:
                return op_dev(rf, op);
        case FS_MQUEUE:
                return op_mqueue(rf, op);
        case FS_REMOUNT_RO:
                return op_remount_ro(rf, op);
        case FS_CHDIR:
                return 0;
        }
        return 0;
}

/* The bind sources, opened while the host tree is still whole. */
struct sources {
        int *fd;
        size_t n;
};

static void sources_done(struct sources *s) {
        for (size_t i = 0; i < s->n; i++)
                closep(&s->fd[i]);
        free(s->fd);
}

static int open_sources(const struct profile *p, struct sources *s, const char **ret_step, struct sbx_error *err) {
        s->fd = calloc(p->n_fs ? p->n_fs : 1, sizeof(int));
        if (!s->fd)
                return sbx_error_set(err, ENOMEM, "rootfs");
        for (size_t i = 0; i < p->n_fs; i++) {
                const struct fs_op *op = &p->fs[i];
                s->fd[s->n++] = -1;
                if (!op_has_source(op))
                        continue;
                if (op->fd >= 0) {
                        /* A tree moved into place is gone from its
                         * descriptor: one operation per descriptor. */
                        for (size_t k = 0; k < i; k++)
                                if (op_has_source(&p->fs[k]) && p->fs[k].fd == op->fd) {
                                        *ret_step = fs_op_name(op);
                                        return sbx_error_msg(err, EINVAL, "%s: also the source of %s (%s)", op->src,
                                                             p->fs[k].dest, p->fs[k].origin);
                                }
                        s->fd[i] = fcntl(op->fd, F_DUPFD_CLOEXEC, 3);
                } else
                        s->fd[i] = open(op->src, O_PATH | O_CLOEXEC);
                if (s->fd[i] < 0 && !(op->try_ && errno == ENOENT)) {
                        *ret_step = fs_op_name(op);
                        return sbx_error_set(err, errno, "%s", op->src);
                }
        }
        return 0;
}

/* pivot_root(".", ".") stacks the old root under the new one; the detach
 * then drops it (and every host mount under it) at once. */
static int pivot(struct rootfs *rf) {
        if (fchdir(rf->root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0)
                return sbx_error_set(rf->err, errno, ROOTFS_STAGING);
        if (umount2(".", MNT_DETACH) < 0)
                return sbx_error_set(rf->err, errno, "old root: detach");
        if (chdir("/") < 0)
                return sbx_error_set(rf->err, errno, "/");
        return 0;
}

int rootfs_setup(const struct profile *p, const struct pty *console, struct protections *prot, const char **ret_step,
                 struct sbx_error *err) {
        _cleanup_(sources_done) struct sources srcs = { 0 };
        struct rootfs rf = {
                .root = -1, .console = console, .openat2 = true, .prot = prot, .step = "rootfs", .err = err,
        };
        int r;

        *ret_step = "rootfs";
        /* Mounts made from here on must never reach the host's mount table
         * (and host mounts appearing later must not reach us either way
         * round): slave, recursively, before anything else. */
        if (mount(NULL, "/", NULL, MS_SLAVE | MS_REC, NULL) < 0)
                return sbx_error_set(err, errno, "/: make slave");
        r = open_sources(p, &srcs, ret_step, err);
        if (r < 0)
                return r;

        if (mount("tmpfs", ROOTFS_STAGING, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
                return sbx_error_set(err, errno, "new root tmpfs on " ROOTFS_STAGING);
        _cleanup_close_ int root = open(ROOTFS_STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return sbx_error_set(err, errno, "new root");
        rf.root = root;

        /* Before the profile's own operations, which may bind over parts. */
        if (p->sys) {
                *ret_step = "sys";
                r = op_sys(&rf);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < p->n_fs; i++) {
                rf.step = fs_op_name(&p->fs[i]);
                r = apply_op(&rf, &p->fs[i], srcs.fd[i]);
                if (r < 0) {
                        *ret_step = rf.step;
                        return r;
                }
        }

        *ret_step = "pivot_root";
        r = pivot(&rf);
        if (r < 0)
                return r;
        /* The root tmpfs only holds mount points and files from the
         * profile; a job that needs to write gets an explicit tmpfs. */
        *ret_step = "rootfs";
        r = set_mount_attr(AT_FDCWD, "/", MOUNT_ATTR_RDONLY, false);
        if (r < 0)
                return sbx_error_set(err, r, "/: make read-only");
        prot->openat2 = rf.openat2;
        return 0;
}
