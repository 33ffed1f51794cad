/* SPDX-License-Identifier: Apache-2.0 */
/* What the daemon hands sbx-launch: the command line carries no value of
 * the job's environment (any local user can read it with ps), the
 * generated profile loads back to exactly the workspace, environment,
 * limits and network the job was given, whatever bytes they hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cgroup.h"
#include "launch-abi.h"
#include "launchspec.h"
#include "manifest.h"
#include "profile.h"

static struct tenant t = { .name = "acme", .job_uid = 900, .job_gid = 900 };

static const char *const tricky = "s3cr3t value; #not a comment \"quoted\" \\back $HOME ${X}\nsecond line\ttab";

static void mk(struct job *j) {
        job_init(j);
        j->tenant = &t;
        snprintf(j->id, sizeof(j->id), "j0123456789abcdef0123");
        static char *argv[] = { "python3", "-c", "print(1)", NULL };
        static struct env_pair env[] = { { "TOKEN", NULL }, { "EMPTY", "" } };
        env[0].value = (char *) tricky;
        j->req.run.argv = argv;
        j->req.run.argc = 3;
        j->req.run.env = env;
        j->req.run.n_env = 2;
        j->pol.memory = 256u << 20;
        j->pol.processes = 64;
        j->pol.cpu_s = 10;
        j->pol.timeout_ms = 30000;
        j->pol.net = NET_NONE;
}

/* The request's arrays above are static: not the job's to free. */
static void unmk(struct job *j) {
        j->req.run.argv = NULL;
        j->req.run.argc = 0;
        j->req.run.env = NULL;
        j->req.run.n_env = 0;
        job_release(j);
}

static void build(struct job *j, unsigned cg, struct launchspec *ls) {
        struct sbx_error e;
        struct launchspec_input in = {
                .launcher = "/usr/libexec/sbx-launch",
                .profile_file = "/usr/share/sbx/profiles/python.ini",
                .search_path = "/etc/sbx/profiles:/usr/share/sbx/profiles",
                .workspace = "/var/lib/sbx state/work;x/$j",
                .j = j,
                .cg_limits = cg,
        };
        assert_int_equal(launchspec_build(&in, ls, &e), 0);
}

static void test_command_line(void **state) {
        struct job j;
        struct launchspec ls;
        mk(&j);
        build(&j, 0, &ls);
        const char *want[] = { "/usr/libexec/sbx-launch", "--json-status-fd", "3", "--profile",
                               "/usr/share/sbx/profiles/python.ini", "--profile", SBX_LAUNCH_PROFILE_FD_PATH, "--",
                               "python3", "-c", "print(1)", NULL };
        for (size_t i = 0; want[i]; i++)
                assert_string_equal(ls.argv[i], want[i]);
        assert_null(ls.argv[11]);
        for (size_t i = 0; ls.argv[i]; i++) {
                assert_null(strstr(ls.argv[i], "s3cr3t"));
                assert_null(strstr(ls.argv[i], "setenv"));
        }
        assert_string_equal(ls.envp[1], SBX_ENV_PROFILE_PATH "=/etc/sbx/profiles:/usr/share/sbx/profiles");
        assert_null(ls.envp[3]);
        launchspec_free(&ls);
        unmk(&j);
}

static const char *env_value(const struct profile *p, const char *name) {
        const char *v = NULL;
        for (size_t i = 0; i < p->n_env; i++)
                if (p->env[i].type == ENV_SET && strcmp(p->env[i].name, name) == 0)
                        v = p->env[i].value;
        return v;
}

static void test_profile_round_trip(void **state) {
        struct job j;
        struct launchspec ls;
        struct profile p;
        struct sbx_error e;
        mk(&j);
        build(&j, 0, &ls);
        profile_init(&p);
        if (profile_load_string(&p, "generated", ls.profile, &e) < 0)
                fail_msg("generated profile does not load: %s\n%s", e.msg, ls.profile);
        assert_string_equal(env_value(&p, "TOKEN"), tricky);
        assert_string_equal(env_value(&p, "EMPTY"), "");
        assert_string_equal(env_value(&p, SBX_ENV_JOB_ID), "j0123456789abcdef0123");
        assert_string_equal(env_value(&p, SBX_ENV_TENANT), "acme");
        assert_string_equal(env_value(&p, SBX_ENV_WORKSPACE), "/workspace");
        assert_string_equal(env_value(&p, SBX_ENV_RESULT), "/workspace/.sbx-result.json");
        /* The task context comes after the caller's variables. */
        assert_string_equal(p.env[p.n_env - 1].name, SBX_ENV_WORKSPACE);
        assert_int_equal(p.n_fs, 2); /* the bind, then the chdir */
        assert_string_equal(p.fs[0].src, "/var/lib/sbx state/work;x/$j");
        assert_string_equal(p.fs[0].dest, "/workspace");
        assert_string_equal(p.fs[1].dest, "/workspace");
        assert_int_equal(p.limits.memory_bytes, 256u << 20);
        assert_int_equal(p.limits.processes, 64);
        assert_int_equal(p.limits.cpu_s, 10);
        assert_int_equal(p.net, NET_NONE);
        profile_free(&p);
        launchspec_free(&ls);
        unmk(&j);
}

/* Limits the job's cgroup enforces are not set again as rlimits, nor
 * left to the named profile's own bounds. */
static void test_cgroup_limits(void **state) {
        struct job j;
        struct launchspec ls;
        struct profile p;
        struct sbx_error e;
        mk(&j);
        j.pol.net = NET_HOST;
        build(&j, CG_LIMIT_MEMORY | CG_LIMIT_PIDS, &ls);
        profile_init(&p);
        assert_int_equal(profile_load_string(&p, "generated", ls.profile, &e), 0);
        assert_int_equal(p.limits.memory_bytes, PROFILE_UNLIMITED);
        assert_int_equal(p.limits.processes, PROFILE_UNLIMITED);
        assert_int_equal(p.limits.cpu_s, 10);
        assert_int_equal(p.net, NET_HOST);
        profile_free(&p);
        launchspec_free(&ls);
        unmk(&j);
}

/* A bundle job: its manifest's command then the caller's arguments, the
 * tree read-only at /bundle, the granted host paths read-only, and the
 * bundle named in the environment. */
static void test_bundle(void **state) {
        struct job j;
        struct launchspec ls;
        struct profile p;
        struct sbx_error e;
        mk(&j);
        j.bundle.set = true;
        assert_int_equal(bundle_ref_parse("hello", &j.bundle.ref, &e), 0);
        snprintf(j.bundle.version, sizeof(j.bundle.version), "1.2.0");
        j.bundle.tree = strdup("/var/lib/sbx/cache/abc/tree");
        j.bundle.command = calloc(3, sizeof(char *));
        j.bundle.command[0] = strdup("/bundle/run.sh");
        j.bundle.command[1] = strdup("--fast");
        j.bundle.n_command = 2;
        j.bundle.ro_paths = MANIFEST_PATH_BIT(manifest_path_find("/etc/ssl/certs"));
        build(&j, 0, &ls);
        const char *want[] = { "--", "/bundle/run.sh", "--fast", "python3", "-c", "print(1)", NULL };
        size_t k = 0;
        while (strcmp(ls.argv[k], "--") != 0)
                k++;
        for (size_t i = 0; want[i]; i++)
                assert_string_equal(ls.argv[k + i], want[i]);
        assert_null(ls.argv[k + 6]);
        profile_init(&p);
        if (profile_load_string(&p, "generated", ls.profile, &e) < 0)
                fail_msg("%s\n%s", e.msg, ls.profile);
        assert_int_equal(p.n_fs, 4); /* workspace, bundle, certs, chdir */
        assert_int_equal(p.fs[1].type, FS_RO_BIND);
        assert_false(p.fs[1].try_);
        assert_string_equal(p.fs[1].src, "/var/lib/sbx/cache/abc/tree");
        assert_string_equal(p.fs[1].dest, "/bundle");
        assert_int_equal(p.fs[2].type, FS_RO_BIND);
        assert_true(p.fs[2].try_);
        assert_string_equal(p.fs[2].src, "/etc/ssl/certs");
        assert_string_equal(p.fs[2].dest, "/etc/ssl/certs");
        assert_string_equal(env_value(&p, "SBX_BUNDLE"), "hello");
        assert_string_equal(env_value(&p, "SBX_BUNDLE_VERSION"), "1.2.0");
        assert_string_equal(env_value(&p, "SBX_BUNDLE_DIR"), "/bundle");
        profile_free(&p);
        launchspec_free(&ls);
        /* restricted, it resolves through its DNS proxy: the host's
         * resolv.conf is not bound even when granted */
        j.bundle.ro_paths |= MANIFEST_PATH_BIT(manifest_path_find("/etc/resolv.conf"));
        j.pol.net = NET_RESTRICTED;
        build(&j, 0, &ls);
        assert_null(strstr(ls.profile, "resolv.conf"));
        assert_non_null(strstr(ls.profile, "/etc/ssl/certs"));
        launchspec_free(&ls);
        j.pol.net = NET_NONE;
        build(&j, 0, &ls);
        assert_non_null(strstr(ls.profile, "/etc/resolv.conf"));
        launchspec_free(&ls);
        /* never started without its tree */
        free(j.bundle.tree);
        j.bundle.tree = NULL;
        struct launchspec_input in = { .launcher = "l", .profile_file = "p", .search_path = "s", .workspace = "w", .j = &j };
        assert_int_equal(launchspec_build(&in, &ls, &e), -EINVAL);
        unmk(&j);
}

/* A restricted job: the launcher waits for its veth (--info-fd 5,
 * --block-fd 6) in a namespace of its own (mode none); an audited one's
 * generated profile answers a named profile's audit = yes (the daemon
 * audits, the launcher need not refuse). */
static void test_restricted(void **state) {
        struct job j;
        struct launchspec ls;
        struct profile p;
        struct sbx_error e;
        mk(&j);
        j.pol.net = NET_RESTRICTED;
        j.pol.net_audit = true;
        struct launchspec_input in = {
                .launcher = "/usr/libexec/sbx-launch",
                .profile_file = "/usr/share/sbx/profiles/python.ini",
                .search_path = "/etc/sbx/profiles",
                .workspace = "/w",
                .j = &j,
                .handshake = true,
        };
        assert_int_equal(launchspec_build(&in, &ls, &e), 0);
        const char *want[] = { "/usr/libexec/sbx-launch", "--info-fd", SBX_LAUNCH_FD_INFO_ARG, "--block-fd", SBX_LAUNCH_FD_BLOCK_ARG,
                               "--json-status-fd", "3", "--profile", "/usr/share/sbx/profiles/python.ini", NULL };
        for (size_t i = 0; want[i]; i++)
                assert_string_equal(ls.argv[i], want[i]);
        profile_init(&p);
        assert_int_equal(profile_load_string(&p, "audited", "[net]\naudit = yes\n", &e), 0);
        assert_true(p.net_audit);
        assert_int_equal(profile_load_string(&p, "generated", ls.profile, &e), 0);
        assert_int_equal(p.net, NET_NONE);
        assert_false(p.net_audit);
        profile_free(&p);
        launchspec_free(&ls);
        unmk(&j);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_command_line),
                cmocka_unit_test(test_profile_round_trip),
                cmocka_unit_test(test_cgroup_limits),
                cmocka_unit_test(test_restricted),
                cmocka_unit_test(test_bundle),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
