/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl(1): the command-line client of sbx-supervisord. Speaks
 * sbx-protocol(7) over the Unix socket; human output by default, --json
 * prints the daemon's messages as they are. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"
#include "parse.h"
#include "proto.h"
#include "sbxctl.h"

#ifndef SBX_RUNSTATEDIR
#define SBX_RUNSTATEDIR "/run"
#endif
#define DEFAULT_SOCKET SBX_RUNSTATEDIR "/sbx/sbx-supervisord.sock"
#define MAX_UPLOAD (256u << 20)

static const char *socket_path;
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
_noreturn_ static void bad_option(const char *where, int o, char **argv) {
        const char *arg = argv[optind - 1];
        char short_opt[3] = { '-', (char) optopt, '\0' };
        const char *opt = strncmp(arg, "--", 2) == 0 ? arg : short_opt;
        if (o == ':')
                usage_error("%s%s needs a value", where, opt);
        usage_error("%sunknown option '%s'", where, opt);
}

static void usage(FILE *f) {
        fprintf(f,
                "Usage: sbxctl [--socket PATH] [--json] COMMAND [ARG]...\n"
                "Talk to sbx-supervisord (see sbxctl(1)).\n\n"
                "Commands:\n"
                "  run [OPTION]... -- CMD [ARG]...   run a job, stream its output, exit with its status\n"
                "  submit [OPTION]... -- CMD [ARG]... queue a job and print its id\n"
                "  status JOB          state of a job\n"
                "  wait [--json] JOB   wait for a job to end; exit with its status\n"
                "  logs [-f] [--stream S] JOB   captured output (-f: follow until the end)\n"
                "  cancel JOB          stop a job (SIGTERM, then kill after the grace period)\n"
                "  result [--json] JOB the job's result record\n"
                "  ls [--state S] [--limit N]   your jobs, newest first\n"
                "  ping                check the daemon and show who you are to it\n"
                "  metrics             the daemon's metrics (Prometheus text; your tenant's series)\n"
                "  callbacks ls [--state S]   your jobs' callback deliveries: pending, dead, dropped\n"
                "  callbacks retry|drop JOB   deliver a dead (or pending) callback again now, or give it up\n"
                "  bundle show NAME[@VERSION]   a bundle: manifest, derived profile, your policy's verdict\n"
                "  cache ls            the cached bundles of your registry\n"
                "  cache gc [--all]    remove cached bundles past the budget or age (--all: every unused one)\n"
                "  download [-o FILE] JOB PATH   an artifact of a finished job, checked against its SHA-256\n"
                "  download [-o FILE] --stream S JOB   its captured stdout or stderr, whole\n\n"
                "run/submit options:\n"
                "  --bundle NAME[@VERSION|@sha256:HEX]  run a bundle; what follows -- are its arguments\n"
                "  --profile NAME      profile (default: the tenant's default)\n"
                "  --timeout DURATION  wall-clock limit, e.g. 30s, 5m\n"
                "  --memory SIZE, --processes N, --cpu DURATION, --output SIZE, --disk SIZE   limits\n"
                "  --retries N         run again up to N times if the daemon dies meanwhile\n"
                "  --cpus N            CPU bandwidth, e.g. 0.5 or 2 (needs the cgroup cpu controller)\n"
                "  --network MODE      none, host or restricted\n"
                "  --audit             record every connection attempt of the job\n"
                "  --allow DEST[:PORTS][/PROTO]  with --network restricted: a destination it may reach (repeatable)\n"
                "  --deny-port PORTS   with --network restricted: a port or range it may never reach (repeatable)\n"
                "  --env NAME=VALUE    set a variable for the job (repeatable)\n"
                "  --stdin FILE        feed FILE ('-' for our stdin) to the job\n"
                "  --upload FILE[:DEST] put FILE into the workspace as DEST (repeatable)\n"
                "  --artifact GLOB     collect matching workspace files afterwards (repeatable)\n"
                "  --idempotency-key K make retries of this submission safe\n"
                "  --traceparent TP    the W3C trace context the job joins (default: it starts a trace)\n"
                "  --callback URL      post the job's result there when it ends (a URL your tenant allows)\n");
}

void connect_daemon(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(socket_path) >= sizeof(sa.sun_path))
                die("socket path too long: %s", socket_path);
        strcpy(sa.sun_path, socket_path);
        conn_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (conn_fd < 0)
                die("socket: %s", strerror(errno));
        if (connect(conn_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                die("cannot connect to %s: %s (is sbx-supervisord running?)", socket_path, strerror(errno));
        conn_in = fdopen(dup(conn_fd), "r");
        if (!conn_in)
                die("fdopen: %s", strerror(errno));
}

static void send_request(json_t *req) {
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
static json_t *expect_ok(json_t *m) {
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

static void free_last_response(void) {
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

static void write_data(FILE *f, json_t *ev) {
        json_t *d = json_object_get(ev, "data");
        if (json_is_string(d)) {
                fwrite(json_string_value(d), 1, json_string_length(d), f);
        } else {
                const char *b = json_string_value(json_object_get(ev, "data_b64"));
                if (!b)
                        return;
                size_t bl = strlen(b), n = 0;
                unsigned char *buf = malloc(bl);
                if (buf && sodium_base642bin(buf, bl, b, bl, NULL, &n, NULL, sodium_base64_VARIANT_ORIGINAL) == 0)
                        fwrite(buf, 1, n, f);
                free(buf);
        }
        fflush(f);
}

/* The exit status that tells a shell what happened to the job, with the
 * launcher's conventions: 124 timed out, 125 could not run, 128+N signal. */
static int exit_status_of(json_t *res) {
        const char *state = json_string_value(json_object_get(res, "state"));
        json_t *ec = json_object_get(res, "exit_code"), *sig = json_object_get(res, "signal");
        if (!state)
                return 125;
        if (streq(state, "succeeded"))
                return 0;
        if (streq(state, "timed_out"))
                return 124;
        if (streq(state, "error") || streq(state, "rejected"))
                return 125;
        if (json_is_integer(sig) && json_integer_value(sig) > 0)
                return 128 + (int) json_integer_value(sig);
        if (json_is_integer(ec))
                return (int) json_integer_value(ec);
        return 125;
}

/* One network event on a line: "connect tcp 127.0.0.1:8080 allow pid 42
 * (curl) TIME", or for a query to the DNS proxy "dns A db.internal allow
 * TIME". */
static void print_net_event(FILE *f, const char *prefix, json_t *e) {
        const char *kind = json_string_value(json_object_get(e, "kind"));
        if (kind && streq(kind, "dns")) {
                fprintf(f, "%sdns %s %s %s %s\n", prefix, json_string_value(json_object_get(e, "qtype")) ?: "?",
                        json_string_value(json_object_get(e, "hostname")) ?: "?", json_string_value(json_object_get(e, "verdict")) ?: "?",
                        json_string_value(json_object_get(e, "time")) ?: "");
                return;
        }
        json_t *port = json_object_get(e, "port");
        const char *fam = json_string_value(json_object_get(e, "family"));
        const char *addr = json_string_value(json_object_get(e, "address"));
        const char *host = json_string_value(json_object_get(e, "hostname"));
        bool v6 = fam && streq(fam, "ipv6");
        fprintf(f, "%s%s %s ", prefix, json_string_value(json_object_get(e, "kind")) ?: "?",
                json_string_value(json_object_get(e, "protocol")) ?: "?");
        if (addr && json_is_integer(port))
                fprintf(f, v6 ? "[%s]:%lld" : "%s:%lld", addr, (long long) json_integer_value(port));
        else
                fprintf(f, "-");
        if (host)
                fprintf(f, " (%s)", host);
        fprintf(f, " %s pid %lld (%s) %s\n", json_string_value(json_object_get(e, "verdict")) ?: "?",
                (long long) json_integer_value(json_object_get(e, "pid")), json_string_value(json_object_get(e, "comm")) ?: "?",
                json_string_value(json_object_get(e, "time")) ?: "");
}

static void print_network(json_t *res) {
        json_t *net = json_object_get(res, "network"), *e;
        size_t i;
        if (!json_is_true(json_object_get(net, "audit")))
                return;
        json_t *drop = json_object_get(net, "events_dropped"), *lost = json_object_get(net, "events_lost");
        printf("network:   %s, audited: %zu events", json_string_value(json_object_get(net, "mode")) ?: "?",
               json_array_size(json_object_get(res, "network_events")));
        if (json_is_integer(drop) && json_integer_value(drop))
                printf(", %lld more not kept", (long long) json_integer_value(drop));
        if (json_is_integer(lost) && json_integer_value(lost))
                printf(", %lld lost (ring buffer full)", (long long) json_integer_value(lost));
        if (json_is_null(lost))
                printf(" (the daemon restarted: what happened before is not known)");
        printf("\n");
        json_array_foreach(json_object_get(res, "network_events"), i, e)
                print_net_event(stdout, "net:       ", e);
}

static void print_result(json_t *res) {
        json_t *err = json_object_get(res, "error");
        printf("job:       %s\n", json_string_value(json_object_get(res, "job")) ?: "?");
        printf("state:     %s\n", json_string_value(json_object_get(res, "state")) ?: "?");
        json_t *ec = json_object_get(res, "exit_code"), *sig = json_object_get(res, "signal");
        if (json_is_integer(ec))
                printf("exit code: %lld\n", (long long) json_integer_value(ec));
        if (json_is_integer(sig))
                printf("signal:    %lld\n", (long long) json_integer_value(sig));
        if (json_is_object(err))
                printf("error:     %s: %s\n", json_string_value(json_object_get(err, "code")) ?: "",
                       json_string_value(json_object_get(err, "message")) ?: "");
        print_bundle(json_object_get(res, "bundle"));
        if (json_is_string(json_object_get(res, "trace_id")))
                printf("trace id:  %s\n", json_string_value(json_object_get(res, "trace_id")));
        printf("created:   %s\n", json_string_value(json_object_get(res, "created")) ?: "-");
        printf("ended:     %s\n", json_string_value(json_object_get(res, "ended")) ?: "-");
        json_t *w = json_object_get(res, "wall_ms"), *cpu = json_object_get(res, "cpu_ms");
        if (json_is_integer(w))
                printf("wall:      %lld ms\n", (long long) json_integer_value(w));
        if (json_is_integer(cpu))
                printf("cpu:       %lld ms\n", (long long) json_integer_value(cpu));
        for (int i = 0; i < 2; i++) {
                json_t *s = json_object_get(res, i ? "stderr" : "stdout");
                if (json_is_object(s))
                        printf("%s:    %lld bytes%s\n", i ? "stderr" : "stdout", (long long) json_integer_value(json_object_get(s, "size")),
                               json_is_true(json_object_get(s, "truncated")) ? " (truncated)" : "");
        }
        /* Each limit that was set, and what enforced it. */
        const char *k;
        json_t *l;
        json_object_foreach(json_object_get(res, "limits"), k, l) {
                json_t *v = json_object_get(l, "value");
                if (json_is_integer(v))
                        printf("limit:     %s %lld (%s)\n", k, (long long) json_integer_value(v),
                               json_string_value(json_object_get(l, "by")) ?: "?");
                else if (json_is_real(v))
                        printf("limit:     %s %g (%s)\n", k, json_real_value(v), json_string_value(json_object_get(l, "by")) ?: "?");
        }
        size_t i;
        json_t *a;
        json_array_foreach(json_object_get(res, "artifacts"), i, a)
                printf("artifact:  %s %lld bytes sha256:%s\n", json_string_value(json_object_get(a, "path")) ?: "?",
                       (long long) json_integer_value(json_object_get(a, "size")),
                       json_string_value(json_object_get(a, "sha256")) ?: "?");
        print_network(res);
}

json_t *new_req(const char *op) {
        return json_pack("{s:i, s:s}", "v", PROTO_VERSION, "op", op);
}

static unsigned char *slurp(const char *path, size_t *ret_len) {
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

static char *b64(const unsigned char *d, size_t len) {
        size_t bl = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
        char *b = malloc(bl);
        if (!b)
                die("out of memory");
        return sodium_bin2base64(b, bl, d, len, sodium_base64_VARIANT_ORIGINAL);
}

static uint64_t opt_size(const char *opt, const char *v) {
        uint64_t n;
        if (parse_size(v, &n) < 0)
                usage_error("%s: invalid size '%s'", opt, v);
        return n;
}

enum {
        O_PROFILE = 256, O_TIMEOUT, O_MEMORY, O_PROCS, O_CPU, O_CPUS, O_OUTPUT, O_NET, O_ENV, O_STDIN, O_UPLOAD,
        O_ARTIFACT, O_KEY, O_DISK, O_RETRIES, O_BUNDLE, O_TRACE, O_AUDIT, O_ALLOW, O_DENY_PORT, O_CALLBACK
};

/* The parts of a run request that options add to. */
struct run_parts {
        json_t *req, *limits, *env, *files, *arts;
        const char *bundle; /* --bundle */
        const char *net;    /* --network */
        bool audit;         /* --audit */
        json_t *allow, *deny; /* --allow, --deny-port */
};

/* --memory, --processes, --cpu, --cpus, --output, --disk: false for any
 * other option. */
static bool limit_option(json_t *limits, int o, const char *arg) {
        uint64_t n;
        switch (o) {
        case O_MEMORY:
                json_object_set_new(limits, "memory", json_integer((json_int_t) opt_size("--memory", arg)));
                return true;
        case O_PROCS:
                if (parse_uint64(arg, 1u << 30, &n) < 0)
                        usage_error("--processes: invalid number '%s'", arg);
                json_object_set_new(limits, "processes", json_integer((json_int_t) n));
                return true;
        case O_CPU:
                if (parse_duration_ms(arg, &n) < 0)
                        usage_error("--cpu: invalid duration '%s'", arg);
                json_object_set_new(limits, "cpu_s", json_integer((json_int_t) ((n + 999) / 1000)));
                return true;
        case O_CPUS:
                if (parse_cpus_milli(arg, &n) < 0)
                        usage_error("--cpus: invalid number of CPUs '%s' (e.g. 0.5 or 2)", arg);
                json_object_set_new(limits, "cpus", json_real((double) n / 1000.0));
                return true;
        case O_OUTPUT:
                json_object_set_new(limits, "output", json_integer((json_int_t) opt_size("--output", arg)));
                return true;
        case O_DISK:
                json_object_set_new(limits, "disk", json_integer((json_int_t) opt_size("--disk", arg)));
                return true;
        }
        return false;
}

/* --upload FILE[:DEST]: the file's bytes, executable if FILE is. */
static void add_upload(json_t *files, char *arg) {
        char *colon = strchr(arg, ':');
        const char *dest;
        if (colon) {
                *colon = '\0';
                dest = colon + 1;
        } else {
                dest = strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg;
        }
        size_t len;
        unsigned char *d = slurp(arg, &len);
        char *b = b64(d, len);
        json_array_append_new(files, json_pack("{s:s, s:s, s:i}", "path", dest, "data_b64", b, "mode",
                                               access(arg, X_OK) == 0 ? 0755 : 0644));
        free(b);
        free(d);
}

static void stdin_option(json_t *req, const char *arg) {
        size_t len;
        unsigned char *d = slurp(arg, &len);
        char *b = b64(d, len);
        json_object_set_new(req, "stdin_b64", json_string(b));
        free(b);
        free(d);
}

static void run_option(struct run_parts *p, int o, char *arg, char **argv) {
        uint64_t n;
        if (limit_option(p->limits, o, arg))
                return;
        switch (o) {
        case O_PROFILE:
                json_object_set_new(p->req, "profile", json_string(arg));
                break;
        case O_TIMEOUT:
                if (parse_duration_ms(arg, &n) < 0 || n == 0)
                        usage_error("--timeout: invalid duration '%s'", arg);
                json_object_set_new(p->req, "timeout_ms", json_integer((json_int_t) n));
                break;
        case O_RETRIES:
                if (parse_uint64(arg, 10, &n) < 0)
                        usage_error("--retries: expected 0 to 10, got '%s'", arg);
                json_object_set_new(p->req, "retries", json_integer((json_int_t) n));
                break;
        case O_NET:
                p->net = arg;
                break;
        case O_AUDIT:
                p->audit = true;
                break;
        case O_ALLOW:
                json_array_append_new(p->allow, json_string(arg));
                break;
        case O_DENY_PORT:
                json_array_append_new(p->deny, json_string(arg));
                break;
        case O_ENV: {
                char *eq = strchr(arg, '=');
                if (!eq)
                        usage_error("--env: expected NAME=VALUE, got '%s'", arg);
                *eq = '\0';
                json_object_set_new(p->env, arg, json_string(eq + 1));
                break;
        }
        case O_STDIN:
                stdin_option(p->req, arg);
                break;
        case O_UPLOAD:
                add_upload(p->files, arg);
                break;
        case O_ARTIFACT:
                json_array_append_new(p->arts, json_string(arg));
                break;
        case O_KEY:
                json_object_set_new(p->req, "idempotency_key", json_string(arg));
                break;
        case O_BUNDLE:
                p->bundle = arg;
                break;
        case O_TRACE:
                json_object_set_new(p->req, "traceparent", json_string(arg));
                break;
        case O_CALLBACK:
                json_object_set_new(p->req, "callback", json_string(arg));
                break;
        default: {
                char where[16];
                snprintf(where, sizeof(where), "%s: ", argv[0]);
                bad_option(where, o, argv);
        }
        }
}

/* Sets key to v when v has members; drops v otherwise. */
static void set_nonempty(json_t *req, const char *key, json_t *v) {
        if (json_is_object(v) ? json_object_size(v) : json_array_size(v))
                json_object_set_new(req, key, v);
        else
                json_decref(v);
}

static json_t *build_run(int argc, char **argv, bool follow) {
        static const struct option opts[] = {
                { "bundle", required_argument, NULL, O_BUNDLE },
                { "profile", required_argument, NULL, O_PROFILE }, { "timeout", required_argument, NULL, O_TIMEOUT },
                { "memory", required_argument, NULL, O_MEMORY },   { "processes", required_argument, NULL, O_PROCS },
                { "cpu", required_argument, NULL, O_CPU },         { "output", required_argument, NULL, O_OUTPUT },
                { "cpus", required_argument, NULL, O_CPUS },       { "disk", required_argument, NULL, O_DISK },
                { "retries", required_argument, NULL, O_RETRIES },
                { "network", required_argument, NULL, O_NET },     { "audit", no_argument, NULL, O_AUDIT },
                { "allow", required_argument, NULL, O_ALLOW },     { "deny-port", required_argument, NULL, O_DENY_PORT },
                { "env", required_argument, NULL, O_ENV },
                { "stdin", required_argument, NULL, O_STDIN },     { "upload", required_argument, NULL, O_UPLOAD },
                { "artifact", required_argument, NULL, O_ARTIFACT }, { "idempotency-key", required_argument, NULL, O_KEY },
                { "traceparent", required_argument, NULL, O_TRACE }, { "callback", required_argument, NULL, O_CALLBACK },
                { NULL, 0, NULL, 0 },
        };
        struct run_parts p = {
                .req = new_req("run"), .limits = json_object(), .env = json_object(), .files = json_array(),
                .arts = json_array(), .allow = json_array(), .deny = json_array(),
        };
        int o;
        optind = 1;
        while ((o = getopt_long(argc, argv, "+:", opts, NULL)) >= 0)
                run_option(&p, o, optarg, argv);
        if (optind >= argc && !p.bundle)
                usage_error("%s: no command given (sbxctl %s [OPTION]... -- CMD [ARG]..., or --bundle NAME)", argv[0], argv[0]);
        json_t *cmd = json_array();
        for (int i = optind; i < argc; i++)
                json_array_append_new(cmd, json_string(argv[i]));
        if (p.bundle) {
                json_object_set_new(p.req, "bundle", json_string(p.bundle));
                json_object_set_new(p.req, "args", cmd);
        } else
                json_object_set_new(p.req, "command", cmd);
        bool lists = json_array_size(p.allow) || json_array_size(p.deny);
        if (lists && !(p.net && streq(p.net, "restricted")))
                usage_error("%s: --allow and --deny-port go with --network restricted", argv[0]);
        if (p.audit || lists) {
                json_t *net = json_object();
                if (p.audit)
                        json_object_set_new(net, "audit", json_true());
                if (p.net)
                        json_object_set_new(net, "mode", json_string(p.net));
                if (lists) {
                        json_object_set_new(net, "allow", json_incref(p.allow));
                        json_object_set_new(net, "deny_ports", json_incref(p.deny));
                }
                json_object_set_new(p.req, "network", net);
        } else if (p.net)
                json_object_set_new(p.req, "network", json_string(p.net));
        json_decref(p.allow);
        json_decref(p.deny);
        set_nonempty(p.req, "limits", p.limits);
        set_nonempty(p.req, "env", p.env);
        set_nonempty(p.req, "files", p.files);
        set_nonempty(p.req, "artifacts", p.arts);
        if (follow)
                json_object_set_new(p.req, "follow", json_true());
        return p.req;
}

/* Print output events until the end event; return the job's status. */
static int follow_to_end(bool show_result) {
        for (;;) {
                json_t *m = recv_message();
                const char *ev = json_string_value(json_object_get(m, "event"));
                if (!ev) {
                        expect_ok(m);
                        json_decref(m);
                        continue;
                }
                if (streq(ev, "lagged") && !json_out) {
                        fprintf(stderr, "sbxctl: %lld bytes of %s not shown (this client fell behind); "
                                        "sbxctl logs %s has all of it\n",
                                (long long) json_integer_value(json_object_get(m, "skipped")),
                                json_string_value(json_object_get(m, "stream")) ?: "output",
                                json_string_value(json_object_get(m, "job")) ?: "JOB");
                } else if (streq(ev, "network") && !json_out) {
                        print_net_event(stderr, "sbxctl: network: ", m);
                } else if (streq(ev, "output") && !json_out) {
                        const char *s = json_string_value(json_object_get(m, "stream"));
                        write_data(s && streq(s, "stderr") ? stderr : stdout, m);
                } else if (streq(ev, "end")) {
                        json_t *res = json_object_get(m, "result");
                        int st = exit_status_of(res);
                        if (!json_out && show_result) {
                                json_t *err = json_object_get(res, "error");
                                if (json_is_object(err))
                                        fprintf(stderr, "sbxctl: job %s: %s: %s\n", json_string_value(json_object_get(m, "job")) ?: "",
                                                json_string_value(json_object_get(err, "code")) ?: "",
                                                json_string_value(json_object_get(err, "message")) ?: "");
                                for (int i = 0; i < 2; i++)
                                        if (json_is_true(json_object_get(json_object_get(res, i ? "stderr" : "stdout"), "truncated")))
                                                fprintf(stderr, "sbxctl: job %s: %s was truncated at the output limit\n",
                                                        json_string_value(json_object_get(m, "job")) ?: "", i ? "stderr" : "stdout");
                                size_t i;
                                json_t *a;
                                json_array_foreach(json_object_get(res, "artifacts"), i, a)
                                        fprintf(stderr, "sbxctl: artifact %s (%lld bytes, sha256 %s)\n",
                                                json_string_value(json_object_get(a, "path")) ?: "?",
                                                (long long) json_integer_value(json_object_get(a, "size")),
                                                json_string_value(json_object_get(a, "sha256")) ?: "?");
                        }
                        json_decref(m);
                        return st;
                }
                json_decref(m);
        }
}

static const char *need_job(int argc, char **argv, int i) {
        if (i >= argc)
                usage_error("%s: missing job id", argv[0]);
        if (i + 1 < argc)
                usage_error("%s: unexpected argument '%s'", argv[0], argv[i + 1]);
        return argv[i];
}

/* Every command, and which options of main's sub[] it takes (by their
 * letters); run and submit parse their own in build_run. */
/* What the commands other than run and submit take after their name. */
struct cmd_args {
        const char *name;
        bool follow, res_json;
        const char *stream, *state, *job;
        long limit;
};

static int cmd_run(int ac, char **av) {
        bool run = streq(av[0], "run");
        json_t *req = build_run(ac, av, run);
        connect_daemon();
        json_t *m = request(req);
        if (!run) {
                if (!json_out)
                        printf("%s\n", json_string_value(json_object_get(m, "job")) ?: "?");
                return 0;
        }
        return follow_to_end(true);
}

static int cmd_ping(const struct cmd_args *a) {
        (void) a;
        json_t *m = request(new_req("ping"));
        if (!json_out)
                printf("sbx-supervisord %s: you are uid %lld, tenant %s%s\n",
                       json_string_value(json_object_get(m, "version")) ?: "?",
                       (long long) json_integer_value(json_object_get(m, "uid")),
                       json_string_value(json_object_get(m, "tenant")) ?: "?",
                       json_is_true(json_object_get(m, "anonymous")) ? " (unauthenticated)" : "");
        return 0;
}

static int cmd_metrics(const struct cmd_args *a) {
        (void) a;
        json_t *m = request(new_req("metrics"));
        if (!json_out)
                fwrite(json_string_value(json_object_get(m, "metrics")) ?: "", 1, json_string_length(json_object_get(m, "metrics")),
                       stdout);
        return 0;
}

static int cmd_ls(const struct cmd_args *a) {
        json_t *req = new_req("list");
        if (a->state)
                json_object_set_new(req, "state", json_string(a->state));
        if (a->limit)
                json_object_set_new(req, "limit", json_integer(a->limit));
        json_t *m = request(req);
        if (json_out)
                return 0;
        size_t i;
        json_t *j;
        printf("%-22s %-10s %-25s %s\n", "JOB", "STATE", "CREATED", "EXIT");
        json_array_foreach(json_object_get(m, "jobs"), i, j) {
                json_t *ec = json_object_get(j, "exit_code");
                char exit_s[24] = "-";
                if (json_is_integer(ec))
                        snprintf(exit_s, sizeof(exit_s), "%lld", (long long) json_integer_value(ec));
                printf("%-22s %-10s %-25s %s\n", json_string_value(json_object_get(j, "job")) ?: "?",
                       json_string_value(json_object_get(j, "state")) ?: "?",
                       json_string_value(json_object_get(j, "created")) ?: "-", exit_s);
        }
        return 0;
}

static json_t *job_req(const char *op, const struct cmd_args *a) {
        json_t *req = new_req(op);
        json_object_set_new(req, "job", json_string(a->job));
        return req;
}

static int cmd_status(const struct cmd_args *a) {
        json_t *m = request(job_req("status", a));
        if (json_out)
                return 0;
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(m, "job"), k, v) {
                char *s = json_is_string(v) ? strdup(json_string_value(v)) : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
                printf("%-9s %s\n", k, s ? s : "?");
                free(s);
        }
        return 0;
}

/* wait and result: the record, readable or as JSON; wait exits with the
 * job's status. */
static int cmd_result(const struct cmd_args *a) {
        json_t *m = request(job_req(a->name, a));
        json_t *res = json_object_get(m, "result"), *cbs = json_object_get(m, "callback");
        if (a->res_json && !json_out) {
                char *s = json_dumps(res, JSON_INDENT(2) | JSON_SORT_KEYS);
                printf("%s\n", s ? s : "null");
                free(s);
        } else if (!json_out) {
                print_result(res);
                if (json_is_object(cbs))
                        print_callback(cbs);
        }
        return streq(a->name, "wait") ? exit_status_of(res) : 0;
}

static int cmd_cancel(const struct cmd_args *a) {
        json_t *m = request(job_req("cancel", a));
        if (!json_out)
                printf("%s: %s\n", a->job, json_string_value(json_object_get(m, "state")) ?: "?");
        return 0;
}

/* One stream of a capture: the daemon sends it in bounded pieces, asked
 * for from where the last piece ended until its end. */
static void logs_stream(const struct cmd_args *a, int i) {
        const char *k = i ? "stderr" : "stdout";
        char kb[32], ks[32], ke[32];
        snprintf(kb, sizeof(kb), "%s_b64", k);
        snprintf(ks, sizeof(ks), "%s_size", k);
        snprintf(ke, sizeof(ke), "%s_end", k);
        for (json_int_t off = 0;;) {
                json_t *req = job_req("logs", a);
                json_object_set_new(req, "stream", json_string(k));
                json_object_set_new(req, "offset", json_integer(off));
                json_t *m = request(req);
                json_t *ev = json_object();
                if (json_object_get(m, k))
                        json_object_set(ev, "data", json_object_get(m, k));
                else if (json_object_get(m, kb))
                        json_object_set(ev, "data_b64", json_object_get(m, kb));
                if (!json_out)
                        write_data(i ? stderr : stdout, ev);
                json_decref(ev);
                json_int_t end = json_integer_value(json_object_get(m, ke));
                json_int_t size = json_integer_value(json_object_get(m, ks));
                if (end <= off || end >= size)
                        return;
                off = end;
        }
}

static int cmd_logs(const struct cmd_args *a) {
        if (a->follow) {
                json_t *req = job_req("logs", a);
                if (a->stream)
                        json_object_set_new(req, "stream", json_string(a->stream));
                json_object_set_new(req, "follow", json_true());
                send_request(req);
                return follow_to_end(false);
        }
        for (int i = 0; i < 2; i++)
                if (!a->stream || streq(a->stream, "both") || streq(a->stream, i ? "stderr" : "stdout"))
                        logs_stream(a, i);
        return 0;
}

static const struct command {
        const char *name;
        const char *opts; /* the short options of cmd_options it takes */
        bool needs_job;
        int (*fn)(const struct cmd_args *);
} commands[] = {
        { "run", NULL, false, NULL },      { "submit", NULL, false, NULL },   { "status", "", true, cmd_status },
        { "wait", "j", true, cmd_result }, { "logs", "fS", true, cmd_logs },  { "cancel", "", true, cmd_cancel },
        { "result", "j", true, cmd_result }, { "ls", "tn", false, cmd_ls }, { "ping", "", false, cmd_ping },
        { "bundle", NULL, false, NULL },   { "cache", NULL, false, NULL }, { "download", NULL, false, NULL },
        { "metrics", "", false, cmd_metrics }, { "callbacks", NULL, false, NULL },
};

static const struct command *find_command(const char *name) {
        for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
                if (streq(commands[i].name, name))
                        return &commands[i];
        usage_error("unknown command '%s'", name);
}

static void cmd_option(struct cmd_args *a, int o, const char *arg, const char *where, char **av) {
        uint64_t n;
        switch (o) {
        case 'f':
                a->follow = true;
                break;
        case 'S':
                if (!streq(arg, "stdout") && !streq(arg, "stderr") && !streq(arg, "both"))
                        usage_error("%s--stream: expected stdout, stderr or both, got '%s'", where, arg);
                a->stream = arg;
                break;
        case 'j':
                a->res_json = true;
                break;
        case 't':
                a->state = arg;
                break;
        case 'n':
                if (parse_uint64(arg, LONG_MAX, &n) < 0 || n == 0)
                        usage_error("%s--limit: expected a positive number, got '%s'", where, arg);
                a->limit = (long) n;
                break;
        default:
                bad_option(where, o, av);
        }
}

/* The options after the command's name, each checked against what the
 * command takes, then its job argument. */
static void cmd_options(const struct command *c, int ac, char **av, struct cmd_args *a) {
        static const struct option sub[] = {
                { "follow", no_argument, NULL, 'f' }, { "stream", required_argument, NULL, 'S' },
                { "json", no_argument, NULL, 'j' },   { "state", required_argument, NULL, 't' },
                { "limit", required_argument, NULL, 'n' }, { NULL, 0, NULL, 0 },
        };
        char where[16];
        int o;
        snprintf(where, sizeof(where), "%s: ", c->name);
        a->name = c->name;
        optind = 1;
        while ((o = getopt_long(ac, av, "+:fjS:t:n:", sub, NULL)) >= 0) {
                if (o != '?' && o != ':' && !strchr(c->opts, o)) {
                        const struct option *so = sub;
                        while (so->val != o)
                                so++;
                        usage_error("%s takes no option --%s", c->name, so->name);
                }
                cmd_option(a, o, optarg, where, av);
        }
        if (c->needs_job)
                a->job = need_job(ac, av, optind);
        else if (optind < ac)
                usage_error("%sunexpected argument '%s'", where, av[optind]);
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "socket", required_argument, NULL, 's' }, { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },         { "version", no_argument, NULL, 'V' },
                { NULL, 0, NULL, 0 },
        };
        int o;
        socket_path = getenv("SBX_SOCKET") ?: DEFAULT_SOCKET;
        opterr = 0;
        while ((o = getopt_long(argc, argv, "+:s:jhV", opts, NULL)) >= 0) {
                switch (o) {
                case 's':
                        socket_path = optarg;
                        break;
                case 'j':
                        json_out = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                case 'V':
                        printf("sbxctl %s\n", PACKAGE_VERSION);
                        return 0;
                default:
                        bad_option("", o, argv);
                }
        }
        if (optind >= argc) {
                usage(stderr);
                return 2;
        }
        const struct command *command = find_command(argv[optind]);
        if (sodium_init() < 0)
                die("libsodium initialisation failed");
        atexit(free_last_response);
        char **av = argv + optind;
        int ac = argc - optind;
        if (streq(av[0], "bundle") || streq(av[0], "cache"))
                return sbxctl_bundle(ac, av);
        if (streq(av[0], "download"))
                return sbxctl_download(ac, av);
        if (streq(av[0], "callbacks"))
                return sbxctl_callbacks(ac, av);
        if (!command->fn)
                return cmd_run(ac, av);
        struct cmd_args a = { 0 };
        cmd_options(command, ac, av, &a);
        connect_daemon();
        return command->fn(&a);
}
