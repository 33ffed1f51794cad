/* SPDX-License-Identifier: Apache-2.0 */
/* The workspace's change of hands (wstree.h). Every entry is opened with
 * O_PATH | O_NOFOLLOW relative to its directory's descriptor, checked with
 * fstat(2) on that descriptor, and changed with fchownat(2) AT_EMPTY_PATH
 * on the same descriptor: what is changed is the inode that was checked,
 * even if the front or a job renames, replaces or links entries meanwhile.
 * A symlink is itself the entry (its target is never looked up), and a
 * directory is entered by openat(fd, ".") on the descriptor checked, so
 * the walk never leaves the workspace's mount: a rename cannot move a
 * directory to another filesystem, a hard link cannot cross one, and an
 * entry with another st_dev (a mount) is refused or left alone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "wstree.h"

enum walk_mode {
        WALK_CHECK,     /* handover, first pass: change nothing */
        WALK_HANDOVER,  /* handover, second pass */
        WALK_RECLAIM,
};

struct walk {
        enum walk_mode mode;
        uid_t from;               /* the owner whose entries change hands */
        uid_t to_uid;
        gid_t to_gid;
        dev_t dev;                /* the workspace's mount */
        struct wstree_report *rep;
};

/* Names are the front's or a job's text: printable ASCII or '?', cut. */
static void safe_name(const char *name, char *out, size_t len) {
        size_t i = 0;
        for (; name[i] && i + 4 < len; i++)
                out[i] = name[i] > 0x20 && name[i] < 0x7f ? name[i] : '?';
        if (name[i])
                out[i++] = '~';
        out[i] = '\0';
}

static int refuse(struct walk *w, int err, const char *name, unsigned depth, const char *what) {
        char n[64];
        safe_name(name, n, sizeof(n));
        snprintf(w->rep->why, sizeof(w->rep->why), "'%s' at depth %u: %s", n, depth, what);
        return err;
}

static const char *kind(mode_t m) {
        return S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : S_ISFIFO(m) ? "a fifo" : S_ISSOCK(m) ? "a socket" : "of unknown type";
}

static int walk_dir(struct walk *w, int dfd, unsigned depth);

/* One entry, open on fd (O_PATH, or the root's descriptor) and its stat. */
static int visit(struct walk *w, int fd, const struct stat *st, const char *name, unsigned depth) {
        bool reclaim = w->mode == WALK_RECLAIM;
        char what[96];
        if (st->st_dev != w->dev) {
                if (!reclaim)
                        return refuse(w, -EXDEV, name, depth, "another mount");
                w->rep->skipped++;
                return 0;
        }
        bool mine = st->st_uid == w->from;
        if (!mine && !reclaim) {
                snprintf(what, sizeof(what), "owned by uid %u, not the front", (unsigned) st->st_uid);
                return refuse(w, -EPERM, name, depth, what);
        }
        if (!reclaim && !S_ISDIR(st->st_mode) && !S_ISREG(st->st_mode) && !S_ISLNK(st->st_mode))
                return refuse(w, -EPERM, name, depth, kind(st->st_mode));
        /* A second name of an upload would let whoever holds one of them
         * reach the file under a name the walk already gave away. */
        if (!reclaim && S_ISREG(st->st_mode) && st->st_nlink != 1) {
                snprintf(what, sizeof(what), "a regular file with %lu links", (unsigned long) st->st_nlink);
                return refuse(w, -EMLINK, name, depth, what);
        }
        if (mine && w->mode != WALK_CHECK) {
                if (fchownat(fd, "", w->to_uid, w->to_gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                        return refuse(w, -errno, name, depth, "chown");
                w->rep->changed++;
        } else if (!mine)
                w->rep->skipped++;
        if (!S_ISDIR(st->st_mode))
                return 0;
        if (depth >= WSTREE_DEPTH_MAX) {
                if (!reclaim)
                        return refuse(w, -ELOOP, name, depth, "deeper than the walk goes");
                w->rep->skipped++;
                return 0;
        }
        _cleanup_close_ int sub = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sub < 0)
                return refuse(w, -errno, name, depth, "open");
        if (w->mode == WALK_HANDOVER) {
                /* A descriptor the front kept of one of its directories
                 * lets it add entries as "other" only if the mode says
                 * so; the root is the job's alone, as JOB_OPEN made it. */
                struct stat now;
                if (fstat(sub, &now) < 0)
                        return refuse(w, -errno, name, depth, "stat");
                mode_t mode = depth == 0 ? 0700 : (now.st_mode & 07777 & ~(mode_t) (S_IWGRP | S_IWOTH));
                if (mode != (now.st_mode & 07777) && fchmod(sub, mode) < 0)
                        return refuse(w, -errno, name, depth, "chmod");
        }
        return walk_dir(w, sub, depth + 1);
}

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

static int walk_dir(struct walk *w, int dfd, unsigned depth) {
        int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (dup < 0)
                return -errno;
        _cleanup_(closedirp) DIR *d = fdopendir(dup);
        if (!d) {
                int r = -errno;
                close(dup);
                return r;
        }
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de)
                        return errno ? -errno : 0;
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                if (++w->rep->entries > WSTREE_ENTRIES_MAX)
                        return refuse(w, -E2BIG, de->d_name, depth, "more entries than the walk visits");
                _cleanup_close_ int fd = openat(dfd, de->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                struct stat st;
                if (fd < 0 || fstat(fd, &st) < 0) {
                        /* Gone since readdir: only a process racing the
                         * walk does that. */
                        if (errno == ENOENT && w->mode == WALK_RECLAIM) {
                                w->rep->skipped++;
                                continue;
                        }
                        return refuse(w, errno == ENOENT ? -ESTALE : -errno, de->d_name, depth, "changed during the walk");
                }
                int r = visit(w, fd, &st, de->d_name, depth);
                if (r < 0)
                        return r;
        }
}

static int walk(struct walk *w, int root_fd) {
        struct stat st;
        if (fstat(root_fd, &st) < 0 || !S_ISDIR(st.st_mode))
                return -ENOTDIR;
        w->dev = st.st_dev;
        return visit(w, root_fd, &st, ".", 0);
}

int wstree_handover(int root_fd, uid_t front, uid_t uid, gid_t gid, struct wstree_report *rep) {
        *rep = (struct wstree_report){};
        struct walk w = { .mode = WALK_CHECK, .from = front, .to_uid = uid, .to_gid = gid, .rep = rep };
        int r = walk(&w, root_fd);
        if (r < 0)
                return r;
        *rep = (struct wstree_report){};
        w.mode = WALK_HANDOVER;
        r = walk(&w, root_fd);
        rep->partial = r < 0 && rep->changed > 0;
        return r;
}

int wstree_reclaim(int root_fd, uid_t job, uid_t front, gid_t front_gid, struct wstree_report *rep) {
        *rep = (struct wstree_report){};
        struct walk w = { .mode = WALK_RECLAIM, .from = job, .to_uid = front, .to_gid = front_gid, .rep = rep };
        return walk(&w, root_fd);
}
