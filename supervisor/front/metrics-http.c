/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics on the daemon's side: what a finished job adds (from the
 * group commit's tell), the gauges read when asked, the metrics
 * operation, and the optional HTTP listener (metrics_listen).
 *
 * The listener is libmicrohttpd without threads of its own: its epoll
 * descriptor sits on the daemon's loop and MHD_run() serves what is ready,
 * so the exposition is rendered on the loop from the daemon's state
 * without locks. Rendering is bounded (a few lines per tenant and set-up
 * step); sockets are non-blocking; connections are capped and time out,
 * so a slow scraper cannot hold the loop. GET /metrics only. */
#include <errno.h>
#include <microhttpd.h>
#include <sys/epoll.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "conn.h"
#include "cluster-ops.h"
#include "daemon.h"
#include "dispatch.h"
#include "jobevents.h"
#include "log.h"
#include "metrics-http.h"
#include "netaudit-bpf.h"
#include "session.h"
#include "tenant.h"

#define HTTP_MAX_CONNECTIONS 16
#define HTTP_TIMEOUT_S 10
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A job's record is durable: count it. */
static void metrics_note_end(struct rjob *rj, json_t *rec) {
        (void) rec;
        struct daemon *d = rj->d;
        const struct job *j = &rj->j;
        const uint64_t *t = rj->t_us;
        struct metrics_job mj = {
                .tenant = j->tenant->name,
                .outcome = j->outcome,
                .startup_us = t[T_STARTED] && t[T_ACCEPTED] ? (int64_t) (t[T_STARTED] - t[T_ACCEPTED]) : -1,
                .run_us = t[T_STARTED] && t[T_EXITED] >= t[T_STARTED] ? (int64_t) (t[T_EXITED] - t[T_STARTED]) : -1,
                .output = { rj->cap.produced[0], rj->cap.produced[1] },
                .setup_step = rj->setup_step[0] ? rj->setup_step : NULL,
                .bundle_source = j->bundle.set && j->bundle.version[0] ? (j->bundle.from_cache ? 0 : 1) : -1,
                .bundle_stale = j->bundle.stale,
                .net_dropped = rj->net.dropped,
                .net_lost = rj->net.lost,
                .warm = rj->warm && rj->session_exec,
        };
        if (metrics_job_end(&d->metrics, &mj) < 0)
                log_warning(JOB_LOG ": out of memory: not counted in the metrics", JOB_LOG_ARGS(j));
}

const struct job_listener metrics_listener = { .end = metrics_note_end };

static int render(struct daemon *d, const char *tenant, char **ret, size_t *ret_len) {
        struct metrics_gauges g = {
                .queued = d->sched.all.queued,
                .running = d->sched.all.running,
                .connections = d->conns.n,
                .net_strays = netaudit_strays(d->netaudit) + netremote_strays(d->netremote),
                .net_pool = d->caps.net_restricted,
                .net_pool_used = d->net_slots_used,
                .net_pool_size = d->net_slots,
        };
        _cleanup_free_ struct metrics_warm *warm = calloc(d->cfg->n_tenants + 1, sizeof(*warm));
        if (!warm)
                return -ENOMEM;
        for (size_t i = 0; i < d->cfg->n_tenants; i++) {
                const struct tenant *t = &d->cfg->tenants[i];
                if (!t->warm)
                        continue;
                unsigned ready, n = sessions_warm(&d->sessions, t, &ready);
                warm[g.n_warm++] = (struct metrics_warm) { .tenant = t->name, .ready = ready, .starting = n - ready };
        }
        g.warm = warm;
        bundles_cache_stats(d->bundles, &g.cache_bytes, &g.cache_entries);
        callbacks_gauges(&d->cb, &g);
        cluster_gauges(d, &g);
        return metrics_render(&d->metrics, &g, tenant, ret, ret_len);
}

void metrics_op(struct conn *c, struct request *req) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = render(c->d, c->tenant->name, &text, &len);
        if (r < 0) {
                conn_send(c, proto_error(req->tag, E_INTERNAL, "metrics: %s", strerror(-r)));
                return;
        }
        conn_send(c, proto_ok(req->tag, json_pack("{s:s, s:s#}", "content_type", CONTENT_TYPE, "metrics", text, (int) len)));
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *mc, const char *url, const char *method, const char *version,
                              const char *upload, size_t *upload_len, void **ctx) {
        struct daemon *d = cls;
        (void) version;
        (void) upload;
        (void) ctx;
        struct MHD_Response *resp;
        unsigned status = MHD_HTTP_OK;
        char *text = NULL;
        size_t len = 0;
        if (*upload_len) {
                *upload_len = 0; /* a body is read and ignored; the GET check answers */
                return MHD_YES;
        }
        if (!streq(method, "GET") && !streq(method, "HEAD")) {
                status = MHD_HTTP_METHOD_NOT_ALLOWED;
                resp = MHD_create_response_from_buffer(20, (void *) "only GET is served\r\n", MHD_RESPMEM_PERSISTENT);
        } else if (!streq(url, "/metrics")) {
                status = MHD_HTTP_NOT_FOUND;
                resp = MHD_create_response_from_buffer(29, (void *) "the metrics are at /metrics\r\n", MHD_RESPMEM_PERSISTENT);
        } else if (render(d, NULL, &text, &len) < 0) {
                status = MHD_HTTP_INTERNAL_SERVER_ERROR;
                resp = MHD_create_response_from_buffer(15, (void *) "out of memory\r\n", MHD_RESPMEM_PERSISTENT);
        } else {
                resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
                if (!resp)
                        free(text);
                else
                        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
        }
        if (!resp)
                return MHD_NO;
        enum MHD_Result r = MHD_queue_response(mc, status, resp);
        MHD_destroy_response(resp);
        return r;
}

static void on_http(struct source *s, uint32_t events) {
        struct daemon *d = container_of(s, struct daemon, http_src);
        (void) events;
        MHD_run(d->http);
}

void metrics_http_tick(struct daemon *d) {
        if (d->http)
                MHD_run(d->http);
}

int metrics_http_start(struct daemon *d, struct sbx_error *err) {
        const char *addr = d->cfg->metrics_listen;
        struct sockaddr_storage ss;
        socklen_t sl;
        if (!addr)
                return 0;
        if (metrics_parse_listen(addr, &ss, &sl) < 0)
                return sbx_error_msg(err, EINVAL, "metrics_listen: invalid address '%s'", addr);
        unsigned flags = MHD_USE_EPOLL | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
        d->http = MHD_start_daemon(flags, 0, NULL, NULL, answer, d, MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &ss,
                                   MHD_OPTION_CONNECTION_LIMIT, (unsigned) HTTP_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
                                   (unsigned) HTTP_TIMEOUT_S, MHD_OPTION_END);
        if (!d->http)
                return sbx_error_msg(err, EADDRNOTAVAIL, "metrics_listen: cannot listen on %s (in use, or not an address of this host)",
                                     addr);
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(d->http, MHD_DAEMON_INFO_EPOLL_FD);
        int r = info ? loop_add(&d->http_src, info->epoll_fd, EPOLLIN, on_http) : -EINVAL;
        if (r < 0) {
                MHD_stop_daemon(d->http);
                d->http = NULL;
                return sbx_error_set(err, r, "metrics_listen");
        }
        log_info("metrics on http://%s/metrics", addr);
        return 0;
}

void metrics_http_stop(struct daemon *d) {
        if (!d->http)
                return;
        loop_del(&d->http_src);
        MHD_stop_daemon(d->http);
        d->http = NULL;
}
