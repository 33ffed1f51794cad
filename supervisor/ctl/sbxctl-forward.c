/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl session forward SESSION PORT [--listen [ADDR:]LPORT]: a raw TCP
 * connection to a port a session exposed, through the daemon's
 * session.forward (sbx-protocol(7)). Each connection is a daemon
 * connection of its own: after the request's ok line it carries the
 * service's bytes both ways. Without --listen, standard input and output
 * are the one connection (like nc); with it, every connection accepted on
 * the local address gets its own forward, in a child process. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "parse.h"
#include "sbxctl.h"

#define LINE_MAX_BYTES 65536

/* A daemon connection carrying the forward, or -1 (the daemon's error
 * printed). The reply is read a byte at a time: what follows it is the
 * service's and must stay in the socket. */
static int open_forward(const char *sid, uint16_t port) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(sbxctl_socket) >= sizeof(sa.sun_path))
                die("socket path too long: %s", sbxctl_socket);
        strcpy(sa.sun_path, sbxctl_socket);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                fprintf(stderr, "sbxctl: cannot connect to %s: %s (is sbx-supervisord running?)\n", sbxctl_socket, strerror(errno));
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        json_t *q = new_req("session.forward");
        json_object_set_new(q, "session", json_string(sid));
        json_object_set_new(q, "port", json_integer(port));
        char *s = json_dumps(q, JSON_COMPACT);
        json_decref(q);
        if (!s)
                die("cannot encode the request");
        size_t n = strlen(s);
        s[n] = '\n';
        bool sent = fd_write_all(fd, s, n + 1) >= 0;
        free(s);
        static char line[LINE_MAX_BYTES];
        size_t len = 0;
        while (sent && len < sizeof(line) - 1) {
                ssize_t r = read(fd, line + len, 1);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                if (line[len++] == '\n')
                        break;
        }
        if (!len || line[len - 1] != '\n') {
                fprintf(stderr, "sbxctl: the daemon closed the connection\n");
                close(fd);
                return -1;
        }
        if (json_out)
                fwrite(line, 1, len, stderr);
        json_t *m = json_loadb(line, len, 0, NULL);
        if (!json_is_true(json_object_get(m, "ok"))) {
                json_t *e = json_object_get(m, "error");
                fprintf(stderr, "sbxctl: %s: %s\n", json_string_value(json_object_get(e, "code")) ?: "E_?",
                        json_string_value(json_object_get(e, "message")) ?: "a bad reply");
                json_decref(m);
                close(fd);
                return -1;
        }
        json_decref(m);
        return fd;
}

/* Bytes both ways between (in, out) and sock until the service's side
 * ended and all it sent is out (as nc does); the end of in is passed on
 * as a half-close, so a client that stops sending still gets its answer. */
static void bridge(int in, int out, int sock) {
        static char buf[2][65536];
        size_t len[2] = { 0, 0 }, off[2] = { 0, 0 };
        bool eof[2] = { false, false }; /* [0] in ended, [1] sock ended */
        for (;;) {
                if (eof[1] && !len[1])
                        return;
                struct pollfd p[4];
                int np = 0, ri[2] = { -1, -1 }, wi[2] = { -1, -1 };
                if (!eof[0] && !len[0])
                        p[ri[0] = np++] = (struct pollfd){ .fd = in, .events = POLLIN };
                if (!eof[1] && !len[1])
                        p[ri[1] = np++] = (struct pollfd){ .fd = sock, .events = POLLIN };
                if (len[0])
                        p[wi[0] = np++] = (struct pollfd){ .fd = sock, .events = POLLOUT };
                if (len[1])
                        p[wi[1] = np++] = (struct pollfd){ .fd = out, .events = POLLOUT };
                if (poll(p, (nfds_t) np, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return;
                }
                for (int d = 0; d < 2; d++) {
                        int from = d == 0 ? in : sock, to = d == 0 ? sock : out;
                        if (ri[d] >= 0 && p[ri[d]].revents) {
                                ssize_t r = read(from, buf[d], sizeof(buf[d]));
                                if (r < 0 && (errno == EINTR || errno == EAGAIN))
                                        continue;
                                if (r <= 0) {
                                        eof[d] = true;
                                        if (to == sock)
                                                shutdown(sock, SHUT_WR);
                                        continue;
                                }
                                len[d] = (size_t) r;
                                off[d] = 0;
                        }
                        if (wi[d] >= 0 && p[wi[d]].revents) {
                                ssize_t w = write(to, buf[d] + off[d], len[d]);
                                if (w < 0 && (errno == EINTR || errno == EAGAIN))
                                        continue;
                                if (w < 0)
                                        return;
                                off[d] += (size_t) w;
                                len[d] -= (size_t) w;
                                if (!len[d] && eof[d] && to == sock)
                                        shutdown(sock, SHUT_WR);
                        }
                }
        }
}

/* [ADDR:]PORT, ADDR an IPv4 or a bracketed IPv6 address (127.0.0.1 when
 * left out). */
static int listen_on(const char *spec) {
        char addr[64] = "127.0.0.1";
        const char *colon = strrchr(spec, ':'), *port_s = spec;
        if (colon) {
                size_t n = (size_t) (colon - spec);
                if (n >= 2 && spec[0] == '[' && spec[n - 1] == ']') {
                        spec++;
                        n -= 2;
                }
                if (n == 0 || n >= sizeof(addr))
                        usage_error("session forward: --listen: bad address in '%s'", spec);
                memcpy(addr, spec, n);
                addr[n] = '\0';
                port_s = colon + 1;
        }
        uint64_t port;
        if (parse_uint64(port_s, 65535, &port) < 0 || port == 0)
                usage_error("session forward: --listen: expected [ADDR:]PORT with a port 1 to 65535, got '%s'", spec);
        struct sockaddr_storage ss = { 0 };
        socklen_t sl;
        struct sockaddr_in *v4 = (struct sockaddr_in *) &ss;
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *) &ss;
        if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
                v4->sin_family = AF_INET;
                v4->sin_port = htons((uint16_t) port);
                sl = sizeof(*v4);
        } else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
                v6->sin6_family = AF_INET6;
                v6->sin6_port = htons((uint16_t) port);
                sl = sizeof(*v6);
        } else
                usage_error("session forward: --listen: '%s' is not an IP address", addr);
        int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 || bind(fd, (struct sockaddr *) &ss, sl) < 0 ||
            listen(fd, 64) < 0)
                die("session forward: cannot listen on %s port %u: %s", addr, (unsigned) port, strerror(errno));
        fprintf(stderr, "sbxctl: forwarding %s port %u\n", addr, (unsigned) port);
        return fd;
}

int sbxctl_session_forward(int ac, char **av) {
        const char *listen_spec = NULL;
        if (ac == 5 && streq(av[3], "--listen"))
                listen_spec = av[4];
        else if (ac != 3)
                usage_error("session forward SESSION PORT [--listen [ADDR:]LOCAL_PORT]");
        uint64_t port;
        if (parse_uint64(av[2], 65535, &port) < 0 || port == 0)
                usage_error("session forward: PORT: expected 1 to 65535, got '%s'", av[2]);
        signal(SIGPIPE, SIG_IGN);
        if (!listen_spec) {
                int fd = open_forward(av[1], (uint16_t) port);
                if (fd < 0)
                        return 125;
                bridge(0, 1, fd);
                close(fd);
                return 0;
        }
        int lfd = listen_on(listen_spec);
        /* Children are reaped by the kernel; each serves one connection. */
        signal(SIGCHLD, SIG_IGN);
        for (;;) {
                int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0) {
                        if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE)
                                continue;
                        die("session forward: accept: %s", strerror(errno));
                }
                pid_t pid = fork();
                if (pid == 0) {
                        close(lfd);
                        int fd = open_forward(av[1], (uint16_t) port);
                        if (fd >= 0)
                                bridge(c, c, fd);
                        _exit(fd < 0 ? 125 : 0);
                }
                if (pid < 0)
                        fprintf(stderr, "sbxctl: session forward: fork: %s\n", strerror(errno));
                close(c);
        }
}
