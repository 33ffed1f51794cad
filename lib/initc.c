/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "initc.h"
#include "macro.h"

int initc_init(struct initc *c, int fd) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return -errno;
        c->fd = fd;
        c->next_id = 1;
        return 0;
}

void initc_msg_clear(struct initc_msg *m) {
        for (unsigned i = 0; i < m->n_fds; i++)
                closep(&m->fds[i]);
        m->n_fds = 0;
}

static int put_str(char *buf, size_t size, size_t *used, const char *s) {
        size_t n = strlen(s) + 1;
        if (n > size - *used)
                return -E2BIG;
        memcpy(buf + *used, s, n);
        *used += n;
        return 0;
}

int initc_encode_spawn(void *buf, size_t size, uint32_t flags, const struct sbx_init_winsize *ws, const char *cwd,
                       const char *const *argv, const char *const *env, size_t *ret_len) {
        struct sbx_init_spawn h = { .flags = flags | (ws ? SBX_INIT_SPAWN_WINSIZE : 0) };
        size_t used = sizeof(h) + (ws ? sizeof(*ws) : 0), argc = 0, envc = 0;
        if (size > SBX_INIT_MSG_MAX - sizeof(struct sbx_init_hdr))
                size = SBX_INIT_MSG_MAX - sizeof(struct sbx_init_hdr);
        if (size < used || strlen(cwd) + 1 > SBX_INIT_PATH_MAX)
                return -E2BIG;
        if (ws)
                memcpy((char *) buf + sizeof(h), ws, sizeof(*ws));
        int r = put_str(buf, size, &used, cwd);
        for (; r == 0 && argv[argc]; argc++)
                r = argc < SBX_INIT_ARGV_MAX ? put_str(buf, size, &used, argv[argc]) : -E2BIG;
        for (; r == 0 && env && env[envc]; envc++)
                r = envc < SBX_INIT_ENV_MAX ? put_str(buf, size, &used, env[envc]) : -E2BIG;
        if (r < 0)
                return r;
        if (argc == 0)
                return -EINVAL;
        h.argc = (uint16_t) argc;
        h.envc = (uint16_t) envc;
        memcpy(buf, &h, sizeof(h));
        *ret_len = used;
        return 0;
}

int initc_encode_path(void *buf, size_t size, uint32_t arg, uint32_t arg2, const char *path, size_t *ret_len) {
        struct sbx_init_path h = { .arg = arg, .arg2 = arg2 };
        size_t n = strlen(path) + 1;
        if (n > SBX_INIT_PATH_MAX || size < sizeof(h) + n)
                return -E2BIG;
        memcpy(buf, &h, sizeof(h));
        memcpy((char *) buf + sizeof(h), path, n);
        *ret_len = sizeof(h) + n;
        return 0;
}

static int64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for events on c->fd until the deadline. */
static int wait_fd(int fd, short events, int64_t deadline) {
        for (;;) {
                int64_t left = deadline - now_ms();
                if (left <= 0)
                        return -ETIMEDOUT;
                struct pollfd p = { .fd = fd, .events = events };
                int n = poll(&p, 1, left > 60000 ? 60000 : (int) left);
                if (n < 0 && errno != EINTR)
                        return -errno;
                if (n > 0)
                        return 0;
        }
}

int initc_send(struct initc *c, uint32_t type, const void *payload, size_t len, int timeout_ms, uint32_t *ret_id) {
        char buf[SBX_INIT_MSG_MAX];
        if (len > sizeof(buf) - sizeof(struct sbx_init_hdr))
                return -EMSGSIZE;
        struct sbx_init_hdr h = { .type = type, .id = c->next_id++, .len = (uint32_t) len };
        if (c->next_id == 0)
                c->next_id = 1; /* 0 is the events' */
        memcpy(buf, &h, sizeof(h));
        if (len)
                memcpy(buf + sizeof(h), payload, len);
        int64_t deadline = now_ms() + timeout_ms;
        /* Non-blocking: a stopped agent fills the socket's buffer, and
         * that must end in a timeout, not a daemon stuck in sendmsg. */
        while (send(c->fd, buf, sizeof(h) + len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN)
                        return errno == ECONNRESET ? -EPIPE : -errno;
                int r = wait_fd(c->fd, POLLOUT, deadline);
                if (r < 0)
                        return r;
        }
        if (ret_id)
                *ret_id = h.id;
        return 0;
}

/* What a message of this type must carry: payload size (or minimum with
 * at_least) and descriptor count, for a successful reply or an event. */
static int expect(uint32_t type, size_t *ret_size, bool *ret_at_least, unsigned *ret_fds) {
        *ret_at_least = false;
        *ret_fds = 0;
        switch (type) {
        case SBX_INIT_SPAWN | SBX_INIT_REPLY:
                *ret_size = sizeof(struct sbx_init_spawned);
                *ret_fds = 3;
                return 0;
        case SBX_INIT_OPEN | SBX_INIT_REPLY:
                *ret_size = sizeof(struct sbx_init_stat);
                *ret_fds = 1;
                return 0;
        case SBX_INIT_STAT | SBX_INIT_REPLY:
                *ret_size = sizeof(struct sbx_init_stat);
                return 0;
        case SBX_INIT_CONNECT | SBX_INIT_REPLY:
                *ret_size = 0;
                *ret_fds = 1;
                return 0;
        case SBX_INIT_LIST | SBX_INIT_REPLY:
                *ret_size = sizeof(struct sbx_init_list);
                *ret_at_least = true;
                return 0;
        case SBX_INIT_SIGNAL | SBX_INIT_REPLY:
        case SBX_INIT_REMOVE | SBX_INIT_REPLY:
        case SBX_INIT_MKDIR | SBX_INIT_REPLY:
                *ret_size = 0;
                return 0;
        case SBX_INIT_EV_READY:
                *ret_size = sizeof(struct sbx_init_ready);
                return 0;
        case SBX_INIT_EV_EXIT:
                *ret_size = sizeof(struct sbx_init_exit);
                return 0;
        default:
                return -EPROTO;
        }
}

/* A CONNECT reply's socket: a TCP stream, nothing the daemon could be
 * fooled into treating as another kind (a Unix socket passing more). */
static bool sock_is_tcp(int fd) {
        int v;
        socklen_t l = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) < 0 || (v != AF_INET && v != AF_INET6))
                return false;
        l = sizeof(v);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l) < 0 || v != SOCK_STREAM)
                return false;
        l = sizeof(v);
        return getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &l) == 0 && v == IPPROTO_TCP;
}

/* The master of a pseudo-terminal (ptmx, 5:2), the only device a command's
 * stdio may be. */
static bool is_pty_master(const struct stat *st) {
        return S_ISCHR(st->st_mode) && major(st->st_rdev) == 5 && minor(st->st_rdev) == 2;
}

/* Every descriptor must be what its reply says: pipes or a terminal for a
 * command's stdio, a regular file for OPEN, a TCP socket for CONNECT.
 * Anything else (a FIFO to block on, another socket, a directory to walk,
 * a device that never ends)
 * is refused before a caller holds it. */
static int check_fds(const struct initc_msg *m) {
        for (unsigned i = 0; i < m->n_fds; i++) {
                struct stat st;
                if (fstat(m->fds[i], &st) < 0)
                        return -EPROTO;
                bool ok;
                if (m->hdr.type == (SBX_INIT_OPEN | SBX_INIT_REPLY))
                        ok = S_ISREG(st.st_mode);
                else if (m->hdr.type == (SBX_INIT_CONNECT | SBX_INIT_REPLY))
                        ok = S_ISSOCK(st.st_mode) && sock_is_tcp(m->fds[i]);
                else if (i == 0)
                        ok = S_ISFIFO(st.st_mode) || is_pty_master(&st);
                else if (i == 1 && is_pty_master(&st)) {
                        /* a terminal's output: the same terminal as stdin
                         * (every master is the one ptmx inode: the pty's
                         * number tells them apart) */
                        struct stat st0;
                        unsigned n0, n1;
                        ok = fstat(m->fds[0], &st0) == 0 && is_pty_master(&st0) && st0.st_dev == st.st_dev &&
                             ioctl(m->fds[0], TIOCGPTN, &n0) == 0 && ioctl(m->fds[1], TIOCGPTN, &n1) == 0 && n0 == n1;
                } else
                        ok = S_ISFIFO(st.st_mode);
                if (!ok)
                        return -EPROTO;
                if (!S_ISREG(st.st_mode)) {
                        int fl = fcntl(m->fds[i], F_GETFL);
                        if (fl < 0 || fcntl(m->fds[i], F_SETFL, fl | O_NONBLOCK) < 0)
                                return -EPROTO;
                }
        }
        return 0;
}

static int check_list(const struct initc_msg *m) {
        struct sbx_init_list h;
        memcpy(&h, m->payload, sizeof(h));
        if (h.flags & ~SBX_INIT_LIST_MORE)
                return -EPROTO;
        size_t pos = sizeof(h);
        for (uint32_t i = 0; i < h.count; i++) {
                if (pos + 2 > m->len)
                        return -EPROTO;
                const char *name = m->payload + pos + 1;
                const char *nul = memchr(name, '\0', m->len - pos - 1);
                if (!nul || nul == name || (size_t) (nul - name) > SBX_INIT_NAME_MAX ||
                    memchr(name, '/', (size_t) (nul - name)) || streq(name, ".") || streq(name, ".."))
                        return -EPROTO;
                pos = (size_t) (nul + 1 - m->payload);
        }
        return pos == m->len ? 0 : -EPROTO;
}

static int check_msg(const struct initc_msg *m) {
        size_t size;
        bool at_least;
        unsigned fds;
        const struct sbx_init_hdr *h = &m->hdr;

        if (h->error != 0) {
                /* An error reply: to a request (never an event), nothing
                 * attached, an errno the kernel could give. */
                bool req = (h->type & ~0xffffu) == SBX_INIT_REPLY;
                if (!req || h->error < 0 || h->error > 4095 || m->len || m->n_fds)
                        return -EPROTO;
                return 0;
        }
        if (expect(h->type, &size, &at_least, &fds) < 0)
                return -EPROTO;
        if ((h->type & SBX_INIT_EVENT) && h->id != 0)
                return -EPROTO;
        if (at_least ? m->len < size : m->len != size)
                return -EPROTO;
        if (m->n_fds != fds)
                return -EPROTO;
        if (h->type == (SBX_INIT_LIST | SBX_INIT_REPLY))
                return check_list(m);
        return check_fds(m);
}

int initc_recv(struct initc *c, struct initc_msg *m, int timeout_ms) {
        union {
                char b[CMSG_SPACE(SBX_INIT_FDS_MAX * sizeof(int))];
                struct cmsghdr align;
        } cbuf;
        char buf[SBX_INIT_MSG_MAX];
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
        struct msghdr mh;
        int64_t deadline = now_ms() + timeout_ms;
        ssize_t n;

        m->n_fds = 0;
        for (;;) {
                mh = (struct msghdr) { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b,
                                       .msg_controllen = sizeof(cbuf.b) };
                n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                if (n >= 0)
                        break;
                if (errno == EINTR)
                        continue;
                if (errno == ECONNRESET)
                        return -EPIPE;
                if (errno != EAGAIN)
                        return -errno;
                int r = wait_fd(c->fd, POLLIN, deadline);
                if (r < 0)
                        return r;
        }
        /* Take every descriptor first, so that none leaks whatever is
         * wrong with the message. */
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
                        if (m->n_fds < SBX_INIT_FDS_MAX)
                                m->fds[m->n_fds++] = fd;
                        else
                                close(fd);
                }
        }
        int r = 0;
        if (n == 0)
                r = -EPIPE;
        else if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t) n < sizeof(m->hdr))
                r = -EPROTO;
        else {
                memcpy(&m->hdr, buf, sizeof(m->hdr));
                m->len = (size_t) n - sizeof(m->hdr);
                if (m->hdr.len != m->len)
                        r = -EPROTO;
                else {
                        memcpy(m->payload, buf + sizeof(m->hdr), m->len);
                        r = check_msg(m);
                }
        }
        if (r < 0)
                initc_msg_clear(m);
        return r;
}

int initc_call(struct initc *c, uint32_t type, const void *payload, size_t len, int timeout_ms,
               struct initc_msg *m, initc_event_fn on_event, void *userdata) {
        uint32_t id;
        int64_t deadline = now_ms() + timeout_ms;
        int r = initc_send(c, type, payload, len, timeout_ms, &id);
        if (r < 0)
                return r;
        for (;;) {
                /* Checked before every read: an agent that streams events
                 * must not keep the caller past its deadline. */
                int64_t left = deadline - now_ms();
                if (left <= 0)
                        return -ETIMEDOUT;
                r = initc_recv(c, m, (int) left);
                if (r < 0)
                        return r;
                if (m->hdr.type & SBX_INIT_EVENT) {
                        if (on_event)
                                on_event(m, userdata);
                        initc_msg_clear(m);
                        continue;
                }
                /* One request at a time here: a reply to anything else is
                 * the agent lying. */
                if (m->hdr.id != id || m->hdr.type != (type | SBX_INIT_REPLY)) {
                        initc_msg_clear(m);
                        return -EPROTO;
                }
                return 0;
        }
}

bool initc_list_next(const struct initc_msg *m, size_t *pos, uint8_t *ret_type, const char **ret_name) {
        if (*pos == 0)
                *pos = sizeof(struct sbx_init_list);
        if (*pos >= m->len)
                return false;
        *ret_type = (uint8_t) m->payload[*pos];
        *ret_name = m->payload + *pos + 1;
        *pos += 2 + strlen(*ret_name);
        return true;
}
