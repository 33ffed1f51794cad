/* SPDX-License-Identifier: Apache-2.0 */
/* A raw protocol client for the supervisor tests: sends bytes exactly as
 * asked (malformed, oversized, partial) and prints what comes back.
 *
 *   sup-client SOCKET               send stdin, half-close, print replies until EOF
 *   sup-client SOCKET --big N       a line of N bytes, then a ping; print replies
 *   sup-client SOCKET --partial     half a request, then close without a newline
 *   sup-client SOCKET --slow SECS   half a request, then wait up to SECS for the
 *                                   daemon; print its reply and "closed" if it
 *                                   hung up
 *   sup-client SOCKET --stall SECS  send stdin, then read nothing for SECS; then
 *                                   drain and print "closed" if the daemon hung up
 *   sup-client SOCKET --idle N      hold N idle connections, ping on another one,
 *                                   print its reply and how many idle ones are open
 *   sup-client SOCKET --hold N SECS hold N connections for SECS seconds; after
 *                                   half a second prints "held K of N" (K still
 *                                   open, the daemon's refusals drained), then
 *                                   every refusal's code, one per line
 *   sup-client SOCKET --halfline N BYTES
 *                                   N connections each send BYTES of a request
 *                                   line without its end; after a second prints
 *                                   "pending K busy B of N": K still open and
 *                                   silent, B answered E_BUSY
 *   sup-client SOCKET --pings N INTERVAL_MS
 *                                   N pings on one connection, one every
 *                                   INTERVAL_MS, each timed from request to
 *                                   reply; prints "pings N p50 A p99 B max C"
 *                                   (ms)
 *   sup-client SOCKET --logs-flood N K JOB MAX_BYTES [seq]
 *                                   N connections each send K "logs" requests
 *                                   for JOB (max_bytes MAX_BYTES) at once,
 *                                   pipelined, and read every reply (as they
 *                                   come on all connections, or with seq one
 *                                   connection after the other, as a simple
 *                                   client does); prints
 *                                   "replies R of N*K closed C bytes B"
 *   sup-client SOCKET --bench JOBS CLIENTS [RATE] [CMD...]
 *                                   CLIENTS connections run JOBS jobs in all
 *                                   (default /bin/true), each "run" with follow,
 *                                   at most RATE jobs/s overall (0: as fast as
 *                                   possible); prints jobs/s and the
 *                                   submit->end latency percentiles
 *   sup-client --time N CLIENTS RATE CMD...
 *                                   the same load shape as --bench, but each
 *                                   "job" is CMD run directly: the baseline
 *                                   With SUP_CLIENT_RAW=FILE both append every
 *                                   latency (ms) to FILE, one per line; with
 *                                   SUP_CLIENT_DETAIL set, --bench also prints
 *                                   when the run reply and the started event came
 *   sup-client --notify-listen PATH SECS
 *                                   receive sd_notify datagrams on PATH for SECS
 *                                   seconds and print them, one per line
 *   sup-client --get PATH           for each JSON line on stdin that has PATH
 *                                   (a.b.c), print its value (strings raw)
 */
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <fcntl.h>
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

/* Set when the daemon hung up on us (a refused caller is answered and
 * closed before it writes): nothing more is sent, what it said is read. */
static bool peer_closed;

static void send_all(int fd, const char *buf, size_t len) {
        while (len > 0 && !peer_closed) {
                ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EPIPE || errno == ECONNRESET) {
                                peer_closed = true;
                                return;
                        }
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


struct bench {
        char **cmd;           /* --time: run this instead of a job */
        const char *path;
        char *req;            /* the request line */
        int per_client;
        double interval_s;    /* between one client's submissions; 0 = closed loop */
        double *lat_ms;       /* per job */
        double *reply_ms, *started_ms; /* per job: the run reply, the started event */
        int failures;
        pthread_mutex_t lock;
        int next;
        int clients, started; /* for spreading the clients' start times */
        double t_start;
};

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static bool run_cmd(char **cmd) {
        pid_t pid = fork();
        if (pid == 0) {
                int nul = open("/dev/null", O_RDWR);
                dup2(nul, 0);
                dup2(nul, 1);
                execvp(cmd[0], cmd);
                _exit(127);
        }
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) < 0)
                return false;
        return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void *bench_client(void *arg) {
        struct bench *b = arg;
        int fd = b->cmd ? -1 : connect_to(b->path);
        FILE *in = b->cmd ? NULL : fdopen(dup(fd), "r");
        char *line = NULL;
        size_t cap = 0;
        /* At a given rate, the clients' jobs arrive evenly spread, not in
         * bursts of all clients at once: client k starts k/clients of an
         * interval late. (A burst of 8 on 2 CPUs measures queueing behind
         * the burst more than the cost of one job.) */
        pthread_mutex_lock(&b->lock);
        int k = b->started++;
        pthread_mutex_unlock(&b->lock);
        double next = b->t_start + b->interval_s * k / b->clients;
        for (int i = 0; i < b->per_client; i++) {
                if (b->interval_s > 0) {
                        double w = next - now_s();
                        if (w > 0) {
                                struct timespec ts = { (time_t) w, (long) ((w - (double) (time_t) w) * 1e9) };
                                nanosleep(&ts, NULL);
                        }
                        next += b->interval_s;
                }
                double t0 = now_s(), t_reply = 0, t_started = 0;
                bool ok = false, ended = false;
                if (b->cmd) {
                        ok = run_cmd(b->cmd);
                        ended = true;
                } else
                        send_all(fd, b->req, strlen(b->req));
                while (!ended && getline(&line, &cap, in) > 0) {
                        if (strstr(line, "\"ok\":false"))
                                ended = true;
                        else if (strstr(line, "\"ok\":true"))
                                t_reply = now_s();
                        else if (strstr(line, "\"event\":\"started\""))
                                t_started = now_s();
                        else if (strstr(line, "\"event\":\"end\"")) {
                                ended = true;
                                ok = strstr(line, "\"state\":\"succeeded\"") != NULL;
                        }
                }
                double ms = (now_s() - t0) * 1000.0;
                pthread_mutex_lock(&b->lock);
                b->reply_ms[b->next] = t_reply > 0 ? (t_reply - t0) * 1000.0 : 0;
                b->started_ms[b->next] = t_started > 0 ? (t_started - t0) * 1000.0 : 0;
                b->lat_ms[b->next++] = ms;
                if (!ok)
                        b->failures++;
                pthread_mutex_unlock(&b->lock);
                if (!ended)
                        break;
        }
        free(line);
        if (in)
                fclose(in);
        if (fd >= 0)
                close(fd);
        return NULL;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static int bench(const char *path, int jobs, int clients, double rate, char **cmd, int ncmd, bool exec_mode) {
        struct bench b = { .path = path, .per_client = jobs / clients, .cmd = exec_mode ? cmd : NULL };
        pthread_mutex_init(&b.lock, NULL);
        json_t *argv = json_array();
        if (ncmd == 0)
                json_array_append_new(argv, json_string("/bin/true"));
        for (int i = 0; i < ncmd; i++)
                json_array_append_new(argv, json_string(cmd[i]));
        json_t *req = json_pack("{s:i, s:s, s:o, s:b}", "v", 1, "op", "run", "command", argv, "follow", 1);
        char *s = json_dumps(req, JSON_COMPACT);
        json_decref(req);
        b.req = malloc(strlen(s) + 2);
        sprintf(b.req, "%s\n", s);
        free(s);
        b.lat_ms = calloc((size_t) jobs, sizeof(double));
        b.reply_ms = calloc((size_t) jobs, sizeof(double));
        b.started_ms = calloc((size_t) jobs, sizeof(double));
        b.interval_s = rate > 0 ? (double) clients / rate : 0;
        pthread_t *t = calloc((size_t) clients, sizeof(pthread_t));
        double t0 = now_s();
        b.clients = clients;
        b.t_start = t0;
        for (int i = 0; i < clients; i++)
                pthread_create(&t[i], NULL, bench_client, &b);
        for (int i = 0; i < clients; i++)
                pthread_join(t[i], NULL);
        double el = now_s() - t0;
        int n = b.next;
        qsort(b.lat_ms, (size_t) n, sizeof(double), cmp_double);
        if (n == 0) {
                printf("jobs 0\n");
                return 1;
        }
        printf("jobs %d failures %d clients %d elapsed_s %.3f jobs_per_s %.1f p50_ms %.2f p95_ms %.2f p99_ms %.2f max_ms %.2f\n",
               n, b.failures, clients, el, n / el, b.lat_ms[n / 2], b.lat_ms[(int) (n * 0.95)], b.lat_ms[(int) (n * 0.99)],
               b.lat_ms[n - 1]);
        /* Every latency, one per line, for pooling rounds. */
        const char *raw = getenv("SUP_CLIENT_RAW");
        FILE *rf = raw ? fopen(raw, "a") : NULL;
        if (rf) {
                for (int i = 0; i < n; i++)
                        fprintf(rf, "%.3f\n", b.lat_ms[i]);
                fclose(rf);
        }
        if (!exec_mode && getenv("SUP_CLIENT_DETAIL")) {
                qsort(b.reply_ms, (size_t) n, sizeof(double), cmp_double);
                qsort(b.started_ms, (size_t) n, sizeof(double), cmp_double);
                printf("detail reply p50 %.2f p95 %.2f  started p50 %.2f p95 %.2f\n", b.reply_ms[n / 2],
                       b.reply_ms[(int) (n * 0.95)], b.started_ms[n / 2], b.started_ms[(int) (n * 0.95)]);
        }
        int rc = b.failures ? 1 : 0;
        free(b.reply_ms);
        free(b.started_ms);
        free(b.lat_ms);
        free(b.req);
        free(t);
        return rc;
}

static const char ping[] = "{\"v\":1,\"op\":\"ping\"}\n";

static void raise_nofile(void) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
        }
}

/* Reads what the daemon sent on a connection it may have closed: returns
 * 1 when it hung up (its reply, if any, copied to buf), 0 when it is still
 * open and silent. */
static int drained(int fd, char *buf, size_t size) {
        size_t len = 0;
        buf[0] = '\0';
        for (;;) {
                ssize_t n = recv(fd, buf + len, size - 1 - len, MSG_DONTWAIT);
                if (n > 0) {
                        len += (size_t) n;
                        buf[len] = '\0';
                        if (len + 1 >= size)
                                return 1;
                        continue;
                }
                if (n == 0)
                        return 1;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                        return len > 0 ? 1 : 0;
                return 1;
        }
}

static void print_code(const char *reply) {
        json_error_t je;
        json_t *o = json_loads(reply, JSON_DISABLE_EOF_CHECK, &je);
        const char *code = o ? json_string_value(json_object_get(json_object_get(o, "error"), "code")) : NULL;
        printf("%s\n", code ? code : "no-code");
        json_decref(o);
}

static int hold_mode(const char *path, int n, int secs) {
        raise_nofile();
        int *fds = calloc((size_t) n, sizeof(int));
        if (!fds)
                return 2;
        for (int i = 0; i < n; i++)
                fds[i] = connect_to(path);
        usleep(500 * 1000);
        char buf[4096];
        int open_n = 0;
        char **codes = calloc((size_t) n, sizeof(char *));
        for (int i = 0; i < n; i++) {
                if (drained(fds[i], buf, sizeof(buf)))
                        codes[i] = strdup(buf);
                else
                        open_n++;
        }
        printf("held %d of %d\n", open_n, n);
        for (int i = 0; i < n; i++)
                if (codes[i]) {
                        print_code(codes[i]);
                        free(codes[i]);
                }
        fflush(stdout);
        sleep((unsigned) secs);
        for (int i = 0; i < n; i++)
                close(fds[i]);
        free(codes);
        free(fds);
        return 0;
}

static int halfline_mode(const char *path, int n, size_t bytes) {
        raise_nofile();
        int *fds = calloc((size_t) n, sizeof(int));
        char *line = malloc(bytes);
        if (!fds || !line)
                return 2;
        static const char head[] = "{\"v\":1,\"op\":\"run\",\"command\":[\"";
        memcpy(line, head, sizeof(head) - 1);
        memset(line + sizeof(head) - 1, 'x', bytes - (sizeof(head) - 1));
        for (int i = 0; i < n; i++) {
                fds[i] = connect_to(path);
                peer_closed = false;
                /* Non-blocking: a daemon that stopped reading us must not
                 * stall the others' connections. */
                fcntl(fds[i], F_SETFL, O_NONBLOCK);
                size_t off = 0;
                for (int tries = 0; off < bytes && tries < 2000; tries++) {
                        ssize_t w = send(fds[i], line + off, bytes - off, MSG_NOSIGNAL);
                        if (w > 0)
                                off += (size_t) w;
                        else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                                usleep(1000);
                        else
                                break;
                }
        }
        sleep(1);
        char buf[4096];
        int pending = 0, busy = 0;
        for (int i = 0; i < n; i++) {
                if (!drained(fds[i], buf, sizeof(buf)))
                        pending++;
                else if (strstr(buf, "E_BUSY"))
                        busy++;
        }
        printf("pending %d busy %d of %d\n", pending, busy, n);
        fflush(stdout);
        for (int i = 0; i < n; i++)
                close(fds[i]);
        free(line);
        free(fds);
        return 0;
}

static int pings_mode(const char *path, int n, int interval_ms) {
        int fd = connect_to(path);
        FILE *in = fdopen(dup(fd), "r");
        double *lat = calloc((size_t) n, sizeof(double));
        char *line = NULL;
        size_t cap = 0;
        if (!in || !lat || n <= 0)
                return 2;
        for (int i = 0; i < n; i++) {
                double t0 = now_s();
                send_all(fd, ping, sizeof(ping) - 1);
                if (getline(&line, &cap, in) < 0 || !strstr(line, "\"ok\":true")) {
                        fprintf(stderr, "sup-client: ping %d: %s\n", i, line ? line : "no reply");
                        return 1;
                }
                lat[i] = (now_s() - t0) * 1000.0;
                usleep((useconds_t) interval_ms * 1000);
        }
        qsort(lat, (size_t) n, sizeof(double), cmp_double);
        printf("pings %d p50 %.1f p99 %.1f max %.1f\n", n, lat[n / 2], lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1],
               lat[n - 1]);
        free(line);
        free(lat);
        fclose(in);
        close(fd);
        return 0;
}

/* A flood of pipelined logs requests: every request of every connection
 * is written before any reply is read, and the replies are read as fast
 * as they come, on all connections at once. */
static int logs_flood_mode(const char *path, int n, int k, const char *job, long max_bytes, bool seq) {
        raise_nofile();
        char line[256];
        int ll = snprintf(line, sizeof(line), "{\"v\":1,\"op\":\"logs\",\"job\":\"%s\",\"max_bytes\":%ld}\n", job, max_bytes);
        size_t total = (size_t) ll * (size_t) k;
        char *reqs = malloc(total);
        struct pollfd *pf = calloc((size_t) n, sizeof(*pf));
        size_t *sent = calloc((size_t) n, sizeof(size_t));
        int *got = calloc((size_t) n, sizeof(int));
        if (!reqs || !pf || !sent || !got || n <= 0 || k <= 0 || ll >= (int) sizeof(line))
                return 2;
        for (int i = 0; i < k; i++)
                memcpy(reqs + (size_t) i * (size_t) ll, line, (size_t) ll);
        for (int i = 0; i < n; i++) {
                pf[i].fd = connect_to(path);
                fcntl(pf[i].fd, F_SETFL, fcntl(pf[i].fd, F_GETFL) | O_NONBLOCK);
        }
        long long replies = 0, bytes = 0;
        int left = n, closed = 0;
        static char buf[1 << 16];
        if (seq) {
                /* Every request out first (they fit in the socket's buffer),
                 * then each connection's replies in turn: the others' wait. */
                for (int i = 0; i < n; i++)
                        for (size_t at = 0; at < total;) {
                                ssize_t w = send(pf[i].fd, reqs + at, total - at, MSG_NOSIGNAL);
                                if (w < 0 && errno == EAGAIN) {
                                        struct pollfd one = { .fd = pf[i].fd, .events = POLLOUT };
                                        poll(&one, 1, 1000);
                                        continue;
                                }
                                if (w <= 0)
                                        break;
                                at += (size_t) w;
                        }
                for (int i = 0; i < n; i++) {
                        fcntl(pf[i].fd, F_SETFL, fcntl(pf[i].fd, F_GETFL) & ~O_NONBLOCK);
                        ssize_t r;
                        while (got[i] < k && (r = recv(pf[i].fd, buf, sizeof(buf), 0)) > 0) {
                                bytes += r;
                                for (ssize_t j = 0; j < r; j++)
                                        if (buf[j] == '\n')
                                                got[i]++;
                        }
                        if (got[i] < k)
                                closed++;
                        replies += got[i];
                        close(pf[i].fd);
                }
                left = 0;
        }
        while (left > 0) {
                for (int i = 0; i < n; i++)
                        pf[i].events = pf[i].fd < 0 ? 0 : (short) (POLLIN | (sent[i] < total ? POLLOUT : 0));
                if (poll(pf, (nfds_t) n, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return 2;
                }
                for (int i = 0; i < n; i++) {
                        if (pf[i].fd < 0 || !pf[i].revents)
                                continue;
                        if ((pf[i].revents & POLLOUT) && sent[i] < total) {
                                ssize_t w = send(pf[i].fd, reqs + sent[i], total - sent[i], MSG_NOSIGNAL | MSG_DONTWAIT);
                                if (w > 0)
                                        sent[i] += (size_t) w;
                        }
                        if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        ssize_t r = recv(pf[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
                        if (r < 0 && (errno == EAGAIN || errno == EINTR))
                                continue;
                        if (r > 0) {
                                bytes += r;
                                for (ssize_t j = 0; j < r; j++)
                                        if (buf[j] == '\n')
                                                got[i]++;
                        }
                        if (r <= 0 || got[i] >= k) {
                                if (r <= 0 && got[i] < k)
                                        closed++;
                                replies += got[i];
                                close(pf[i].fd);
                                pf[i].fd = -1;
                                left--;
                        }
                }
        }
        printf("replies %lld of %lld closed %d bytes %lld\n", replies, (long long) n * k, closed, bytes);
        free(reqs);
        free(pf);
        free(sent);
        free(got);
        return 0;
}

/* In a sanitizer build: no leak scan at this helper's exit. The suite runs
 * it thousands of times (json_get in polling loops), the scan costs about
 * 45 ms a run here, and a leak in a test helper is nobody's bug. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
        return "detect_leaks=0";
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: sup-client SOCKET [--big N | --partial | --idle N]\n");
                return 2;
        }
        if (strcmp(argv[1], "--time") == 0 && argc >= 6) {
                int n = atoi(argv[2]), clients = atoi(argv[3]);
                if (n <= 0 || clients <= 0 || n < clients)
                        return 2;
                return bench(NULL, n, clients, atof(argv[4]), argv + 5, argc - 5, true);
        }
        if (strcmp(argv[1], "--notify-listen") == 0 && argc == 4) {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[2]);
                int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                unlink(argv[2]);
                if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                        return 2;
                chmod(argv[2], 0666);
                double end = now_s() + atof(argv[3]);
                char buf[4096];
                while (now_s() < end) {
                        struct timeval tv = { 0, 100000 };
                        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
                        ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
                        if (n > 0) {
                                buf[n] = '\0';
                                for (char *p = buf; *p; p++)
                                        if (*p == '\n')
                                                *p = ' ';
                                printf("%s\n", buf);
                                fflush(stdout);
                        }
                }
                return 0;
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
                free(big);
                send_all(fd, ping, sizeof(ping) - 1);
                shutdown(fd, SHUT_WR);
                print_until_eof(fd);
                return 0;
        }
        if (strcmp(argv[2], "--bench") == 0 && argc >= 5) {
                int jobs = atoi(argv[3]), clients = atoi(argv[4]);
                double rate = argc >= 6 ? atof(argv[5]) : 0;
                if (jobs <= 0 || clients <= 0 || jobs < clients)
                        return 2;
                return bench(path, jobs, clients, rate, argv + 6, argc > 6 ? argc - 6 : 0, false);
        }
        if (strcmp(argv[2], "--stall") == 0 && argc == 4) {
                int fd = connect_to(path);
                int small = 4096;
                /* a small receive buffer so the daemon's side fills up */
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
                char buf[65536];
                size_t n;
                while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
                        send_all(fd, buf, n);
                sleep((unsigned) atoi(argv[3]));
                struct timeval tv = { 5, 0 };
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
                ssize_t r;
                while ((r = read(fd, buf, sizeof(buf))) > 0)
                        fwrite(buf, 1, (size_t) r, stdout);
                printf("%s\n", r == 0 || (r < 0 && errno == ECONNRESET) ? "closed" : "still open");
                return 0;
        }
        if (strcmp(argv[2], "--slow") == 0 && argc == 4) {
                int fd = connect_to(path);
                static const char half[] = "{\"v\":1,\"op\":\"pi";
                send_all(fd, half, sizeof(half) - 1);
                struct timeval tv = { atoi(argv[3]), 0 };
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
                char buf[4096];
                ssize_t n;
                while ((n = read(fd, buf, sizeof(buf))) > 0)
                        fwrite(buf, 1, (size_t) n, stdout);
                printf("%s\n", n == 0 ? "closed" : "still open");
                return 0;
        }
        if (strcmp(argv[2], "--partial") == 0) {
                int fd = connect_to(path);
                static const char half[] = "{\"v\":1,\"op\":\"run\",\"command\":[\"/bin/tr";
                send_all(fd, half, sizeof(half) - 1);
                close(fd);
                return 0;
        }
        if (strcmp(argv[2], "--pings") == 0 && argc == 5)
                return pings_mode(path, atoi(argv[3]), atoi(argv[4]));
        if (strcmp(argv[2], "--logs-flood") == 0 && (argc == 7 || argc == 8))
                return logs_flood_mode(path, atoi(argv[3]), atoi(argv[4]), argv[5], atol(argv[6]),
                                       argc == 8 && strcmp(argv[7], "seq") == 0);
        if (strcmp(argv[2], "--hold") == 0 && argc == 5)
                return hold_mode(path, atoi(argv[3]), atoi(argv[4]));
        if (strcmp(argv[2], "--halfline") == 0 && argc == 5)
                return halfline_mode(path, atoi(argv[3]), (size_t) atoll(argv[4]));
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
                free(fds);
                return 0;
        }
        fprintf(stderr, "sup-client: unknown mode %s\n", argv[2]);
        return 2;
}
