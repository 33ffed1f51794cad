/* SPDX-License-Identifier: Apache-2.0 */
/* What the daemon hands sbx-launch for a job, computed without I/O: the
 * command line, the launcher's environment, and the profile generated on
 * top of the job's named profile (workspace, limits the cgroup does not
 * enforce, network mode, and the job's environment — values travel in this
 * profile, in a sealed memfd, never on a command line that `ps` shows).
 * Unit-tested. */
#pragma once

#include <stddef.h>

#include "error.h"
#include "job.h"

struct launch_secret {
        const char *name;
        enum secret_mode mode;
        const char *value;         /* NUL-terminated; no NUL inside (proto-admin.c) */
        size_t len;
        const char *placeholder;   /* SECRET_HEADER: what the job sees instead, len bytes and a NUL */
};

struct launchspec_input {
        const char *launcher;      /* sbx-launch */
        const char *profile_file;  /* the job's named profile, resolved */
        const char *search_path;   /* profile_path, for the launcher's own lookups */
        const char *workspace;     /* the job's workspace on the host */
        /* a bundle job: j->bundle.tree, .command and .ro_paths */
        const struct job *j;
        unsigned cg_limits;        /* CG_LIMIT_* the job's cgroup enforces */
        bool handshake;            /* --info-fd and --block-fd (restricted network) */
        bool bundle_fd;            /* the tree comes as SBX_LAUNCH_FD_BUNDLE, not by its path */
        /* A session's sandbox: sbx-init (this file on the host) is its
         * command, its listening socket SBX_LAUNCH_FD_SESSION; the
         * request's command is not run. */
        const char *session_init;
        /* The secrets it asked for, with their values (runner.c reads
         * them): a file of a read-only tmpfs at /run/secrets, or an
         * environment variable. */
        const struct launch_secret *secrets;
        size_t n_secrets;
        /* With header secrets: the CA of the job's proxy (PEM) and the
         * name OpenSSL finds it by in a directory. */
        const char *proxy_ca_pem;
        const char *proxy_ca_name;
        /* Its packages: the layer's directory on the host, bound
         * read-only at /deps, pip's put first on its PYTHONPATH and npm's
         * on its NODE_PATH; NULL: none. */
        const char *deps_layer;
};

struct launchspec {
        char **argv;               /* NULL-terminated; the strings belong to the input or to env_buf */
        char *envp[4];
        char *env_buf;
        char *profile;             /* the generated profile (INI) */
        size_t profile_len;
};

/* The job's structured result: $SBX_RESULT is this file at the top of its
 * workspace, read at its end (runner.c). */
#define JOB_RESULT_FILE ".sbx-result.json"

int launchspec_build(const struct launchspec_input *in, struct launchspec *ret, struct sbx_error *err);
void launchspec_free(struct launchspec *ls);
