/* SPDX-License-Identifier: Apache-2.0 */
/* The command's environment: empty by default, then the profile's set, keep
 * and unset operations in order. When a profile asks to keep the caller's
 * environment, the dynamic loader's and libc's injection variables
 * (LD_PRELOAD and kin) are still dropped: they reach the job only when the
 * profile names them in a set or keep. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "launch.h"

/* Variables that make the loader or libc load or read attacker-chosen
 * files (glibc's "unsecure envvars" for setuid programs, and the same
 * reasoning applies to a job we run on the caller's behalf). */
static bool unsafe_name(const char *entry, size_t len) {
        static const char *const names[] = {
                "GCONV_PATH", "GETCONF_DIR", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH",
                "MALLOC_TRACE", "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS",
                "TZDIR", "GLIBC_TUNABLES",
        };
        if (len >= 3 && strncmp(entry, "LD_", 3) == 0)
                return true;
        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                if (strlen(names[i]) == len && strncmp(entry, names[i], len) == 0)
                        return true;
        return false;
}

static size_t name_len(const char *entry) {
        const char *eq = strchr(entry, '=');
        return eq ? (size_t) (eq - entry) : strlen(entry);
}

static ssize_t find(char **env, size_t n, const char *name, size_t len) {
        for (size_t i = 0; i < n; i++)
                if (name_len(env[i]) == len && strncmp(env[i], name, len) == 0)
                        return (ssize_t) i;
        return -1;
}

char **env_build(const struct profile *p, char **caller_env, struct sbx_error *err) {
        size_t n_caller = 0;
        for (char **e = caller_env; e && *e; e++)
                n_caller++;
        size_t cap = (p->env_clear ? 0 : n_caller) + p->n_env + 1;
        char **env = calloc(cap, sizeof(char *));
        size_t n = 0;
        if (!env) {
                sbx_error_set(err, ENOMEM, "environment");
                return NULL;
        }

        if (!p->env_clear)
                for (size_t i = 0; i < n_caller; i++)
                        if (!unsafe_name(caller_env[i], name_len(caller_env[i])))
                                env[n++] = caller_env[i];

        for (size_t i = 0; i < p->n_env; i++) {
                const struct env_op *op = &p->env[i];
                size_t len = strlen(op->name);
                ssize_t at = find(env, n, op->name, len);
                char *entry = NULL;

                switch (op->type) {
                case ENV_SET: {
                        size_t vlen = strlen(op->value);
                        entry = malloc(len + vlen + 2);
                        if (!entry) {
                                free(env);
                                sbx_error_set(err, ENOMEM, "environment");
                                return NULL;
                        }
                        memcpy(entry, op->name, len);
                        entry[len] = '=';
                        memcpy(entry + len + 1, op->value, vlen + 1);
                        break;
                }
                case ENV_KEEP: {
                        ssize_t c = find(caller_env, n_caller, op->name, len);
                        if (c < 0)
                                continue;
                        entry = caller_env[c];
                        break;
                }
                case ENV_UNSET:
                        if (at >= 0) {
                                env[at] = env[n - 1];
                                env[--n] = NULL;
                        }
                        continue;
                }
                if (at >= 0)
                        env[at] = entry;
                else
                        env[n++] = entry;
        }
        env[n] = NULL;
        return env;
}
