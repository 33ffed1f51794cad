/* SPDX-License-Identifier: Apache-2.0 */
/* The launcher's options as the front writes them, read the way sbx-launch
 * reads them, so that they name no descriptor the helper did not place. */
#pragma once

#include <stdbool.h>

/* args: the front's strings, n of them. pass: whether the helper places a
 * socket on SBX_LAUNCH_FD_SESSION. 0, or -EPERM/-EINVAL with *ret_why (a
 * static string) and *ret_arg (the string at fault). */
int launchopts_check(char *const *args, unsigned n, bool pass, const char **ret_why, const char **ret_arg);
