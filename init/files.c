/* SPDX-License-Identifier: Apache-2.0 */
/* The workspace's files: OPEN, LIST, STAT, REMOVE, MKDIR. Every path is
 * relative to the workspace's directory and resolved beneath it without
 * following any symbolic link, with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), or where the sandbox's
 * syscall filter answers openat2 with ENOSYS (its setuid guard cannot
 * read openat2's flags), one component at a time with O_NOFOLLOW. The
 * processes beside us may swap a symlink in at any moment; neither walk
 * ever follows one, so a swap makes the request fail, never reach out.
 * A file is handed to the daemon as a descriptor, opened here with the
 * sandbox's uid and rights; the daemon does the copy, bounded, itself. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "agent.h"
#include "macro.h"

#define RESOLVE_FLAGS (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

int files_check_path(const char *p, size_t len, bool allow_dot) {
        if (len < 2 || len > SBX_INIT_PATH_MAX || memchr(p, '\0', len) != p + len - 1)
                return -EINVAL;
        if (streq(p, "."))
                return allow_dot ? 0 : -EINVAL;
        if (p[0] == '/')
                return -EXDEV;
        for (const char *c = p; *c;) {
                const char *slash = strchr(c, '/');
                size_t n = slash ? (size_t) (slash - c) : strlen(c);
                if (n == 0 || (n == 1 && c[0] == '.'))
                        return -EINVAL;
                if (n == 2 && c[0] == '.' && c[1] == '.')
                        return -EXDEV;
                if (n > SBX_INIT_NAME_MAX)
                        return -ENAMETOOLONG;
                c += n;
                if (*c == '/')
                        c++;
        }
        return 0;
}

/* One component beneath dirfd, following no symlink. */
static int open_component(int dirfd, const char *name, int flags, mode_t mode) {
        /* With O_PATH the type is checked below: O_DIRECTORY would turn a
         * symlink's ELOOP into ENOTDIR. */
        int open_flags = (flags & O_PATH) ? flags & ~O_DIRECTORY : flags;
        _cleanup_close_ int fd = openat(dirfd, name, open_flags | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0) {
                int e = errno;
                struct stat st;
                /* Say ELOOP for a link whatever the open said, as
                 * openat2's RESOLVE_NO_SYMLINKS does. */
                if (e == ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                        e = ELOOP;
                return -e;
        }
        if (flags & O_PATH) {
                /* O_PATH | O_NOFOLLOW opens a symlink itself. */
                struct stat st;
                if (fstat(fd, &st) < 0)
                        return -errno;
                if (S_ISLNK(st.st_mode))
                        return -ELOOP;
                if ((flags & O_DIRECTORY) && !S_ISDIR(st.st_mode))
                        return -ENOTDIR;
        }
        return TAKE_FD(fd);
}

static int walk_beneath(int root, const char *path, int flags, mode_t mode) {
        char buf[SBX_INIT_PATH_MAX];
        if (strlen(path) >= sizeof(buf))
                return -ENAMETOOLONG;
        strcpy(buf, path);
        _cleanup_close_ int dir = fcntl(root, F_DUPFD_CLOEXEC, 3);
        if (dir < 0)
                return -errno;
        char *c = buf;
        for (char *slash; (slash = strchr(c, '/')); c = slash + 1) {
                *slash = '\0';
                int next = open_component(dir, c, O_PATH | O_DIRECTORY, 0);
                if (next < 0)
                        return next;
                close(dir);
                dir = next;
        }
        return open_component(dir, c, flags, mode);
}

int files_open_beneath(struct agent *a, const char *path, int flags, mode_t mode) {
        static bool no_openat2;
        if (!no_openat2) {
                struct open_how how = {
                        .flags = (uint64_t) (flags | O_NOFOLLOW | O_CLOEXEC),
                        .mode = (flags & O_CREAT) ? mode : 0,
                        .resolve = RESOLVE_FLAGS,
                };
                int fd = (int) syscall(SYS_openat2, a->workspace, path, &how, sizeof(how));
                if (fd >= 0)
                        return fd;
                if (errno != ENOSYS)
                        return -errno;
                no_openat2 = true;
        }
        return walk_beneath(a->workspace, path, flags, mode);
}

/* The directory that holds path's last component, and that component. */
static int open_parent(struct agent *a, const char *path, const char **ret_name) {
        const char *slash = strrchr(path, '/');
        if (!slash) {
                *ret_name = path;
                int fd = fcntl(a->workspace, F_DUPFD_CLOEXEC, 3);
                return fd < 0 ? -errno : fd;
        }
        char dir[SBX_INIT_PATH_MAX];
        memcpy(dir, path, (size_t) (slash - path));
        dir[slash - path] = '\0';
        *ret_name = slash + 1;
        return files_open_beneath(a, dir, O_PATH | O_DIRECTORY, 0);
}

static void fill_stat(const struct stat *st, struct sbx_init_stat *out) {
        *out = (struct sbx_init_stat) {
                .mode = st->st_mode,
                .nlink = (uint32_t) st->st_nlink,
                .size = (uint64_t) st->st_size,
                .mtime_sec = st->st_mtim.tv_sec,
                .mtime_nsec = (uint32_t) st->st_mtim.tv_nsec,
        };
}

/* Only a regular file is handed over: a FIFO or a device could block or
 * act on the daemon's reads and writes. O_NONBLOCK keeps the open itself
 * from waiting on a FIFO's other end; the type is checked on what was
 * opened, so a swap between a check and the open does not matter. */
static int do_open(struct agent *a, const char *path, const struct sbx_init_path *pa, int *ret_fd,
                   struct sbx_init_stat *ret_st) {
        int flags;
        if (pa->arg == SBX_INIT_OPEN_READ)
                flags = O_RDONLY | O_NONBLOCK | O_NOCTTY;
        else if (pa->arg == SBX_INIT_OPEN_WRITE)
                flags = O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_NOCTTY;
        else if (pa->arg == SBX_INIT_OPEN_MORE)
                flags = O_WRONLY | O_NONBLOCK | O_NOCTTY;
        else
                return -EINVAL;
        _cleanup_close_ int fd = files_open_beneath(a, path, flags, pa->arg2 & 0777);
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        /* The daemon's copy may block on a regular file like any copy. */
        if (fcntl(fd, F_SETFL, flags & O_ACCMODE) < 0)
                return -errno;
        fill_stat(&st, ret_st);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

static void do_list(struct agent *a, const struct request *rq, const char *path, uint32_t skip) {
        static char out[SBX_INIT_MSG_MAX - sizeof(struct sbx_init_hdr)];
        int fd = streq(path, ".") ? openat(a->workspace, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                                  : files_open_beneath(a, path, O_RDONLY | O_DIRECTORY, 0);
        if (fd == -1)
                fd = -errno;
        if (fd < 0) {
                agent_reply_error(a, rq, -fd);
                return;
        }
        _cleanup_(closedirp) DIR *d = fdopendir(fd);
        if (!d) {
                agent_reply_error(a, rq, errno);
                close(fd);
                return;
        }
        struct sbx_init_list hdr = { 0 };
        size_t used = sizeof(hdr);
        uint32_t seen = 0;
        struct dirent *de;
        errno = 0;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (seen++ < skip)
                        continue;
                size_t n = strlen(de->d_name) + 1;
                if (used + 1 + n > sizeof(out)) {
                        hdr.flags |= SBX_INIT_LIST_MORE;
                        break;
                }
                out[used] = (char) de->d_type;
                memcpy(out + used + 1, de->d_name, n);
                used += 1 + n;
                hdr.count++;
        }
        if (!de && errno) {
                agent_reply_error(a, rq, errno);
                return;
        }
        memcpy(out, &hdr, sizeof(hdr));
        agent_reply(a, rq, out, used, NULL, 0);
}

void files_request(struct agent *a, const struct request *rq) {
        struct sbx_init_path pa;
        uint32_t type = rq->hdr.type;
        if (rq->len < sizeof(pa)) {
                agent_reply_error(a, rq, EBADMSG);
                return;
        }
        memcpy(&pa, rq->payload, sizeof(pa));
        const char *path = rq->payload + sizeof(pa);
        int r = files_check_path(path, rq->len - sizeof(pa), type == SBX_INIT_LIST || type == SBX_INIT_STAT);
        if (r < 0) {
                agent_reply_error(a, rq, r == -EINVAL && rq->len - sizeof(pa) > SBX_INIT_PATH_MAX ? ENAMETOOLONG : -r);
                return;
        }
        if (type == SBX_INIT_LIST) {
                do_list(a, rq, path, pa.arg);
                return;
        }

        struct sbx_init_stat st = { 0 };
        if (type == SBX_INIT_OPEN) {
                _cleanup_close_ int fd = -1;
                r = do_open(a, path, &pa, &fd, &st);
                if (r < 0)
                        agent_reply_error(a, rq, -r);
                else
                        agent_reply(a, rq, &st, sizeof(st), &fd, 1);
                return;
        }

        struct stat sb;
        const char *name = NULL;
        _cleanup_close_ int dir = -1;
        if (type == SBX_INIT_STAT && streq(path, ".")) {
                r = fstat(a->workspace, &sb) < 0 ? -errno : 0;
        } else {
                dir = open_parent(a, path, &name);
                r = dir;
        }
        if (r >= 0 && name) {
                if (type == SBX_INIT_STAT)
                        r = fstatat(dir, name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
                else if (type == SBX_INIT_MKDIR)
                        r = mkdirat(dir, name, pa.arg2 & 0777) < 0 ? -errno : 0;
                else if (unlinkat(dir, name, 0) == 0)
                        r = 0;
                else if (errno == EISDIR)
                        r = unlinkat(dir, name, AT_REMOVEDIR) < 0 ? -errno : 0;
                else
                        r = -errno;
        }
        if (r < 0) {
                agent_reply_error(a, rq, -r);
                return;
        }
        if (type == SBX_INIT_STAT) {
                fill_stat(&sb, &st);
                agent_reply(a, rq, &st, sizeof(st), NULL, 0);
        } else
                agent_reply(a, rq, NULL, 0, NULL, 0);
}
