/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl run and submit: the command line made into a run request (its
 * limits, uploads, stdin, environment, network and artifacts). */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "parse.h"
#include "proto.h"
#include "sbxctl.h"

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
        O_ARTIFACT, O_KEY, O_DISK, O_RETRIES, O_BUNDLE, O_TRACE, O_AUDIT, O_ALLOW, O_DENY_PORT, O_CALLBACK,
        O_PROGRESS, O_SECRET, O_PIP, O_NPM, O_NPM_LOCK, O_PIP_REQ
};

/* The parts of a run request that options add to. */
struct run_parts {
        json_t *req, *limits, *env, *files, *arts;
        const char *bundle; /* --bundle */
        const char *net;    /* --network */
        bool audit;         /* --audit */
        json_t *allow, *deny; /* --allow, --deny-port */
        json_t *secrets;    /* --secret */
        json_t *pip;        /* --pip */
        json_t *npm;        /* --npm */
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
        unsigned char *d = sbxctl_slurp(arg, &len);
        char *b = b64(d, len);
        json_array_append_new(files, json_pack("{s:s, s:s, s:i}", "path", dest, "data_b64", b, "mode",
                                               access(arg, X_OK) == 0 ? 0755 : 0644));
        free(b);
        free(d);
}

static void stdin_option(json_t *req, const char *arg) {
        size_t len;
        unsigned char *d = sbxctl_slurp(arg, &len);
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
        case O_SECRET:
                json_array_append_new(p->secrets, json_string(arg));
                break;
        case O_PIP:
                json_array_append_new(p->pip, json_string(arg));
                break;
        case O_NPM:
                json_array_append_new(p->npm, json_string(arg));
                break;
        case O_NPM_LOCK:
                sbxctl_npm_lock(p->npm, arg);
                break;
        case O_PIP_REQ:
                sbxctl_pip_requirements(p->pip, arg);
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
        case O_PROGRESS:
                if (parse_uint64(arg, PROTO_MAX_PROGRESS, &n) < 0)
                        usage_error("--progress: expected the seconds between heartbeats, 1 to %d, or 0 for none, got '%s'",
                                    PROTO_MAX_PROGRESS, arg);
                json_object_set_new(p->req, "progress", json_integer((json_int_t) n));
                break;
        default: {
                char where[16];
                snprintf(where, sizeof(where), "%s: ", argv[0]);
                sbxctl_bad_option(where, o, argv);
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

json_t *sbxctl_build_run(int argc, char **argv, bool follow) {
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
                { "progress", required_argument, NULL, O_PROGRESS }, { "secret", required_argument, NULL, O_SECRET },
                { "pip", required_argument, NULL, O_PIP },
                { "npm", required_argument, NULL, O_NPM },
                { "npm-lock", required_argument, NULL, O_NPM_LOCK },
                { "pip-requirements", required_argument, NULL, O_PIP_REQ },
                { NULL, 0, NULL, 0 },
        };
        struct run_parts p = {
                .req = new_req("run"), .limits = json_object(), .env = json_object(), .files = json_array(),
                .arts = json_array(), .allow = json_array(), .deny = json_array(), .secrets = json_array(),
                .pip = json_array(),
                .npm = json_array(),
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
        set_nonempty(p.req, "secrets", p.secrets);
        set_nonempty(p.req, "pip", p.pip);
        set_nonempty(p.req, "npm", p.npm);
        if (follow)
                json_object_set_new(p.req, "follow", json_true());
        return p.req;
}
