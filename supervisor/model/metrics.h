/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's metrics: counters kept on the event loop as jobs end and as
 * their network events come (the ring buffer, the DNS proxies and the
 * veths' hand-over are all served there: an increment, never a lock), and
 * their exposition in the Prometheus text format (version 0.0.4, which
 * `promtool check metrics` checks), for the metrics operation and the
 * optional HTTP listener (metrics-http.c). Counters count since the
 * daemon started. Pure: the unit tests drive it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "job.h"
#include "netdeny.h"

#define METRICS_MAX_STEPS 32      /* set-up steps told apart; more are "other" */
#define METRICS_STARTUP_BUCKETS 13
#define METRICS_RUN_BUCKETS 13

/* The network's counters (restricted jobs, the audit, the DNS proxy): each
 * labelled by a small enum, never by a job or a host. */
#define METRICS_NET_MODES 3       /* enum net_mode and NET_RESTRICTED */
#define METRICS_NET_KINDS 4       /* enum netaudit_kind, from 1 */

/* What a query read from a job's DNS proxy came to: one outcome each. */
enum metrics_dns_outcome {
        MDNS_ANSWERED,       /* the upstream's answer went to the job */
        MDNS_REFUSED,        /* the name is not the job's to resolve: REFUSED */
        MDNS_BUSY,           /* DNSPROXY_PENDING of the job's queries were out already: REFUSED */
        MDNS_UPSTREAM_FAILED, /* it could not be forwarded, or the upstream failed: SERVFAIL or REFUSED */
        MDNS_WITHHELD,       /* an answer's address could not be admitted: REFUSED */
        MDNS_UNANSWERED,     /* no answer in time, or the job ended first */
        MDNS_MALFORMED,      /* not a DNS query: no answer */
        MDNS_RATE_LIMITED,   /* never read: dropped by the kernel while the proxy was past the job's rate, or left at its end */
        MDNS_TIMED_OUT,      /* the upstream did not answer in dns_upstream_timeout: SERVFAIL */
        MDNS_NAMES_CAP,      /* a new name past the job's network_max_names: REFUSED */
        MDNS_OUTCOMES
};

/* What became of a TCP connection to a job's DNS proxy: one outcome each. */
enum metrics_dnstcp_outcome {
        MDNSTCP_CLOSED,      /* the job closed it between queries */
        MDNSTCP_REFUSED,     /* DNSTCP_CONNS of the job's were open already: closed at once */
        MDNSTCP_TIMED_OUT,   /* no query and no answer in dns_tcp_idle_timeout: closed */
        MDNSTCP_MALFORMED,   /* a length of 0 or past DNSMSG_MAX, or not a DNS query: closed */
        MDNSTCP_ENDED,       /* closed mid-query, a write failed, or the job ended */
        MDNSTCP_OUTCOMES
};

/* The step at which a job's network could not be set up. */
enum metrics_net_step {
        MNET_AUDIT,          /* the eBPF programs could not be attached to its cgroup */
        MNET_ADDRESS,        /* every /30 of network_pool was in use */
        MNET_HANDSHAKE,      /* the launcher's --info-fd/--block-fd handshake */
        MNET_VETH,           /* its veth could not be made in its namespace */
        MNET_DNS,            /* its DNS proxy could not be served */
        MNET_STEPS
};

struct metrics_net {
        uint64_t started[METRICS_NET_MODES][2]; /* jobs started, by mode and not audited/audited */
        uint64_t events[METRICS_NET_KINDS][2];  /* events received, by kind - 1 and allow/deny */
        uint64_t dropped, lost;                 /* of ended jobs: past network_events; the ring had no room */
        uint64_t dns[MDNS_OUTCOMES];
        uint64_t dns_pauses;                    /* a proxy stopped reading for the rest of a second */
        uint64_t dns_tcp[MDNSTCP_OUTCOMES];
        uint64_t dns_withheld[ND_REASONS];      /* addresses of answers withheld, by enum netdeny_reason */
        uint64_t setup_failures[MNET_STEPS];
};

struct metrics_tenant {
        char *name;
        uint64_t ended[OUTCOME_ERROR + 1]; /* by enum job_outcome */
        uint64_t output[2];                /* bytes its jobs wrote to stdout, stderr */
        uint64_t warm;                     /* of its ended jobs: those that ran in a warm sandbox */
};

struct metrics_hist {
        uint64_t bucket[METRICS_RUN_BUCKETS + 1]; /* the last is +Inf */
        uint64_t count;
        double sum;
};

struct metrics {
        struct metrics_tenant *tenants;
        size_t n_tenants;
        struct metrics_hist startup, run;
        struct {
                char name[32];
                uint64_t n;
        } steps[METRICS_MAX_STEPS + 1]; /* the last is "other" */
        size_t n_steps;
        uint64_t bundle_jobs[2];        /* bundle jobs whose tree came from the cache, from the registry */
        uint64_t bundle_stale;          /* of those from the cache: the registry could not be asked */
        struct metrics_net net;
};

/* A tenant's warm pool when the exposition is asked: its sandboxes no job
 * has taken yet. */
struct metrics_warm {
        const char *tenant;
        uint64_t ready;                 /* a job can take it now */
        uint64_t starting;              /* being made */
};

/* What the exposition reads from the daemon when it is asked. */
struct metrics_gauges {
        uint64_t queued, running, connections;
        uint64_t cache_bytes, cache_entries;
        bool callbacks;                 /* the members below were filled */
        uint64_t cb_backlog, cb_in_memory, cb_dead;
        uint64_t cb_delivered, cb_attempt_failures, cb_dead_lettered;
        uint64_t cb_progress_delivered, cb_progress_failed, cb_progress_behind;
        uint64_t net_strays;            /* audit events of no attached job */
        bool net_pool;                  /* the members below were filled (restricted jobs can run) */
        uint64_t net_pool_used, net_pool_size; /* /30s of network_pool */
        bool cluster;                   /* cluster mode: the members below were filled */
        bool cl_up;                     /* the database answers */
        uint64_t cl_claimed, cl_fenced, cl_unavailable, cl_requeued, cl_expired, cl_cb_adopted, cl_writes, cl_write_batches;
        const struct metrics_warm *warm; /* the tenants with warm = N */
        size_t n_warm;
};

/* What one finished job adds. */
struct metrics_job {
        const char *tenant;
        enum job_outcome outcome;
        int64_t startup_us;             /* accepted to launcher started; < 0: it never started */
        int64_t run_us;                 /* started to exited; < 0: never started */
        uint64_t output[2];
        const char *setup_step;         /* the launcher's failed set-up step, or NULL */
        int bundle_source;              /* -1: no bundle; 0: from the cache; 1: downloaded */
        bool bundle_stale;
        uint64_t net_dropped, net_lost; /* its network events past network_events; lost by the ring */
        bool warm;                      /* it ran in a sandbox of its tenant's warm pool */
};

void metrics_done(struct metrics *m);
/* Returns 0 or -ENOMEM (the job is then not counted). */
int metrics_job_end(struct metrics *m, const struct metrics_job *j);

/* A job started with network mode (enum net_mode, NET_RESTRICTED), under
 * the audit or not. */
void metrics_net_started(struct metrics *m, int mode, bool audited);
/* A network event of a job reached the daemon (kind: enum netaudit_kind,
 * verdict: NETAUDIT_ALLOW or NETAUDIT_DENY). */
void metrics_net_event(struct metrics *m, unsigned kind, unsigned verdict);
/* n queries came to o. */
void metrics_dns(struct metrics *m, enum metrics_dns_outcome o, uint64_t n);
/* An address of an answer was withheld: the job may never reach it. */
void metrics_dns_withheld(struct metrics *m, unsigned reason);
/* A TCP connection to a DNS proxy came to o. */
void metrics_dnstcp(struct metrics *m, enum metrics_dnstcp_outcome o);
void metrics_net_setup_failed(struct metrics *m, enum metrics_net_step step);

/* The exposition, NUL-terminated (free() it). With tenant non-NULL, the
 * series labelled with a tenant are those of that tenant only. */
int metrics_render(const struct metrics *m, const struct metrics_gauges *g, const char *tenant, char **ret, size_t *ret_len);

/* "HOST:PORT" with a numeric IPv4 address, or "[IPV6]:PORT". Returns 0,
 * or -EINVAL. */
int metrics_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);
