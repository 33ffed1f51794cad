/* SPDX-License-Identifier: Apache-2.0 */
/* Finding a profile by name in a search path (SBX_PROFILE_PATH, the
 * daemon's profile_path): the first DIR/NAME.ini that exists. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile.h"

int profile_find(const char *name, const char *search_path, char **ret) {
        const char *p = search_path;
        while (p && *p) {
                const char *colon = strchr(p, ':');
                size_t n = colon ? (size_t) (colon - p) : strlen(p);
                if (n > 0) {
                        char *path = NULL;
                        if (asprintf(&path, "%.*s/%s.ini", (int) n, p, name) < 0)
                                return -ENOMEM;
                        if (access(path, R_OK) == 0) {
                                *ret = path;
                                return 0;
                        }
                        free(path);
                }
                p = colon ? colon + 1 : NULL;
        }
        return -ENOENT;
}
