/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "netaudit.h"
#include "parse.h"
#include "proto.h"
#include "util.h"

_Static_assert(METRICS_NET_MODES == NET_RESTRICTED + 1, "a network mode without its series");
_Static_assert(METRICS_NET_KINDS == NETAUDIT_DNS, "a network event kind without its series");

/* Seconds: from a warm start of a few milliseconds to a slow one. */
static const double startup_bounds[METRICS_STARTUP_BUCKETS] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                                 1,     2.5,  5,     10,   30,  60 };
/* Seconds: from a trivial job to an hour. */
static const double run_bounds[METRICS_RUN_BUCKETS] = { 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600 };

void metrics_done(struct metrics *m) {
        for (size_t i = 0; i < m->n_tenants; i++)
                free(m->tenants[i].name);
        free(m->tenants);
        memset(m, 0, sizeof(*m));
}

static struct metrics_tenant *tenant_of(struct metrics *m, const char *name) {
        for (size_t i = 0; i < m->n_tenants; i++)
                if (streq(m->tenants[i].name, name))
                        return &m->tenants[i];
        struct metrics_tenant *nt = realloc(m->tenants, (m->n_tenants + 1) * sizeof(*nt));
        if (!nt)
                return NULL;
        m->tenants = nt;
        struct metrics_tenant *t = &nt[m->n_tenants];
        memset(t, 0, sizeof(*t));
        if (!(t->name = strdup(name)))
                return NULL;
        m->n_tenants++;
        return t;
}

static void observe(struct metrics_hist *h, const double *bounds, size_t n, double v) {
        size_t i = 0;
        while (i < n && v > bounds[i])
                i++;
        h->bucket[i]++;
        h->count++;
        h->sum += v;
}

static void count_step(struct metrics *m, const char *step) {
        size_t i;
        for (i = 0; i < m->n_steps; i++)
                if (streq(m->steps[i].name, step))
                        break;
        if (i == m->n_steps) {
                if (m->n_steps == METRICS_MAX_STEPS || strlen(step) >= sizeof(m->steps[0].name)) {
                        m->steps[METRICS_MAX_STEPS].n++;
                        return;
                }
                snprintf(m->steps[i].name, sizeof(m->steps[i].name), "%s", step);
                m->n_steps++;
        }
        m->steps[i].n++;
}

int metrics_job_end(struct metrics *m, const struct metrics_job *j) {
        struct metrics_tenant *t = tenant_of(m, j->tenant);
        if (!t)
                return -ENOMEM;
        if ((unsigned) j->outcome <= OUTCOME_ERROR)
                t->ended[j->outcome]++;
        t->output[0] += j->output[0];
        t->output[1] += j->output[1];
        t->warm += j->warm;
        if (j->startup_us >= 0)
                observe(&m->startup, startup_bounds, METRICS_STARTUP_BUCKETS, (double) j->startup_us / 1e6);
        if (j->run_us >= 0)
                observe(&m->run, run_bounds, METRICS_RUN_BUCKETS, (double) j->run_us / 1e6);
        if (j->setup_step)
                count_step(m, j->setup_step);
        if (j->bundle_source >= 0) {
                m->bundle_jobs[j->bundle_source ? 1 : 0]++;
                if (j->bundle_stale)
                        m->bundle_stale++;
        }
        m->net.dropped += j->net_dropped;
        m->net.lost += j->net_lost;
        return 0;
}

void metrics_net_started(struct metrics *m, int mode, bool audited) {
        if (mode >= 0 && mode < METRICS_NET_MODES)
                m->net.started[mode][audited ? 1 : 0]++;
}

void metrics_net_event(struct metrics *m, unsigned kind, unsigned verdict) {
        if (kind >= 1 && kind <= METRICS_NET_KINDS)
                m->net.events[kind - 1][verdict == NETAUDIT_ALLOW ? 0 : 1]++;
}

void metrics_dns(struct metrics *m, enum metrics_dns_outcome o, uint64_t n) {
        if ((unsigned) o < MDNS_OUTCOMES)
                m->net.dns[o] += n;
}

void metrics_dns_withheld(struct metrics *m, unsigned reason) {
        if (reason > ND_NONE && reason < ND_REASONS)
                m->net.dns_withheld[reason]++;
}

void metrics_dnstcp(struct metrics *m, enum metrics_dnstcp_outcome o) {
        if ((unsigned) o < MDNSTCP_OUTCOMES)
                m->net.dns_tcp[o]++;
}

void metrics_net_setup_failed(struct metrics *m, enum metrics_net_step step) {
        if ((unsigned) step < MNET_STEPS)
                m->net.setup_failures[step]++;
}

/* A label value as the text format wants it: \\, \" and \n escaped. */
static void put_label(FILE *f, const char *v) {
        for (; *v; v++) {
                if (*v == '\\' || *v == '"')
                        fprintf(f, "\\%c", *v);
                else if (*v == '\n')
                        fputs("\\n", f);
                else
                        fputc(*v, f);
        }
}

static void head(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(FILE *f, const char *name, const char *help, uint64_t v) {
        head(f, name, "gauge", help);
        fprintf(f, "%s %" PRIu64 "\n", name, v);
}

static void hist(FILE *f, const char *name, const char *help, const struct metrics_hist *h, const double *bounds, size_t n) {
        head(f, name, "histogram", help);
        uint64_t cum = 0;
        for (size_t i = 0; i < n; i++) {
                cum += h->bucket[i];
                fprintf(f, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, bounds[i], cum);
        }
        fprintf(f, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n%s_sum %.6f\n%s_count %" PRIu64 "\n", name, h->count, name, h->sum,
                name, h->count);
}

static bool shown(const struct metrics_tenant *t, const char *only) {
        return !only || streq(t->name, only);
}

static void per_tenant(FILE *f, const struct metrics *m, const char *only) {
        head(f, "sbx_jobs_ended_total", "counter", "Jobs that ended, by tenant and end state (the state of their result record).");
        for (size_t i = 0; i < m->n_tenants; i++) {
                const struct metrics_tenant *t = &m->tenants[i];
                for (int o = OUTCOME_SUCCEEDED; shown(t, only) && o <= OUTCOME_ERROR; o++) {
                        fputs("sbx_jobs_ended_total{tenant=\"", f);
                        put_label(f, t->name);
                        fprintf(f, "\",state=\"%s\"} %" PRIu64 "\n", job_outcome_name((enum job_outcome) o), t->ended[o]);
                }
        }
        head(f, "sbx_jobs_warm_total", "counter", "Jobs that ended after running in a sandbox of their tenant's warm pool, by tenant.");
        for (size_t i = 0; i < m->n_tenants; i++) {
                const struct metrics_tenant *t = &m->tenants[i];
                if (!shown(t, only))
                        continue;
                fputs("sbx_jobs_warm_total{tenant=\"", f);
                put_label(f, t->name);
                fprintf(f, "\"} %" PRIu64 "\n", t->warm);
        }
        head(f, "sbx_job_output_bytes_total", "counter", "Bytes the jobs that ended wrote to stdout and stderr, by tenant and stream.");
        for (size_t i = 0; i < m->n_tenants; i++) {
                const struct metrics_tenant *t = &m->tenants[i];
                for (int s = 0; shown(t, only) && s < 2; s++) {
                        fputs("sbx_job_output_bytes_total{tenant=\"", f);
                        put_label(f, t->name);
                        fprintf(f, "\",stream=\"%s\"} %" PRIu64 "\n", s ? "stderr" : "stdout", t->output[s]);
                }
        }
}

static void warm_pools(FILE *f, const struct metrics_gauges *g, const char *only) {
        head(f, "sbx_warm_sandboxes", "gauge",
             "Sandboxes of a tenant's warm pool that no job has taken yet, by tenant and state (ready: a job can take it; "
             "starting: being made).");
        for (size_t i = 0; i < g->n_warm; i++) {
                const struct metrics_warm *w = &g->warm[i];
                if (only && !streq(w->tenant, only))
                        continue;
                for (int ready = 1; ready >= 0; ready--) {
                        fputs("sbx_warm_sandboxes{tenant=\"", f);
                        put_label(f, w->tenant);
                        fprintf(f, "\",state=\"%s\"} %" PRIu64 "\n", ready ? "ready" : "starting", ready ? w->ready : w->starting);
                }
        }
}

static void callback_series(FILE *f, const struct metrics_gauges *g) {
        gauge(f, "sbx_callback_backlog", "Callback deliveries waiting in the outbox (pending or being retried).", g->cb_backlog);
        gauge(f, "sbx_callback_in_memory",
              "Pending callback deliveries the daemon holds in memory (at most callback_memory_max per tenant; the rest of the "
              "backlog is read back from the outbox).",
              g->cb_in_memory);
        gauge(f, "sbx_callback_dead_letters", "Callback deliveries in the dead-letter directory.", g->cb_dead);
        head(f, "sbx_callback_delivered_total", "counter", "Callback deliveries the receiver accepted.");
        fprintf(f, "sbx_callback_delivered_total %" PRIu64 "\n", g->cb_delivered);
        head(f, "sbx_callback_attempt_failures_total", "counter",
             "Callback attempts that failed (connection errors, timeouts, 5xx, 429, other 4xx).");
        fprintf(f, "sbx_callback_attempt_failures_total %" PRIu64 "\n", g->cb_attempt_failures);
        head(f, "sbx_callback_dead_lettered_total", "counter", "Callback deliveries given up on and moved to the dead-letter directory.");
        fprintf(f, "sbx_callback_dead_lettered_total %" PRIu64 "\n", g->cb_dead_lettered);
        head(f, "sbx_callback_progress_delivered_total", "counter", "Progress callbacks (started, heartbeat) the receiver accepted.");
        fprintf(f, "sbx_callback_progress_delivered_total %" PRIu64 "\n", g->cb_progress_delivered);
        head(f, "sbx_callback_progress_dropped_total", "counter",
             "Progress callbacks given up on: not accepted at their one attempt (failed), or skipped because the job's last "
             "one, or 16 of all jobs, were still in flight (behind).");
        fprintf(f, "sbx_callback_progress_dropped_total{reason=\"failed\"} %" PRIu64 "\n", g->cb_progress_failed);
        fprintf(f, "sbx_callback_progress_dropped_total{reason=\"behind\"} %" PRIu64 "\n", g->cb_progress_behind);
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v) {
        head(f, name, "counter", help);
        fprintf(f, "%s %" PRIu64 "\n", name, v);
}

/* Label values: the words of the result records and the configuration. */
static const char *const net_kinds[METRICS_NET_KINDS] = { "connect", "sendmsg", "socket", "dns" };
static const char *const dns_outcomes[MDNS_OUTCOMES] = {
        [MDNS_ANSWERED] = "answered",
        [MDNS_REFUSED] = "refused",
        [MDNS_BUSY] = "busy",
        [MDNS_UPSTREAM_FAILED] = "upstream_failed",
        [MDNS_WITHHELD] = "withheld",
        [MDNS_UNANSWERED] = "unanswered",
        [MDNS_MALFORMED] = "malformed",
        [MDNS_RATE_LIMITED] = "rate_limited",
        [MDNS_TIMED_OUT] = "upstream_timeout",
        [MDNS_NAMES_CAP] = "names_cap",
};
static const char *const dnstcp_outcomes[MDNSTCP_OUTCOMES] = {
        [MDNSTCP_CLOSED] = "closed",
        [MDNSTCP_REFUSED] = "refused",
        [MDNSTCP_TIMED_OUT] = "timed_out",
        [MDNSTCP_MALFORMED] = "malformed",
        [MDNSTCP_ENDED] = "ended",
};
static const char *const net_steps[MNET_STEPS] = {
        [MNET_AUDIT] = "audit", [MNET_ADDRESS] = "address", [MNET_HANDSHAKE] = "handshake", [MNET_VETH] = "veth", [MNET_DNS] = "dns",
};

static void network(FILE *f, const struct metrics_net *n, const struct metrics_gauges *g) {
        head(f, "sbx_jobs_started_total", "counter",
             "Jobs whose launcher started, by network mode and whether their network use was audited.");
        for (int mode = 0; mode < METRICS_NET_MODES; mode++)
                for (int a = 0; a < 2; a++)
                        fprintf(f, "sbx_jobs_started_total{network=\"%s\",audit=\"%s\"} %" PRIu64 "\n", proto_net_mode_name(mode),
                                a ? "true" : "false", n->started[mode][a]);
        head(f, "sbx_network_events_total", "counter",
             "Network events of audited jobs the daemon received (kept in their records or past network_events), by kind and verdict.");
        for (int k = 0; k < METRICS_NET_KINDS; k++)
                for (int v = 0; v < 2; v++)
                        fprintf(f, "sbx_network_events_total{kind=\"%s\",verdict=\"%s\"} %" PRIu64 "\n", net_kinds[k],
                                v ? "deny" : "allow", n->events[k][v]);
        counter(f, "sbx_network_events_dropped_total",
                "Network events of ended jobs past network_events: counted in their records, not kept.", n->dropped);
        counter(f, "sbx_network_events_lost_total", "Network events of ended jobs the eBPF ring buffer had no room for.", n->lost);
        counter(f, "sbx_network_events_stray_total", "Network events the daemon received for no job (one that had ended).",
                g->net_strays);
        head(f, "sbx_network_dns_queries_total", "counter", "Queries read by the restricted jobs' DNS proxies, by what came of them.");
        for (int o = 0; o < MDNS_OUTCOMES; o++)
                fprintf(f, "sbx_network_dns_queries_total{outcome=\"%s\"} %" PRIu64 "\n", dns_outcomes[o], n->dns[o]);
        counter(f, "sbx_network_dns_pauses_total",
                "Times a job's DNS proxy stopped reading for the rest of a second, its rate used up.",
                n->dns_pauses);
        head(f, "sbx_network_dns_tcp_connections_total", "counter",
             "TCP connections to the restricted jobs' DNS proxies, by what came of them.");
        for (int o = 0; o < MDNSTCP_OUTCOMES; o++)
                fprintf(f, "sbx_network_dns_tcp_connections_total{outcome=\"%s\"} %" PRIu64 "\n", dnstcp_outcomes[o], n->dns_tcp[o]);
        head(f, "sbx_network_dns_withheld_total", "counter",
             "Addresses in DNS answers withheld from restricted jobs (which never reach them), by reason.");
        for (int r = ND_NONE + 1; r < ND_REASONS; r++)
                fprintf(f, "sbx_network_dns_withheld_total{reason=\"%s\"} %" PRIu64 "\n", netdeny_reason_name((unsigned) r),
                        n->dns_withheld[r]);
        head(f, "sbx_network_setup_failures_total", "counter", "Jobs whose network could not be set up, by step.");
        for (int s = 0; s < MNET_STEPS; s++)
                fprintf(f, "sbx_network_setup_failures_total{step=\"%s\"} %" PRIu64 "\n", net_steps[s], n->setup_failures[s]);
        if (!g->net_pool)
                return;
        gauge(f, "sbx_network_pool_used", "Blocks of network_pool (a /30 per restricted job) in use.", g->net_pool_used);
        gauge(f, "sbx_network_pool_size", "Blocks of network_pool (a /30 per restricted job) there are.", g->net_pool_size);
}

static void cluster_lines(FILE *f, const struct metrics_gauges *g) {
        if (!g->cluster)
                return;
        gauge(f, "sbx_cluster_database_up", "Cluster mode: 1 while the shared database answers, 0 while it does not.", g->cl_up);
        counter(f, "sbx_cluster_claimed_total", "Cluster mode: queued jobs this node claimed to run.", g->cl_claimed);
        counter(f, "sbx_cluster_fenced_total",
                "Cluster mode: results of this node refused by the database because the job's lease had passed to another node.",
                g->cl_fenced);
        counter(f, "sbx_cluster_unavailable_total", "Cluster mode: requests refused with E_UNAVAILABLE (database unreachable).",
                g->cl_unavailable);
        counter(f, "sbx_cluster_requeued_total", "Cluster mode: jobs of expired leases this node queued again (retries left).",
                g->cl_requeued);
        counter(f, "sbx_cluster_expired_total", "Cluster mode: jobs of expired leases this node recorded as interrupted.",
                g->cl_expired);
        counter(f, "sbx_cluster_callbacks_taken_over_total",
                "Cluster mode: callbacks of nodes whose heartbeat stopped that this node took over to deliver.", g->cl_cb_adopted);
        counter(f, "sbx_cluster_writes_total", "Cluster mode: job rows and results this node's database writer sent.",
                g->cl_writes);
        counter(f, "sbx_cluster_write_batches_total",
                "Cluster mode: the writer's transactions (each holds the rows and results submitted while the one before it ran).",
                g->cl_write_batches);
}

int metrics_render(const struct metrics *m, const struct metrics_gauges *g, const char *tenant, char **ret, size_t *ret_len) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        gauge(f, "sbx_jobs_queued", "Jobs accepted and not started yet (queued or waiting for their bundle).", g->queued);
        gauge(f, "sbx_jobs_running", "Jobs being started, running or being stopped.", g->running);
        gauge(f, "sbx_connections", "Client connections open on the daemon's socket.", g->connections);
        cluster_lines(f, g);
        per_tenant(f, m, tenant);
        warm_pools(f, g, tenant);
        hist(f, "sbx_job_startup_seconds", "Time from a job's acceptance to its launcher's start (jobs that started).", &m->startup,
             startup_bounds, METRICS_STARTUP_BUCKETS);
        hist(f, "sbx_job_run_seconds", "Time from a job's start to its end (jobs that started).", &m->run, run_bounds,
             METRICS_RUN_BUCKETS);
        head(f, "sbx_job_setup_failures_total", "counter", "Jobs whose sandbox could not be set up, by the launcher's failed step.");
        for (size_t i = 0; i < m->n_steps; i++) {
                fputs("sbx_job_setup_failures_total{step=\"", f);
                put_label(f, m->steps[i].name);
                fprintf(f, "\"} %" PRIu64 "\n", m->steps[i].n);
        }
        if (m->steps[METRICS_MAX_STEPS].n)
                fprintf(f, "sbx_job_setup_failures_total{step=\"other\"} %" PRIu64 "\n", m->steps[METRICS_MAX_STEPS].n);
        head(f, "sbx_bundle_jobs_total", "counter", "Bundle jobs that ran, by where their bundle's tree came from.");
        fprintf(f, "sbx_bundle_jobs_total{source=\"cache\"} %" PRIu64 "\nsbx_bundle_jobs_total{source=\"registry\"} %" PRIu64 "\n",
                m->bundle_jobs[0], m->bundle_jobs[1]);
        head(f, "sbx_bundle_stale_jobs_total", "counter", "Bundle jobs that ran from the cache because the registry could not be asked.");
        fprintf(f, "sbx_bundle_stale_jobs_total %" PRIu64 "\n", m->bundle_stale);
        gauge(f, "sbx_bundle_cache_bytes", "Bytes of unpacked bundles in the cache.", g->cache_bytes);
        gauge(f, "sbx_bundle_cache_entries", "Unpacked bundles in the cache.", g->cache_entries);
        network(f, &m->net, g);
        if (g->callbacks)
                callback_series(f, g);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}

int metrics_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len) {
        char host[64];
        const char *port;
        memset(ret, 0, sizeof(*ret));
        if (s[0] == '[') {
                const char *e = strchr(s, ']');
                if (!e || e[1] != ':' || (size_t) (e - s - 1) >= sizeof(host))
                        return -EINVAL;
                memcpy(host, s + 1, (size_t) (e - s - 1));
                host[e - s - 1] = '\0';
                port = e + 2;
        } else {
                const char *c = strrchr(s, ':');
                if (!c || (size_t) (c - s) >= sizeof(host))
                        return -EINVAL;
                memcpy(host, s, (size_t) (c - s));
                host[c - s] = '\0';
                port = c + 1;
        }
        uint64_t p;
        if (parse_uint64(port, 65535, &p) < 0 || p == 0)
                return -EINVAL;
        struct sockaddr_in *a4 = (struct sockaddr_in *) ret;
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *) ret;
        if (s[0] != '[' && inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
                a4->sin_family = AF_INET;
                a4->sin_port = htons((uint16_t) p);
                *ret_len = sizeof(*a4);
                return 0;
        }
        if (s[0] == '[' && inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
                a6->sin6_family = AF_INET6;
                a6->sin6_port = htons((uint16_t) p);
                *ret_len = sizeof(*a6);
                return 0;
        }
        return -EINVAL;
}
