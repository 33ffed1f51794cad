/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "audit.h"
#include "daemon.h"
#include "listener.h"
#include "log.h"
#include "proto.h"
#include "tenant.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

#define MAX_PEER_GROUPS 256
/* Connections accepted per wake-up, for fairness with other events. */
#define ACCEPTS_PER_WAKEUP 64

#ifdef HAVE_SYSTEMD
/* 1 when systemd passed the socket (fd filled), 0 when not, or -errno. */
static int take_activated(int *ret_fd, struct sbx_error *err) {
        int n = sd_listen_fds(1);
        if (n > 1)
                return sbx_error_msg(err, EINVAL, "systemd passed %d sockets; expected one", n);
        if (n <= 0)
                return 0;
        int fd = SD_LISTEN_FDS_START;
        if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
                return sbx_error_msg(err, EINVAL, "the socket systemd passed is not a listening Unix stream socket");
        if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0 || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
                return sbx_error_set(err, errno, "the socket systemd passed");
        *ret_fd = fd;
        return 1;
}
#endif

/* Whoever may write the socket's directory may replace the socket with
 * their own and collect the clients' requests. */
static int check_socket_dir(const char *path, struct sbx_error *err) {
        _cleanup_free_ char *dir = strdup(path);
        if (!dir)
                return sbx_error_msg(err, ENOMEM, "out of memory");
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
                return 0;
        *slash = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return sbx_error_set(err, errno, "socket directory %s", dir);
        struct stat ds;
        if (stat(dir, &ds) < 0)
                return 0;
        if ((ds.st_mode & 0022) && !(ds.st_mode & S_ISVTX))
                log_warning("socket directory %s is writable by group or others (mode %04o): anyone who can write it can "
                            "replace the socket; use a 0755 directory owned by root",
                            dir, (unsigned) (ds.st_mode & 07777));
        else if (ds.st_uid != geteuid())
                log_warning("socket directory %s is owned by uid %u, not by the daemon", dir, (unsigned) ds.st_uid);
        return 0;
}

/* A live daemon on this path is an error; a stale socket file is
 * replaced. */
static int clear_path(const struct sockaddr_un *sa, struct sbx_error *err) {
        _cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0 && connect(probe, (const struct sockaddr *) sa, sizeof(*sa)) == 0)
                return sbx_error_msg(err, EADDRINUSE, "another daemon is listening on %s", sa->sun_path);
        struct stat st;
        if (lstat(sa->sun_path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return sbx_error_msg(err, EEXIST, "%s exists and is not a socket", sa->sun_path);
                unlink(sa->sun_path);
        }
        return 0;
}

static int bind_socket(const struct config *cfg, struct sbx_error *err) {
        const char *path = cfg->socket_path;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return sbx_error_msg(err, ENAMETOOLONG, "socket path %s is too long", path);
        strcpy(sa.sun_path, path);
        int r = check_socket_dir(path, err);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return sbx_error_set(err, errno, "socket");
        r = clear_path(&sa, err);
        if (r < 0)
                return r;
        mode_t old = umask(0777 & ~cfg->socket_mode);
        r = bind(fd, (struct sockaddr *) &sa, sizeof(sa));
        umask(old);
        if (r < 0)
                return sbx_error_set(err, errno, "bind %s", path);
        if (chmod(path, cfg->socket_mode) < 0)
                return sbx_error_set(err, errno, "chmod %s", path);
        if (cfg->socket_gid != (gid_t) -1 && chown(path, (uid_t) -1, cfg->socket_gid) < 0)
                return sbx_error_set(err, errno, "chown %s", path);
        if (listen(fd, 1024) < 0)
                return sbx_error_set(err, errno, "listen %s", path);
        return TAKE_FD(fd);
}

int listener_open(struct listener *l, const struct config *cfg, struct sbx_error *err) {
        memset(l, 0, sizeof(*l));
        l->fd = -1;
#ifdef HAVE_SYSTEMD
        int r = take_activated(&l->fd, err);
        if (r < 0)
                return r;
        if (r == 1) {
                log_info("listening on the socket passed by systemd");
                l->activated = true;
                return 0;
        }
#endif
        l->fd = bind_socket(cfg, err);
        return l->fd < 0 ? l->fd : 0;
}

static void pause_accepting(struct daemon *d) {
        struct listener *l = &d->listener;
        if (l->on_loop && !l->paused)
                loop_mod(&l->src, 0);
        l->paused = true;
        l->held_at_pause = d->conns.n + d->jobs.n;
}

/* A caller in no tenant hears why as soon as it connects, and the
 * connection closes once that is out. */
static void refuse_unknown(struct conn *c) {
        char m[160];
        snprintf(m, sizeof(m), "uid %u is not in any tenant", (unsigned) c->cred.uid);
        log_warning("refused connection from uid %u gid %u pid %d: not in any tenant", (unsigned) c->cred.uid,
                    (unsigned) c->cred.gid, (int) c->cred.pid);
        audit_request(c, "connect", "refused", NULL, E_UNAUTHORIZED, m, true);
        c->read_eof = true;
        conn_send(c, proto_error(NULL, E_UNAUTHORIZED, "%s", m));
}

static void accept_one(struct daemon *d, int fd) {
        static const char too_many[] = "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"" E_TOO_MANY_CONNECTIONS "\","
                                       "\"message\":\"too many connections\"}}\n";
        const struct config *cfg = d->cfg;
        if (d->conns.n >= cfg->max_connections) {
                (void) !send(fd, too_many, sizeof(too_many) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                close(fd);
                return;
        }
        struct ucred cred;
        socklen_t sl = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &sl) < 0) {
                close(fd);
                return;
        }
        struct conn *c = conn_new(d, fd, &cred);
        if (!c) {
                close(fd);
                return;
        }
        gid_t groups[MAX_PEER_GROUPS];
        socklen_t gl = sizeof(groups);
        size_t ng = 0;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &gl) == 0)
                ng = gl / sizeof(gid_t);
        c->tenant = tenant_lookup(cfg, cred.uid, cred.gid, groups, ng);
        if (!c->tenant && cfg->allow_unauthenticated) {
                c->tenant = cfg->anonymous;
                c->anonymous = true;
                log_warning("allow_unauthenticated: accepted uid %u (pid %d) as tenant 'anonymous'", (unsigned) cred.uid,
                            (int) cred.pid);
        }
        if (!c->tenant) {
                refuse_unknown(c);
                return;
        }
        listener_admit(d, c);
}

void listener_admit(struct daemon *d, struct conn *c) {
        const struct config *cfg = d->cfg;
        /* One tenant's idle connections must not lock the others out. */
        unsigned *count = conns_of_tenant(&d->conns, c->tenant);
        if (count && *count >= cfg->max_tenant_connections) {
                c->read_eof = true; /* close once this is out */
                conn_send(c, proto_error(NULL, E_TOO_MANY_CONNECTIONS,
                                         "tenant '%s' has %u connections open (max_tenant_connections)", c->tenant->name,
                                         *count));
                return;
        }
        if (count) {
                (*count)++;
                c->tenant_count = count;
        }
        c->share = conns_share_of_tenant(&d->conns, c->tenant);
}

/* One line, then the socket closed: a request the daemon will not serve. */
static void refuse_fd(int fd, const char *code, const char *msg) {
        char line[256];
        int n = snprintf(line, sizeof(line), "{\"v\":1,\"ok\":false,\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n", code, msg);
        (void) !send(fd, line, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
}

void listener_admit_http(void *ctx, int fd, const struct http_token *tok, const char *peer) {
        struct daemon *d = ctx;
        const struct config *cfg = d->cfg;
        if (d->stopping) {
                refuse_fd(fd, E_SHUTTING_DOWN, "the daemon is stopping");
                return;
        }
        if (d->conns.n >= cfg->max_connections) {
                refuse_fd(fd, E_TOO_MANY_CONNECTIONS, "too many connections");
                return;
        }
        if (!tok && !cfg->allow_unauthenticated) {
                refuse_fd(fd, E_INTERNAL, "a request without a token");
                return;
        }
        struct ucred cred = { .pid = 0, .uid = (uid_t) -1, .gid = (gid_t) -1 };
        struct conn *c = conn_new(d, fd, &cred);
        if (!c) {
                refuse_fd(fd, E_BUSY, "out of memory; retry later");
                return;
        }
        snprintf(c->peer, sizeof(c->peer), "%s", peer);
        c->token = tok;
        c->tenant = tok ? tok->tenant : cfg->anonymous;
        c->anonymous = !tok;
        listener_admit(d, c);
}

static void on_listen(struct source *s, uint32_t events) {
        struct daemon *d = container_of(s, struct daemon, listener.src);
        for (int i = 0; i < ACCEPTS_PER_WAKEUP; i++) {
                int fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EMFILE || errno == ENFILE) {
                                log_warning("accept: %s; pausing new connections", strerror(errno));
                                pause_accepting(d);
                        }
                        return;
                }
                accept_one(d, fd);
        }
}

void listener_start(struct daemon *d) {
        struct listener *l = &d->listener;
        if (loop_add(&l->src, l->fd, EPOLLIN, on_listen) == 0)
                l->on_loop = true;
}

void listener_stop(struct daemon *d) {
        struct listener *l = &d->listener;
        if (l->on_loop)
                loop_del(&l->src);
        l->on_loop = false;
}

void listener_maybe_resume(struct daemon *d) {
        struct listener *l = &d->listener;
        /* Only once a connection or a job has gone and freed descriptors:
         * trying sooner would only spin on EMFILE. */
        if (!l->paused || !l->on_loop || d->stopping || d->conns.n + d->jobs.n >= l->held_at_pause)
                return;
        l->paused = false;
        loop_mod(&l->src, EPOLLIN);
}

void listener_close(struct listener *l, const struct config *cfg) {
        if (l->fd < 0)
                return;
        close(l->fd);
        l->fd = -1;
        if (!l->activated)
                unlink(cfg->socket_path);
}
