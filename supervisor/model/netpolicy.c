/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy.h"
#include "util.h"

#define ENTRY_MAX 300 /* bytes of one entry's text */

static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

/* "1".."65535"; with zero_ok, "0" too. */
static int parse_port(const char *s, bool zero_ok, uint16_t *ret) {
        char *end;
        if (!isdigit((unsigned char) s[0]) || strlen(s) > 5)
                return -EINVAL;
        unsigned long v = strtoul(s, &end, 10);
        if (*end || v > 65535 || (v == 0 && !zero_ok))
                return -EINVAL;
        *ret = (uint16_t) v;
        return 0;
}

static int ports_of(const char *s, uint16_t *lo, uint16_t *hi) {
        char buf[16];
        if (streq(s, "*")) {
                *lo = 0;
                *hi = 65535;
                return 0;
        }
        if (strlen(s) >= sizeof(buf))
                return -EINVAL;
        snprintf(buf, sizeof(buf), "%s", s);
        char *dash = strchr(buf, '-');
        if (!dash)
                return parse_port(buf, false, lo) < 0 ? -EINVAL : (*hi = *lo, 0);
        *dash = '\0';
        if (parse_port(buf, false, lo) < 0 || parse_port(dash + 1, false, hi) < 0 || *lo > *hi)
                return -EINVAL;
        return 0;
}

int netpolicy_parse_ports(const char *s, struct np_range *ret, struct sbx_error *err) {
        if (streq(s, "*") || ports_of(s, &ret->lo, &ret->hi) < 0)
                return sbx_error_msg(err, EINVAL, "deny-port '%.32s': expected a port (1 to 65535) or a range LOW-HIGH", s);
        return 0;
}

/* RFC 1123 names: labels of letters, digits and '-', neither first nor
 * last, 1 to 63 bytes; "*." in front for a wildcard (caps); lower-cased. */
static bool hostname_ok(const char *s, char *out) {
        size_t n = strlen(s), label = 0;
        const char *p = s;
        if (n == 0 || n > NETPOLICY_HOST_MAX)
                return false;
        if (strncmp(p, "*.", 2) == 0)
                p += 2;
        if (!*p)
                return false;
        bool all_numeric = true;
        for (const char *c = p; *c; c++) {
                if (*c == '.') {
                        if (label == 0 || c[-1] == '-')
                                return false;
                        label = 0;
                        continue;
                }
                if (!isalnum((unsigned char) *c) && *c != '-')
                        return false;
                if (*c == '-' && label == 0)
                        return false;
                if (!isdigit((unsigned char) *c))
                        all_numeric = false;
                if (++label > 63)
                        return false;
        }
        /* 300.1.2.3 is a bad address, not a name */
        if (label == 0 || p[strlen(p) - 1] == '-' || all_numeric)
                return false;
        for (size_t i = 0; i <= n; i++)
                out[i] = (char) tolower((unsigned char) s[i]);
        return true;
}

static void mask(uint8_t addr[16], unsigned prefix) {
        for (unsigned i = 0; i < 16; i++) {
                unsigned keep = prefix > i * 8 ? prefix - i * 8 : 0;
                if (keep < 8)
                        addr[i] &= (uint8_t) (0xff00u >> keep);
        }
}

/* DEST of an entry: an address, a CIDR or a name. */
static int parse_dest(const char *d, bool bracketed, struct np_allow *a, const char *whole, struct sbx_error *err) {
        char buf[ENTRY_MAX + 1];
        snprintf(buf, sizeof(buf), "%s", d);
        char *slash = strchr(buf, '/');
        unsigned long plen = 0;
        if (slash) {
                char *end;
                *slash = '\0';
                if (!isdigit((unsigned char) slash[1]) || strlen(slash + 1) > 3 || (plen = strtoul(slash + 1, &end, 10), *end))
                        return sbx_error_msg(err, EINVAL, "allow '%s': bad prefix length '/%s'", whole, slash + 1);
        }
        uint8_t v4[4];
        if (!bracketed && inet_pton(AF_INET, buf, v4) == 1) {
                if (slash && plen > 32)
                        return sbx_error_msg(err, EINVAL, "allow '%s': an IPv4 prefix is /0 to /32", whole);
                memcpy(a->addr, v4_mapped, 12);
                memcpy(a->addr + 12, v4, 4);
                a->prefix = 96 + (unsigned) (slash ? plen : 32);
        } else if (inet_pton(AF_INET6, buf, a->addr) == 1) {
                if (slash && plen > 128)
                        return sbx_error_msg(err, EINVAL, "allow '%s': an IPv6 prefix is /0 to /128", whole);
                a->v6 = true;
                a->prefix = (unsigned) (slash ? plen : 128);
        } else if (!slash && !bracketed && hostname_ok(buf, a->host)) {
                a->is_host = true;
                a->prefix = 0;
                return 0;
        } else {
                return sbx_error_msg(err, EINVAL, "allow '%s': '%s' is not an IPv4 or IPv6 address, a CIDR or a hostname", whole,
                                     d);
        }
        uint8_t masked[16];
        memcpy(masked, a->addr, 16);
        mask(masked, a->prefix);
        if (memcmp(masked, a->addr, 16) != 0) {
                char fixed[INET6_ADDRSTRLEN];
                if (a->v6)
                        inet_ntop(AF_INET6, masked, fixed, sizeof(fixed));
                else
                        inet_ntop(AF_INET, masked + 12, fixed, sizeof(fixed));
                return sbx_error_msg(err, EINVAL, "allow '%s': the address has bits set past its /%lu prefix (the network is %s/%lu)",
                                     whole, plen, fixed, plen);
        }
        return 0;
}

int netpolicy_parse_allow(const char *s, struct np_allow *ret, struct sbx_error *err) {
        char buf[ENTRY_MAX + 1];
        struct np_allow a = { .protos = NETPOLICY_TCP, .port_lo = 0, .port_hi = 65535 };
        size_t n = strlen(s);
        if (n == 0)
                return sbx_error_msg(err, EINVAL, "allow: an empty entry");
        if (n > ENTRY_MAX)
                return sbx_error_msg(err, EINVAL, "allow '%.40s...': longer than %d bytes", s, ENTRY_MAX);
        memcpy(buf, s, n + 1);
        for (size_t i = 0; i < n; i++)
                if (!isgraph((unsigned char) buf[i]))
                        return sbx_error_msg(err, EINVAL, "allow '%.64s': spaces and control characters are not allowed", s);

        /* /tcp, /udp, /any at the end; any other '/' is a prefix length */
        char *slash = strrchr(buf, '/');
        if (slash && (streq(slash, "/tcp") || streq(slash, "/udp") || streq(slash, "/any"))) {
                a.protos = streq(slash, "/tcp") ? NETPOLICY_TCP : streq(slash, "/udp") ? NETPOLICY_UDP : NETPOLICY_TCP | NETPOLICY_UDP;
                *slash = '\0';
        }
        char *dest = buf, *ports = NULL;
        bool bracketed = false;
        if (buf[0] == '[') {
                char *close = strchr(buf, ']');
                if (!close)
                        return sbx_error_msg(err, EINVAL, "allow '%s': '[' without ']'", s);
                *close = '\0';
                dest = buf + 1;
                bracketed = true;
                if (close[1] == ':')
                        ports = close + 2;
                else if (close[1])
                        return sbx_error_msg(err, EINVAL, "allow '%s': expected ':PORTS' or '/PROTO' after ']'", s);
        } else {
                char *colon = strchr(buf, ':');
                /* More than one ':' without brackets: an IPv6 address
                 * without a port. */
                if (colon && !strchr(colon + 1, ':')) {
                        *colon = '\0';
                        ports = colon + 1;
                }
        }
        if (ports && ports_of(ports, &a.port_lo, &a.port_hi) < 0)
                return sbx_error_msg(err, EINVAL, "allow '%s': bad port '%s' (a port 1 to 65535, a range LOW-HIGH, or *)", s, ports);
        int r = parse_dest(dest, bracketed, &a, s, err);
        if (r < 0)
                return r;
        *ret = a;
        return 0;
}

void netpolicy_format_ports(const struct np_range *r, char *buf, size_t len) {
        if (r->lo == 0 && r->hi == 65535)
                snprintf(buf, len, "*");
        else if (r->lo == r->hi)
                snprintf(buf, len, "%u", (unsigned) r->lo);
        else
                snprintf(buf, len, "%u-%u", (unsigned) r->lo, (unsigned) r->hi);
}

void netpolicy_format_allow(const struct np_allow *a, char *buf, size_t len) {
        char dest[NETPOLICY_HOST_MAX + 16], ip[INET6_ADDRSTRLEN], ports[16];
        struct np_range pr = { a->port_lo, a->port_hi };
        const char *proto = a->protos == NETPOLICY_TCP ? "tcp" : a->protos == NETPOLICY_UDP ? "udp" : "any";
        if (a->is_host)
                snprintf(dest, sizeof(dest), "%s", a->host);
        else if (a->v6) {
                inet_ntop(AF_INET6, a->addr, ip, sizeof(ip));
                if (a->prefix == 128)
                        snprintf(dest, sizeof(dest), "[%s]", ip);
                else
                        snprintf(dest, sizeof(dest), "[%s/%u]", ip, a->prefix);
        } else {
                inet_ntop(AF_INET, a->addr + 12, ip, sizeof(ip));
                if (a->prefix == 128)
                        snprintf(dest, sizeof(dest), "%s", ip);
                else
                        snprintf(dest, sizeof(dest), "%s/%u", ip, a->prefix - 96);
        }
        netpolicy_format_ports(&pr, ports, sizeof(ports));
        snprintf(buf, len, "%s:%s/%s", dest, ports, proto);
}

/* Is addr inside the prefix net/prefix? */
static bool in_prefix(const uint8_t addr[16], const uint8_t net[16], unsigned prefix) {
        uint8_t m[16];
        memcpy(m, addr, 16);
        mask(m, prefix);
        return memcmp(m, net, 16) == 0;
}

static bool host_within(const char *host, const char *cap) {
        if (streq(host, cap))
                return true;
        if (strncmp(cap, "*.", 2) != 0)
                return false;
        size_t hl = strlen(host), sl = strlen(cap + 1); /* ".suffix" */
        return hl > sl && streq(host + hl - sl, cap + 1) && strncmp(host, "*.", 2) != 0;
}

bool netpolicy_allow_within(const struct np_allow *a, const struct np_allow *cap) {
        if ((a->protos & ~cap->protos) != 0 || a->port_lo < cap->port_lo || a->port_hi > cap->port_hi)
                return false;
        if (a->is_host || cap->is_host) {
                if (!a->is_host || !cap->is_host)
                        return false;
                /* a wildcard only within a wildcard: *.a.zone within
                 * *.zone (every name it admits, *.zone admits) */
                if (strncmp(a->host, "*.", 2) == 0 && strncmp(cap->host, "*.", 2) == 0) {
                        size_t hl = strlen(a->host + 1), sl = strlen(cap->host + 1);
                        return hl >= sl && streq(a->host + 1 + hl - sl, cap->host + 1);
                }
                return host_within(a->host, cap->host);
        }
        return cap->prefix <= a->prefix && in_prefix(a->addr, cap->addr, cap->prefix);
}

int netpolicy_check_caps(const struct netpolicy *p, const struct np_allow *caps, size_t n, const char *tenant,
                         struct sbx_error *err) {
        for (size_t i = 0; i < p->n_allow; i++) {
                bool ok = false;
                for (size_t k = 0; k < n && !ok; k++)
                        ok = netpolicy_allow_within(&p->allow[i], &caps[k]);
                if (!ok) {
                        char e[NETPOLICY_HOST_MAX + 64];
                        netpolicy_format_allow(&p->allow[i], e, sizeof(e));
                        return sbx_error_msg(err, EPERM, "field 'network.allow[%zu]': %s is beyond tenant '%s''s network_allow", i,
                                             e, tenant);
                }
        }
        return 0;
}

int netpolicy_add_deny(struct netpolicy *p, const struct np_range *deny, size_t n) {
        if (p->n_deny + n > NETPOLICY_MAX_DENY)
                return -E2BIG;
        memcpy(p->deny + p->n_deny, deny, n * sizeof(*deny));
        p->n_deny += n;
        return 0;
}

bool netpolicy_has_hosts(const struct netpolicy *p) {
        for (size_t i = 0; i < p->n_allow; i++)
                if (p->allow[i].is_host)
                        return true;
        return false;
}

bool netpolicy_host_allowed(const struct netpolicy *p, const char *host) {
        for (size_t i = 0; i < p->n_allow; i++)
                if (p->allow[i].is_host && host_within(host, p->allow[i].host))
                        return true;
        return false;
}

size_t netpolicy_rules_for(const struct netpolicy *p, const uint8_t addr[16], const char *host, struct np_rule *out) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_allow; i++) {
                const struct np_allow *a = &p->allow[i];
                bool applies = a->is_host ? host_within(host, a->host) : in_prefix(addr, a->addr, a->prefix);
                if (applies)
                        out[n++] = (struct np_rule) { a->port_lo, a->port_hi, a->protos };
        }
        return n;
}

size_t netpolicy_lpm(const struct netpolicy *p, struct np_lpm *out) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_allow; i++) {
                const struct np_allow *d = &p->allow[i];
                if (d->is_host)
                        continue;
                bool seen = false;
                for (size_t k = 0; k < n && !seen; k++)
                        seen = out[k].prefix == d->prefix && memcmp(out[k].addr, d->addr, 16) == 0;
                if (seen)
                        continue;
                struct np_lpm *e = &out[n++];
                memset(e, 0, sizeof(*e));
                memcpy(e->addr, d->addr, 16);
                e->prefix = d->prefix;
                /* every entry whose prefix holds this one: a longest match
                 * on it must still admit what they admit */
                for (size_t k = 0; k < p->n_allow; k++) {
                        const struct np_allow *f = &p->allow[k];
                        if (f->is_host || f->prefix > d->prefix || !in_prefix(d->addr, f->addr, f->prefix))
                                continue;
                        e->rules[e->n_rules++] = (struct np_rule) { f->port_lo, f->port_hi, f->protos };
                }
        }
        return n;
}

bool netpolicy_admits(const struct netpolicy *p, const uint8_t addr[16], uint16_t port, unsigned proto) {
        static const uint8_t lo6[16] = { [15] = 1 };
        for (size_t i = 0; i < p->n_deny; i++)
                if (port >= p->deny[i].lo && port <= p->deny[i].hi)
                        return false;
        /* the job's own loopback, in its own network namespace */
        if (memcmp(addr, lo6, 16) == 0 || (memcmp(addr, v4_mapped, 12) == 0 && addr[12] == 127))
                return true;
        struct np_lpm lpm[NETPOLICY_MAX_ALLOW];
        size_t n = netpolicy_lpm(p, lpm);
        const struct np_lpm *best = NULL;
        for (size_t i = 0; i < n; i++)
                if (in_prefix(addr, lpm[i].addr, lpm[i].prefix) && (!best || lpm[i].prefix > best->prefix))
                        best = &lpm[i];
        if (!best)
                return false;
        for (size_t i = 0; i < best->n_rules; i++)
                if ((best->rules[i].protos & proto) && port >= best->rules[i].lo && port <= best->rules[i].hi)
                        return true;
        return false;
}

int netpolicy_url_endpoint(const char *url, char *buf, size_t len, struct sbx_error *err) {
        const char *p;
        unsigned port;
        if (strncmp(url, "http://", 7) == 0) {
                p = url + 7;
                port = 80;
        } else if (strncmp(url, "https://", 8) == 0) {
                p = url + 8;
                port = 443;
        } else
                return sbx_error_msg(err, EINVAL, "'%.128s': not an http:// or https:// URL", url);
        size_t n = strcspn(p, "/?#");
        char auth[300];
        if (n == 0 || n >= sizeof(auth) || p[n] != '/')
                return sbx_error_msg(err, EINVAL, "'%.128s': a host, then a path", url);
        memcpy(auth, p, n);
        auth[n] = '\0';
        if (strchr(auth, '@'))
                return sbx_error_msg(err, EINVAL, "'%.128s': no user or password in it", url);
        char *colon = auth[0] == '[' ? strstr(auth, "]:") : strrchr(auth, ':');
        if (colon) {
                char *e, *ps = colon + (auth[0] == '[' ? 2 : 1);
                unsigned long v = strtoul(ps, &e, 10);
                if (!*ps || *e || v == 0 || v > 65535)
                        return sbx_error_msg(err, EINVAL, "'%.128s': a port is 1 to 65535", url);
                port = (unsigned) v;
                colon[auth[0] == '[' ? 1 : 0] = '\0';
        }
        if (!auth[0] || (auth[0] == '[' && auth[strlen(auth) - 1] != ']'))
                return sbx_error_msg(err, EINVAL, "'%.128s': no host", url);
        snprintf(buf, len, "%s:%u", auth, port);
        return 0;
}
