/* SPDX-License-Identifier: Apache-2.0 */
/* Tenant lookup and policy: caps reject or clamp, defaults fill in, and the
 * configuration parser names file:line for every bad key. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "conf.h"
#include "profile.h"
#include "netpolicy.h"
#include "policy.h"
#include "proto.h"
#include "tenant.h"

/* A daemon that can enforce everything, and one without the cgroup cpu
 * controller. */
static const struct daemon_caps all_caps = { .cpu_bandwidth = true, .net_audit = true };
static const struct daemon_caps no_cpu = { .cpu_bandwidth = false, .no_cpu_why = "it has no job cgroups" };

static const char conf[] =
        "[daemon]\n"
        "max_jobs = 4\n"
        "[tenant.ci]\n"
        "uids = 1000 1001\n"
        "profiles = default python\n"
        "max_timeout = 60s\n"
        "default_timeout = 10s\n"
        "max_memory = 512M\n"
        "max_processes = 64\n"
        "max_output = 1M\n"
        "max_upload = 10\n"
        "max_cpus = 1.5\n"
        "network = none\n"
        "[tenant.web]\n"
        "gids = 2000\n"
        "profiles = *\n"
        "over_limit = clamp\n"
        "max_timeout = 5s\n"
        "max_memory = 1G\n"
        "max_cpus = 2\n"
        "network = none host\n";

static struct config cfg;

static int setup(void **state) {
        struct sbx_error e;
        config_init(&cfg);
        if (config_load_string(&cfg, "test.conf", conf, &e) < 0)
                fail_msg("%s", e.msg);
        return 0;
}

static int teardown(void **state) {
        config_free(&cfg);
        return 0;
}

static void run_init(struct run_request *r) {
        struct request req;
        request_init(&req);
        *r = req.run;
}

static void test_lookup(void **state) {
        assert_string_equal(tenant_lookup(&cfg, 1001, 5, NULL, 0)->name, "ci");
        assert_string_equal(tenant_lookup(&cfg, 7, 2000, NULL, 0)->name, "web");
        gid_t groups[] = { 3, 2000 };
        assert_string_equal(tenant_lookup(&cfg, 7, 8, groups, 2)->name, "web");
        assert_null(tenant_lookup(&cfg, 7, 8, NULL, 0));
        assert_null(tenant_lookup(&cfg, 0, 0, NULL, 0));
}

static void test_defaults(void **state) {
        struct run_request r;
        struct policy_decision d;
        struct sbx_error e;
        run_init(&r);
        const struct tenant *t = tenant_lookup(&cfg, 1000, 0, NULL, 0);
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), 0);
        assert_string_equal(d.profile, "default");
        assert_int_equal(d.timeout_ms, 10000);
        assert_int_equal(d.memory, 512ull << 20);   /* the cap is the default */
        assert_int_equal(d.processes, 64);
        assert_int_equal(d.cpu_milli, 1500);
        assert_int_equal(d.output, 1u << 20);
        assert_int_equal(d.net, NET_NONE);
        assert_string_equal(d.clamped, "");
}

static void test_reject(void **state) {
        struct run_request r;
        struct policy_decision d;
        struct sbx_error e;
        const struct tenant *t = tenant_lookup(&cfg, 1000, 0, NULL, 0);

        run_init(&r);
        r.timeout_ms = 61000;
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), -EPERM);
        assert_string_equal(d.code, "E_LIMIT");
        assert_non_null(strstr(e.msg, "timeout_ms"));
        assert_non_null(strstr(e.msg, "60000"));

        run_init(&r);
        r.memory = (512ull << 20) + 1;
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), -EPERM);
        assert_non_null(strstr(e.msg, "limits.memory"));

        run_init(&r);
        r.processes = 65;
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), -EPERM);

        run_init(&r);
        r.cpu_milli = 2000;
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), -EPERM);
        assert_string_equal(d.code, "E_LIMIT");
        assert_string_equal(e.msg, "field 'limits.cpus': 2 is above tenant 'ci''s cap of 1.5");
        run_init(&r);
        r.cpu_milli = 250;
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), 0);
        assert_int_equal(d.cpu_milli, 250);

        run_init(&r);
        r.profile = (char *) "node";
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), -EPERM);
        assert_string_equal(d.code, "E_FORBIDDEN");
        assert_non_null(strstr(e.msg, "'node'"));

        run_init(&r);
        r.net = NET_HOST;
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), -EPERM);
        assert_string_equal(d.code, "E_FORBIDDEN");

        run_init(&r);
        r.upload_bytes = 11;
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), -EPERM);
        assert_non_null(strstr(e.msg, "files"));

        /* at the cap exactly is fine */
        run_init(&r);
        r.timeout_ms = 60000;
        r.memory = 512ull << 20;
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), 0);
        assert_int_equal(d.timeout_ms, 60000);
}

static void test_clamp(void **state) {
        struct run_request r;
        struct policy_decision d;
        struct sbx_error e;
        const struct tenant *t = tenant_lookup(&cfg, 7, 2000, NULL, 0);
        run_init(&r);
        r.timeout_ms = 3600000;
        r.memory = 4ull << 30;
        r.net = NET_HOST;
        r.cpu_milli = 3250;
        r.profile = (char *) "anything";
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), 0);
        assert_int_equal(d.cpu_milli, 2000);
        assert_non_null(strstr(d.clamped, "limits.cpus 3.25 -> 2"));
        assert_int_equal(d.timeout_ms, 5000);
        assert_int_equal(d.memory, 1ull << 30);
        assert_int_equal(d.net, NET_HOST);
        assert_string_equal(d.profile, "anything");
        assert_non_null(strstr(d.clamped, "timeout_ms 3600000 -> 5000"));
        assert_non_null(strstr(d.clamped, "limits.memory"));
        /* a tenant without a cap of its own still has the documented
         * default: 1024 processes at most, 256 when not asked */
        assert_int_equal(d.processes, 256);
        run_init(&r);
        struct tenant *ci = (struct tenant *) tenant_lookup(&cfg, 1000, 0, NULL, 0);
        ci->max_cpu_milli = CONFIG_UNSET;
        assert_int_equal(policy_apply(ci, &r, &all_caps, &d, &e), 0);
        assert_int_equal(d.cpu_milli, PROTO_UNSET);
        ci->max_cpu_milli = 1500;
}

/* What the daemon cannot enforce is refused when asked for, not ignored;
 * a tenant's cap alone still runs (recorded as not enforced). */
static void test_policy_daemon_caps(void **state) {
        struct run_request r;
        struct policy_decision d;
        struct sbx_error e;
        const struct tenant *t = tenant_lookup(&cfg, 1000, 0, NULL, 0);
        run_init(&r);
        r.cpu_milli = 500;
        assert_int_equal(policy_apply(t, &r, &no_cpu, &d, &e), -EPERM);
        assert_string_equal(d.code, E_LIMIT);
        assert_string_equal(e.msg, "field 'limits.cpus': this daemon cannot enforce CPU bandwidth (it has no job cgroups)");
        run_init(&r);
        assert_int_equal(policy_apply(t, &r, &no_cpu, &d, &e), 0);
        assert_int_equal(d.cpu_milli, 1500);
        /* An audit asked for where none can be attached: refused, naming why. */
        run_init(&r);
        r.net_audit = true;
        const struct daemon_caps no_audit = { .no_net_audit_why = "it has no job cgroups to attach the eBPF programs to" };
        assert_int_equal(policy_apply(t, &r, &no_audit, &d, &e), -EPERM);
        assert_string_equal(d.code, E_UNSUPPORTED);
        assert_string_equal(e.msg, "field 'network.audit': this daemon cannot audit network use (it has no job cgroups to attach "
                                   "the eBPF programs to)");
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), 0);
        assert_true(d.net_audit);
        /* restricted: where the daemon can, within the tenant's cap */
        struct tenant rt = *t;
        struct netpolicy np = { .n_allow = 1 };
        struct np_allow cap;
        assert_int_equal(netpolicy_parse_allow("10.0.0.0/8:*/any", &cap, &e), 0);
        assert_int_equal(netpolicy_parse_allow("10.1.2.3:443", &np.allow[0], &e), 0);
        rt.net_modes |= NET_MODE_BIT(NET_RESTRICTED);
        run_init(&r);
        r.net = NET_RESTRICTED;
        r.netpol = &np;
        assert_int_equal(policy_apply(&rt, &r, &all_caps, &d, &e), -EPERM);
        assert_string_equal(d.code, E_UNSUPPORTED);
        assert_non_null(strstr(e.msg, "cannot run restricted jobs"));
        const struct daemon_caps net_caps = { .net_audit = true, .net_restricted = true };
        assert_int_equal(policy_apply(&rt, &r, &net_caps, &d, &e), -EPERM);
        assert_string_equal(d.code, E_FORBIDDEN);
        assert_non_null(strstr(e.msg, "10.1.2.3:443/tcp is beyond tenant"));
        rt.net_allow = &cap;
        rt.n_net_allow = 1;
        assert_int_equal(policy_apply(&rt, &r, &net_caps, &d, &e), 0);
        assert_int_equal(d.net, NET_RESTRICTED);
        assert_true(d.net_audit);
        /* names only with a resolver for the DNS proxy */
        assert_int_equal(netpolicy_parse_allow("db.internal:5432", &np.allow[0], &e), 0);
        assert_int_equal(policy_apply(&rt, &r, &net_caps, &d, &e), -EPERM);
        assert_string_equal(d.code, E_UNSUPPORTED);
        assert_non_null(strstr(e.msg, "hostname entries need the DNS proxy"));
        /* the tenant's deny-ports and the job's must fit together */
        assert_int_equal(netpolicy_parse_allow("10.1.2.3:443", &np.allow[0], &e), 0);
        np.n_deny = NETPOLICY_MAX_DENY;
        rt.n_net_deny = 1;
        assert_int_equal(policy_apply(&rt, &r, &net_caps, &d, &e), -EPERM);
        assert_string_equal(d.code, E_LIMIT);
}

/* The decision survives the journal: every value, unset ones included. */
static void test_policy_json_round_trip(void **state) {
        struct run_request r;
        struct policy_decision d, back;
        struct sbx_error e;
        const struct tenant *t = tenant_lookup(&cfg, 7, 2000, NULL, 0);
        run_init(&r);
        r.timeout_ms = 3600000;
        r.net = NET_HOST;
        r.net_audit = true;
        assert_int_equal(policy_apply(t, &r, &all_caps, &d, &e), 0);
        json_t *j = policy_to_json(&d);
        assert_non_null(j);
        assert_int_equal(policy_from_json(j, &back), 0);
        json_decref(j);
        assert_string_equal(back.profile, d.profile);
        assert_int_equal(back.timeout_ms, d.timeout_ms);
        assert_int_equal(back.memory, d.memory);
        assert_int_equal(back.processes, 256);
        assert_int_equal(back.cpu_s, PROTO_UNSET);
        assert_int_equal(back.cpu_milli, d.cpu_milli);
        assert_int_equal(back.output, d.output);
        assert_int_equal(back.artifacts, d.artifacts);
        assert_int_equal(back.net, NET_HOST);
        assert_true(back.net_audit);
        assert_string_equal(back.clamped, d.clamped);
        assert_int_equal(policy_from_json(json_null(), &back), -EINVAL);
}

/* The configuration parser: one line per mistake, each naming file:line. */
static void bad_conf(const char *text, const char *needle) {
        struct config c;
        struct sbx_error e;
        config_init(&c);
        sbx_error_clear(&e);
        int r = config_load_string(&c, "bad.conf", text, &e);
        if (r >= 0 || !strstr(e.msg, needle))
                fail_msg("config accepted or wrong message: '%s' (wanted '%s')", e.msg, needle);
        config_free(&c);
}

static void test_config_errors(void **state) {
        bad_conf("[daemon]\nnosuch = 1\n", "bad.conf:2: daemon.nosuch: unknown key (known in [daemon]: socket ");
        bad_conf("[daemon]\n\nmax_jobs = many\n", "bad.conf:3: max_jobs: invalid number 'many'");
        bad_conf("[daemons]\nx = 1\n", "bad.conf:1: unknown section [daemons]");
        bad_conf("[daemon]\nsocket = relative\n", "bad.conf:2: socket: must be an absolute path");
        bad_conf("[tenant.a]\nuids = nosuchuser_zz\n", "bad.conf:2: unknown user 'nosuchuser_zz'");
        bad_conf("[tenant.a]\nuids = 5\njob_user = root\n", "bad.conf:3: job_user: jobs never run as root");
        bad_conf("[tenant.a]\nprofiles = default\n", "[tenant.a] has neither uids nor gids");
        bad_conf("[tenant.a]\nuids = 5\n[tenant.b]\nuids = 5\n", "uid 5 is already in [tenant.a]");
        bad_conf("[tenant.a]\nuids = 5\nover_limit = maybe\n", "bad.conf:3: over_limit");
        bad_conf("[tenant.a]\nuids = 5\nnetwork = wifi\n", "bad.conf:3: unknown network mode 'wifi'");
        bad_conf("[tenant.a]\nuids = 5\nmax_cpus = lots\n", "bad.conf:3: max_cpus: invalid number of CPUs 'lots'");
        bad_conf("[tenant.a]\nuids = 5\nmax_cpus = 0.001\n", "bad.conf:3: max_cpus: invalid number of CPUs '0.001' (0.01 to 1024");
        bad_conf("[tenant.a]\nuids = 5\nmax_cpus = 2000\n", "bad.conf:3: max_cpus");
        bad_conf("[daemon]\nkill_grace = soon\n", "bad.conf:2: kill_grace: invalid duration");
        bad_conf("[daemon]\nnetwork_pool = 10.0.0.0/30\n", "bad.conf:2: network_pool: expected an IPv4 network from /8 to /28");
        bad_conf("[daemon]\nnetwork_pool = 10.0.0.1/24\n", "bad.conf:2: network_pool");
        bad_conf("[daemon]\nnetwork_pool = [fd00::/64]\n", "bad.conf:2: network_pool");
        bad_conf("[daemon]\nnetwork_pool6 = fd5b::/112\n", "bad.conf:2: network_pool6: expected an IPv6 network from /48 to /110");
        bad_conf("[daemon]\nnetwork_pool6 = fd5b::/40\n", "bad.conf:2: network_pool6: expected an IPv6 network");
        bad_conf("[daemon]\nnetwork_pool6 = fd5b::\n", "bad.conf:2: network_pool6: expected an IPv6 network");
        bad_conf("[daemon]\nnetwork_pool6 = 10.0.0.0/16\n", "bad.conf:2: network_pool6: expected an IPv6 network");
        bad_conf("[daemon]\nnetwork_pool6 = [fd5b::]/64\n", "bad.conf:2: network_pool6: expected an IPv6 network");
        bad_conf("[daemon]\nnetwork_pool6 = fd5b::/64x\n", "bad.conf:2: network_pool6: expected an IPv6 network");
        bad_conf("[daemon]\nnetwork_pool6 = fd5b::1/64\n", "bad.conf:2: network_pool6: 'fd5b::1/64' has bits set past its /64");
        bad_conf("[daemon]\nnetwork_ring = 5000\n", "bad.conf:2: network_ring: expected a power of two");
        bad_conf("[daemon]\nnetwork_ring = 2K\n", "bad.conf:2: network_ring: expected a size between");
        bad_conf("[daemon]\ndns_upstream = resolver.example\n", "bad.conf:2: dns_upstream: expected an IP address");
        bad_conf("[daemon]\ndns_upstream = 10.0.0.0/8\n", "bad.conf:2: dns_upstream");
        bad_conf("[tenant.a]\nuids = 5\nnetwork = restricted bogus\n", "unknown network mode 'bogus' (none, host, restricted)");
        bad_conf("[tenant.a]\nuids = 5\nnetwork_allow = 10.0.0.1:0\n", "bad.conf:3: network_allow: allow '10.0.0.1:0': bad port");
        bad_conf("[tenant.a]\nuids = 5\nnetwork_deny_ports = 0\n", "bad.conf:3: network_deny_ports: deny-port '0'");
        bad_conf("[daemon]\nthis is not ini\n", "bad.conf:2: syntax error");
        bad_conf("[tenant.a]\nuids = 5\ndefault_timeout = 2h\nmax_timeout = 1h\n", "default_timeout is above max_timeout");
}

/* network_pool6: a network, or none (the default). */
static void test_config_pool6(void **state) {
        static const uint8_t want[16] = { 0xfd, 0x5b, 0x7a, 0x1c, 0x4e, 0x02 };
        struct config c;
        struct sbx_error e;
        (void) state;
        config_init(&c);
        assert_int_equal(config_load_string(&c, "p.conf", "[daemon]\nnetwork_pool = 10.0.0.0/24\n", &e), 0);
        assert_int_equal(c.net_pool6_prefix, 0);
        config_free(&c);
        config_init(&c);
        assert_int_equal(config_load_string(&c, "p.conf", "[daemon]\nnetwork_pool6 = fd5b:7a1c:4e02::/48\n", &e), 0);
        assert_int_equal(c.net_pool6_prefix, 48);
        assert_memory_equal(c.net_pool6, want, 16);
        config_free(&c);
        config_init(&c);
        assert_int_equal(config_load_string(&c, "p.conf", "[daemon]\nnetwork_pool6 = fd5b::/110\nnetwork_pool6 = none\n", &e), 0);
        assert_int_equal(c.net_pool6_prefix, 0);
        config_free(&c);
}

/* A reload (config-reload.c): only tenants, tokens and admins may change;
 * a tenant keeps its name's slot; keys policy.set gave replace the file's
 * lines of them, lists too. */
static void test_config_reload(void **state) {
        static const char base[] = "[daemon]\nmax_jobs = 4\n\n[tenant.a]\nuids = 1001\nnetwork = none host\n"
                                   "\n[tenant.b]\nuids = 1002\n";
        struct config live, fresh;
        struct sbx_error e;
        (void) state;
        config_init(&live);
        assert_int_equal(config_load_string(&live, "r.conf", base, &e), 0);
        assert_int_equal(live.tenants[0].slot, 1);
        assert_int_equal(live.tenants[1].slot, 2);
        assert_int_equal(live.n_slots, 3);

        /* a daemon key changed: refused, naming it */
        config_init(&fresh);
        assert_int_equal(config_load_string(&fresh, "r.conf", "[daemon]\nmax_jobs = 5\n\n[tenant.a]\nuids = 1001\n", &e), 0);
        assert_int_equal(config_reload_check(&live, &fresh, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "restart the daemon for: daemon.max_jobs"));
        config_free(&fresh);

        /* b gone, c new, a moved in the file, admins added: a keeps slot 1 */
        config_init(&fresh);
        assert_int_equal(config_load_string(&fresh, "r.conf",
                                            "[daemon]\nmax_jobs = 4\nadmins = 1003\n\n[tenant.c]\nuids = 1004\n\n[tenant.a]\n"
                                            "uids = 1001\nmax_jobs = 1\n",
                                            &e),
                         0);
        assert_int_equal(config_reload_check(&live, &fresh, &e), 0);
        assert_int_equal(fresh.tenants[0].slot, 3); /* c: a new slot */
        assert_int_equal(fresh.tenants[1].slot, 1);
        assert_true(config_tenant_changed(&live, &fresh, "a"));
        assert_false(config_is_admin(&live, 1003));
        config_reload_swap(&live, &fresh);
        assert_true(config_is_admin(&live, 1003));
        assert_true(config_is_admin(&live, 0));
        assert_false(config_is_admin(&live, 1001));
        assert_null(tenant_find(&live, "b"));
        assert_int_equal(tenant_find(&live, "a")->max_jobs, 1);
        /* the old tenants stay in fresh, for jobs admitted under them */
        assert_true(config_has_tenant(&fresh, tenant_find(&fresh, "b")));
        assert_false(config_has_tenant(&fresh, tenant_find(&live, "a")));
        assert_false(config_tenant_changed(&live, &live, "a"));
        config_free(&fresh);

        /* policy.set's keys: network replaced (not added to), max_jobs set */
        json_t *pol = json_pack("{s:{s:s, s:s}}", "a", "network", "none", "max_jobs", "2");
        config_init(&fresh);
        fresh.policy = pol;
        fresh.policy_name = "policy.json";
        assert_int_equal(config_load_string(&fresh, "r.conf", base, &e), 0);
        assert_int_equal(fresh.tenants[0].net_modes, NET_MODE_BIT(NET_NONE));
        assert_int_equal(fresh.tenants[0].max_jobs, 2);
        config_free(&fresh);
        json_decref(pol);
        /* ... a bad value is the policy's error; a tenant the file lacks
         * has its keys left aside */
        pol = json_pack("{s:{s:s}}", "a", "max_jobs", "lots");
        config_init(&fresh);
        fresh.policy = pol;
        fresh.policy_name = "policy.json";
        assert_int_equal(config_load_string(&fresh, "r.conf", base, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "policy.json:2"));
        config_free(&fresh);
        json_decref(pol);
        pol = json_pack("{s:{s:s}}", "zz", "max_jobs", "1");
        config_init(&fresh);
        fresh.policy = pol;
        fresh.policy_name = "policy.json";
        assert_int_equal(config_load_string(&fresh, "r.conf", base, &e), 0);
        assert_null(tenant_find(&fresh, "zz"));
        assert_int_equal(fresh.n_tenants, 2);
        config_free(&fresh);
        json_decref(pol);
        config_free(&live);
}

static void test_config_values(void **state) {
        assert_int_equal(cfg.max_jobs, 4);
        assert_int_equal(cfg.n_tenants, 2);
        struct tenant *t = &cfg.tenants[0];
        assert_int_equal(t->n_uids, 2);
        assert_int_equal(t->max_upload, 10);
        assert_true(t->job_uid != 0);
        assert_int_equal(cfg.tenants[1].over_limit, OVER_LIMIT_CLAMP);
        assert_true(policy_allows_profile(&cfg.tenants[1], "whatever"));
        assert_false(policy_allows_profile(t, "node"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lookup),        cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_reject),        cmocka_unit_test(test_clamp),
                cmocka_unit_test(test_policy_daemon_caps),
                cmocka_unit_test(test_policy_json_round_trip),
                cmocka_unit_test(test_config_errors), cmocka_unit_test(test_config_values),
                cmocka_unit_test(test_config_pool6),
                cmocka_unit_test(test_config_reload),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
