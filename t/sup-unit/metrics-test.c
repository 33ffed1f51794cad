/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics exposition: counters per tenant and state, histograms with
 * cumulative buckets, set-up steps (bounded, escaped), the tenant filter,
 * and the listener's address syntax. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <netinet/in.h>

#include "metrics.h"
#include "netaudit.h"
#include "proto.h"

static char *render(const struct metrics *m, const char *tenant) {
        struct metrics_gauges g = { .queued = 3, .running = 2, .connections = 1 };
        char *s;
        size_t n;
        assert_int_equal(metrics_render(m, &g, tenant, &s, &n), 0);
        assert_int_equal(strlen(s), n);
        return s;
}

static void test_counts(void **state) {
        struct metrics m = { 0 };
        struct metrics_job a = { .tenant = "alpha", .outcome = OUTCOME_SUCCEEDED, .startup_us = 3000, .run_us = 700000,
                                 .output = { 10, 2 }, .bundle_source = -1 };
        struct metrics_job b = { .tenant = "beta", .outcome = OUTCOME_ERROR, .startup_us = -1, .run_us = -1,
                                 .setup_step = "bind \"x\"\n", .bundle_source = 0, .bundle_stale = true };
        assert_int_equal(metrics_job_end(&m, &a), 0);
        assert_int_equal(metrics_job_end(&m, &a), 0);
        assert_int_equal(metrics_job_end(&m, &b), 0);
        char *s = render(&m, NULL);
        assert_non_null(strstr(s, "sbx_jobs_queued 3\n"));
        assert_non_null(strstr(s, "sbx_jobs_ended_total{tenant=\"alpha\",state=\"succeeded\"} 2\n"));
        assert_non_null(strstr(s, "sbx_jobs_ended_total{tenant=\"beta\",state=\"error\"} 1\n"));
        assert_non_null(strstr(s, "sbx_job_output_bytes_total{tenant=\"alpha\",stream=\"stdout\"} 20\n"));
        /* 3 ms is in the 5 ms bucket and every one above it; 0.7 s run in le=1 */
        assert_non_null(strstr(s, "sbx_job_startup_seconds_bucket{le=\"0.005\"} 2\n"));
        assert_non_null(strstr(s, "sbx_job_run_seconds_bucket{le=\"0.5\"} 0\n"));
        assert_non_null(strstr(s, "sbx_job_run_seconds_bucket{le=\"1\"} 2\n"));
        assert_non_null(strstr(s, "sbx_job_run_seconds_bucket{le=\"+Inf\"} 2\n"));
        assert_non_null(strstr(s, "sbx_job_run_seconds_count 2\n"));
        assert_non_null(strstr(s, "sbx_job_setup_failures_total{step=\"bind \\\"x\\\"\\n\"} 1\n"));
        assert_non_null(strstr(s, "sbx_bundle_jobs_total{source=\"cache\"} 1\n"));
        assert_non_null(strstr(s, "sbx_bundle_stale_jobs_total 1\n"));
        free(s);
        /* one tenant's view */
        s = render(&m, "beta");
        assert_null(strstr(s, "alpha"));
        assert_non_null(strstr(s, "tenant=\"beta\""));
        free(s);
        metrics_done(&m);
}

static void test_steps_bounded(void **state) {
        struct metrics m = { 0 };
        char step[16];
        for (int i = 0; i < METRICS_MAX_STEPS + 5; i++) {
                snprintf(step, sizeof(step), "step%d", i);
                struct metrics_job j = { .tenant = "t", .outcome = OUTCOME_ERROR, .startup_us = -1, .run_us = -1,
                                         .setup_step = step, .bundle_source = -1 };
                assert_int_equal(metrics_job_end(&m, &j), 0);
        }
        char *s = render(&m, NULL);
        assert_non_null(strstr(s, "sbx_job_setup_failures_total{step=\"other\"} 5\n"));
        free(s);
        metrics_done(&m);
}

/* The network's series: every label value there is, at 0 before anything
 * happened; each count where it belongs; out-of-range values ignored; the
 * pool's gauges only with a pool. */
static void test_network(void **state) {
        struct metrics m = { 0 };
        char *s = render(&m, NULL);
        assert_non_null(strstr(s, "# TYPE sbx_jobs_started_total counter\n"));
        assert_non_null(strstr(s, "sbx_jobs_started_total{network=\"restricted\",audit=\"true\"} 0\n"));
        assert_non_null(strstr(s, "sbx_network_events_total{kind=\"dns\",verdict=\"deny\"} 0\n"));
        assert_non_null(strstr(s, "sbx_network_dns_queries_total{outcome=\"malformed\"} 0\n"));
        assert_non_null(strstr(s, "sbx_network_setup_failures_total{step=\"veth\"} 0\n"));
        assert_null(strstr(s, "sbx_network_pool_used"));
        free(s);
        metrics_net_started(&m, NET_NONE, false);
        metrics_net_started(&m, NET_HOST, true);
        metrics_net_started(&m, NET_RESTRICTED, true);
        metrics_net_started(&m, NET_RESTRICTED, true);
        metrics_net_started(&m, -1, false);
        metrics_net_started(&m, NET_RESTRICTED + 1, false);
        metrics_net_event(&m, NETAUDIT_CONNECT, NETAUDIT_ALLOW);
        metrics_net_event(&m, NETAUDIT_CONNECT, NETAUDIT_DENY);
        metrics_net_event(&m, NETAUDIT_CONNECT, NETAUDIT_DENY);
        metrics_net_event(&m, NETAUDIT_SENDMSG, NETAUDIT_ALLOW);
        metrics_net_event(&m, NETAUDIT_SOCKET, NETAUDIT_DENY);
        metrics_net_event(&m, NETAUDIT_DNS, NETAUDIT_ALLOW);
        metrics_net_event(&m, 0, NETAUDIT_ALLOW);
        metrics_net_event(&m, NETAUDIT_DNS + 1, NETAUDIT_ALLOW);
        metrics_dns(&m, MDNS_ANSWERED, 1);
        metrics_dns(&m, MDNS_REFUSED, 1);
        metrics_dns(&m, MDNS_REFUSED, 1);
        metrics_dns(&m, MDNS_OUTCOMES, 1);
        metrics_dns(&m, MDNS_RATE_LIMITED, 250);
        metrics_net_setup_failed(&m, MNET_ADDRESS);
        metrics_net_setup_failed(&m, MNET_STEPS);
        m.net.dns_pauses = 4;
        metrics_dnstcp(&m, MDNSTCP_TIMED_OUT);
        metrics_dnstcp(&m, MDNSTCP_TIMED_OUT);
        metrics_dnstcp(&m, MDNSTCP_REFUSED);
        metrics_dnstcp(&m, MDNSTCP_OUTCOMES); /* out of range: not counted */
        struct metrics_job j = { .tenant = "t", .outcome = OUTCOME_SUCCEEDED, .startup_us = -1, .run_us = -1, .bundle_source = -1,
                                 .net_dropped = 450, .net_lost = 7 };
        assert_int_equal(metrics_job_end(&m, &j), 0);
        assert_int_equal(metrics_job_end(&m, &j), 0);
        struct metrics_gauges g = { .net_strays = 2, .net_pool = true, .net_pool_used = 3, .net_pool_size = 128 };
        size_t n;
        assert_int_equal(metrics_render(&m, &g, "other", &s, &n), 0);
        const char *want[] = {
                "sbx_jobs_started_total{network=\"none\",audit=\"false\"} 1\n",
                "sbx_jobs_started_total{network=\"none\",audit=\"true\"} 0\n",
                "sbx_jobs_started_total{network=\"host\",audit=\"false\"} 0\n",
                "sbx_jobs_started_total{network=\"host\",audit=\"true\"} 1\n",
                "sbx_jobs_started_total{network=\"restricted\",audit=\"true\"} 2\n",
                "sbx_network_events_total{kind=\"connect\",verdict=\"allow\"} 1\n",
                "sbx_network_events_total{kind=\"connect\",verdict=\"deny\"} 2\n",
                "sbx_network_events_total{kind=\"sendmsg\",verdict=\"allow\"} 1\n",
                "sbx_network_events_total{kind=\"socket\",verdict=\"deny\"} 1\n",
                "sbx_network_events_total{kind=\"dns\",verdict=\"allow\"} 1\n",
                "sbx_network_events_total{kind=\"dns\",verdict=\"deny\"} 0\n",
                "sbx_network_events_dropped_total 900\n",
                "sbx_network_events_lost_total 14\n",
                "sbx_network_events_stray_total 2\n",
                "sbx_network_dns_queries_total{outcome=\"answered\"} 1\n",
                "sbx_network_dns_queries_total{outcome=\"refused\"} 2\n",
                "sbx_network_dns_queries_total{outcome=\"busy\"} 0\n",
                "sbx_network_dns_queries_total{outcome=\"rate_limited\"} 250\n",
                "sbx_network_dns_pauses_total 4\n",
                "# TYPE sbx_network_dns_tcp_connections_total counter\n",
                "sbx_network_dns_tcp_connections_total{outcome=\"closed\"} 0\n",
                "sbx_network_dns_tcp_connections_total{outcome=\"refused\"} 1\n",
                "sbx_network_dns_tcp_connections_total{outcome=\"timed_out\"} 2\n",
                "sbx_network_dns_tcp_connections_total{outcome=\"malformed\"} 0\n",
                "sbx_network_dns_tcp_connections_total{outcome=\"ended\"} 0\n",
                "sbx_network_setup_failures_total{step=\"address\"} 1\n",
                "sbx_network_setup_failures_total{step=\"audit\"} 0\n",
                "# TYPE sbx_network_pool_used gauge\nsbx_network_pool_used 3\n",
                "sbx_network_pool_size 128\n",
        };
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
                if (!strstr(s, want[i]))
                        fail_msg("not in the exposition: %s", want[i]);
        /* the values out of range went nowhere: 8 kinds x verdicts, 6 modes x audits */
        assert_null(strstr(s, "network=\"restricted\",audit=\"false\"} 1"));
        assert_null(strstr(s, "} -"));
        free(s);
        metrics_done(&m);
}

static void test_listen(void **state) {
        struct sockaddr_storage ss;
        socklen_t sl;
        assert_int_equal(metrics_parse_listen("127.0.0.1:9464", &ss, &sl), 0);
        assert_int_equal(ss.ss_family, AF_INET);
        assert_int_equal(ntohs(((struct sockaddr_in *) &ss)->sin_port), 9464);
        assert_int_equal(metrics_parse_listen("[::1]:80", &ss, &sl), 0);
        assert_int_equal(ss.ss_family, AF_INET6);
        const char *bad[] = { "127.0.0.1", "localhost:80", "127.0.0.1:0", "127.0.0.1:65536", "::1:80", "[::1]80",
                              "[127.0.0.1]:80", ":80", "1.2.3.4:x" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (metrics_parse_listen(bad[i], &ss, &sl) != -EINVAL)
                        fail_msg("'%s' was accepted", bad[i]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_counts),
                cmocka_unit_test(test_steps_bounded),
                cmocka_unit_test(test_network),
                cmocka_unit_test(test_listen),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
