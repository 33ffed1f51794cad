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

static void usage(FILE *f) {
        fprintf(f,
                "Usage: sbxctl [--socket PATH] [--json] COMMAND [ARG]...\n"
                "Talk to sbx-supervisord (see sbxctl(1)).\n\n"
                "Commands:\n"
                "  run [OPTION]... -- CMD [ARG]...   run a job, stream its output, exit with its status\n"
                "  submit [OPTION]... -- CMD [ARG]... queue a job and print its id\n"
                "  status JOB          state of a job\n"
                "  wait [--json|--value] JOB   wait for a job to end; exit with its status\n"
                "  logs [-f] [--stream S] JOB   captured output (-f: follow until the end)\n"
                "  cancel JOB          stop a job (SIGTERM, then kill after the grace period)\n"
                "  result [--json|--value] JOB the job's result record (--value: the JSON it left in $SBX_RESULT)\n"
                "  ls [--state S] [--limit N]   your jobs, newest first\n"
                "  ping                check the daemon and show who you are to it\n"
                "  metrics             the daemon's metrics (Prometheus text; your tenant's series)\n"
                "  callbacks ls [--state S] [--limit N]   your jobs' callback deliveries: pending, dead, dropped\n"
                "  callbacks retry|drop JOB   deliver a dead (or pending) callback again now, or give it up\n"
                "  bundle show NAME[@VERSION]   a bundle: manifest, derived profile, your policy's verdict\n"
                "  cache ls            the cached bundles of your registry\n"
                "  cache gc [--all]    remove cached bundles past the budget or age (--all: every unused one)\n"
                "  download [-o FILE] JOB PATH   an artifact of a finished job, checked against its SHA-256\n"
                "  download [-o FILE] --stream S JOB   its captured stdout or stderr, whole\n"
                "  session create [--ttl DUR] [--idle DUR] [OPTION]...   a sandbox that lives across calls; prints its id\n"
                "  session exec SESSION [--cwd DIR] [OPTION]... -- CMD [ARG]...   run CMD in it, stream its output\n"
                "  session put SESSION FILE PATH | get SESSION PATH [-o FILE] | ls SESSION [PATH]   its files\n"
                "  session signal SESSION JOB SIGNAL | extend SESSION DUR | close SESSION | show SESSION | list\n"
                "  reload              (admin) read the daemon's configuration again: tenants, tokens, admins\n"
                "  policy show [TENANT] | history [TENANT] [--limit N]   a tenant's policy (yours, or any: admin)\n"
                "  policy set TENANT KEY=VALUE... | reset TENANT KEY... [--reason R]   (admin) change it, durably\n"
                "  secret ls [TENANT] | set [--keep-newline] TENANT NAME | rm TENANT NAME   secrets' values (set, rm:\n"
                "                               admin; the value on standard input)\n"
                "  nodes               (admin) a cluster's nodes: role, running jobs, heartbeat\n"
                "  drain [NODE] [--undo]   (admin) the node (this one by default) finishes its jobs, claims no more\n\n"
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
                "  --secret NAME       give the job a secret your tenant is granted (repeatable)\n"
                "  --pip NAME==VERSION[#sha256=HEX]  a Python package the job imports, from your tenant's index (repeatable)\n"
                "  --npm NAME@VERSION[#sha512-B64]   an npm package the job requires, from your tenant's registry (repeatable)\n"
                "  --npm-lock FILE     the packages of an npm lock file (package-lock.json), each pinned with its integrity\n"
                "  --pip-requirements FILE  the pins of a requirements file (NAME==VERSION, with their --hash=sha256: hashes)\n"
                "  --idempotency-key K make retries of this submission safe\n"
                "  --traceparent TP    the W3C trace context the job joins (default: it starts a trace)\n"
                "  --callback URL      post the job's result there when it ends (a URL your tenant allows)\n"
                "  --progress SECONDS  also post 'started' and a heartbeat every SECONDS there (0: none)\n");
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
        bool follow, res_json, value;
        const char *stream, *state, *job;
        long limit;
};

static int cmd_run(int ac, char **av) {
        bool run = streq(av[0], "run");
        json_t *req = sbxctl_build_run(ac, av, run);
        connect_daemon();
        json_t *m = request(req);
        if (!run) {
                if (!json_out)
                        printf("%s\n", json_string_value(json_object_get(m, "job")) ?: "?");
                return 0;
        }
        return sbxctl_follow_to_end(true);
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
        if (a->value && !json_out) {
                /* the job's structured result ($SBX_RESULT), as JSON */
                json_t *v = json_object_get(res, "value");
                const char *why = json_string_value(json_object_get(res, "value_error"));
                if (!v || json_is_null(v)) {
                        if (why)
                                fprintf(stderr, "sbxctl: %s: its value was refused: %s\n", a->job, why);
                        else
                                fprintf(stderr, "sbxctl: %s: the job wrote no value ($SBX_RESULT)\n", a->job);
                        return 1;
                }
                char *s = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
                printf("%s\n", s ? s : "null");
                free(s);
        } else if (a->res_json && !json_out) {
                char *s = json_dumps(res, JSON_INDENT(2) | JSON_SORT_KEYS);
                printf("%s\n", s ? s : "null");
                free(s);
        } else if (!json_out) {
                sbxctl_print_result(res);
                if (json_is_object(cbs))
                        print_callback(cbs);
        }
        return streq(a->name, "wait") ? sbxctl_exit_status(res) : 0;
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
                        sbxctl_write_data(i ? stderr : stdout, ev);
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
                return sbxctl_follow_to_end(false);
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
        { "wait", "jv", true, cmd_result }, { "logs", "fS", true, cmd_logs },  { "cancel", "", true, cmd_cancel },
        { "result", "jv", true, cmd_result }, { "ls", "tn", false, cmd_ls }, { "ping", "", false, cmd_ping },
        { "bundle", NULL, false, NULL },   { "cache", NULL, false, NULL }, { "download", NULL, false, NULL },
        { "metrics", "", false, cmd_metrics }, { "callbacks", NULL, false, NULL }, { "session", NULL, false, NULL },
        { "reload", NULL, false, NULL },   { "policy", NULL, false, NULL },
        { "secret", NULL, false, NULL },   { "nodes", NULL, false, NULL }, { "drain", NULL, false, NULL },
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
        case 'v':
                a->value = true;
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
                sbxctl_bad_option(where, o, av);
        }
}

/* The options after the command's name, each checked against what the
 * command takes, then its job argument. */
static void cmd_options(const struct command *c, int ac, char **av, struct cmd_args *a) {
        static const struct option sub[] = {
                { "follow", no_argument, NULL, 'f' }, { "stream", required_argument, NULL, 'S' },
                { "json", no_argument, NULL, 'j' },   { "state", required_argument, NULL, 't' },
                { "limit", required_argument, NULL, 'n' }, { "value", no_argument, NULL, 'v' },
                { NULL, 0, NULL, 0 },
        };
        char where[16];
        int o;
        snprintf(where, sizeof(where), "%s: ", c->name);
        a->name = c->name;
        optind = 1;
        while ((o = getopt_long(ac, av, "+:fjvS:t:n:", sub, NULL)) >= 0) {
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
        sbxctl_socket = getenv("SBX_SOCKET") ?: DEFAULT_SOCKET;
        opterr = 0;
        while ((o = getopt_long(argc, argv, "+:s:jhV", opts, NULL)) >= 0) {
                switch (o) {
                case 's':
                        sbxctl_socket = optarg;
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
                        sbxctl_bad_option("", o, argv);
                }
        }
        if (optind >= argc) {
                usage(stderr);
                return 2;
        }
        const struct command *command = find_command(argv[optind]);
        if (sodium_init() < 0)
                die("libsodium initialisation failed");
        atexit(sbxctl_client_free);
        char **av = argv + optind;
        int ac = argc - optind;
        if (streq(av[0], "bundle") || streq(av[0], "cache"))
                return sbxctl_bundle(ac, av);
        if (streq(av[0], "download"))
                return sbxctl_download(ac, av);
        if (streq(av[0], "callbacks"))
                return sbxctl_callbacks(ac, av);
        if (streq(av[0], "session"))
                return sbxctl_session(ac, av);
        if (streq(av[0], "reload"))
                return sbxctl_reload(ac, av);
        if (streq(av[0], "policy"))
                return sbxctl_policy(ac, av);
        if (streq(av[0], "secret"))
                return sbxctl_secret(ac, av);
        if (streq(av[0], "nodes"))
                return sbxctl_nodes(ac, av);
        if (streq(av[0], "drain"))
                return sbxctl_drain(ac, av);
        if (!command->fn)
                return cmd_run(ac, av);
        struct cmd_args a = { 0 };
        cmd_options(command, ac, av, &a);
        connect_daemon();
        return command->fn(&a);
}
