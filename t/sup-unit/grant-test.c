/* SPDX-License-Identifier: Apache-2.0 */
/* A bundle's declared capabilities ∩ its tenant's policy: what is granted,
 * what is refused and how the refusal names it, what is clamped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "grant.h"
#include "netpolicy.h"
#include "profile.h"

static const char *const base = "[bundle]\nname = hello\nversion = 1.0.0\n[run]\ncommand = /bundle/run\nprofile = shell\n";

static void mk_manifest(struct manifest *m, const char *extra) {
        struct sbx_error e;
        char text[2048];
        snprintf(text, sizeof(text), "%s%s", base, extra);
        manifest_init(m);
        if (manifest_parse(m, "manifest.ini", text, strlen(text), &e) < 0)
                fail_msg("%s", e.msg);
}

static void mk_tenant(struct tenant *t) {
        tenant_defaults(t);
        t->name = strdup("web");
        char **p = realloc(t->profiles, 2 * sizeof(char *));
        t->profiles = p;
        p[t->n_profiles++] = strdup("shell");
        t->max_memory = 512u << 20;
        t->max_timeout_ms = 60000;
}

static void mk_run(struct request *req) {
        request_init(req);
}

static void test_granted(void **state) {
        struct manifest m;
        struct tenant t;
        struct request req;
        struct policy_decision d;
        struct sbx_error e;
        unsigned paths = 0;
        struct netpolicy *np = NULL;
        mk_manifest(&m, "[capabilities]\nread-only = /etc/ssl/certs\nenv = TOKEN\n[limits]\nmemory = 256M\ntimeout = 30s\n");
        mk_tenant(&t);
        t.bundle_paths = MANIFEST_PATH_BIT(manifest_path_find("/etc/ssl/certs")) | MANIFEST_PATH_BIT(manifest_path_find("/etc/hosts"));
        mk_run(&req);
        struct env_pair env[] = { { "TOKEN", "x" } };
        req.run.env = env;
        req.run.n_env = 1;
        if (grant_bundle(&t, &m, &req.run, NULL, &d, &paths, &np, &e) < 0)
                fail_msg("%s", e.msg);
        /* only what the bundle declares, not all the tenant allows */
        assert_int_equal(paths, MANIFEST_PATH_BIT(manifest_path_find("/etc/ssl/certs")));
        assert_string_equal(d.profile, "shell");
        assert_int_equal(d.memory, 256u << 20);
        assert_int_equal(d.timeout_ms, 30000);
        assert_int_equal(d.net, NET_NONE);
        assert_null(np);
        /* the caller may lower a declared limit */
        req.run.memory = 100u << 20;
        assert_int_equal(grant_bundle(&t, &m, &req.run, NULL, &d, &paths, &np, &e), 0);
        assert_int_equal(d.memory, 100u << 20);
        /* undeclared: the tenant's default */
        assert_int_equal(d.processes, POLICY_PROCESSES_DEFAULT);
        req.run.env = NULL;
        req.run.n_env = 0;
        manifest_free(&m);
        tenant_free(&t);
}

static void expect_refused(const char *manifest_extra, void (*adjust)(struct tenant *, struct run_request *), const char *code,
                           const char *want) {
        struct manifest m;
        struct tenant t;
        struct request req;
        struct policy_decision d;
        struct sbx_error e;
        unsigned paths = 0;
        struct netpolicy *np = NULL;
        mk_manifest(&m, manifest_extra);
        mk_tenant(&t);
        mk_run(&req);
        if (adjust)
                adjust(&t, &req.run);
        if (grant_bundle(&t, &m, &req.run, NULL, &d, &paths, &np, &e) == 0)
                fail_msg("granted, expected %s '%s'", code, want);
        assert_string_equal(d.code, code);
        if (!strstr(e.msg, want))
                fail_msg("'%s' lacks '%s'", e.msg, want);
        req.run.env = NULL;
        req.run.n_env = 0;
        manifest_free(&m);
        tenant_free(&t);
}

static struct env_pair foreign[] = { { "PATH", "/evil" } };

static void ask_env(struct tenant *t, struct run_request *run) {
        run->env = foreign;
        run->n_env = 1;
}

static void ask_more_memory(struct tenant *t, struct run_request *run) {
        run->memory = 300u << 20;
}

static void no_shell(struct tenant *t, struct run_request *run) {
        free(t->profiles[1]);
        t->n_profiles = 1;
}

static void allow_restricted(struct tenant *t, struct run_request *run) {
        t->net_modes |= NET_MODE_BIT(NET_RESTRICTED);
}

static void clamp(struct tenant *t, struct run_request *run) {
        t->over_limit = OVER_LIMIT_CLAMP;
}

static void test_refused(void **state) {
        expect_refused("[capabilities]\nread-only = /etc/resolv.conf\n", NULL, E_FORBIDDEN,
                       "bundle hello declares read-only = /etc/resolv.conf, which tenant 'web' does not allow (bundle_paths)");
        expect_refused("[capabilities]\nnetwork = restricted\nconnect = 192.0.2.1:443\n", NULL, E_FORBIDDEN,
                       "bundle hello: field 'network': tenant 'web' may not use network mode 'restricted'");
        expect_refused("[capabilities]\nnetwork = restricted\nconnect = 192.0.2.1:443\n", allow_restricted, E_UNSUPPORTED,
                       "bundle hello: field 'network': this daemon cannot run restricted jobs");
        expect_refused("", ask_env, E_FORBIDDEN, "field 'env.PATH': bundle hello does not declare this variable");
        expect_refused("[limits]\nmemory = 256M\n", ask_more_memory, E_LIMIT,
                       "field 'limits.memory': 314572800 is above what bundle hello declares (268435456)");
        expect_refused("[limits]\nmemory = 1G\n", NULL, E_LIMIT, "bundle hello: field 'limits.memory': 1073741824 is above tenant 'web''s cap");
        expect_refused("", no_shell, E_FORBIDDEN, "bundle hello: field 'profile': tenant 'web' may not use profile 'shell'");
}

/* A tenant that clamps lowers a declared limit to its cap and says so. */
static void test_clamped(void **state) {
        struct manifest m;
        struct tenant t;
        struct request req;
        struct policy_decision d;
        struct sbx_error e;
        unsigned paths;
        struct netpolicy *np = NULL;
        mk_manifest(&m, "[limits]\nmemory = 1G\ntimeout = 10m\n");
        mk_tenant(&t);
        mk_run(&req);
        clamp(&t, &req.run);
        assert_int_equal(grant_bundle(&t, &m, &req.run, NULL, &d, &paths, &np, &e), 0);
        assert_int_equal(d.memory, 512u << 20);
        assert_int_equal(d.timeout_ms, 60000);
        assert_non_null(strstr(d.clamped, "limits.memory 1073741824 -> 536870912"));
        assert_non_null(strstr(d.clamped, "timeout_ms 600000 -> 60000"));
        manifest_free(&m);
        tenant_free(&t);
}

/* A restricted bundle: its connect endpoints become its allow entries
 * (TCP), each held within the tenant's network_allow. */
static void test_restricted(void **state) {
        struct manifest m;
        struct tenant t;
        struct request req;
        struct policy_decision d;
        struct sbx_error e;
        unsigned paths = 0;
        struct netpolicy *np = NULL;
        const struct daemon_caps caps = { .net_audit = true, .net_restricted = true, .dns_proxy = true };
        mk_manifest(&m, "[capabilities]\nnetwork = restricted\nconnect = 192.0.2.1:443 [2001:db8::1]:53\n");
        mk_tenant(&t);
        mk_run(&req);
        t.net_modes |= NET_MODE_BIT(NET_RESTRICTED);
        t.net_allow = calloc(2, sizeof(*t.net_allow));
        assert_int_equal(netpolicy_parse_allow("192.0.2.0/24:*", &t.net_allow[0], &e), 0);
        t.n_net_allow = 1;
        assert_int_equal(grant_bundle(&t, &m, &req.run, &caps, &d, &paths, &np, &e), -EPERM);
        assert_string_equal(d.code, E_FORBIDDEN);
        assert_non_null(strstr(e.msg, "[2001:db8::1]:53/tcp is beyond tenant 'web''s network_allow"));
        assert_null(np);
        assert_int_equal(netpolicy_parse_allow("[2001:db8::/32]:53", &t.net_allow[1], &e), 0);
        t.n_net_allow = 2;
        if (grant_bundle(&t, &m, &req.run, &caps, &d, &paths, &np, &e) < 0)
                fail_msg("%s", e.msg);
        assert_int_equal(d.net, NET_RESTRICTED);
        assert_true(d.net_audit);
        assert_non_null(np);
        assert_int_equal(np->n_allow, 2);
        assert_int_equal(np->allow[1].port_lo, 53);
        assert_int_equal(np->allow[1].protos, NETPOLICY_TCP);
        free(np);
        manifest_free(&m);
        tenant_free(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_granted), cmocka_unit_test(test_restricted),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_clamped),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
