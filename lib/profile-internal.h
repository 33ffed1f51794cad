/* SPDX-License-Identifier: Apache-2.0 */
/* Shared between the profile parser, loader and writer; not for callers of
 * lib/profile.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "ini-load.h"
#include "profile.h"

/* Index of the key in the key table, -1 if the key is unknown, -2 if the
 * section is unknown. */
int profile_key_find(const char *section, const char *key);
enum key_kind profile_key_kind(int idx);
bool profile_section_known(const char *section);
/* The keys of a section, space-separated, for "unknown key" messages. */
void profile_section_keys(const char *section, char *buf, size_t len);

/* Parse value (file syntax) and apply it. continuation: value came from an
 * indented continuation line of the same key (KEY_SET keys then extend). */
int profile_apply_value(struct profile *p, int idx, const char *value, const char *origin,
                        bool continuation, struct sbx_error *err);

/* Names of errno values used by deny = NAME:ERRNO; NULL if none. */
const char *profile_errno_name(int errnum);
