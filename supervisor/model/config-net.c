/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-supervisord.conf(5): the network keys, the daemon's (address pools
 * for restricted jobs, the DNS proxy's upstream) and a tenant's (modes, the
 * allowlist cap, ports always denied). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config-keys.h"
#include "parse.h"
#include "netpolicy.h"
#include "proto.h"
#include "util.h"

static int add_net(struct inikey_ctx *c, const char *w) {
        if (streq(w, "none"))
                config_tenant(c)->net_modes |= NET_MODE_BIT(NET_NONE);
        else if (streq(w, "host"))
                config_tenant(c)->net_modes |= NET_MODE_BIT(NET_HOST);
        else if (streq(w, "restricted"))
                config_tenant(c)->net_modes |= NET_MODE_BIT(NET_RESTRICTED);
        else
                return FAIL(c, "unknown network mode '%s' (none, host, restricted)", w);
        return 0;
}

static int add_net_allow(struct inikey_ctx *c, const char *w) {
        struct tenant *t = config_tenant(c);
        struct sbx_error e;
        struct np_allow a;
        if (t->n_net_allow >= NETPOLICY_MAX_ALLOW)
                return FAIL(c, "network_allow: more than %d entries", NETPOLICY_MAX_ALLOW);
        if (netpolicy_parse_allow(w, &a, &e) < 0)
                return FAIL(c, "network_allow: %s", e.msg);
        struct np_allow *n = realloc(t->net_allow, (t->n_net_allow + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        t->net_allow = n;
        t->net_allow[t->n_net_allow++] = a;
        return 0;
}

int config_net_allow(struct inikey_ctx *c) {
        if (!c->continuation)
                config_tenant(c)->n_net_allow = 0;
        return config_each_word(c, add_net_allow);
}

static int add_net_deny(struct inikey_ctx *c, const char *w) {
        struct tenant *t = config_tenant(c);
        struct sbx_error e;
        if (t->n_net_deny >= NETPOLICY_MAX_DENY / 2)
                return FAIL(c, "network_deny_ports: more than %d entries (a job has room for %d of its own and its tenant's)",
                            NETPOLICY_MAX_DENY / 2, NETPOLICY_MAX_DENY);
        if (netpolicy_parse_ports(w, &t->net_deny[t->n_net_deny], &e) < 0)
                return FAIL(c, "network_deny_ports: %s", e.msg);
        t->n_net_deny++;
        return 0;
}

int config_net_deny_ports(struct inikey_ctx *c) {
        if (!c->continuation)
                config_tenant(c)->n_net_deny = 0;
        return config_each_word(c, add_net_deny);
}

/* network_pool: the IPv4 network restricted jobs' veth pairs take their
 * /30s from. */
int config_net_pool(struct inikey_ctx *c) {
        struct sbx_error e;
        struct np_allow a;
        struct config *cf = config_of(c);
        if (netpolicy_parse_allow(c->value, &a, &e) < 0 || a.is_host || a.v6 || a.prefix < 96 + 8 || a.prefix > 96 + 28 ||
            strchr(c->value, ':'))
                return FAIL(c, "network_pool: expected an IPv4 network from /8 to /28 (e.g. 10.200.0.0/16), got '%s'", c->value);
        memcpy(&cf->net_pool, a.addr + 12, 4);
        cf->net_pool_prefix = a.prefix - 96;
        return 0;
}

/* network_pool6: the IPv6 prefix restricted jobs' veth pairs take their
 * /126s from, at the IPv4 /30's slot: /48 to /110 has room for the most
 * slots a network_pool can have (65536). "none": IPv4 only. */
int config_net_pool6(struct inikey_ctx *c) {
        struct config *cf = config_of(c);
        char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
        uint8_t a[16];
        if (strcmp(c->value, "none") == 0) {
                cf->net_pool6_prefix = 0;
                return 0;
        }
        if (strlen(c->value) >= sizeof(buf))
                goto bad;
        snprintf(buf, sizeof(buf), "%s", c->value);
        if (!(slash = strchr(buf, '/')))
                goto bad;
        *slash = '\0';
        errno = 0;
        unsigned long prefix = strtoul(slash + 1, &end, 10);
        if (inet_pton(AF_INET6, buf, a) != 1 || errno || end == slash + 1 || *end || prefix < 48 || prefix > 110)
                goto bad;
        for (unsigned bit = (unsigned) prefix; bit < 128; bit++)
                if (a[bit / 8] & (0x80u >> (bit % 8)))
                        return FAIL(c, "network_pool6: '%s' has bits set past its /%lu (a network's address has none)", c->value, prefix);
        memcpy(cf->net_pool6, a, 16);
        cf->net_pool6_prefix = (unsigned) prefix;
        return 0;
bad:
        return FAIL(c, "network_pool6: expected an IPv6 network from /48 to /110 (e.g. fd5b:7a1c:4e02::/64) or none, got '%s'", c->value);
}

/* dns_upstream: ADDR, ADDR:PORT or [ADDR6]:PORT. */
int config_net_dns_upstream(struct inikey_ctx *c) {
        struct sbx_error e;
        struct np_allow a;
        struct config *cf = config_of(c);
        char buf[64];
        if (strlen(c->value) >= sizeof(buf) || strchr(c->value, '/') || netpolicy_parse_allow(c->value, &a, &e) < 0 || a.is_host ||
            a.prefix != 128 || (a.port_lo != a.port_hi && !(a.port_lo == 0 && a.port_hi == 65535)))
                return FAIL(c, "dns_upstream: expected an IP address, with :PORT if not 53 ([ADDR]:PORT for IPv6), got '%s'", c->value);
        uint16_t port = a.port_lo == a.port_hi ? a.port_lo : 53;
        memset(&cf->dns_upstream_addr, 0, sizeof(cf->dns_upstream_addr));
        if (a.v6) {
                cf->dns_upstream_addr.sin6_family = AF_INET6;
                cf->dns_upstream_addr.sin6_port = htons(port);
                memcpy(&cf->dns_upstream_addr.sin6_addr, a.addr, 16);
        } else {
                struct sockaddr_in *s4 = (struct sockaddr_in *) &cf->dns_upstream_addr;
                s4->sin_family = AF_INET;
                s4->sin_port = htons(port);
                memcpy(&s4->sin_addr, a.addr + 12, 4);
        }
        snprintf(cf->dns_upstream, sizeof(cf->dns_upstream), "%s", c->value);
        return 0;
}

static int add_deny_net(struct inikey_ctx *c, const char *w) {
        struct config *cf = config_of(c);
        struct netdeny_net e = { .reason = ND_CONFIGURED };
        if (cf->n_net_deny >= NETDENY_MAX / 2)
                return FAIL(c, "network_deny: more than %d entries", NETDENY_MAX / 2);
        if (netdeny_parse_cidr(w, e.addr, &e.prefix) < 0)
                return FAIL(c, "network_deny: '%s' is not an IPv4 or IPv6 address or network (e.g. 10.0.0.0/8, fd00::/8; "
                               "no bits set past the prefix)", w);
        struct netdeny_net *n = realloc(cf->net_deny, (cf->n_net_deny + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        cf->net_deny = n;
        cf->net_deny[cf->n_net_deny++] = e;
        return 0;
}

/* network_deny: networks no restricted job reaches, with the fixed ones
 * (netdeny.h). */
int config_net_deny(struct inikey_ctx *c) {
        if (!c->continuation)
                config_of(c)->n_net_deny = 0;
        return config_each_word(c, add_deny_net);
}

/* network_max_names: distinct names one restricted job may have the DNS
 * proxy forward; each name it resolves may carry data out to whoever
 * serves the zone. */
int config_net_max_names(struct inikey_ctx *c) {
        uint64_t n;
        if (parse_uint64(c->value, 65536, &n) < 0 || n == 0)
                return FAIL(c, "network_max_names: expected a number from 1 to 65536, got '%s'", c->value);
        config_tenant(c)->net_max_names = n;
        return 0;
}

int config_net_check(const struct config *c, struct sbx_error *err) {
        struct netdeny *nd = calloc(1, sizeof(*nd));
        int r = nd ? netdeny_add_fixed(nd) : -ENOMEM;
        if (r == 0 && c->net_pool) {
                uint8_t a[16] = { [10] = 0xff, [11] = 0xff };
                memcpy(a + 12, &c->net_pool, 4);
                r = netdeny_add(nd, a, 96 + c->net_pool_prefix, ND_POOL);
        }
        if (r == 0 && c->net_pool6_prefix)
                r = netdeny_add(nd, c->net_pool6, c->net_pool6_prefix, ND_POOL);
        for (size_t i = 0; r == 0 && i < c->n_net_deny; i++)
                r = netdeny_add(nd, c->net_deny[i].addr, c->net_deny[i].prefix, ND_CONFIGURED);
        if (r < 0) {
                free(nd);
                return sbx_error_set(err, r, "network_deny");
        }
        /* the host's own addresses are known only at start: a job's entry
         * naming one is refused then (policy.c) */
        for (size_t i = 0; i < c->n_tenants; i++) {
                const struct tenant *t = &c->tenants[i];
                for (size_t k = 0; k < t->n_net_allow; k++) {
                        enum netdeny_reason why = netdeny_covers(nd, &t->net_allow[k]);
                        if (why == ND_NONE)
                                continue;
                        char e[NETPOLICY_HOST_MAX + 64];
                        netpolicy_format_allow(&t->net_allow[k], e, sizeof(e));
                        free(nd);
                        return sbx_error_msg(err, EINVAL,
                                             "%s: [tenant.%s] network_allow: %s reaches only addresses restricted jobs never reach (%s)",
                                             t->origin, t->name, e, netdeny_reason_name(why));
                }
        }
        free(nd);
        return 0;
}

int config_net_modes(struct inikey_ctx *c) {
        if (!c->continuation)
                config_tenant(c)->net_modes = 0;
        return config_each_word(c, add_net);
}

