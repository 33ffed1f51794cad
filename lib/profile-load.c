/* SPDX-License-Identifier: Apache-2.0 */
/* Reading profiles: the strict INI loader (ini-load.c) with the profile's
 * key table. */
#include <string.h>

#include "ini-load.h"
#include "profile-internal.h"

#define PROFILE_MAX_FILE_SIZE (1024 * 1024)

static int apply(void *target, int idx, const char *value, const char *origin, bool continuation, struct sbx_error *err) {
        return profile_apply_value(target, idx, value, origin, continuation, err);
}

static const struct ini_schema profile_schema = {
        .what = "profile",
        .sections = "sandbox fs env net limits security",
        .max_value = PROFILE_MAX_VALUE,
        .key_find = profile_key_find,
        .key_kind = profile_key_kind,
        .section_keys = profile_section_keys,
        .apply = apply,
};

int profile_load_string(struct profile *p, const char *name, const char *text, struct sbx_error *err) {
        return ini_load_text(&profile_schema, p, name, text, strlen(text), err);
}

int profile_load_file(struct profile *p, const char *path, struct sbx_error *err) {
        return ini_load_file(&profile_schema, p, path, PROFILE_MAX_FILE_SIZE, err);
}
