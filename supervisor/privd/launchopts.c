/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "launch-abi.h"
#include "launchopts.h"
#include "macro.h"

/* How many arguments each of sbx-launch's options takes (launcher/cli.c).
 * An option not listed here is refused: were the helper to count an
 * option's arguments otherwise than the launcher, a "--" taken for the end
 * of the options could hide a descriptor option behind it. */
static const struct {
        const char *name;
        unsigned nargs;
} opts[] = {
        { "--profile", 1 }, { "--set", 1 }, { "--timeout", 1 }, { "--setenv", 2 }, { "--unsetenv", 1 },
        { "--keepenv", 1 }, { "--clearenv", 0 }, { "--chdir", 1 }, { "--hostname", 1 }, { "--uid", 1 },
        { "--gid", 1 }, { "--bind", 2 }, { "--bind-try", 2 }, { "--ro-bind", 2 }, { "--ro-bind-try", 2 },
        { "--dev-bind", 2 }, { "--dev-bind-try", 2 }, { "--symlink", 2 }, { "--tmpfs", 1 }, { "--dir", 1 },
        { "--proc", 1 }, { "--dev", 1 }, { "--mqueue", 1 }, { "--remount-ro", 1 }, { "--file", 2 },
        { "--size", 1 }, { "--perms", 1 }, { "--unshare-all", 0 }, { "--unshare-user", 0 }, { "--unshare-pid", 0 },
        { "--unshare-net", 0 }, { "--unshare-ipc", 0 }, { "--unshare-uts", 0 }, { "--unshare-cgroup", 0 },
        { "--unshare-cgroup-try", 0 }, { "--share-pid", 0 }, { "--share-net", 0 }, { "--share-ipc", 0 },
        { "--share-uts", 0 }, { "--share-cgroup", 0 }, { "--die-with-parent", 0 }, { "--new-session", 0 },
        { "--pty", 0 }, { "--no-pty", 0 }, { "--pass-fd", 1 },
};

/* The launcher's descriptor options the helper writes itself, or that
 * would hand the launcher a descriptor it did not place. */
static const char *const own[] = { "--json-status-fd", "--info-fd", "--block-fd", "--sync-fd" };

static bool named(const char *arg, const char *name, const char **ret_inline) {
        size_t len = strlen(name);
        if (strncmp(arg, name, len) != 0)
                return false;
        if (arg[len] == '\0') {
                *ret_inline = NULL;
                return true;
        }
        if (arg[len] == '=') {
                *ret_inline = arg + len + 1;
                return true;
        }
        return false;
}

int launchopts_check(char *const *args, unsigned n, bool pass, const char **ret_why, const char **ret_arg) {
        for (unsigned i = 0; i < n; i++) {
                const char *a = args[i], *inl = NULL;
                *ret_arg = a;
                /* Where the launcher's options end, as it finds it. */
                if (strcmp(a, "--") == 0 || a[0] != '-')
                        return 0;
                for (size_t k = 0; k < ARRAY_SIZE(own); k++)
                        if (named(a, own[k], &inl)) {
                                *ret_why = "a descriptor option the helper writes itself";
                                return -EPERM;
                        }
                size_t k = 0;
                while (k < ARRAY_SIZE(opts) && !named(a, opts[k].name, &inl))
                        k++;
                if (k == ARRAY_SIZE(opts)) {
                        *ret_why = "not an option of the launcher's";
                        return -EINVAL;
                }
                if (inl && opts[k].nargs != 1) {
                        *ret_why = "an option of no or two arguments given one with '='";
                        return -EINVAL;
                }
                if (!inl && i + opts[k].nargs >= n) {
                        *ret_why = "an option without its arguments";
                        return -EINVAL;
                }
                if (strcmp(opts[k].name, "--pass-fd") == 0) {
                        const char *v = inl ? inl : args[i + 1];
                        if (!pass || strcmp(v, SBX_LAUNCH_FD_SESSION_ARG) != 0) {
                                *ret_why = pass ? "--pass-fd of a descriptor other than 8" : "--pass-fd without a socket in slot 8";
                                return -EPERM;
                        }
                }
                i += inl ? 0 : opts[k].nargs;
        }
        return 0;
}
