/* SPDX-License-Identifier: Apache-2.0 */
/* A test client of sbx-init(8) through lib/initc.h, as the daemon will be:
 *
 *   init-client [--timeout MS] [--listen PATH] -- COMMAND...
 *
 * starts COMMAND (sbx-launch ... -- sbx-init) with one end of a
 * SOCK_SEQPACKET socketpair on fd 3, waits for the agent's READY, then
 * runs one command per line of stdin and prints one answer per command
 * (t/session-init.bats reads them). A lost connection prints "lost: ERR"
 * and exits 3; the launcher is then killed, as the daemon would end the
 * session. With --listen, COMMAND also gets a listening socket bound at
 * PATH on fd 4 (for sbx-init --listen-fd 4), and the commands "drop",
 * "reconnect", "pause MS" and "launcher-end MS" try the agent's life
 * across connections. "await PATH" waits for a command to make PATH. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "initc.h"
#include "macro.h"

#define MAX_ARGS 64
#define MAX_EXITS 4096
#define GET_MAX (1 << 20)

static struct initc C;
static pid_t launcher = -1;
static int timeout_ms = 5000;
static struct initc_msg M;
static const char *listen_path;
static struct sbx_init_exit exits[MAX_EXITS];
static unsigned n_exits;

static const char *ename(int e) {
        const char *n = strerrorname_np(e);
        return n ? n : "E?";
}

static _noreturn_ void finish(int code) {
        close(C.fd);
        if (launcher > 0) {
                /* The agent exits on end-of-file; a stopped one does not:
                 * then the launcher goes, and the sandbox with it. */
                for (int i = 0; i < timeout_ms / 10; i++) {
                        if (waitpid(launcher, NULL, WNOHANG) == launcher)
                                exit(code);
                        usleep(10000);
                }
                kill(launcher, SIGKILL);
                waitpid(launcher, NULL, 0);
        }
        exit(code);
}

static _noreturn_ void lost(int r) {
        printf("lost: %s\n", ename(-r));
        fflush(stdout);
        finish(3);
}

static void on_event(const struct initc_msg *ev, void *userdata) {
        if (ev->hdr.type == SBX_INIT_EV_EXIT && n_exits < MAX_EXITS)
                memcpy(&exits[n_exits++], ev->payload, sizeof(exits[0]));
}

/* A call whose transport failure ends the client; the agent's error is
 * returned (0 or positive errno). */
static int call(uint32_t type, const void *payload, size_t len) {
        int r = initc_call(&C, type, payload, len, timeout_ms, &M, on_event, NULL);
        if (r < 0)
                lost(r);
        return M.hdr.error;
}

static int64_t now_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void print_exit(const struct sbx_init_exit *e) {
        if (WIFSIGNALED(e->status))
                printf("exit signal=%d", WTERMSIG(e->status));
        else
                printf("exit code=%d", WEXITSTATUS(e->status));
        printf(" utime_us=%llu stime_us=%llu maxrss_kb=%llu\n", (unsigned long long) e->utime_us,
               (unsigned long long) e->stime_us, (unsigned long long) e->maxrss_kb);
}

static void wait_exit(uint32_t handle, struct sbx_init_exit *ret) {
        for (;;) {
                for (unsigned i = 0; i < n_exits; i++)
                        if (exits[i].handle == handle) {
                                *ret = exits[i];
                                exits[i] = exits[--n_exits];
                                return;
                        }
                int r = initc_recv(&C, &M, timeout_ms);
                if (r < 0)
                        lost(r);
                if (M.hdr.type & SBX_INIT_EVENT)
                        on_event(&M, NULL);
                else
                        lost(-EPROTO);
                initc_msg_clear(&M);
        }
}

/* Spawn from "[-p | -t] [-w ROWS COLS] [-C DIR] [-e K=V]... [-i TEXT] --
 * ARGV..." (-t: SBX_INIT_SPAWN_TTY; -w: its size, sent as given). */
static int spawn(char **w, int n, int fds[3], uint32_t *ret_handle, const char **ret_input) {
        const char *env[MAX_ARGS + 1] = { 0 }, *cwd = ".";
        uint32_t flags = 0;
        struct sbx_init_winsize ws, *wsp = NULL;
        int i = 0, ne = 0;
        char buf[SBX_INIT_MSG_MAX];
        size_t len;
        *ret_input = NULL;
        for (; i < n && !streq(w[i], "--"); i++) {
                if (streq(w[i], "-p"))
                        flags |= SBX_INIT_SPAWN_PTY;
                else if (streq(w[i], "-t"))
                        flags |= SBX_INIT_SPAWN_TTY;
                else if (streq(w[i], "-w") && i + 2 < n) {
                        ws.rows = (uint16_t) atoi(w[++i]);
                        ws.cols = (uint16_t) atoi(w[++i]);
                        wsp = &ws;
                }
                else if (streq(w[i], "-C") && i + 1 < n)
                        cwd = w[++i];
                else if (streq(w[i], "-e") && i + 1 < n && ne < MAX_ARGS)
                        env[ne++] = w[++i];
                else if (streq(w[i], "-i") && i + 1 < n)
                        *ret_input = w[++i];
        }
        if (i >= n - 1)
                return EINVAL;
        w[n] = NULL;
        if (initc_encode_spawn(buf, sizeof(buf), flags, wsp, cwd, (const char *const *) w + i + 1, env, &len) < 0)
                return E2BIG;
        int e = call(SBX_INIT_SPAWN, buf, len);
        if (e)
                return e;
        struct sbx_init_spawned sp;
        memcpy(&sp, M.payload, sizeof(sp));
        memcpy(fds, M.fds, 3 * sizeof(int));
        M.n_fds = 0;
        *ret_handle = sp.handle;
        return 0;
}

static void drop(int *fd) {
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

static void drain(int fds[3], const char *input) {
        if (input) {
                fd_write_all(fds[0], input, strlen(input));
                fd_write_all(fds[0], "\n", 1);
        }
        /* A pty is left open until the end: closing its master would
         * hang the command up before it read. */
        struct stat st;
        if (fstat(fds[0], &st) == 0 && S_ISFIFO(st.st_mode))
                drop(&fds[0]);
        char out[2][65536];
        size_t got[2] = { 0, 0 };
        int64_t deadline = now_us() + (int64_t) timeout_ms * 1000;
        while (fds[1] >= 0 || fds[2] >= 0) {
                struct pollfd p[2] = { { .fd = fds[1], .events = POLLIN }, { .fd = fds[2], .events = POLLIN } };
                int64_t left = (deadline - now_us()) / 1000;
                if (left <= 0 || poll(p, 2, (int) left) <= 0)
                        break;
                for (int k = 0; k < 2; k++) {
                        if (!p[k].revents)
                                continue;
                        ssize_t r = read(fds[k + 1], out[k] + got[k], sizeof(out[k]) - 1 - got[k]);
                        if (r > 0)
                                got[k] += (size_t) r;
                        else if (r == 0 || errno != EAGAIN)
                                drop(&fds[k + 1]);
                }
        }
        drop(&fds[0]);
        drop(&fds[1]);
        drop(&fds[2]);
        fwrite(out[0], 1, got[0], stdout);
        if (got[1]) {
                out[1][got[1]] = '\0';
                printf("stderr: %s", out[1]);
        }
}

static void cmd_run(char **w, int n, bool background) {
        int fds[3];
        uint32_t h;
        const char *input;
        int e = spawn(w, n, fds, &h, &input);
        if (e) {
                printf("error %s\n", ename(e));
                return;
        }
        if (background) {
                printf("handle %u\n", h);
                closep(&fds[0]);
                closep(&fds[1]);
                closep(&fds[2]);
                return;
        }
        drain(fds, input);
        struct sbx_init_exit ex;
        wait_exit(h, &ex);
        print_exit(&ex);
}

static void reply_ok(int e) {
        if (e)
                printf("error %s\n", ename(e));
        else
                printf("ok\n");
}

static int path_call(uint32_t type, uint32_t arg, uint32_t arg2, const char *path) {
        char buf[SBX_INIT_MSG_MAX];
        size_t len;
        if (initc_encode_path(buf, sizeof(buf), arg, arg2, path, &len) < 0)
                return E2BIG;
        return call(type, buf, len);
}

static void cmd_put(const char *local, const char *remote) {
        _cleanup_close_ int in = open(local, O_RDONLY | O_CLOEXEC);
        if (in < 0) {
                printf("local: %s\n", strerror(errno));
                return;
        }
        int e = path_call(SBX_INIT_OPEN, SBX_INIT_OPEN_WRITE, 0644, remote);
        if (e) {
                printf("error %s\n", ename(e));
                return;
        }
        _cleanup_close_ int out = TAKE_FD(M.fds[0]);
        M.n_fds = 0;
        /* What the daemon will check too: the access it asked for. */
        if ((fcntl(out, F_GETFL) & O_ACCMODE) != O_WRONLY) {
                printf("error wrong access mode\n");
                return;
        }
        int r = fd_copy(in, out);
        reply_ok(r < 0 ? -r : 0);
}

static void cmd_get(const char *remote) {
        int e = path_call(SBX_INIT_OPEN, SBX_INIT_OPEN_READ, 0, remote);
        if (e) {
                printf("error %s\n", ename(e));
                return;
        }
        _cleanup_close_ int in = TAKE_FD(M.fds[0]);
        M.n_fds = 0;
        static char buf[GET_MAX];
        size_t got = 0;
        ssize_t r;
        while (got < sizeof(buf) && (r = read(in, buf + got, sizeof(buf) - got)) > 0)
                got += (size_t) r;
        fwrite(buf, 1, got, stdout);
        printf("\n");
}

static void cmd_ls(const char *path) {
        uint32_t skip = 0, total = 0;
        for (;;) {
                int e = path_call(SBX_INIT_LIST, skip, 0, path);
                if (e) {
                        printf("error %s\n", ename(e));
                        return;
                }
                struct sbx_init_list h;
                memcpy(&h, M.payload, sizeof(h));
                size_t pos = 0;
                uint8_t type;
                const char *name;
                while (initc_list_next(&M, &pos, &type, &name))
                        printf("entry %u %s\n", type, name);
                total += h.count;
                skip += h.count;
                if (!(h.flags & SBX_INIT_LIST_MORE) || h.count == 0)
                        break;
        }
        printf("ls %u\n", total);
}

static void cmd_stat(const char *path) {
        int e = path_call(SBX_INIT_STAT, 0, 0, path);
        if (e) {
                printf("error %s\n", ename(e));
                return;
        }
        struct sbx_init_stat st;
        memcpy(&st, M.payload, sizeof(st));
        const char *t = S_ISREG(st.mode) ? "reg" : S_ISDIR(st.mode) ? "dir" : S_ISLNK(st.mode) ? "lnk"
                      : S_ISFIFO(st.mode) ? "fifo" : "other";
        printf("stat %s %04o %llu\n", t, st.mode & 07777, (unsigned long long) st.size);
}

/* "await PATH": until the workspace has PATH (a command made it), within
 * the timeout, asking every 10 ms. */
static void cmd_await(const char *path) {
        int64_t deadline = now_us() + (int64_t) timeout_ms * 1000;
        int e;
        while ((e = path_call(SBX_INIT_STAT, 0, 0, path)) == ENOENT && now_us() < deadline)
                usleep(10000);
        if (e)
                printf("error %s\n", ename(e));
        else
                printf("found\n");
}

/* Datagrams the client library would never send. */
static void cmd_raw(const char *what) {
        char buf[70000] = { 0 };
        struct sbx_init_hdr h = { .type = SBX_INIT_STAT, .id = 4242 };
        size_t len = sizeof(h);
        int fd = -1;
        if (streq(what, "short"))
                len = 3;
        else if (streq(what, "badlen")) {
                h.len = 100;
                len += 10;
        } else if (streq(what, "big")) {
                h.len = sizeof(buf) - sizeof(h);
                len = sizeof(buf);
        } else if (streq(what, "unknown"))
                h.type = 99;
        else if (streq(what, "fds")) {
                struct sbx_init_path pa = { 0 };
                h.len = sizeof(pa) + 2;
                memcpy(buf + sizeof(h), &pa, sizeof(pa));
                memcpy(buf + sizeof(h) + sizeof(pa), ".", 2);
                len += h.len;
                fd = STDIN_FILENO;
        } else if (streq(what, "spawn-strings")) {
                struct sbx_init_spawn s = { .argc = 3 };
                h.type = SBX_INIT_SPAWN;
                h.len = sizeof(s) + 4;
                memcpy(buf + sizeof(h), &s, sizeof(s));
                memcpy(buf + sizeof(h) + sizeof(s), ".\0ab", 4);
                len += h.len;
        } else if (streq(what, "spawn-argc")) {
                struct sbx_init_spawn s = { .argc = 65535 };
                h.type = SBX_INIT_SPAWN;
                h.len = sizeof(s);
                memcpy(buf + sizeof(h), &s, sizeof(s));
                len += h.len;
        } else if (streq(what, "path-nonul")) {
                struct sbx_init_path pa = { 0 };
                h.len = sizeof(pa) + 3;
                memcpy(buf + sizeof(h), &pa, sizeof(pa));
                memcpy(buf + sizeof(h) + sizeof(pa), "abc", 3);
                len += h.len;
        } else if (streq(what, "signal-short")) {
                h.type = SBX_INIT_SIGNAL;
                h.len = 4;
                len += 4;
        } else {
                printf("unknown raw %s\n", what);
                return;
        }
        if (len >= sizeof(h))
                memcpy(buf, &h, sizeof(h));
        else
                memcpy(buf, &h, len);
        int r = fd_send_with(C.fd, buf, len, &fd, fd >= 0 ? 1 : 0);
        if (r < 0)
                lost(r);
        for (;;) {
                r = initc_recv(&C, &M, timeout_ms);
                if (r < 0)
                        lost(r);
                if (!(M.hdr.type & SBX_INIT_EVENT))
                        break;
                on_event(&M, NULL);
        }
        printf("reply type=0x%x id=%u error %s\n", M.hdr.type, M.hdr.id, ename(M.hdr.error));
        initc_msg_clear(&M);
}

/* N requests with up to a window of them in flight, then every reply. */
static void cmd_flood(unsigned n) {
        char buf[64];
        size_t len;
        unsigned sent = 0, got = 0, ok = 0;
        initc_encode_path(buf, sizeof(buf), 0, 0, ".", &len);
        while (got < n) {
                while (sent < n && sent - got < 256) {
                        int r = initc_send(&C, SBX_INIT_STAT, buf, len, timeout_ms, NULL);
                        if (r < 0)
                                lost(r);
                        sent++;
                }
                int r = initc_recv(&C, &M, timeout_ms);
                if (r < 0)
                        lost(r);
                if (M.hdr.type & SBX_INIT_EVENT) {
                        on_event(&M, NULL);
                        continue;
                }
                got++;
                ok += M.hdr.type == (SBX_INIT_STAT | SBX_INIT_REPLY) && !M.hdr.error;
        }
        printf("flood %u %u\n", n, ok);
}

static int cmp64(const void *a, const void *b) {
        int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
        return x < y ? -1 : x > y;
}

/* Round trips of `true`: request to exit event, and request to reply. */
static void cmd_bench(unsigned n) {
        int64_t *rt = calloc(n, sizeof(*rt)), *sp = calloc(n, sizeof(*sp));
        char *w[] = { "--", "true", NULL };
        if (!rt || !sp || n == 0)
                return;
        for (unsigned i = 0; i < n; i++) {
                int fds[3];
                uint32_t h;
                const char *input;
                int64_t t0 = now_us();
                int e = spawn(w, 2, fds, &h, &input);
                if (e) {
                        printf("error %s\n", ename(e));
                        return;
                }
                sp[i] = now_us() - t0;
                for (int k = 0; k < 3; k++)
                        close(fds[k]);
                struct sbx_init_exit ex;
                wait_exit(h, &ex);
                rt[i] = now_us() - t0;
        }
        qsort(rt, n, sizeof(*rt), cmp64);
        qsort(sp, n, sizeof(*sp), cmp64);
        printf("bench n=%u spawn_us p50=%lld p95=%lld p99=%lld roundtrip_us p50=%lld p95=%lld p99=%lld\n", n,
               (long long) sp[n / 2], (long long) sp[n * 95 / 100], (long long) sp[n * 99 / 100],
               (long long) rt[n / 2], (long long) rt[n * 95 / 100], (long long) rt[n * 99 / 100]);
        free(rt);
        free(sp);
}

static void print_ready(const struct initc_msg *m, int64_t since_us) {
        struct sbx_init_ready rd;
        memcpy(&rd, m->payload, sizeof(rd));
        if (rd.version != SBX_INIT_VERSION)
                lost(-EPROTO);
        printf("ready pid=%d connection=%u running=%u ended=%u start_us=%lld\n", rd.pid, rd.connection, rd.running,
               rd.ended, (long long) (now_us() - since_us));
}

static int connect_to(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        return fd;
}

static void await_ready(int64_t since_us) {
        int r = initc_recv(&C, &M, timeout_ms);
        if (r < 0)
                lost(r);
        if (M.hdr.type != SBX_INIT_EV_READY)
                lost(-EPROTO);
        print_ready(&M, since_us);
        initc_msg_clear(&M);
}

static void cmd_reconnect(void) {
        if (C.fd >= 0)
                close(C.fd);
        C.fd = -1;
        int64_t t0 = now_us();
        int fd = connect_to(listen_path);
        if (fd < 0) {
                printf("error %s\n", ename(-fd));
                return;
        }
        initc_init(&C, fd);
        await_ready(t0);
}

/* Wait up to ms for the launcher to end (the sandbox is gone). */
static void cmd_launcher_end(int ms) {
        int64_t t0 = now_us();
        for (int i = 0; i < ms; i += 5) {
                int st;
                if (waitpid(launcher, &st, WNOHANG) == launcher) {
                        printf("launcher ended after_ms=%lld\n", (long long) (now_us() - t0) / 1000);
                        launcher = -1;
                        return;
                }
                usleep(5000);
        }
        printf("launcher running\n");
}

static void run_line(char *line) {
        char *w[MAX_ARGS + 1];
        int n = 0;
        /* Words split at blanks; '...' is one word, as in a shell. */
        for (char *p = line; *p && n < MAX_ARGS;) {
                if (strchr(" \t\n", *p)) {
                        p++;
                        continue;
                }
                char *end;
                if (*p == '\'') {
                        w[n++] = ++p;
                        end = strchr(p, '\'');
                } else {
                        w[n++] = p;
                        end = p + strcspn(p, " \t\n");
                }
                if (!end || !*end)
                        break;
                *end = '\0';
                p = end + 1;
        }
        w[n] = NULL;
        if (n == 0)
                return;
        if (streq(w[0], "run"))
                cmd_run(w + 1, n - 1, false);
        else if (streq(w[0], "bg"))
                cmd_run(w + 1, n - 1, true);
        else if (streq(w[0], "wait") && n == 2) {
                struct sbx_init_exit ex;
                wait_exit((uint32_t) strtoul(w[1], NULL, 10), &ex);
                print_exit(&ex);
        } else if (streq(w[0], "signal") && n >= 3) {
                struct sbx_init_signal s = { .handle = (uint32_t) strtoul(w[1], NULL, 10),
                                             .signo = atoi(w[2]),
                                             .flags = n > 3 && streq(w[3], "group") ? SBX_INIT_SIGNAL_GROUP : 0 };
                reply_ok(call(SBX_INIT_SIGNAL, &s, sizeof(s)));
        } else if (streq(w[0], "put") && n == 3)
                cmd_put(w[1], w[2]);
        else if (streq(w[0], "get") && n == 2)
                cmd_get(w[1]);
        else if (streq(w[0], "ls") && n == 2)
                cmd_ls(w[1]);
        else if (streq(w[0], "stat") && n == 2)
                cmd_stat(w[1]);
        else if (streq(w[0], "await") && n == 2)
                cmd_await(w[1]);
        else if (streq(w[0], "rm") && n == 2)
                reply_ok(path_call(SBX_INIT_REMOVE, 0, 0, w[1]));
        else if (streq(w[0], "mkdir") && n == 2)
                reply_ok(path_call(SBX_INIT_MKDIR, 0, 0755, w[1]));
        else if (streq(w[0], "raw") && n == 2)
                cmd_raw(w[1]);
        else if (streq(w[0], "flood") && n == 2)
                cmd_flood((unsigned) strtoul(w[1], NULL, 10));
        else if (streq(w[0], "bench") && n == 2)
                cmd_bench((unsigned) strtoul(w[1], NULL, 10));
        else if (streq(w[0], "drop") && n == 1 && listen_path) {
                close(C.fd);
                C.fd = -1;
                printf("dropped\n");
        } else if (streq(w[0], "reconnect") && n == 1 && listen_path)
                cmd_reconnect();
        else if (streq(w[0], "pause") && n == 2) {
                usleep((useconds_t) atoi(w[1]) * 1000);
                printf("paused\n");
        } else if (streq(w[0], "launcher-end") && n == 2)
                cmd_launcher_end(atoi(w[1]));
        else
                printf("usage: %s\n", w[0]);
}

int main(int argc, char **argv) {
        int i = 1, sv[2];
        if (i + 1 < argc && streq(argv[i], "--timeout")) {
                timeout_ms = atoi(argv[i + 1]);
                i += 2;
        }
        if (i + 1 < argc && streq(argv[i], "--listen")) {
                listen_path = argv[i + 1];
                i += 2;
        }
        if (i >= argc || !streq(argv[i], "--") || i + 1 >= argc) {
                fprintf(stderr, "usage: init-client [--timeout MS] [--listen PATH] -- COMMAND...\n");
                return 2;
        }
        signal(SIGPIPE, SIG_IGN);
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return perror("socketpair"), 1;
        int lfd = -1;
        if (listen_path) {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", listen_path);
                unlink(listen_path);
                lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
                if (lfd < 0 || bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(lfd, 4) < 0)
                        return perror(listen_path), 1;
        }
        launcher = fork();
        if (launcher == 0) {
                if (dup2(sv[1], 3) < 0 || (lfd >= 0 && dup2(lfd, 4) < 0))
                        _exit(126);
                execvp(argv[i + 1], argv + i + 1);
                _exit(127);
        }
        close(sv[1]);
        if (lfd >= 0)
                close(lfd);
        initc_init(&C, sv[0]);
        await_ready(now_us());
        fflush(stdout);

        char line[4096];
        while (fgets(line, sizeof(line), stdin)) {
                run_line(line);
                fflush(stdout);
        }
        finish(0);
}
