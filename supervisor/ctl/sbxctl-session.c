/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl session ...: sessions (sbx-protocol(7), SESSIONS). create and
 * exec take run's options (sbxctl-run.c) and add their own. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "parse.h"
#include "proto.h"
#include "sbxctl.h"

/* How long create waits for the sandbox to be ready. */
#define READY_WAIT_MS 60000

static uint64_t seconds_of(const char *opt, const char *v) {
        uint64_t ms;
        if (parse_duration_ms(v, &ms) < 0 || ms < 1000)
                usage_error("session: %s: expected a duration of 1 s or more, e.g. 90s or 10m, got '%s'", opt, v);
        return ms / 1000;
}

static void print_or_json(json_t *m, const char *key) {
        if (json_out)
                return;
        json_t *v = json_object_get(m, key);
        if (json_is_string(v))
                printf("%s\n", json_string_value(v));
        else {
                char *s = json_dumps(v ? v : m, JSON_INDENT(2) | JSON_SORT_KEYS);
                if (s)
                        printf("%s\n", s);
                free(s);
        }
}

static void sleep_ms(long ms) {
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
        nanosleep(&ts, NULL);
}

/* create [--ttl D] [--idle D] [run's options]: prints the id once ready. */
static int session_create(int argc, char **argv) {
        char **rest = calloc((size_t) argc + 3, sizeof(char *));
        int n = 0;
        uint64_t ttl = 0, idle = 0;
        if (!rest)
                die("out of memory");
        rest[n++] = argv[0];
        for (int i = 1; i < argc; i++) {
                if ((streq(argv[i], "--ttl") || streq(argv[i], "--idle")) && i + 1 < argc) {
                        uint64_t s = seconds_of(argv[i], argv[i + 1]);
                        *(streq(argv[i], "--ttl") ? &ttl : &idle) = s;
                        i++;
                } else if (streq(argv[i], "--"))
                        usage_error("session create: takes no command (run one with sbxctl session exec)");
                else
                        rest[n++] = argv[i];
        }
        /* run's parser wants a command: the agent stands for it. */
        rest[n++] = (char *) "--";
        rest[n++] = (char *) "sbx-init";
        json_t *req = sbxctl_build_run(n, rest, false);
        free(rest);
        json_object_set_new(req, "op", json_string("session.create"));
        json_object_del(req, "command");
        if (ttl)
                json_object_set_new(req, "ttl_s", json_integer((json_int_t) ttl));
        if (idle)
                json_object_set_new(req, "idle_s", json_integer((json_int_t) idle));
        connect_daemon();
        json_t *m = request(req);
        char id[PROTO_SESSION_ID_LEN + 1];
        snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(m, "session")) ?: "");
        /* Ready when its agent has said so. */
        for (int waited = 0; waited < READY_WAIT_MS; waited += 5) {
                json_t *q = new_req("session.show");
                json_object_set_new(q, "session", json_string(id));
                json_t *s = request(q);
                if (streq(json_string_value(json_object_get(s, "state")) ?: "", "ready")) {
                        print_or_json(s, "session");
                        return 0;
                }
                sleep_ms(5);
        }
        die("session %s: not ready after %d s", id, READY_WAIT_MS / 1000);
}

/* exec SESSION [--cwd DIR] [run's options] -- CMD...: follows it. */
static json_t *session_req(const char *op, const char *sid);

static volatile sig_atomic_t winch;

static void on_winch(int sig) {
        (void) sig;
        winch = 1;
}

/* The largest terminal the daemon takes, rows and columns. */
#define TERM_SIZE_MAX 1000

/* Our terminal's size, where stdin is one, into q's rows and cols: true. */
static bool put_winsize(json_t *q) {
        struct winsize ws;
        if (!isatty(STDIN_FILENO) || ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_row == 0 || ws.ws_col == 0)
                return false;
        json_object_set_new(q, "rows", json_integer(ws.ws_row > TERM_SIZE_MAX ? TERM_SIZE_MAX : ws.ws_row));
        json_object_set_new(q, "cols", json_integer(ws.ws_col > TERM_SIZE_MAX ? TERM_SIZE_MAX : ws.ws_col));
        return true;
}

/* -t at a terminal: its new size goes to the command's (session.resize). */
static void send_winsize(const char *sid, const char *job) {
        json_t *q = session_req("session.resize", sid);
        json_object_set_new(q, "job", json_string(job));
        if (put_winsize(q))
                request(q);
        else
                json_decref(q);
}

/* -i: standard input goes to the command as it comes (session.stdin, on a
 * connection of its own, from a child process); its end is the command's
 * stdin's end. With -t, a change of our terminal's size (SIGWINCH) is sent
 * too: the signal is blocked but while we wait for input, so that it never
 * interrupts a request to the daemon. */
static pid_t feed_stdin(const char *sid, const char *job_of_reply, bool tty) {
        /* A copy: the reply it points into is freed by the next request. */
        char job[64];
        snprintf(job, sizeof(job), "%s", job_of_reply);
        pid_t pid = fork();
        if (pid < 0)
                die("fork: %s", strerror(errno));
        if (pid > 0)
                return pid;
        sigset_t winch_set, waiting;
        sigemptyset(&winch_set);
        sigaddset(&winch_set, SIGWINCH);
        if (tty) {
                struct sigaction sa = { .sa_handler = on_winch };
                sigemptyset(&sa.sa_mask);
                sigaction(SIGWINCH, &sa, NULL);
                sigprocmask(SIG_BLOCK, &winch_set, &waiting);
                sigdelset(&waiting, SIGWINCH);
        }
        connect_daemon();
        static unsigned char buf[65536];
        size_t bl = sodium_base64_ENCODED_LEN(sizeof(buf), sodium_base64_VARIANT_ORIGINAL);
        char *b = malloc(bl);
        if (!b)
                die("out of memory");
        for (;;) {
                if (winch) {
                        winch = 0;
                        send_winsize(sid, job);
                }
                if (tty) {
                        fd_set in;
                        FD_ZERO(&in);
                        FD_SET(STDIN_FILENO, &in);
                        /* (another error: the read says it) */
                        if (pselect(STDIN_FILENO + 1, &in, NULL, NULL, NULL, &waiting) < 0 && errno == EINTR)
                                continue;
                }
                ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                size_t off = 0, len = n > 0 ? (size_t) n : 0;
                do {
                        sodium_bin2base64(b, bl, buf + off, len - off, sodium_base64_VARIANT_ORIGINAL);
                        json_t *q = session_req("session.stdin", sid);
                        json_object_set_new(q, "job", json_string(job));
                        if (len > off)
                                json_object_set_new(q, "data_b64", json_string(b));
                        else if (n <= 0 && tty)
                                /* A terminal's end of input is its EOF
                                 * character, not a closed descriptor. */
                                json_object_set_new(q, "data", json_string("\004"));
                        if (n <= 0)
                                json_object_set_new(q, "eof", json_true());
                        json_t *m = request(q);
                        off += (size_t) json_integer_value(json_object_get(m, "written"));
                        /* Its pipe is full: the command reads slower than we do. */
                        if (off < len)
                                usleep(10000);
                } while (off < len);
                if (n <= 0)
                        _exit(0);
        }
}

/* -t at a terminal: ours is raw while the command has one of its own
 * (keys go to it as typed, ^C included), and restored at exit. */
static struct termios saved_tio;
static bool tio_saved;

static void restore_tty(void) {
        if (tio_saved)
                tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_tio);
}

static void raw_tty(void) {
        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tio) < 0)
                return;
        struct termios raw = saved_tio;
        cfmakeraw(&raw);
        if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0) {
                tio_saved = true;
                atexit(restore_tty);
        }
}

static int session_exec(int argc, char **argv) {
        if (argc < 2)
                usage_error("session exec: missing session id");
        const char *sid = argv[1], *cwd = NULL;
        bool detach = false, interactive = false, tty = false;
        char **rest = calloc((size_t) argc + 1, sizeof(char *));
        int n = 0;
        if (!rest)
                die("out of memory");
        rest[n++] = argv[0];
        int i = 2;
        for (; i < argc && !streq(argv[i], "--"); i++) {
                if (streq(argv[i], "--cwd") && i + 1 < argc)
                        cwd = argv[++i];
                else if (streq(argv[i], "--detach"))
                        detach = true;
                else if (streq(argv[i], "-i") || streq(argv[i], "--interactive"))
                        interactive = true;
                else if (streq(argv[i], "-t") || streq(argv[i], "--tty"))
                        interactive = tty = true;
                else
                        rest[n++] = argv[i];
        }
        for (; i < argc; i++)
                rest[n++] = argv[i];
        json_t *req = sbxctl_build_run(n, rest, true);
        free(rest);
        json_object_set_new(req, "op", json_string("session.exec"));
        json_object_set_new(req, "session", json_string(sid));
        if (cwd)
                json_object_set_new(req, "cwd", json_string(cwd));
        if (detach && interactive)
                usage_error("session exec: --detach and -i or -t do not go together");
        if (detach)
                json_object_set_new(req, "follow", json_false());
        if (interactive)
                json_object_set_new(req, "stdin_open", json_true());
        if (tty) {
                json_object_set_new(req, "tty", json_true());
                put_winsize(req);
        }
        connect_daemon();
        json_t *m = request(req);
        if (detach) {
                /* Its output can be followed again: sbxctl logs -f JOB. */
                if (!json_out)
                        printf("%s\n", json_string_value(json_object_get(m, "job")) ?: "?");
                return 0;
        }
        if (tty)
                raw_tty();
        pid_t feeder = interactive ? feed_stdin(sid, json_string_value(json_object_get(m, "job")) ?: "", tty) : 0;
        int st = sbxctl_follow_to_end(true);
        if (feeder > 0) {
                kill(feeder, SIGTERM);
                waitpid(feeder, NULL, 0);
        }
        return st;
}

static json_t *session_req(const char *op, const char *sid) {
        json_t *q = new_req(op);
        json_object_set_new(q, "session", json_string(sid));
        return q;
}

/* Bytes of the file in one session.put: its base64 (4/3 of it) stays well
 * under the daemon's default max_request (4 MiB). */
#define PUT_PIECE (1u << 20)

/* The file in pieces, each at the offset where the last one ended (the
 * daemon refuses a piece that does not follow on). */
static int session_put(const char *sid, const char *local, const char *path) {
        FILE *in = streq(local, "-") ? stdin : fopen(local, "re");
        if (!in)
                die("%s: %s", local, strerror(errno));
        bool exec = !streq(local, "-") && access(local, X_OK) == 0;
        unsigned char *d = malloc(PUT_PIECE);
        size_t bl = sodium_base64_ENCODED_LEN(PUT_PIECE, sodium_base64_VARIANT_ORIGINAL);
        char *b = malloc(bl);
        if (!d || !b)
                die("out of memory");
        connect_daemon();
        uint64_t off = 0;
        for (;;) {
                size_t n = fread(d, 1, PUT_PIECE, in);
                if (ferror(in))
                        die("%s: %s", local, strerror(errno));
                /* An empty file is still made: one piece of nothing. */
                if (n == 0 && off > 0)
                        break;
                sodium_bin2base64(b, bl, d, n, sodium_base64_VARIANT_ORIGINAL);
                json_t *q = session_req("session.put", sid);
                json_object_set_new(q, "path", json_string(path));
                json_object_set_new(q, "data_b64", json_string(b));
                json_object_set_new(q, "offset", json_integer((json_int_t) off));
                if (exec)
                        json_object_set_new(q, "mode", json_integer(0755));
                request(q);
                off += n;
                if (n < PUT_PIECE && feof(in))
                        break;
        }
        free(b);
        free(d);
        if (in != stdin)
                fclose(in);
        return 0;
}

/* The file in chunks, each answer's data decoded to out. */
static int session_get(const char *sid, const char *path, const char *out_path) {
        FILE *out = out_path ? fopen(out_path, "we") : stdout;
        if (!out)
                die("%s: %s", out_path, strerror(errno));
        connect_daemon();
        uint64_t off = 0;
        for (;;) {
                json_t *q = session_req("session.get", sid);
                json_object_set_new(q, "path", json_string(path));
                json_object_set_new(q, "offset", json_integer((json_int_t) off));
                json_t *m = request(q);
                const char *s = json_string_value(json_object_get(m, "data"));
                const char *b = json_string_value(json_object_get(m, "data_b64"));
                size_t n = 0;
                if (s) {
                        n = strlen(s);
                        fwrite(s, 1, n, out);
                } else if (b) {
                        size_t bl = strlen(b);
                        unsigned char *buf = malloc(bl ? bl : 1);
                        if (!buf || sodium_base642bin(buf, bl, b, bl, NULL, &n, NULL, sodium_base64_VARIANT_ORIGINAL) < 0)
                                die("bad data from the daemon");
                        fwrite(buf, 1, n, out);
                        free(buf);
                }
                off += n;
                if (json_is_true(json_object_get(m, "eof")) || n == 0)
                        break;
        }
        if (out_path && fclose(out) != 0)
                die("%s: %s", out_path, strerror(errno));
        return 0;
}

static void print_entries(json_t *m) {
        if (json_out)
                return;
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(m, "entries"), i, e) {
                const char *t = json_string_value(json_object_get(e, "type")) ?: "";
                printf("%s%s\n", json_string_value(json_object_get(e, "name")) ?: "?", streq(t, "directory") ? "/" : "");
        }
}

int sbxctl_session(int argc, char **argv) {
        if (argc < 2)
                usage_error("session: expected create, exec, put, get, ls, signal, extend, expose, unexpose, forward, close, show or list");
        const char *sub = argv[1];
        char **av = argv + 1;
        int ac = argc - 1;
        if (streq(sub, "create"))
                return session_create(ac, av);
        if (streq(sub, "exec"))
                return session_exec(ac, av);
        if (streq(sub, "list")) {
                if (ac != 1)
                        usage_error("session list: takes no argument");
                connect_daemon();
                json_t *m = request(new_req("session.list"));
                size_t i;
                json_t *s;
                if (!json_out)
                        json_array_foreach(json_object_get(m, "sessions"), i, s)
                                printf("%s  %-8s  expires %s\n", json_string_value(json_object_get(s, "session")) ?: "?",
                                       json_string_value(json_object_get(s, "state")) ?: "?",
                                       json_string_value(json_object_get(s, "expires")) ?: "-");
                return 0;
        }
        if (ac < 2)
                usage_error("session %s: missing session id", sub);
        const char *sid = av[1];
        if (streq(sub, "show") || streq(sub, "close")) {
                if (ac != 2)
                        usage_error("session %s: unexpected argument '%s'", sub, av[2]);
                connect_daemon();
                json_t *m = request(session_req(streq(sub, "show") ? "session.show" : "session.close", sid));
                if (streq(sub, "show"))
                        print_or_json(m, "");
                return 0;
        }
        if (streq(sub, "extend")) {
                if (ac != 3)
                        usage_error("session extend SESSION DURATION");
                json_t *q = session_req("session.extend", sid);
                json_object_set_new(q, "ttl_s", json_integer((json_int_t) seconds_of("extend", av[2])));
                connect_daemon();
                print_or_json(request(q), "expires");
                return 0;
        }
        if (streq(sub, "expose") || streq(sub, "unexpose")) {
                bool ex = streq(sub, "expose");
                uint64_t port, ttl = 0;
                if (ex && ac == 5 && streq(av[3], "--signed"))
                        ttl = seconds_of("--signed", av[4]);
                else if (ac != 3)
                        usage_error(ex ? "session expose SESSION PORT [--signed DURATION]" : "session unexpose SESSION PORT");
                if (parse_uint64(av[2], 65535, &port) < 0 || port == 0)
                        usage_error("session %s: PORT: expected 1 to 65535, got '%s'", sub, av[2]);
                json_t *q = session_req(ex ? "session.expose" : "session.unexpose", sid);
                json_object_set_new(q, "port", json_integer((json_int_t) port));
                if (ttl)
                        json_object_set_new(q, "signed_ttl_s", json_integer((json_int_t) ttl));
                connect_daemon();
                json_t *m = request(q);
                if (ex && !json_out) {
                        const char *listen = json_string_value(json_object_get(m, "listen")) ?: "?";
                        printf("host   %s\ntoken  %s\nurl    http://%s/ (with Host: %s and X-Sbx-Token: the token)\n",
                               json_string_value(json_object_get(m, "host")) ?: "?", json_string_value(json_object_get(m, "token")) ?: "?",
                               listen, json_string_value(json_object_get(m, "host")) ?: "?");
                        if (json_object_get(m, "signed_query"))
                                printf("signed http://%s/?%s (with Host: %s; until %s)\n", listen,
                                       json_string_value(json_object_get(m, "signed_query")),
                                       json_string_value(json_object_get(m, "host")) ?: "?",
                                       json_string_value(json_object_get(m, "signed_expires")) ?: "?");
                }
                return 0;
        }
        if (streq(sub, "forward"))
                return sbxctl_session_forward(ac, av);
        if (streq(sub, "signal")) {
                if (ac != 4)
                        usage_error("session signal SESSION JOB SIGNAL");
                json_t *q = session_req("session.signal", sid);
                json_object_set_new(q, "job", json_string(av[2]));
                uint64_t n;
                if (parse_uint64(av[3], 64, &n) == 0)
                        json_object_set_new(q, "signal", json_integer((json_int_t) n));
                else
                        json_object_set_new(q, "signal", json_string(av[3]));
                connect_daemon();
                request(q);
                return 0;
        }
        if (streq(sub, "put")) {
                if (ac != 4)
                        usage_error("session put SESSION FILE PATH");
                return session_put(sid, av[2], av[3]);
        }
        if (streq(sub, "get")) {
                const char *out = NULL;
                if (ac == 5 && streq(av[3], "-o"))
                        out = av[4];
                else if (ac != 3)
                        usage_error("session get SESSION PATH [-o FILE]");
                return session_get(sid, av[2], out);
        }
        if (streq(sub, "ls")) {
                if (ac > 3)
                        usage_error("session ls SESSION [PATH]");
                json_t *q = session_req("session.ls", sid);
                if (ac == 3)
                        json_object_set_new(q, "path", json_string(av[2]));
                connect_daemon();
                print_entries(request(q));
                return 0;
        }
        usage_error("session: unknown command '%s' (create, exec, put, get, ls, signal, extend, expose, unexpose, forward, close, show or list)",
                    sub);
}
