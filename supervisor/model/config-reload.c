/* SPDX-License-Identifier: Apache-2.0 */
/* A configuration read again while the daemon runs: tenant slots that keep
 * a name's counters across reloads, and the swap of tenants and tokens into
 * the live configuration (everything else takes effect at a restart). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "util.h"

int config_slot_of(struct config *c, const char *name, unsigned *ret) {
        for (size_t i = 0; i < c->n_slots; i++)
                if (streq(c->slots[i], name)) {
                        *ret = (unsigned) i;
                        return 0;
                }
        char **n = realloc(c->slots, (c->n_slots + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        c->slots = n;
        if (!(n[c->n_slots] = strdup(name)))
                return -ENOMEM;
        *ret = (unsigned) c->n_slots++;
        return 0;
}

bool config_has_tenant(const struct config *c, const struct tenant *t) {
        return t == c->anonymous || (c->n_tenants && t >= c->tenants && t < c->tenants + c->n_tenants);
}

static bool entry_reloads(const struct config_entry *e) {
        return strncmp(e->section, "tenant.", 7) == 0 || strncmp(e->section, CONFIG_TOKEN_PREFIX, strlen(CONFIG_TOKEN_PREFIX)) == 0 ||
               (streq(e->section, "daemon") && streq(e->key, "admins"));
}

bool config_is_admin(const struct config *c, uid_t uid) {
        if (uid == 0)
                return true;
        for (size_t i = 0; i < c->n_admins; i++)
                if (c->admins[i] == uid)
                        return true;
        return false;
}

static bool entry_eq(const struct config_entry *a, const struct config_entry *b) {
        return streq(a->section, b->section) && streq(a->key, b->key) && streq(a->value, b->value);
}

/* The next entry of a section, at or after *i, that a reload does not
 * apply (or NULL). */
static const struct config_entry *next_fixed(const struct config *c, size_t *i) {
        for (; *i < c->n_entries; (*i)++)
                if (!entry_reloads(&c->entries[*i]))
                        return &c->entries[(*i)++];
        return NULL;
}

/* Append "section.key" to a list of names, once. */
static void name_key(char *buf, size_t len, const struct config_entry *e) {
        char item[160];
        snprintf(item, sizeof(item), "%s.%s", e->section, e->key);
        size_t at = strlen(buf), il = strlen(item);
        /* already named? */
        for (const char *p = buf; (p = strstr(p, item)); p += il)
                if ((p == buf || p[-1] == ' ') && (p[il] == ',' || p[il] == '\0'))
                        return;
        if (at + il + 8 >= len) {
                if (at + 4 < len && !strstr(buf, "..."))
                        snprintf(buf + at, len - at, ", ...");
                return;
        }
        snprintf(buf + at, len - at, "%s%s", at ? ", " : "", item);
}

/* The keys outside [tenant.*] and [token.*] that differ between a and b,
 * as a list of "section.key"; "" when none. */
static void fixed_changes(const struct config *a, const struct config *b, char *buf, size_t len) {
        buf[0] = '\0';
        size_t i = 0, j = 0;
        for (;;) {
                const struct config_entry *x = next_fixed(a, &i), *y = next_fixed(b, &j);
                if (!x && !y)
                        return;
                if (x && y && entry_eq(x, y))
                        continue;
                /* from here on the two differ: name what is left of both */
                if (x)
                        name_key(buf, len, x);
                if (y)
                        name_key(buf, len, y);
        }
}

bool config_tenant_changed(const struct config *a, const struct config *b, const char *name) {
        char section[80];
        snprintf(section, sizeof(section), "tenant.%s", name);
        size_t i = 0, j = 0;
        for (;;) {
                while (i < a->n_entries && !streq(a->entries[i].section, section))
                        i++;
                while (j < b->n_entries && !streq(b->entries[j].section, section))
                        j++;
                if (i == a->n_entries || j == b->n_entries)
                        return (i == a->n_entries) != (j == b->n_entries);
                if (!entry_eq(&a->entries[i], &b->entries[j]))
                        return true;
                i++;
                j++;
        }
}

#define SWAP(x, y)                        \
        do {                              \
                __typeof__(x) tmp_ = (x); \
                (x) = (y);                \
                (y) = tmp_;               \
        } while (0)

int config_reload_check(struct config *live, struct config *fresh, struct sbx_error *err) {
        char changed[SBX_ERROR_MAX - 160];
        fixed_changes(live, fresh, changed, sizeof(changed));
        if (changed[0])
                return sbx_error_msg(err, EINVAL,
                                     "%s: only [tenant.*], [token.*] and admins change at a reload; restart the daemon for: %s",
                                     fresh->path, changed);
        /* new tenants keep their names' slots; their registries are the
         * live ones (the same keys: checked above) */
        unsigned slot;
        for (size_t i = 0; i < fresh->n_tenants; i++) {
                struct tenant *t = &fresh->tenants[i];
                if (config_slot_of(live, t->name, &slot) < 0)
                        return sbx_error_set(err, ENOMEM, "reload");
                t->slot = slot;
                if (t->registry_name)
                        t->registry = config_registry_find(live, t->registry_name);
        }
        fresh->anonymous->slot = 0;
        if (fresh->anonymous->registry_name)
                fresh->anonymous->registry = config_registry_find(live, fresh->anonymous->registry_name);
        return 0;
}

void config_reload_swap(struct config *live, struct config *fresh) {
        SWAP(live->tenants, fresh->tenants);
        SWAP(live->n_tenants, fresh->n_tenants);
        SWAP(live->anonymous, fresh->anonymous);
        SWAP(live->tokens, fresh->tokens);
        SWAP(live->n_tokens, fresh->n_tokens);
        SWAP(live->entries, fresh->entries);
        SWAP(live->admins, fresh->admins);
        SWAP(live->n_admins, fresh->n_admins);
        SWAP(live->n_entries, fresh->n_entries);
}
