/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon: its state in one struct, start-up in order, signals, the
 * housekeeping timer, and stopping. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include "callbacks.h"
#include "cgroup.h"
#include "commit.h"
#include "conf.h"
#include "conn.h"
#include "error.h"
#include "jobs.h"
#include "journal.h"
#include "listener.h"
#include "loop.h"
#include "metrics.h"
#include "netfwd.h"
#include "netremote.h"
#include "policy.h"
#include "pool.h"
#include "result.h"
#include "sched.h"
#include "session.h"
#include "statedir.h"
#include "privc.h"
#include "uidpool.h"

struct bundles;
struct warm;
struct cluster;
struct deps;
struct MHD_Daemon;

/* A tenant the configuration no longer has, for its jobs' records after a
 * restart. */
struct ghost_tenant {
        struct tenant t;
        struct ghost_tenant *next;
};

struct services;

struct daemon {
        struct config *cfg;
        struct statedir dirs;
        struct cgroup_ctx cg;
        struct daemon_caps caps;
        struct privc privc;       /* sbx-privd (fd -1: none; this process does what needs root) */
        struct uidpool uids;      /* job uids (empty: jobs run as their tenant's job user) */
        bool own_mounts;          /* workspaces are tmpfs mounts of their own */
        int null_fd;              /* /dev/null, where output past its cap goes */
        struct journal journal;
        struct scheduler sched;
        struct result_index done;
        struct result_rest *results_rest; /* what the index still lacks, being read (results-rest.c) */
        struct work results_work;
        struct list results_waiters; /* requests that wait for it */
        bool results_abandoned;
        struct jobs jobs;
        struct sessions sessions; /* session/ */
        struct conns conns;
        struct listener listener;
        struct commit commit;
        struct source signal_src, sweep_src, worker_src, cpu_src;
        unsigned cpu_watched;     /* running jobs whose CPU time is checked */
        bool stopping;
        bool schedule_wanted;
        struct warm *warm;        /* warm.c: the tenants' warm pools */
        bool warm_wanted;         /* a pool may lack sandboxes: warm_fill() after this turn */
        bool starting;            /* runner_start_ready() is starting jobs */
        uint64_t next_retention_ms;
        struct ghost_tenant *ghosts;
        struct retired *retired;  /* tenants of earlier configurations, still held (reload.c) */
        json_t *policy;           /* STATE/policy.json (policy-store.h) */
        struct bundles *bundles;  /* bundle.c */
        struct metrics metrics;   /* counters of finished jobs */
        struct callbacks cb;      /* callbacks.c */
        struct MHD_Daemon *http;  /* metrics_listen's listener, or NULL (metrics-http.c) */
        struct services *services; /* service_listen's proxy, or NULL (service.c) */
        struct source http_src;
        struct http_api *api;     /* [http] listen's API, or NULL (http-api.c) */
        struct netaudit *netaudit; /* netaudit.c: NULL when there is no network audit */
        /* with "user" set: the network's privileged steps are sbx-privd's
         * (netpriv NULL: this process does them), the audit is netremote.c */
        const struct netpriv *netpriv;
        struct netpriv netpriv_ops;
        struct netremote *netremote;
        struct netdeny *net_deny; /* where restricted jobs never go (netdeny.h), as the programs hold it */
        uint64_t net_deny_next_ms; /* when the host's addresses are read again */
        char no_net_audit_why[256];
        char no_restricted_why[SBX_ERROR_MAX + 64];
        char net_ifprefix[12];    /* restricted jobs' veths: PREFIX + slot */
        char net_table[16];       /* the nft tables' name (ip family, and ip6 with a network_pool6) */
        uint8_t *net_used;        /* slots of network_pool in use, a bit each */
        unsigned net_slots, net_next;
        unsigned net_slots_used;  /* bits set in net_used (for the metrics) */
        struct netfwd net_fwd;    /* the forwarding switches it turned on */
        struct source net_retry_src; /* a timerfd: restricted jobs wait for a veth the kernel still removes */
        bool net_retry_armed;
        /* told when a slot may have come free: the scheduler (runner.c),
         * which the network code stands below and does not call */
        void (*net_room)(struct daemon *d);
        /* deps-ops.c: jobs' Python packages. The hooks are how job code
         * below (recovery, the runner's end of a job) reaches it. */
        struct deps *deps;
        void (*deps_start)(struct rjob *rj);
        void (*deps_release)(struct rjob *rj);
        void (*deps_adopt)(struct rjob *rj, const char *layer);
        /* cluster mode (cluster-ops.c): NULL without [cluster] database.
         * cluster_end is how the group commit (below it) hands the
         * claimed jobs of a synced batch to the database's writer (n >= 1),
         * with the connections whose replies the batch held (held again
         * until the database has answered) and whether the batch's own
         * files were all written: each job comes back through
         * commit_cluster_ended(), then the batch through
         * commit_cluster_settled(). */
        struct cluster *cluster;
        void (*cluster_end)(struct daemon *d, struct rjob **rjs, size_t n, struct commit_holder **held, size_t n_held,
                            bool local_ok);
        struct sockaddr_in6 dns_upstream; /* the DNS proxy's resolver (an IPv4 one as a sockaddr_in) */
        struct list dns_paused;   /* DNS proxies past their rate (struct dnsproxy.paused_link) */
        struct list dns_tcp;      /* DNS proxies with TCP connections or past their rate (struct dnsproxy.tcp_link) */
};

int daemon_init(struct daemon *d, struct config *cfg, struct sbx_error *err);
/* Serve until SIGTERM/SIGINT and every job is finished. */
int daemon_run(struct daemon *d);
void daemon_done(struct daemon *d);

/* systemd's STATUS= line, after changes. */
void daemon_notify_status(struct daemon *d);
/* Rewrite the journal with just the jobs in memory (accept and start
 * lines), atomically; the old journal stays on failure. */
int daemon_compact_journal(struct daemon *d);
/* One more (delta 1) or one less (-1) job whose CPU time is checked: the
 * check's timer runs only while there are some. */
void daemon_cpu_watch(struct daemon *d, int delta);
/* A job left the daemon: stop the loop if stopping and none are left. */
void daemon_job_gone(struct daemon *d);
