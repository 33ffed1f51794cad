/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl's connection to the daemon and its way out: one request, its
 * answer, and the messages after it; errors and usage errors. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto.h"
#include "sbxctl.h"

const char *sbxctl_socket;
bool json_out;
static FILE *conn_in;
static int conn_fd = -1;

void die(const char *fmt, ...) {
        va_list ap;
        fputs("sbxctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(125);
}

/* A usage error: what was wrong, then exit 2 as sbxctl(1) says. */
void usage_error(const char *fmt, ...) {
        va_list ap;
        fputs("sbxctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs(" (see sbxctl --help)\n", stderr);
        exit(2);
}

/* getopt_long's '?' or ':' (opterr is off: its own message would name
 * argv[0], which is the command for a command's options). */
void sbxctl_bad_option(const char *where, int o, char **argv) {
        const char *arg = argv[optind - 1];
        char short_opt[3] = { '-', (char) optopt, '\0' };
        const char *opt = strncmp(arg, "--", 2) == 0 ? arg : short_opt;
        if (o == ':')
                usage_error("%s%s needs a value", where, opt);
        usage_error("%sunknown option '%s'", where, opt);
}

void connect_daemon(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(sbxctl_socket) >= sizeof(sa.sun_path))
                die("socket path too long: %s", sbxctl_socket);
        strcpy(sa.sun_path, sbxctl_socket);
        conn_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (conn_fd < 0)
                die("socket: %s", strerror(errno));
        if (connect(conn_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                die("cannot connect to %s: %s (is sbx-supervisord running?)", sbxctl_socket, strerror(errno));
        conn_in = fdopen(dup(conn_fd), "r");
        if (!conn_in)
                die("fdopen: %s", strerror(errno));
}

void send_request(json_t *req) {
        char *s = json_dumps(req, JSON_COMPACT);
        if (!s)
                die("cannot encode the request");
        size_t n = strlen(s);
        s[n] = '\n';
        size_t off = 0;
        while (off < n + 1) {
                ssize_t w = send(conn_fd, s + off, n + 1 - off, MSG_NOSIGNAL);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        /* The daemon may have answered and hung up before
                         * reading (a refused caller): read its answer. */
                        if (errno == EPIPE || errno == ECONNRESET)
                                break;
                        die("send: %s", strerror(errno));
                }
                off += (size_t) w;
        }
        free(s);
        json_decref(req);
}

/* The next message; dies if the daemon hung up. The raw line is printed
 * with --json. */
json_t *recv_message(void) {
        static char *line;
        static size_t cap;
        ssize_t n = getline(&line, &cap, conn_in);
        if (n <= 0)
                die("the daemon closed the connection");
        json_error_t je;
        json_t *m = json_loadb(line, (size_t) n, JSON_ALLOW_NUL, &je);
        if (!m)
                die("bad message from the daemon: %s", je.text);
        if (json_out)
                fputs(line, stdout);
        return m;
}

/* The response to our request (events before it are returned to the
 * caller's handler only when follow-style; here we skip nothing). */
json_t *expect_ok(json_t *m) {
        if (json_is_false(json_object_get(m, "ok"))) {
                json_t *e = json_object_get(m, "error");
                if (!json_out)
                        fprintf(stderr, "sbxctl: %s: %s\n", json_string_value(json_object_get(e, "code")) ?: "E_?",
                                json_string_value(json_object_get(e, "message")) ?: "");
                json_decref(m);
                exit(125);
        }
        return m;
}

/* The last response, owned here and freed at exit (LeakSanitizer runs the
 * CI suite). Callers borrow it. */
static json_t *last_response;

void sbxctl_client_free(void) {
        json_decref(last_response);
        last_response = NULL;
}

json_t *request(json_t *req) {
        send_request(req);
        json_decref(last_response);
        last_response = NULL;
        last_response = expect_ok(recv_message());
        return last_response;
}

json_t *new_req(const char *op) {
        return json_pack("{s:i, s:s}", "v", PROTO_VERSION, "op", op);
}

/* Files read whole: uploads, stdin, lock files. */
#define MAX_UPLOAD (256u << 20)

unsigned char *sbxctl_slurp(const char *path, size_t *ret_len) {
        FILE *f = streq(path, "-") ? stdin : fopen(path, "re");
        if (!f)
                die("%s: %s", path, strerror(errno));
        size_t cap = 65536, len = 0;
        unsigned char *buf = malloc(cap);
        for (;;) {
                if (!buf)
                        die("out of memory");
                size_t n = fread(buf + len, 1, cap - len, f);
                len += n;
                if (len > MAX_UPLOAD)
                        die("%s: larger than %u bytes", path, MAX_UPLOAD);
                if (n == 0)
                        break;
                if (len == cap)
                        buf = realloc(buf, cap *= 2);
        }
        if (ferror(f))
                die("%s: read error", path);
        if (f != stdin)
                fclose(f);
        *ret_len = len;
        return buf;
}
