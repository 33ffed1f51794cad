/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netdeny.h"
#include "util.h"

static const char *const names[ND_REASONS] = {
        [ND_NONE] = "none",           [ND_POOL] = "pool",         [ND_LOOPBACK] = "loopback",
        [ND_LINK_LOCAL] = "link-local", [ND_MULTICAST] = "multicast", [ND_BROADCAST] = "broadcast",
        [ND_UNSPECIFIED] = "unspecified", [ND_HOST] = "host",     [ND_CONFIGURED] = "configured",
};

const char *netdeny_reason_name(unsigned reason) {
        return reason < ND_REASONS ? names[reason] : "?";
}

static void mask(uint8_t addr[16], unsigned prefix) {
        for (unsigned i = 0; i < 16; i++) {
                unsigned keep = prefix > i * 8 ? prefix - i * 8 : 0;
                if (keep < 8)
                        addr[i] &= (uint8_t) (0xff00u >> keep);
        }
}

static bool in_prefix(const uint8_t addr[16], const uint8_t net[16], unsigned prefix) {
        uint8_t m[16];
        memcpy(m, addr, 16);
        mask(m, prefix);
        return memcmp(m, net, 16) == 0;
}

int netdeny_add(struct netdeny *nd, const uint8_t addr[16], unsigned prefix, enum netdeny_reason reason) {
        struct netdeny_net e = { .prefix = prefix > 128 ? 128 : prefix, .reason = (uint8_t) reason };
        memcpy(e.addr, addr, 16);
        mask(e.addr, e.prefix);
        for (size_t i = 0; i < nd->n; i++)
                if (nd->nets[i].prefix == e.prefix && memcmp(nd->nets[i].addr, e.addr, 16) == 0)
                        return 0;
        if (nd->n >= NETDENY_MAX)
                return -E2BIG;
        nd->nets[nd->n++] = e;
        return 0;
}

static int add_text(struct netdeny *nd, const char *cidr, enum netdeny_reason reason) {
        uint8_t a[16];
        unsigned p;
        int r = netdeny_parse_cidr(cidr, a, &p);
        return r < 0 ? r : netdeny_add(nd, a, p, reason);
}

int netdeny_add_fixed(struct netdeny *nd) {
        static const struct {
                const char *cidr;
                enum netdeny_reason reason;
        } fixed[] = {
                { "127.0.0.0/8", ND_LOOPBACK },      { "::1", ND_LOOPBACK },
                { "169.254.0.0/16", ND_LINK_LOCAL }, { "fe80::/10", ND_LINK_LOCAL },
                { "224.0.0.0/4", ND_MULTICAST },     { "ff00::/8", ND_MULTICAST },
                { "255.255.255.255", ND_BROADCAST }, { "0.0.0.0/8", ND_UNSPECIFIED },
                { "::", ND_UNSPECIFIED },
        };
        for (size_t i = 0; i < ARRAY_SIZE(fixed); i++) {
                int r = add_text(nd, fixed[i].cidr, fixed[i].reason);
                if (r < 0)
                        return r;
        }
        return 0;
}

void netdeny_drop(struct netdeny *nd, enum netdeny_reason reason) {
        size_t k = 0;
        for (size_t i = 0; i < nd->n; i++)
                if (nd->nets[i].reason != reason)
                        nd->nets[k++] = nd->nets[i];
        nd->n = k;
}

enum netdeny_reason netdeny_match(const struct netdeny *nd, const uint8_t addr[16]) {
        const struct netdeny_net *best = NULL;
        for (size_t i = 0; nd && i < nd->n; i++)
                if (in_prefix(addr, nd->nets[i].addr, nd->nets[i].prefix) && (!best || nd->nets[i].prefix > best->prefix))
                        best = &nd->nets[i];
        return best ? (enum netdeny_reason) best->reason : ND_NONE;
}

enum netdeny_reason netdeny_covers(const struct netdeny *nd, const struct np_allow *a) {
        if (!nd || a->is_host)
                return ND_NONE;
        /* the job's own loopback is open to it whatever it allows */
        for (size_t i = 0; i < nd->n; i++)
                if (nd->nets[i].reason != ND_LOOPBACK && a->prefix >= nd->nets[i].prefix && in_prefix(a->addr, nd->nets[i].addr, nd->nets[i].prefix))
                        return (enum netdeny_reason) nd->nets[i].reason;
        return ND_NONE;
}

int netdeny_check_policy(const struct netdeny *nd, const struct netpolicy *p, struct sbx_error *err) {
        for (size_t i = 0; p && i < p->n_allow; i++) {
                enum netdeny_reason why = netdeny_covers(nd, &p->allow[i]);
                if (why == ND_NONE)
                        continue;
                char e[NETPOLICY_HOST_MAX + 64];
                netpolicy_format_allow(&p->allow[i], e, sizeof(e));
                return sbx_error_msg(err, EPERM,
                                     "field 'network.allow[%zu]': %s reaches only addresses restricted jobs never reach (%s)", i, e,
                                     netdeny_reason_name(why));
        }
        return 0;
}

int netdeny_parse_cidr(const char *s, uint8_t ret_addr[16], unsigned *ret_prefix) {
        char buf[INET6_ADDRSTRLEN + 8];
        uint8_t a[16] = { [10] = 0xff, [11] = 0xff };
        unsigned long plen = 0;
        bool v4;
        if (strlen(s) >= sizeof(buf))
                return -EINVAL;
        snprintf(buf, sizeof(buf), "%s", s);
        char *slash = strchr(buf, '/');
        if (slash) {
                char *end;
                *slash = '\0';
                if (!isdigit((unsigned char) slash[1]) || strlen(slash + 1) > 3)
                        return -EINVAL;
                plen = strtoul(slash + 1, &end, 10);
                if (*end)
                        return -EINVAL;
        }
        if (inet_pton(AF_INET, buf, a + 12) == 1)
                v4 = true;
        else if (inet_pton(AF_INET6, buf, a) == 1)
                v4 = false;
        else
                return -EINVAL;
        if (!slash)
                plen = v4 ? 32 : 128;
        if (plen > (v4 ? 32u : 128u))
                return -EINVAL;
        unsigned prefix = (unsigned) plen + (v4 ? 96 : 0);
        uint8_t m[16];
        memcpy(m, a, 16);
        mask(m, prefix);
        if (memcmp(m, a, 16) != 0)
                return -EINVAL; /* bits past the prefix: a typo, not a network */
        memcpy(ret_addr, a, 16);
        *ret_prefix = prefix;
        return 0;
}
