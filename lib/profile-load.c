/* SPDX-License-Identifier: Apache-2.0 */
/* Reading profiles: the key-table engine (inikeys.h) over the profile's
 * table (profile-keys.c). */
#include <string.h>

#include "profile-internal.h"

#define PROFILE_MAX_FILE_SIZE (1024 * 1024)

int profile_load_string(struct profile *p, const char *name, const char *text, struct sbx_error *err) {
        return inikeys_parse(&profile_format, name, text, strlen(text), p, err);
}

int profile_load_file(struct profile *p, const char *path, struct sbx_error *err) {
        return inikeys_load(&profile_format, path, PROFILE_MAX_FILE_SIZE, p, err);
}
