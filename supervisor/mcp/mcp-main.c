/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-mcp: the Model Context Protocol on stdin and stdout (JSON-RPC, one
 * message a line; diagnostics on stderr), the daemon through its socket
 * as the user who started it. Tool calls that run a job go on while other
 * requests are served: one poll() over stdin and each call's connection
 * to the daemon. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"
#include "mcp.h"

#define MAX_MESSAGE (16u << 20)
#define DEFAULT_SOCKET SBX_RUNSTATEDIR "/sbx/sbx-supervisord.sock"

static const char *socket_path;
static struct call calls[MCP_MAX_CALLS];

static void out_send(struct mcp_io *io, json_t *msg) {
        (void) io;
        char *s = json_dumps(msg, JSON_COMPACT);
        json_decref(msg);
        if (!s)
                return;
        /* one line each; a message never holds a raw newline (JSON escapes it) */
        fputs(s, stdout);
        fputc('\n', stdout);
        fflush(stdout);
        free(s);
}

static int out_connect(struct mcp_io *io) {
        (void) io;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(socket_path) >= sizeof(sa.sun_path)) {
                close(fd);
                return -ENAMETOOLONG;
        }
        strcpy(sa.sun_path, socket_path);
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static struct call *out_call_new(struct mcp_io *io) {
        (void) io;
        for (size_t i = 0; i < MCP_MAX_CALLS; i++)
                if (!calls[i].used) {
                        memset(&calls[i], 0, sizeof(calls[i]));
                        calls[i].used = true;
                        calls[i].conn.fd = -1;
                        return &calls[i];
                }
        return NULL;
}

static struct call *out_call_find(struct mcp_io *io, json_t *request_id) {
        (void) io;
        for (size_t i = 0; i < MCP_MAX_CALLS; i++)
                if (calls[i].used && request_id && json_equal(calls[i].id, request_id))
                        return &calls[i];
        return NULL;
}

static struct mcp_io stdio_io = {
        .send = out_send, .connect = out_connect, .call_new = out_call_new, .call_find = out_call_find, .watch_fd = -1,
};

/* Lines of stdin, each a message (a batch, an array, is not part of MCP). */
static int read_stdin(char **buf, size_t *len, size_t *cap) {
        if (*cap - *len < 65536) {
                size_t c = *cap ? *cap * 2 : 131072;
                if (c > MAX_MESSAGE * 2)
                        return -E2BIG;
                char *b = realloc(*buf, c);
                if (!b)
                        return -ENOMEM;
                *buf = b;
                *cap = c;
        }
        ssize_t n = read(STDIN_FILENO, *buf + *len, *cap - *len);
        if (n < 0)
                return errno == EINTR ? 0 : -errno;
        if (n == 0)
                return -EPIPE;
        *len += (size_t) n;
        char *start = *buf, *nl;
        while ((nl = memchr(start, '\n', (size_t) (*buf + *len - start)))) {
                size_t l = (size_t) (nl - start);
                if (l) {
                        json_error_t je;
                        json_t *m = json_loadb(start, l, JSON_REJECT_DUPLICATES, &je);
                        if (!m)
                                mcp_error(NULL, -32700, "parse error: %s (line %d column %d)", je.text, je.line, je.column);
                        else if (!json_is_object(m))
                                mcp_error(NULL, -32600, "a message must be a JSON object");
                        else
                                mcp_handle(m);
                        json_decref(m);
                }
                start = nl + 1;
        }
        size_t rest = (size_t) (*buf + *len - start);
        if (rest > MAX_MESSAGE)
                return -E2BIG;
        memmove(*buf, start, rest);
        *len = rest;
        return 0;
}

static void usage(FILE *f) {
        fprintf(f, "Usage: sbx-mcp [--socket PATH]\n"
                   "A Model Context Protocol server on stdin and stdout whose tools run code in\n"
                   "sbx-supervisord's sandboxes, as the user who starts it (see sbx-mcp(1)).\n");
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "socket", required_argument, NULL, 's' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { NULL, 0, NULL, 0 },
        };
        int o;
        socket_path = getenv("SBX_SOCKET") ? getenv("SBX_SOCKET") : DEFAULT_SOCKET;
        while ((o = getopt_long(argc, argv, "s:hV", opts, NULL)) >= 0) {
                switch (o) {
                case 's':
                        socket_path = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("sbx-mcp %s\n", PACKAGE_VERSION);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "sbx-mcp: unexpected argument '%s'\n", argv[optind]);
                usage(stderr);
                return 2;
        }
        signal(SIGPIPE, SIG_IGN);
        stdio_io.where = socket_path;
        mcp_io = &stdio_io;
        char *buf = NULL;
        size_t len = 0, cap = 0;
        bool in_open = true;
        for (;;) {
                struct pollfd p[1 + MCP_MAX_CALLS];
                struct call *of[1 + MCP_MAX_CALLS];
                nfds_t n = 0;
                if (in_open)
                        p[n++] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
                for (size_t i = 0; i < MCP_MAX_CALLS; i++)
                        if (calls[i].used) {
                                of[n] = &calls[i];
                                p[n++] = (struct pollfd){ .fd = calls[i].conn.fd, .events = POLLIN };
                        }
                if (n == 0)
                        break; /* stdin closed and no call left */
                if (poll(p, n, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                for (nfds_t i = 0; i < n; i++) {
                        if (!p[i].revents)
                                continue;
                        if (in_open && i == 0) {
                                int r = read_stdin(&buf, &len, &cap);
                                if (r == -E2BIG)
                                        fprintf(stderr, "sbx-mcp: a message longer than %u bytes; stopping\n", MAX_MESSAGE);
                                if (r < 0)
                                        in_open = false;
                                continue;
                        }
                        struct call *c = of[i];
                        if (!c->used)
                                continue;
                        if (dconn_fill(&c->conn) < 0) {
                                mcp_call_lost(c);
                                continue;
                        }
                        json_t *m;
                        while (c->used && (m = dconn_next(&c->conn))) {
                                int done = mcp_call_event(c, m);
                                json_decref(m);
                                if (done)
                                        break;
                        }
                }
        }
        free(buf);
        return 0;
}
