/* SPDX-License-Identifier: Apache-2.0 */
/* The tenants' network caps, as the helper reads them itself (--config):
 * every network_allow entry of every [tenant.NAME] section of the daemon's
 * configuration, a file of root's that the front cannot write. A NET_ALLOW
 * from the front must lie within one of them (audit.c): a front taken over
 * can then open no port to no address that no tenant may reach. The front
 * does not say which tenant a job is (it would not be believed), so the
 * check is against all of them together (and every network_allow line of
 * a section, where the daemon keeps the last: a superset, never more than
 * the file names). A hostname entry admits any
 * single address (the front's DNS proxy resolved it; the helper cannot
 * tell) on its ports only; an address entry admits what lies within it.
 * A tenant's pip_index and npm_registry are caps too, their hosts and
 * ports over TCP: the daemon's install jobs reach them whatever the
 * tenant's network_allow (sbx-supervisord(8) DEPENDENCIES). */
#include <errno.h>
#include <stdio.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "inifile.h"
#include "netpolicy.h"
#include "privd.h"

/* The configuration is the daemon's; a few hundred KiB at most. */
#define CONFIG_MAX (4u << 20)

static int add_cap(struct inifile *f, const struct inifile_entry *e, struct privd *p, const char *tok) {
        struct np_allow a;
        struct sbx_error err;
        if (netpolicy_parse_allow(tok, &a, &err) < 0)
                return inifile_fail(f, e->line, "[%s] %s: %s", e->section, e->key, err.msg);
        struct np_allow *n = realloc(p->caps, (p->n_caps + 1) * sizeof(*n));
        if (!n)
                return inifile_fail(f, e->line, "out of memory");
        p->caps = n;
        p->caps[p->n_caps++] = a;
        return 0;
}

static int on_entry(struct inifile *f, const struct inifile_entry *e, void *user) {
        struct privd *p = user;
        if (strncmp(e->section, "tenant.", 7) != 0)
                return 0;
        if (strcmp(e->key, "pip_index") == 0 || strcmp(e->key, "npm_registry") == 0) {
                char ep[320], entry[330];
                struct sbx_error err;
                if (netpolicy_url_endpoint(e->value, ep, sizeof(ep), &err) < 0)
                        return inifile_fail(f, e->line, "[%s] %s %s", e->section, e->key, err.msg);
                snprintf(entry, sizeof(entry), "%s/tcp", ep);
                return add_cap(f, e, p, entry);
        }
        if (strcmp(e->key, "network_allow") != 0)
                return 0;
        char *copy = strdup(e->value), *save = NULL;
        if (!copy)
                return inifile_fail(f, e->line, "out of memory");
        for (char *tok = strtok_r(copy, " \t,", &save); tok; tok = strtok_r(NULL, " \t,", &save)) {
                int r = add_cap(f, e, p, tok);
                if (r < 0) {
                        free(copy);
                        return r;
                }
        }
        free(copy);
        return 0;
}

int privd_caps_load(struct privd *p, const char *path, char *why, size_t len) {
        struct sbx_error err;
        char *text = NULL;
        size_t n = 0;
        static const struct inifile_ops ops = { .entry = on_entry };
        int r = inifile_read(path, CONFIG_MAX, &text, &n, &err);
        if (r == 0)
                r = inifile_parse(path, text, n, &ops, p, &err);
        free(text);
        if (r < 0)
                snprintf(why, len, "%s", err.msg);
        else
                p->caps_loaded = true;
        return r;
}

bool privd_caps_admit(const struct privd *p, const uint8_t addr[16], unsigned prefix, unsigned proto, uint16_t lo, uint16_t hi) {
        if (!p->caps_loaded)
                return true;
        struct np_allow a = {
                .prefix = prefix,
                .port_lo = lo,
                .port_hi = hi,
                .protos = proto == IPPROTO_TCP ? NETPOLICY_TCP : proto == IPPROTO_UDP ? NETPOLICY_UDP : NETPOLICY_TCP | NETPOLICY_UDP,
        };
        memcpy(a.addr, addr, 16);
        for (size_t i = 0; i < p->n_caps; i++) {
                const struct np_allow *c = &p->caps[i];
                if (c->is_host) {
                        /* one address, on the name's ports and protocols */
                        if (prefix == 128 && (a.protos & ~c->protos) == 0 && lo >= c->port_lo && hi <= c->port_hi)
                                return true;
                } else if (netpolicy_allow_within(&a, c))
                        return true;
        }
        return false;
}
