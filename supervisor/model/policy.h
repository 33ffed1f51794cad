/* SPDX-License-Identifier: Apache-2.0 */
/* A run request × the tenant's caps × what this daemon can enforce → the
 * values the job runs with, or a refusal naming the field and the cap.
 * Values the request leaves out get the tenant's defaults; a value above a
 * cap is refused or clamped (the tenant's over_limit). Pure, unit-tested. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "conf.h"
#include "error.h"
#include "proto.h"

/* A job's workspace size when neither the request nor a lower tenant cap
 * says otherwise. */
#define POLICY_DISK_DEFAULT (256ull << 20)
#define POLICY_MEMORY_DEFAULT (1ull << 30)
#define POLICY_PROCESSES_DEFAULT 256

/* What the daemon can enforce, found at start. */
struct daemon_caps {
        bool cpu_bandwidth;       /* the job cgroups have the cpu controller (cpu.max) */
        const char *no_cpu_why;   /* why not, for the refusal */
        bool net_audit;           /* the eBPF network audit is loaded (netaudit.c) */
        const char *no_net_audit_why;
        bool net_restricted;      /* the audit, a network_pool, and its veth/nft set-up worked */
        const char *no_restricted_why;
        bool dns_proxy;           /* hostname allow entries: the DNS proxy has an upstream */
        const char *no_dns_why;
        const struct netdeny *net_deny; /* allow entries that reach only these are refused; NULL: none */
};

struct policy_decision {
        char profile[72];
        uint64_t timeout_ms;
        uint64_t memory;     /* bytes; PROTO_UNSET: no limit */
        uint64_t processes;
        uint64_t cpu_s;
        uint64_t cpu_milli;  /* CPU bandwidth, thousandths of a CPU; PROTO_UNSET: none */
        uint64_t output;     /* bytes kept per stream */
        uint64_t disk;       /* bytes of workspace */
        uint64_t artifacts;  /* bytes of artifacts kept */
        int net;             /* enum net_mode */
        bool net_audit;      /* every connection attempt recorded (netaudit.c) */
        char clamped[512];   /* "timeout_ms 600000 -> 60000; ..." or "" */
        const char *code;    /* error code when refused */
};

/* Which limits a job's cgroup enforces, as bits (the others are the
 * launcher's rlimits, or not enforced). */
#define CG_LIMIT_MEMORY 1u
#define CG_LIMIT_PIDS 2u
#define CG_LIMIT_CPU 4u

/* 0 when the request may run (d filled), or -EPERM with d->code and err
 * naming the field and the cap or the missing capability. */
int policy_apply(const struct tenant *t, const struct run_request *run, const struct daemon_caps *caps,
                 struct policy_decision *d, struct sbx_error *err);

/* The decision as the journal keeps it, and back (a record written after
 * a restart states the limits the job ran with). */
json_t *policy_to_json(const struct policy_decision *d);
int policy_from_json(json_t *o, struct policy_decision *d);

/* Does the tenant allow this profile name? */
bool policy_allows_profile(const struct tenant *t, const char *name);
