/* SPDX-License-Identifier: Apache-2.0 */
/* Listening mode: the helper as a service of its own (its systemd unit),
 * and the front as another, started without root. Fronts connect to the
 * helper's socket one at a time; the kernel's SO_PEERCRED (taken at
 * connect(2), not claimed by the peer) says who connected, and only the
 * front's uid is served. When the front hangs up, its jobs are closed as
 * in the forked mode and the helper waits for the next one. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "privd.h"

int privd_listen_open(struct privd_conf *c, char *why, size_t why_len) {
        int type = 0, listening = 0;
        socklen_t len = sizeof(type);
        if (c->socket_path) {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                if (strlen(c->socket_path) >= sizeof(sa.sun_path)) {
                        snprintf(why, why_len, "longer than %zu bytes", sizeof(sa.sun_path) - 1);
                        return -ENAMETOOLONG;
                }
                memcpy(sa.sun_path, c->socket_path, strlen(c->socket_path));
                _cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return snprintf(why, why_len, "socket"), -errno;
                /* A socket left by an earlier helper goes; anything else
                 * under that name stays, and bind fails on it. */
                struct stat st;
                if (lstat(c->socket_path, &st) == 0 && S_ISSOCK(st.st_mode))
                        (void) unlink(c->socket_path);
                /* Made unreachable, then opened to the front's group. */
                mode_t old = umask(0177);
                int r = bind(fd, (struct sockaddr *) &sa, sizeof(sa));
                umask(old);
                if (r < 0)
                        return snprintf(why, why_len, "bind"), -errno;
                if (chown(c->socket_path, 0, c->front_gid) < 0 || chmod(c->socket_path, 0660) < 0)
                        return snprintf(why, why_len, "chown or chmod"), -errno;
                if (listen(fd, 4) < 0)
                        return snprintf(why, why_len, "listen"), -errno;
                c->listen_fd = TAKE_FD(fd);
                return 0;
        }
        if (getsockopt(c->listen_fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET)
                return snprintf(why, why_len, "not a SOCK_SEQPACKET socket"), -ENOTSOCK;
        len = sizeof(listening);
        if (getsockopt(c->listen_fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening)
                return snprintf(why, why_len, "not a listening socket"), -EINVAL;
        if (fcntl(c->listen_fd, F_SETFD, FD_CLOEXEC) < 0)
                return snprintf(why, why_len, "fcntl"), -errno;
        return 0;
}

/* Accept one connection (non-blocking) and read who made it. */
static int take(int listen_fd, struct ucred *ret) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return -errno;
        socklen_t len = sizeof(*ret);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, ret, &len) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

int privd_accept(struct privd *p) {
        for (;;) {
                struct pollfd pf[2] = { { .fd = p->conf->listen_fd, .events = POLLIN }, { .fd = p->sig_fd, .events = POLLIN } };
                if (poll(pf, 2, privd_park_timeout(p)) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                privd_park_expire(p);
                if (pf[1].revents && privd_signal_read(p) == -ECANCELED)
                        return -ECANCELED;
                if (!pf[0].revents)
                        continue;
                struct ucred cr;
                int fd = take(p->conf->listen_fd, &cr);
                if (fd < 0) {
                        if (fd != -EAGAIN && fd != -EINTR && fd != -ECONNABORTED)
                                privd_log("accept: %s", strerror(-fd));
                        continue;
                }
                /* Root is no exception: the front is one user, and a
                 * process of another (a job's uid reaching the socket
                 * through a leaked descriptor, a local user) gets nothing. */
                if (cr.uid != p->conf->front_uid) {
                        privd_log("refused a connection from pid %d uid %u gid %u: only the front's uid %u is served", (int) cr.pid,
                                  (unsigned) cr.uid, (unsigned) cr.gid, (unsigned) p->conf->front_uid);
                        close(fd);
                        continue;
                }
                privd_log("front connected: pid %d uid %u", (int) cr.pid, (unsigned) cr.uid);
                return fd;
        }
}

void privd_refuse_second(struct privd *p) {
        struct ucred cr;
        int fd = take(p->conf->listen_fd, &cr);
        if (fd < 0)
                return;
        privd_log("refused a connection from pid %d uid %u gid %u: a front is connected (one at a time)", (int) cr.pid,
                  (unsigned) cr.uid, (unsigned) cr.gid);
        close(fd);
}

int privd_cgroup_leaf(int cgroup_fd) {
        char buf[4096], me[24];
        _cleanup_close_ int fd = openat(cgroup_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        snprintf(me, sizeof(me), "%d", (int) getpid());
        bool in = false;
        for (char *line = strtok(buf, "\n"); line && !in; line = strtok(NULL, "\n"))
                in = streq(line, me);
        if (!in)
                return 0;
        if (mkdirat(cgroup_fd, "sbx-privd", 0755) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_close_ int leaf = openat(cgroup_fd, "sbx-privd", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (leaf < 0)
                return -errno;
        int r = fd_write_at(leaf, "cgroup.procs", me);
        return r < 0 ? r : 1;
}

int privd_cgroup_self(char *buf, size_t len) {
        char line[4096], mnt[1024] = "", own[4096] = "";
        FILE *f = fopen("/proc/self/mounts", "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                char dev[256], dir[1024], type[64];
                if (sscanf(line, "%255s %1023s %63s", dev, dir, type) == 3 && streq(type, "cgroup2")) {
                        snprintf(mnt, sizeof(mnt), "%s", dir);
                        break;
                }
        }
        fclose(f);
        f = fopen("/proc/self/cgroup", "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "0::/", 4) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        snprintf(own, sizeof(own), "%s", line + 3);
                        break;
                }
        fclose(f);
        if (!mnt[0] || !own[0])
                return -ENOENT;
        /* Mount points and cgroup names with spaces are escaped (\040)
         * in these files: refused rather than unescaped. */
        if (strchr(mnt, '\\') || strchr(own, '\\') || strstr(own, "/.."))
                return -EINVAL;
        /* At the root of the hierarchy there is no cgroup of its own. */
        if (streq(own, "/"))
                return -ENOENT;
        if ((size_t) snprintf(buf, len, "%s%s", mnt, own) >= len)
                return -ENAMETOOLONG;
        return 0;
}
