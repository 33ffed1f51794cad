/* SPDX-License-Identifier: Apache-2.0 */
/* Reading profiles: the shared INI reader (inifile.h) hands over each
 * section header and each complete value with its line; here they are
 * checked against the key table (profile-keys.c) and applied. */
#include <limits.h>
#include <string.h>

#include "inifile.h"
#include "macro.h"
#include "profile-internal.h"

#define PROFILE_MAX_FILE_SIZE (1024 * 1024)

struct loader {
        struct profile *p;
        struct sbx_error *err;
        unsigned seen[PROFILE_KEYS_MAX];  /* line where a scalar/set key was first set in this file */
};

static int on_section(struct inifile *f, const char *section, unsigned line, void *user) {
        (void) user;
        if (!profile_section_known(section))
                return inifile_fail(f, line, "unknown section [%s] (known: sandbox fs env net limits security)", section);
        return 0;
}

static bool key_known(const char *section, const char *key, void *user) {
        (void) user;
        return profile_key_find(section, key) >= 0;
}

static int on_entry(struct inifile *f, const struct inifile_entry *e, void *user) {
        struct loader *l = user;
        int idx = profile_key_find(e->section, e->key);

        if (idx == -2)
                return inifile_fail(f, e->line, "unknown section [%s]", e->section);
        if (idx == -1) {
                char known[512];
                profile_section_keys(e->section, known, sizeof(known));
                return inifile_fail(f, e->line, "%s.%s: unknown key (known in [%s]: %s)", e->section, e->key, e->section,
                                    known);
        }
        if (e->continuation && profile_key_kind(idx) == KEY_SCALAR)
                return inifile_fail(f, e->line, "%s.%s: takes a single line (an indented line continues the previous "
                                    "key)", e->section, e->key);
        if (!e->continuation && profile_key_kind(idx) != KEY_LIST) {
                if (l->seen[idx])
                        return inifile_fail(f, e->line, "%s.%s: set twice in this file (first on line %u)", e->section,
                                            e->key, l->seen[idx]);
                l->seen[idx] = e->line;
        }

        char origin[PATH_MAX + 32];
        snprintf(origin, sizeof(origin), "%s:%u", inifile_name(f), e->line);
        return profile_apply_value(l->p, idx, e->value, origin, e->continuation, l->err);
}

static int load_text(struct profile *p, const char *name, const char *text, size_t len, struct sbx_error *err) {
        static const struct inifile_ops ops = { .section = on_section, .entry = on_entry, .key_known = key_known };
        struct loader l = { .p = p, .err = err };
        return inifile_parse(name, text, len, &ops, &l, err);
}

int profile_load_string(struct profile *p, const char *name, const char *text, struct sbx_error *err) {
        return load_text(p, name, text, strlen(text), err);
}

int profile_load_file(struct profile *p, const char *path, struct sbx_error *err) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = inifile_read(path, PROFILE_MAX_FILE_SIZE, &text, &len, err);
        if (r < 0)
                return r;
        return load_text(p, path, text, len, err);
}
