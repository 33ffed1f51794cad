/* SPDX-License-Identifier: Apache-2.0 */
/* /proc masking, done with the fd-based mount API (open_tree, move_mount,
 * mount_setattr) so every target is named relative to the procfs fd and
 * never through a path the job could have influenced. The masks are one
 * private, empty, read-only tmpfs: its root covers directories, an empty
 * 0444 file in it covers files. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procmask.h"

/* Entries whose contents must not be seen: kernel memory (kcore),
 * other users' keys, kernel timers and scheduler internals (ASLR and
 * side-channel leaks), the magic SysRq trigger, hardware trees. */
static const char *const masked[] = {
        "kcore", "keys", "key-users", "timer_list", "timer_stats", "sched_debug",
        "sysrq-trigger", "latency_stats", "acpi", "scsi", "asound",
};

/* Kernel tunables: readable, never writable (core_pattern is a classic
 * escape to host root). */
static const char *const readonly[] = { "sys", "bus", "fs", "irq" };

static int safe_close_fd(int fd) {
        if (fd >= 0)
                close(fd);
        return -1;
}

#define MASK_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)

static int make_mask_fs(struct sbx_error *err) {
        _cleanup_close_ int fs = -1, mnt = -1, f = -1;
        struct mount_attr attr = { .attr_set = MASK_ATTRS };

        fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
        if (fs < 0)
                return sbx_error_set(err, errno, "proc masks: fsopen(tmpfs)");
        if (fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0555", 0) < 0 ||
            fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) < 0 ||
            fsconfig(fs, FSCONFIG_SET_STRING, "nr_inodes", "4", 0) < 0 ||
            fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                return sbx_error_set(err, errno, "proc masks: configuring the mask tmpfs");
        mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
        if (mnt < 0)
                return sbx_error_set(err, errno, "proc masks: fsmount");
        f = openat(mnt, "empty", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
        if (f < 0)
                return sbx_error_set(err, errno, "proc masks: creating the empty file");
        /* An fd open for writing keeps the mount from turning read-only. */
        f = safe_close_fd(f);
        if (mount_setattr(mnt, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
                return sbx_error_set(err, errno, "proc masks: making the mask tmpfs read-only");
        return TAKE_FD(mnt);
}

/* Attach a clone of (dfd, path) on top of proc_dirfd/name. */
static int cover(int dfd, const char *path, int proc_dirfd, const char *name, struct sbx_error *err) {
        _cleanup_close_ int tree = -1;

        tree = open_tree(dfd, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (path[0] ? 0 : AT_EMPTY_PATH));
        if (tree < 0)
                return sbx_error_set(err, errno, "proc masks: cloning the mask for %s", name);
        if (move_mount(tree, "", proc_dirfd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return sbx_error_set(err, errno, "proc masks: mounting over /proc/%s", name);
        return 0;
}

static int make_readonly(int proc_dirfd, const char *name, struct sbx_error *err) {
        struct mount_attr attr = { .attr_set = MASK_ATTRS };
        _cleanup_close_ int tree = -1;

        tree = open_tree(proc_dirfd, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
        if (tree < 0) {
                if (errno == ENOENT)
                        return 0;
                return sbx_error_set(err, errno, "proc masks: cloning /proc/%s", name);
        }
        if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
                return sbx_error_set(err, errno, "proc masks: making /proc/%s read-only", name);
        if (move_mount(tree, "", proc_dirfd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return sbx_error_set(err, errno, "proc masks: mounting /proc/%s read-only", name);
        return 0;
}

/* The first masked entry that is a directory, or -1. */
static int first_masked_dir(int proc_dirfd) {
        for (size_t i = 0; i < ARRAY_SIZE(masked); i++) {
                struct stat st;

                if (fstatat(proc_dirfd, masked[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                        return (int) i;
        }
        return -1;
}

int procmask_apply(int proc_dirfd, struct sbx_error *err) {
        _cleanup_close_ int mask = -1;
        char file[64];
        int r, anchor;

        mask = make_mask_fs(err);
        if (mask < 0)
                return mask;

        /* The mask tmpfs is attached directly over the first masked
         * directory and every other mask is cloned from there. Closing a
         * mount fd that was never attached unmounts it, and every unmount
         * waits for an expedited RCU grace period (namespace_unlock): about
         * 0.1 ms of sleeping per launch on a busy 2-vCPU machine. */
        anchor = first_masked_dir(proc_dirfd);
        if (anchor >= 0) {
                if (move_mount(mask, "", proc_dirfd, masked[anchor], MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        return sbx_error_set(err, errno, "proc masks: mounting over /proc/%s", masked[anchor]);
                if ((size_t) snprintf(file, sizeof(file), "%s/empty", masked[anchor]) >= sizeof(file))
                        return sbx_error_msg(err, ENAMETOOLONG, "proc masks: /proc/%s", masked[anchor]);
        }

        for (size_t i = 0; i < ARRAY_SIZE(masked); i++) {
                struct stat st;

                if ((int) i == anchor)
                        continue;
                if (fstatat(proc_dirfd, masked[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno == ENOENT)
                                continue;
                        return sbx_error_set(err, errno, "proc masks: /proc/%s", masked[i]);
                }
                if (anchor >= 0)
                        r = cover(proc_dirfd, S_ISDIR(st.st_mode) ? masked[anchor] : file, proc_dirfd, masked[i], err);
                else
                        r = cover(mask, S_ISDIR(st.st_mode) ? "" : "empty", proc_dirfd, masked[i], err);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < ARRAY_SIZE(readonly); i++) {
                r = make_readonly(proc_dirfd, readonly[i], err);
                if (r < 0)
                        return r;
        }
        return 0;
}
