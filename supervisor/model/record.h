/* SPDX-License-Identifier: Apache-2.0 */
/* The result record (sbx-protocol(7)): the one builder, for jobs that ran
 * and ended here and for jobs that a restart interrupted (recover.c), so
 * both carry every field. Pure, unit-tested. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "job.h"

struct netevents;

/* What became of one output stream. */
struct record_stream {
        uint64_t kept;          /* bytes in the capture file */
        uint64_t produced;      /* bytes the job wrote (at least kept) */
        bool truncated;         /* the output cap was reached */
        int write_err;          /* the capture file could not be written: -errno */
};

struct record_input {
        const struct job *j;
        const char *tenant;         /* the tenant's name (the job's tenant may be gone after a restart) */
        uid_t job_uid;
        gid_t job_gid;
        const char *results_path;   /* STATE/results, for the capture files' paths */
        struct record_stream out[2];
        json_t *artifacts;          /* borrowed; NULL: none */
        json_t *limit_hit;          /* borrowed: which limit stopped the job, with evidence; NULL: none */
        json_t *secrets;            /* borrowed: [{name, mode, redacted}] of the secrets it asked for; NULL: none */
        json_t *deps;               /* borrowed: its packages' layer, lock and install (deps-ops.c); NULL: none */
        bool artifacts_truncated;
        const char *artifacts_error;
        json_t *value;              /* borrowed: the job's structured result ($SBX_RESULT), or NULL */
        const char *value_error;    /* why the file it wrote is not the record's value, or NULL */
        json_t *launcher_end;       /* borrowed: the launcher's end record, or NULL */
        json_t *start_prot;         /* borrowed: the protections its start reported, or NULL (used without an end record's) */
        int64_t cgroup_cpu_us;      /* the job cgroup's usage, or -1 */
        bool cgroup;                /* the job had a cgroup */
        unsigned cg_limits;         /* CG_LIMIT_* it enforced */
        bool disk_quota;            /* its workspace was a sized tmpfs */
        bool ws_noswap;             /* ... mounted noswap */
        bool ws_encrypted;          /* a directory, encrypted with a key of its own */
        const char *session;        /* a session's sandbox or exec: the session's id; NULL: none */
        const char *session_role;   /* "sandbox" or "exec" */
        bool warm;                  /* it ran in a sandbox of its tenant's warm pool (or is one) */
        const char *session_end;    /* the sandbox: why the session ended */
        const char *req_digest;     /* proto_request_digest(), or NULL */
        const char *cb_delivery;    /* the callback's delivery id, with the request's callback URL; or NULL */
        const struct netevents *net; /* its network events; NULL: none known (a restart lost them) */
};

json_t *record_build(const struct record_input *in);

/* A bundle job's "bundle" member: what was asked, what it resolved to,
 * where from, and the time each step took (the journal's start line keeps
 * it too, for a record written after a restart). */
json_t *record_bundle(const struct job_bundle *b);
/* Back from the journal: the resolution (not the tree or command). */
void record_bundle_restore(json_t *o, struct job_bundle *b);
/* The command the job ran: a bundle's manifest command and the caller's
 * arguments, or the request's command. */
json_t *record_command(const struct job *j);
