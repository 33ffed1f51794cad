/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch-abi.h"
#include "deps.h"
#include "launchspec.h"
#include "manifest.h"
#include "profile.h"

#define LAUNCH_PATH "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
#define JOB_WORKSPACE "/workspace"
#define JOB_BUNDLE "/bundle"
/* Where a session's sandbox sees sbx-init. */
#define JOB_INIT "/.sbx-init"
/* Where a job finds its file secrets. */
#define SECRETS_PATH "/run/secrets"
/* The CA of its header secrets' proxy (secretproxy.c). */
#define PROXY_CA SECRETS_PATH "/sbx-proxy-ca.pem"

/* One NAME=VALUE word of [env] set, spelled by the profile writer (which
 * escapes whatever the value holds). */
static int write_env(FILE *f, const char *name, const char *value) {
        _cleanup_free_ char *word = NULL;
        if (asprintf(&word, "%s=%s", name, value) < 0)
                return -ENOMEM;
        const char *const w[] = { word };
        int r = profile_write_key(f, "set", w, 1);
        /* it may be a secret's value */
        explicit_bzero(word, strlen(word));
        return r;
}

/* The bundle's tree read-only at /bundle — from the descriptor the daemon
 * hands the launcher when it has one: the cache is not reachable by path
 * for job users — and the host paths it was granted read-only where they
 * are (the -try form: a host without /etc/timezone runs the job without
 * it). */
static int write_bundle_fs(FILE *f, const struct job_bundle *b, int net, bool by_fd) {
        const char *const tree[] = { by_fd ? SBX_LAUNCH_BUNDLE_SOURCE : b->tree, JOB_BUNDLE };
        int r = profile_write_key(f, "ro-bind", tree, ARRAY_SIZE(tree));
        for (size_t i = 0; r == 0 && i < manifest_paths_count(); i++)
                if (b->ro_paths & MANIFEST_PATH_BIT(i)) {
                        /* A restricted job resolves through its DNS proxy,
                         * 127.0.0.1 (glibc's default without the file): the
                         * host's resolver is not in its allowlist. */
                        if (net == NET_RESTRICTED && streq(manifest_path_name(i), "/etc/resolv.conf"))
                                continue;
                        const char *const p[] = { manifest_path_name(i), manifest_path_name(i) };
                        r = profile_write_key(f, "ro-bind-try", p, ARRAY_SIZE(p));
                }
        return r;
}

/* File secrets: a tmpfs of their own, files of mode 0400, then read-only
 * (SECRETS_PATH, sbx-supervisord(8) SECRETS). With header secrets the
 * proxy's CA is there too, as PROXY_CA and under the name OpenSSL looks
 * for in a directory of $SSL_CERT_DIR. */
static int write_secret_files(FILE *f, const struct launchspec_input *in) {
        size_t n = 0, bytes = 0;
        int r = 0;
        for (size_t i = 0; i < in->n_secrets; i++)
                if (in->secrets[i].mode == SECRET_FILE) {
                        n++;
                        bytes += in->secrets[i].len;
                }
        if (in->proxy_ca_pem) {
                n += 2;
                bytes += 2 * strlen(in->proxy_ca_pem);
        }
        if (n == 0)
                return 0;
        /* a page per file at least, and room for the directory */
        fprintf(f, "tmpfs = " SECRETS_PATH " size=%zu mode=0500 nr_inodes=%zu\n", bytes + (n + 4) * 4096, n + 4);
        for (size_t i = 0; r == 0 && i < in->n_secrets; i++) {
                const struct launch_secret *s = &in->secrets[i];
                if (s->mode != SECRET_FILE)
                        continue;
                _cleanup_free_ char *dest = NULL, *data = NULL;
                if (asprintf(&dest, SECRETS_PATH "/%s", s->name) < 0 || asprintf(&data, "data=%s", s->value) < 0)
                        return -ENOMEM;
                const char *const w[] = { dest, data, "mode=0400" };
                r = profile_write_key(f, "file", w, ARRAY_SIZE(w));
                explicit_bzero(data, strlen(data));
        }
        if (r == 0 && in->proxy_ca_pem) {
                _cleanup_free_ char *hashed = NULL, *data = NULL;
                if (asprintf(&hashed, SECRETS_PATH "/%s", in->proxy_ca_name) < 0 || asprintf(&data, "data=%s", in->proxy_ca_pem) < 0)
                        return -ENOMEM;
                const char *const ca[] = { PROXY_CA, data, "mode=0444" };
                const char *const ca2[] = { hashed, data, "mode=0444" };
                if ((r = profile_write_key(f, "file", ca, ARRAY_SIZE(ca))) == 0)
                        r = profile_write_key(f, "file", ca2, ARRAY_SIZE(ca2));
        }
        if (r == 0)
                fprintf(f, "remount-ro = " SECRETS_PATH "\n");
        return r;
}

/* What the job's TLS clients are told to trust besides the system's CAs:
 * OpenSSL's directories (curl, Python, most), Node's extra file. */
static int write_proxy_env(FILE *f, const struct launchspec_input *in) {
        int r = 0;
        for (size_t i = 0; r == 0 && i < in->n_secrets; i++)
                if (in->secrets[i].mode == SECRET_HEADER)
                        r = write_env(f, in->secrets[i].name, in->secrets[i].placeholder);
        if (r < 0 || !in->proxy_ca_pem)
                return r;
        if ((r = write_env(f, "SSL_CERT_DIR", SECRETS_PATH ":/etc/ssl/certs")) < 0 ||
            (r = write_env(f, "NODE_EXTRA_CA_CERTS", PROXY_CA)) < 0)
                return r;
        return write_env(f, SBX_ENV_PROXY_CA, PROXY_CA);
}

/* A packages' path first on VAR (PYTHONPATH, NODE_PATH), before what the
 * request set. */
static int write_path_first(FILE *f, const struct job *j, const char *var, const char *path) {
        const char *theirs = NULL;
        for (size_t i = 0; i < j->req.run.n_env; i++)
                if (streq(j->req.run.env[i].name, var))
                        theirs = j->req.run.env[i].value;
        if (!theirs || !*theirs)
                return write_env(f, var, path);
        _cleanup_free_ char *v = NULL;
        if (asprintf(&v, "%s:%s", path, theirs) < 0)
                return -ENOMEM;
        return write_env(f, var, v);
}

static int write_profile(const struct launchspec_input *in, FILE *f) {
        const struct job *j = in->j;
        const struct policy_decision *pol = &j->pol;
        int r;
        fprintf(f, "# generated by sbx-supervisord for job %s (tenant %s)\n", j->id, j->tenant->name);
        /* The workspace path is the operator's choice: spelled through
         * the profile writer so spaces, '$' or ';' in it stay literal. */
        const char *const bind[] = { in->workspace, JOB_WORKSPACE };
        fprintf(f, "[fs]\n");
        r = profile_write_key(f, "bind", bind, ARRAY_SIZE(bind));
        if (r < 0)
                return r;
        if (in->session_init) {
                const char *const init[] = { in->session_init, JOB_INIT };
                if ((r = profile_write_key(f, "ro-bind", init, ARRAY_SIZE(init))) < 0)
                        return r;
        }
        if (j->bundle.set && (r = write_bundle_fs(f, &j->bundle, pol->net, in->bundle_fd)) < 0)
                return r;
        if ((r = write_secret_files(f, in)) < 0)
                return r;
        if (in->deps_layer) {
                const char *const layer[] = { in->deps_layer, DEPS_MOUNT };
                if ((r = profile_write_key(f, "ro-bind", layer, ARRAY_SIZE(layer))) < 0)
                        return r;
        }
        fprintf(f, "chdir = " JOB_WORKSPACE "\n");
        fprintf(f, "[env]\n");
        for (size_t i = 0; i < j->req.run.n_env; i++) {
                r = write_env(f, j->req.run.env[i].name, j->req.run.env[i].value);
                if (r < 0)
                        return r;
        }
        /* The task context comes last and from us: the request cannot set
         * SBX_* (proto.c refuses it), and later settings win anyway. */
        if ((r = write_env(f, SBX_ENV_JOB_ID, j->id)) < 0 || (r = write_env(f, SBX_ENV_TENANT, j->tenant->name)) < 0 ||
            (r = write_env(f, SBX_ENV_RESULT, JOB_WORKSPACE "/" JOB_RESULT_FILE)) < 0 ||
            (r = write_env(f, SBX_ENV_WORKSPACE, JOB_WORKSPACE)) < 0)
                return r;
        if (j->req.run.traceparent && (r = write_env(f, SBX_ENV_TRACEPARENT, j->req.run.traceparent)) < 0)
                return r;
        for (size_t i = 0; i < in->n_secrets; i++)
                if (in->secrets[i].mode == SECRET_ENV && (r = write_env(f, in->secrets[i].name, in->secrets[i].value)) < 0)
                        return r;
        if ((r = write_proxy_env(f, in)) < 0)
                return r;
        if (in->deps_layer && j->req.run.n_pip && (r = write_path_first(f, j, "PYTHONPATH", DEPS_PIP_PATH)) < 0)
                return r;
        if (in->deps_layer && j->req.run.n_npm && (r = write_path_first(f, j, "NODE_PATH", DEPS_NPM_PATH)) < 0)
                return r;
        if (j->bundle.set &&
            ((r = write_env(f, SBX_ENV_BUNDLE, j->bundle.ref.name)) < 0 ||
             (r = write_env(f, SBX_ENV_BUNDLE_VERSION, j->bundle.version)) < 0 ||
             (r = write_env(f, SBX_ENV_BUNDLE_DIR, JOB_BUNDLE)) < 0))
                return r;
        fprintf(f, "[limits]\n");
        /* Always said, so the named profile's own bounds (the default
         * profile has some) never stand in for the job's: a limit the
         * job cgroup keeps, or none, is "unlimited" for the launcher. */
        if (pol->memory != PROTO_UNSET && !(in->cg_limits & CG_LIMIT_MEMORY))
                fprintf(f, "memory = %" PRIu64 "\n", pol->memory);
        else
                fprintf(f, "memory = unlimited\n");
        if (pol->processes != PROTO_UNSET && !(in->cg_limits & CG_LIMIT_PIDS))
                fprintf(f, "processes = %" PRIu64 "\n", pol->processes);
        else
                fprintf(f, "processes = unlimited\n");
        if (pol->cpu_s != PROTO_UNSET)
                fprintf(f, "cpu = %" PRIu64 "s\n", pol->cpu_s);
        /* restricted: a network namespace of its own, like none; the
         * daemon adds its veth before the command runs (--block-fd). */
        fprintf(f, "[net]\nmode = %s\n", pol->net == NET_HOST ? "host" : "none");
        /* The audit, when there is one, is ours (eBPF on the job's
         * cgroup): a named profile's audit = yes is answered, and the
         * launcher, which cannot audit, is not asked to. Without one, such
         * a profile's key stands and the launcher refuses to run. */
        if (pol->net_audit)
                fprintf(f, "audit = no\n");
        /* An rlimit on the address space does not see memory in a memfd:
         * without the memory controller, a job may not make one (a
         * "memory" limit it could step around would be no limit). */
        if (pol->memory != PROTO_UNSET && !(in->cg_limits & CG_LIMIT_MEMORY))
                fprintf(f, "[security]\ndeny = memfd_create:EPERM\n");
        return 0;
}

int launchspec_build(const struct launchspec_input *in, struct launchspec *ret, struct sbx_error *err) {
        const struct run_request *run = &in->j->req.run;
        memset(ret, 0, sizeof(*ret));
        if (in->j->bundle.set && (!in->j->bundle.tree || in->j->bundle.n_command == 0))
                return sbx_error_msg(err, EINVAL, "the job's bundle is not resolved");

        FILE *f = open_memstream(&ret->profile, &ret->profile_len);
        if (!f)
                return sbx_error_set(err, ENOMEM, "generated profile");
        int r = write_profile(in, f);
        if (fclose(f) != 0 && r == 0)
                r = -ENOMEM;
        if (r < 0) {
                launchspec_free(ret);
                return sbx_error_set(err, r, "generated profile");
        }

        static const char *const head[] = { "--json-status-fd", SBX_LAUNCH_FD_STATUS_ARG, "--profile" };
        const struct job_bundle *b = &in->j->bundle;
        static const char *const handshake[] = { "--info-fd", SBX_LAUNCH_FD_INFO_ARG, "--block-fd", SBX_LAUNCH_FD_BLOCK_ARG };
        static const char *const session_pass[] = { "--pass-fd", SBX_LAUNCH_FD_SESSION_ARG };
        static const char *const session_cmd[] = { JOB_INIT, "--listen-fd", SBX_LAUNCH_FD_SESSION_ARG, "--workspace", JOB_WORKSPACE };
        size_t n = 1 + ARRAY_SIZE(head) + ARRAY_SIZE(handshake) + ARRAY_SIZE(session_pass) + 3 + 1 + ARRAY_SIZE(session_cmd) +
                   b->n_command + run->argc + 1,
               k = 0;
        ret->argv = calloc(n, sizeof(char *));
        if (asprintf(&ret->env_buf, "%s=%s", SBX_ENV_PROFILE_PATH, in->search_path) < 0)
                ret->env_buf = NULL;
        if (!ret->argv || !ret->env_buf) {
                launchspec_free(ret);
                return sbx_error_set(err, ENOMEM, "launcher command line");
        }
        ret->argv[k++] = (char *) in->launcher;
        for (size_t i = 0; in->handshake && i < ARRAY_SIZE(handshake); i++)
                ret->argv[k++] = (char *) handshake[i];
        for (size_t i = 0; i < ARRAY_SIZE(head); i++)
                ret->argv[k++] = (char *) head[i];
        ret->argv[k++] = (char *) in->profile_file;
        ret->argv[k++] = (char *) "--profile";
        ret->argv[k++] = (char *) SBX_LAUNCH_PROFILE_FD_PATH;
        for (size_t i = 0; in->session_init && i < ARRAY_SIZE(session_pass); i++)
                ret->argv[k++] = (char *) session_pass[i];
        ret->argv[k++] = (char *) "--";
        if (in->session_init) {
                for (size_t i = 0; i < ARRAY_SIZE(session_cmd); i++)
                        ret->argv[k++] = (char *) session_cmd[i];
                ret->argv[k] = NULL;
                goto env;
        }
        for (size_t i = 0; i < b->n_command; i++)
                ret->argv[k++] = b->command[i];
        for (size_t i = 0; i < run->argc; i++)
                ret->argv[k++] = run->argv[i];
        ret->argv[k] = NULL;
env:
        ret->envp[0] = (char *) LAUNCH_PATH;
        ret->envp[1] = ret->env_buf;
        ret->envp[2] = (char *) "LC_ALL=C.UTF-8";
        ret->envp[3] = NULL;
        return 0;
}

void launchspec_free(struct launchspec *ls) {
        free(ls->argv);
        free(ls->env_buf);
        /* it may hold secrets' values */
        if (ls->profile)
                explicit_bzero(ls->profile, ls->profile_len);
        free(ls->profile);
        memset(ls, 0, sizeof(*ls));
}
