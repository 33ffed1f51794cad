/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-protocol(7): newline-delimited JSON requests, parsed and validated
 * strictly into struct request before anything acts on them. Unknown fields,
 * wrong types and out-of-range values are E_BAD_REQUEST naming the field.
 * This module has no I/O so the unit tests can drive it directly. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "profile.h"

#define PROTO_VERSION 1
#define PROTO_UNSET UINT64_MAX
/* limits.cpus: from a hundredth of a CPU (cpu.max's smallest quota) to 1024. */
#define PROTO_CPUS_MIN_MILLI 10
#define PROTO_CPUS_MAX_MILLI 1024000

/* Bounds on what one request may carry. */
#define PROTO_MAX_ARGS 4096
#define PROTO_MAX_ARG_LEN (128 * 1024)
#define PROTO_MAX_ENV 256
#define PROTO_MAX_FILES 1024
#define PROTO_MAX_ARTIFACTS 64
#define PROTO_MAX_PATH 1024
#define PROTO_MAX_KEY 128
#define PROTO_MAX_LIST 10000
#define PROTO_MAX_RETRIES 10
#define PROTO_MAX_PROGRESS 3600 /* seconds between progress heartbeats */
/* logs: bytes of each stream in one response (the default and the most). */
#define PROTO_LOGS_CHUNK (1u << 20)
/* download: bytes of the file in one data event (base64 in the message). */
#define PROTO_DOWNLOAD_CHUNK 49152
/* output events: bytes of output in one event. */
#define PROTO_EVENT_CHUNK 65536

/* Stable error codes (sbx-protocol(7)). */
#define E_BAD_REQUEST "E_BAD_REQUEST"
#define E_UNAUTHORIZED "E_UNAUTHORIZED"
#define E_FORBIDDEN "E_FORBIDDEN"
#define E_LIMIT "E_LIMIT"
#define E_NOT_FOUND "E_NOT_FOUND"
#define E_NO_PROFILE "E_NO_PROFILE"
#define E_QUEUE_FULL "E_QUEUE_FULL"
#define E_NOT_DONE "E_NOT_DONE"
#define E_CONFLICT "E_CONFLICT"
#define E_INTERNAL "E_INTERNAL"
#define E_SHUTTING_DOWN "E_SHUTTING_DOWN"
#define E_TOO_MANY_CONNECTIONS "E_TOO_MANY_CONNECTIONS"
#define E_BUSY "E_BUSY"
#define E_RATE_LIMITED "E_RATE_LIMITED" /* an HTTP API token over its rate */
#define E_UNSUPPORTED "E_UNSUPPORTED" /* asked for what this daemon cannot provide here (no eBPF, no job cgroups) */
#define E_CONFIG "E_CONFIG" /* a reload or policy change refused: the configuration it would make is not valid */
/* Cluster mode: the database is unreachable; nothing new is accepted that
 * could not be made durable. Retry later (or on another node). */
#define E_UNAVAILABLE "E_UNAVAILABLE"
/* Cluster mode: what was asked is kept by another node (a job's output
 * files and artifacts): error.node names it, and error.api is its HTTP
 * API (http[s]://HOST[:PORT]) when it advertises one. */
#define E_OTHER_NODE "E_OTHER_NODE"
/* Job error codes, in result records. */
#define E_SPAWN "E_SPAWN"
#define E_SETUP "E_SETUP"
#define E_RESTARTED "E_RESTARTED"
#define E_CANCELLED "E_CANCELLED"
#define E_TIMEOUT "E_TIMEOUT"
#define E_OOM "E_OOM"
#define E_MEMORY "E_MEMORY"
/* The job's processes together used its whole CPU time (cgroup cpu.stat). */
#define E_CPU_TIME "E_CPU_TIME"
/* The daemon cannot make results durable (a full or failing disk): no new
 * work is accepted until it can. */
#define E_STORAGE "E_STORAGE"
/* The session asked for has ended (the message says when and why). */
#define E_SESSION_ENDED "E_SESSION_ENDED"
/* Bundles (in records, and in bundle.show responses). */
#define E_REGISTRY_UNAVAILABLE "E_REGISTRY_UNAVAILABLE" /* unreachable, or it failed to serve */
#define E_BUNDLE_INTEGRITY "E_BUNDLE_INTEGRITY"         /* the archive is not what the index says */
#define E_BUNDLE_SIGNATURE "E_BUNDLE_SIGNATURE"         /* the index's signature is bad or by no trusted key */
#define E_BUNDLE_ROLLBACK "E_BUNDLE_ROLLBACK"           /* the index is older than one already seen */
#define E_BUNDLE_INVALID "E_BUNDLE_INVALID"             /* a bad archive, manifest or index */
#define E_CACHE_FULL "E_CACHE_FULL"                     /* the bundle cache's file system is full, even after removing unused trees */
#define E_DEPS "E_DEPS"                                 /* the job's packages could not be installed (its install job says why) */

enum req_op {
        REQ_RUN,
        REQ_STATUS,
        REQ_WAIT,
        REQ_LOGS,
        REQ_CANCEL,
        REQ_RESULT,
        REQ_LIST,
        REQ_PING,
        REQ_BUNDLE_SHOW,
        REQ_CACHE_LIST,
        REQ_CACHE_GC,
        REQ_DOWNLOAD,
        REQ_METRICS,
        REQ_CB_LIST,
        REQ_CB_RETRY,
        REQ_CB_DROP,
        /* sessions (proto-session.c) */
        REQ_SESSION_CREATE,
        REQ_SESSION_EXEC,
        REQ_SESSION_SIGNAL,
        REQ_SESSION_EXTEND,
        REQ_SESSION_CLOSE,
        REQ_SESSION_SHOW,
        REQ_SESSION_LIST,
        REQ_SESSION_PUT,
        REQ_SESSION_GET,
        REQ_SESSION_LS,
        REQ_SESSION_EXPOSE,
        REQ_SESSION_UNEXPOSE,
        REQ_SESSION_STDIN,
        REQ_SESSION_FORWARD,
        REQ_SESSION_RESIZE,
        /* the daemon's configuration (proto-admin.c) */
        REQ_RELOAD,
        REQ_POLICY_SHOW,
        REQ_POLICY_SET,
        REQ_POLICY_HISTORY,
        REQ_NODES,
        REQ_DRAIN,
        REQ_SECRET_SET,
        REQ_SECRET_LIST,
        REQ_SECRET_RM,
};

static inline bool req_op_is_admin(enum req_op op) {
        return op >= REQ_RELOAD && op <= REQ_SECRET_RM;
}


static inline bool req_op_is_session(enum req_op op) {
        return op >= REQ_SESSION_CREATE && op <= REQ_SESSION_RESIZE;
}

/* A session's id: 128 random bits in 32 lowercase hex digits. */
#define PROTO_SESSION_ID_LEN 32
/* session.get: bytes of a file in one response (the default and the most). */
#define PROTO_SESSION_GET_CHUNK (1u << 20)

enum stream_mask {
        STREAM_STDOUT = 1,
        STREAM_STDERR = 2,
        STREAM_BOTH = 3,
};

struct upload {
        char *path;            /* relative, normalised, no "..", no leading "/" */
        unsigned char *data;
        size_t len;
        mode_t mode;           /* 0644 unless given; only 0755 or 0644 kept */
};

struct env_pair {
        char *name;
        char *value;
};

struct netpolicy;

/* A network mode of the supervisor only: the launcher runs the job with a
 * network namespace of its own (as for NET_NONE), into which the daemon
 * adds a veth; the eBPF programs admit only the allow entries. */
enum { NET_RESTRICTED = NET_HOST + 1 };

struct run_request {
        char *bundle;          /* a bundle reference (NAME, NAME@VERSION, NAME@sha256:HEX), or NULL */
        char **argv;           /* NULL-terminated: the command, or with a bundle its arguments (maybe none) */
        size_t argc;
        char *profile;         /* NULL: the tenant's default */
        struct env_pair *env;
        size_t n_env;
        unsigned char *stdin_data;
        size_t stdin_len;
        uint64_t timeout_ms;   /* PROTO_UNSET: the tenant's default */
        uint64_t memory;       /* bytes; PROTO_UNSET: not asked */
        uint64_t processes;
        uint64_t cpu_s;
        uint64_t cpu_milli;    /* CPU bandwidth in thousandths of a CPU; PROTO_UNSET: not asked */
        uint64_t output;       /* bytes kept per stream */
        uint64_t disk;         /* bytes of workspace */
        int net;               /* enum net_mode, or -1: none asked */
        bool net_audit;        /* network.audit: record every connection attempt (always, when restricted) */
        struct netpolicy *netpol; /* NET_RESTRICTED: its allow entries and deny-ports (netpolicy.h) */
        struct upload *files;
        size_t n_files;
        size_t upload_bytes;
        char **artifacts;      /* globs relative to the workspace */
        size_t n_artifacts;
        char *idempotency_key;
        unsigned retries;      /* runs after a restart that interrupted it */
        bool follow;           /* stream output and the end of the job on this connection */
        char *traceparent;     /* W3C trace context: the caller's, then (accept.c) the job's own; NULL: none given */
        char *callback;        /* the URL its result is posted to: the caller's, or (accept.c) the tenant's default; NULL: none */
        uint64_t progress_s;   /* seconds between heartbeat callbacks (0: no progress callbacks); PROTO_UNSET: the tenant's */
        char **secrets;        /* the tenant's secrets it asks for, by name (distinct); NULL-terminated or NULL */
        size_t n_secrets;
        char **pip;            /* its Python packages, NAME==VERSION[#sha256=HEX] as given (deps.h reads them) */
        size_t n_pip;
        char **npm;            /* its npm packages, NAME@VERSION[#sha512-BASE64] as given */
        size_t n_npm;
};

/* Does the job ask for packages (sbx-supervisord(8) DEPENDENCIES)? */
static inline bool run_has_deps(const struct run_request *run) {
        return run->n_pip || run->n_npm;
}

struct request {
        enum req_op op;
        json_t *tag;           /* the client's "id", echoed in the response; may be NULL */
        char *job;             /* status, wait, logs, cancel, result */
        unsigned streams;      /* logs; download: the one stream when no artifact */
        bool follow;           /* logs */
        uint64_t offset;       /* logs: first byte of each stream */
        uint64_t max_bytes;    /* logs: bytes of each stream at most */
        char *state;           /* list filter, NULL for any */
        uint64_t limit;        /* list */
        char *bundle;          /* bundle.show: the reference */
        bool all;              /* cache.gc: every unused tree */
        char *artifact;        /* download: an artifact's path as its record lists it, or NULL for a stream */
        /* sessions */
        char *session;         /* the session's id */
        uint64_t ttl_s;        /* session.create, session.extend; PROTO_UNSET: the default */
        uint64_t idle_s;       /* session.create; PROTO_UNSET: the default */
        char *cwd;             /* session.exec: relative to the workspace; NULL: the workspace */
        char *path;            /* session.put, .get, .ls: relative to the workspace */
        int signo;             /* session.signal */
        uint16_t port;         /* session.expose, .unexpose */
        uint64_t signed_ttl_s; /* session.expose: a signed URL valid this long; 0: none */
        bool stdin_open;       /* session.exec: its stdin stays open for session.stdin */
        bool tty;              /* session.exec: stdin, stdout and stderr are one terminal */
        uint16_t rows, cols;   /* session.exec (0: 24 and 80), session.resize: the terminal's size */
        bool eof;              /* session.stdin: close it after the data */
        unsigned mode;         /* session.put: 0644 or 0755 */
        unsigned char *data;   /* session.put */
        size_t data_len;
        /* policy.show, .set, .history */
        char *tenant;          /* NULL: the caller's own */
        json_t *policy;        /* policy.set: { key: "value" | null } */
        char *reason;          /* policy.set: why, for the history; may be NULL */
        char *name;            /* secret.set, .rm: the secret's name; drain: the node (NULL: this one) */
        bool undo;             /* drain: claim jobs again */
        char *value;           /* secret.set: its value (wiped when freed) */
        size_t value_len;
        struct run_request run;
};

void request_init(struct request *r);
void request_free(struct request *r);

/* Parse one request line (without its newline). On failure returns -EINVAL
 * and err->msg says what is wrong, naming the field; r->tag is still set
 * when the line had a usable "id", so the error can be matched. */
int proto_parse_request(const char *line, size_t len, struct request *r, struct sbx_error *err);

const char *req_op_name(enum req_op op);

/* Response helpers: every message carries "v":1. They steal `extra`'s
 * members (may be NULL). */
json_t *proto_ok(json_t *tag, json_t *extra);
json_t *proto_error(json_t *tag, const char *code, const char *fmt, ...) _printf_(3, 4);

/* A job id the daemon could have made: "j" + 20 lowercase hex digits. */
bool proto_valid_job_id(const char *s);

/* Set `key` to data as a string, or `key`_b64 to its base64 if it is not
 * UTF-8. Returns 0 or -ENOMEM. */
int proto_set_data(json_t *obj, const char *key, const char *data, size_t len);

/* proto-msg.c: every other message the daemon sends. */
const char *proto_stream_name(int i); /* 0 stdout, 1 stderr */
unsigned proto_stream_bit(int i);
/* {"v":1,"event":EVENT,"job":ID} and the members each event has. */
json_t *proto_ev_started(const char *job);
json_t *proto_ev_output(const char *job, int stream, const char *data, size_t len);
json_t *proto_ev_lagged(const char *job, int stream, uint64_t skipped);
/* A network event of the job (netevents.c's JSON, borrowed): its members
 * beside "event": "network" and "job". */
json_t *proto_ev_network(const char *job, json_t *net_event);
/* "none", "host" or "restricted" (NET_NONE for -1). */
const char *proto_net_mode_name(int mode);
json_t *proto_ev_end(const char *job, json_t *rec);
/* The job ended but its record cannot be written yet. */
json_t *proto_ev_error(const char *job, const char *code, const char *msg);
/* A job's summary in status and list responses: a live job's (state and
 * start) or a finished one's (outcome, end, exit code). */
json_t *proto_summary_live(const char *job, const char *tenant, const char *state, uint64_t created_ms,
                           uint64_t started_ms, const char *command);
json_t *proto_summary_done(const char *job, const char *tenant, const char *state, uint64_t created_ms,
                           uint64_t ended_ms, int exit_code);
/* RFC 3339 or null for 0. */
json_t *proto_time(uint64_t real_ms);
json_t *proto_argv(const struct run_request *run);

/* The run request as a request object that proto_parse_request() takes
 * back to an equal struct (the journal keeps it, so that a job a restart
 * interrupted can run again). */
json_t *proto_run_json(const struct run_request *run);

/* SHA-256 (hex) of what the job is given: command, environment, stdin and
 * files (the audit log's inputs_sha256). */
void proto_inputs_digest(const struct run_request *run, char hex[65]);
/* SHA-256 (hex) of the whole request as it bears on the job (the inputs,
 * the profile, limits, network, artifacts, retries): two runs with one
 * idempotency key must have the same. */
void proto_request_digest(const struct run_request *run, char hex[65]);
