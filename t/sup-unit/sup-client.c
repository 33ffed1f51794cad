/* SPDX-License-Identifier: Apache-2.0 */
/* A raw protocol client for the supervisor tests: sends bytes exactly as
 * asked (malformed, oversized, partial) and prints what comes back.
 *
 *   sup-client SOCKET               send stdin, half-close, print replies until EOF
 *   sup-client SOCKET --big N       a line of N bytes, then a ping; print replies
 *   sup-client SOCKET --partial     half a request, then close without a newline
 *   sup-client SOCKET --idle N      hold N idle connections, ping on another one,
 *                                   print its reply and how many idle ones are open
 *   sup-client --get PATH           for each JSON line on stdin that has PATH
 *                                   (a.b.c), print its value (strings raw)
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int connect_to(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                fprintf(stderr, "sup-client: connect %s: %s\n", path, strerror(errno));
                exit(2);
        }
        return fd;
}

static void send_all(int fd, const char *buf, size_t len) {
        while (len > 0) {
                ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        fprintf(stderr, "sup-client: send: %s\n", strerror(errno));
                        exit(2);
                }
                buf += n;
                len -= (size_t) n;
        }
}

static void print_until_eof(int fd) {
        char buf[65536];
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                fwrite(buf, 1, (size_t) n, stdout);
}

static int get(const char *path) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        int found = 0;
        while ((len = getline(&line, &cap, stdin)) > 0) {
                json_t *root = json_loadb(line, (size_t) len, JSON_ALLOW_NUL, NULL);
                if (!root)
                        continue;
                json_t *v = root;
                char *copy = strdup(path), *save = NULL;
                for (char *k = strtok_r(copy, ".", &save); k && v; k = strtok_r(NULL, ".", &save)) {
                        if (json_is_array(v))
                                v = json_array_get(v, strtoul(k, NULL, 10));
                        else
                                v = json_object_get(v, k);
                }
                free(copy);
                if (v) {
                        found = 1;
                        if (json_is_string(v))
                                fwrite(json_string_value(v), 1, json_string_length(v), stdout), putchar('\n');
                        else {
                                char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
                                printf("%s\n", s ? s : "?");
                                free(s);
                        }
                }
                json_decref(root);
        }
        free(line);
        return found ? 0 : 1;
}

static const char ping[] = "{\"v\":1,\"op\":\"ping\"}\n";

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: sup-client SOCKET [--big N | --partial | --idle N]\n");
                return 2;
        }
        if (strcmp(argv[1], "--get") == 0 && argc == 3)
                return get(argv[2]);
        const char *path = argv[1];
        if (argc == 2) {
                int fd = connect_to(path);
                char buf[65536];
                size_t n;
                while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
                        send_all(fd, buf, n);
                shutdown(fd, SHUT_WR);
                print_until_eof(fd);
                return 0;
        }
        if (strcmp(argv[2], "--big") == 0 && argc == 4) {
                size_t n = strtoull(argv[3], NULL, 10);
                char *big = malloc(n + 1);
                if (!big)
                        return 2;
                /* valid-looking JSON start so only the size is wrong */
                memset(big, 'x', n);
                memcpy(big, "{\"v\":1,\"op\":\"ping\",\"pad\":\"", 27);
                big[n] = '\n';
                int fd = connect_to(path);
                send_all(fd, big, n + 1);
                send_all(fd, ping, sizeof(ping) - 1);
                shutdown(fd, SHUT_WR);
                print_until_eof(fd);
                return 0;
        }
        if (strcmp(argv[2], "--partial") == 0) {
                int fd = connect_to(path);
                static const char half[] = "{\"v\":1,\"op\":\"run\",\"command\":[\"/bin/tr";
                send_all(fd, half, sizeof(half) - 1);
                close(fd);
                return 0;
        }
        if (strcmp(argv[2], "--idle") == 0 && argc == 4) {
                int n = atoi(argv[3]);
                struct rlimit rl;
                getrlimit(RLIMIT_NOFILE, &rl);
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
                int *fds = calloc((size_t) n, sizeof(int));
                int open_n = 0;
                for (int i = 0; i < n; i++) {
                        fds[i] = connect_to(path);
                        open_n++;
                }
                int fd = connect_to(path);
                send_all(fd, ping, sizeof(ping) - 1);
                shutdown(fd, SHUT_WR);
                print_until_eof(fd);
                /* every idle connection is still open: nothing to read, no EOF */
                int alive = 0;
                for (int i = 0; i < n; i++) {
                        char c;
                        ssize_t r = recv(fds[i], &c, 1, MSG_DONTWAIT);
                        if (r < 0 && errno == EAGAIN)
                                alive++;
                }
                printf("idle-open %d of %d\n", alive, open_n);
                return 0;
        }
        fprintf(stderr, "sup-client: unknown mode %s\n", argv[2]);
        return 2;
}
