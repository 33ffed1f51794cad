/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <ifaddrs.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "dnsproxy.h"
#include "jobevents.h"
#include "log.h"
#include "netaudit-bpf.h"
#include "netjob.h"
#include "netremote.h"
#include "netveth.h"
#include "profile.h"

/* The host's addresses are read again this often: an address added
 * since is denied from then on (a restart of the interface's DHCP, say). */
#define DENY_REFRESH_MS 10000

/* The host's addresses now, as the helper lists them. */
static int deny_host_remote(const struct netpriv *np, struct netdeny *nd) {
        uint32_t count = 1;
        for (uint32_t i = 0; i < count; i++) {
                uint8_t a[16];
                int r = np->host_addr(np->arg, i, a, &count);
                if (r == -ENOENT && i == 0)
                        return 0; /* no address at all */
                if (r < 0)
                        return r;
                /* the veths' host ends are in the pool already */
                if (netdeny_match(nd, a) == ND_NONE && (r = netdeny_add(nd, a, 128, ND_HOST)) < 0)
                        return r;
        }
        return 0;
}

/* What restricted jobs never reach: the fixed classes, the pools,
 * network_deny, and the host's addresses now (listed by the helper when
 * there is one: the front may have no netlink socket). */
static int deny_build(const struct config *cf, const struct netpriv *np, struct netdeny *nd) {
        struct ifaddrs *ifa = NULL;
        int r;
        nd->n = 0;
        if ((r = netdeny_add_fixed(nd)) < 0)
                return r;
        if (cf->net_pool) {
                uint8_t a[16] = { [10] = 0xff, [11] = 0xff };
                memcpy(a + 12, &cf->net_pool, 4);
                if ((r = netdeny_add(nd, a, 96 + cf->net_pool_prefix, ND_POOL)) < 0)
                        return r;
        }
        if (cf->net_pool6_prefix && (r = netdeny_add(nd, cf->net_pool6, cf->net_pool6_prefix, ND_POOL)) < 0)
                return r;
        for (size_t i = 0; i < cf->n_net_deny; i++)
                if ((r = netdeny_add(nd, cf->net_deny[i].addr, cf->net_deny[i].prefix, ND_CONFIGURED)) < 0)
                        return r;
        if (np && np->host_addr)
                return deny_host_remote(np, nd);
        if (getifaddrs(&ifa) < 0)
                return -errno;
        for (struct ifaddrs *i = ifa; i && r == 0; i = i->ifa_next) {
                uint8_t a[16] = { [10] = 0xff, [11] = 0xff };
                if (!i->ifa_addr)
                        continue;
                if (i->ifa_addr->sa_family == AF_INET)
                        memcpy(a + 12, &((const struct sockaddr_in *) i->ifa_addr)->sin_addr, 4);
                else if (i->ifa_addr->sa_family == AF_INET6)
                        memcpy(a, &((const struct sockaddr_in6 *) i->ifa_addr)->sin6_addr, 16);
                else
                        continue;
                /* the veths' host ends are in the pool already */
                if (netdeny_match(nd, a) == ND_NONE)
                        r = netdeny_add(nd, a, 128, ND_HOST);
        }
        freeifaddrs(ifa);
        return r;
}

/* Field by field: the padding of an entry is nobody's. */
static bool same(const struct netdeny *a, const struct netdeny *b) {
        if (a->n != b->n)
                return false;
        for (size_t i = 0; i < a->n; i++)
                if (a->nets[i].prefix != b->nets[i].prefix || a->nets[i].reason != b->nets[i].reason ||
                    memcmp(a->nets[i].addr, b->nets[i].addr, 16) != 0)
                        return false;
        return true;
}

/* Read the host's addresses again; the programs' map follows. */
static void deny_refresh(struct daemon *d, bool first) {
        struct netdeny *nd = calloc(1, sizeof(*nd));
        int r = nd ? deny_build(d->cfg, d->netpriv, nd) : -ENOMEM;
        if (r == 0 && !first && same(nd, d->net_deny)) {
                free(nd);
                return;
        }
        if (r == 0)
                r = d->netremote ? netremote_deny_set(d->netremote, nd) : netaudit_deny_set(d->netaudit, nd);
        if (r < 0)
                log_warning("network: the set of addresses restricted jobs never reach could not be %s: %s%s", first ? "loaded" : "updated",
                            strerror(-r), first ? "" : " (the last one stays)");
        else {
                if (!first)
                        log_debug("network: the host's addresses changed: %zu prefixes denied to restricted jobs", nd->n);
                free(d->net_deny);
                d->net_deny = nd;
                d->caps.net_deny = nd;
                nd = NULL;
        }
        free(nd);
}

void netjob_tick(struct daemon *d) {
        uint64_t now = now_mono_ms();
        if ((!d->netaudit && !d->netremote) || !d->net_deny || now < d->net_deny_next_ms)
                return;
        d->net_deny_next_ms = now + DENY_REFRESH_MS;
        deny_refresh(d, false);
}

void netjob_setup(struct daemon *d) {
        struct sbx_error err;
        sbx_error_clear(&err);
        d->caps.net_audit = false;
        d->caps.no_restricted_why = "it cannot load its eBPF programs (see the network audit)";
        if (!d->cg.enabled && !d->netpriv) { /* the helper's job cgroups, with a netpriv */
                d->caps.no_net_audit_why = "it has no job cgroups to attach the eBPF programs to";
                d->caps.no_restricted_why = d->caps.no_net_audit_why;
                return;
        }
        int r;
        if (d->netpriv)
                /* sbx-privd loaded the programs, or says why it could not */
                r = netremote_open(d->netpriv, &d->netremote, &err);
        else if (geteuid() != 0) {
                d->caps.no_net_audit_why = "it does not run as root, which loading eBPF programs needs";
                d->caps.no_restricted_why = d->caps.no_net_audit_why;
                return;
        } else
                r = netaudit_open(d->cfg->network_ring, &d->netaudit, &err);
        if (r < 0) {
                snprintf(d->no_net_audit_why, sizeof(d->no_net_audit_why), "%s", err.msg);
                d->caps.no_net_audit_why = d->no_net_audit_why;
                log_warning("network audit unavailable: %s; jobs asking for it are refused", err.msg);
                return;
        }
        /* restricted jobs only with the deny set in place: fail closed */
        deny_refresh(d, true);
        if (!d->net_deny) {
                netaudit_close(d->netaudit);
                d->netaudit = NULL;
                netremote_close(d->netremote);
                d->netremote = NULL;
                snprintf(d->no_net_audit_why, sizeof(d->no_net_audit_why), "it cannot load the addresses restricted jobs never reach");
                d->caps.no_net_audit_why = d->no_net_audit_why;
                d->caps.no_restricted_why = d->no_net_audit_why;
                return;
        }
        d->net_deny_next_ms = now_mono_ms() + DENY_REFRESH_MS;
        d->caps.net_audit = true;
        log_info("network audit: eBPF programs loaded%s (ring buffer %llu bytes, %llu events kept per job)",
                 d->netremote ? " by sbx-privd" : "", (unsigned long long) d->cfg->network_ring,
                 (unsigned long long) d->cfg->network_events);
        netveth_setup(d);
}

void netjob_teardown(struct daemon *d) {
        netaudit_close(d->netaudit);
        d->netaudit = NULL;
        netremote_close(d->netremote);
        d->netremote = NULL;
        free(d->net_deny);
        d->net_deny = NULL;
        d->caps.net_deny = NULL;
        netveth_teardown(d);
}

/* Capabilities that would let a job send around the programs from a
 * network namespace of its own: raw and packet sockets (no cgroup hook
 * sees them; packet sockets are not even INET), and devices, tunnels and
 * routes whose kernel sockets send for it (CAP_NET_ADMIN, or CAP_SYS_ADMIN,
 * which the kernel takes for it in places). */
static const int net_caps[] = { CAP_NET_RAW, CAP_NET_ADMIN, CAP_SYS_ADMIN };

int netjob_profile_policy(const struct daemon_caps *caps, const char *profile_name, const char *path, struct policy_decision *pol,
                          char *msg, size_t len) {
        struct profile p;
        struct sbx_error err;
        int r = 0;
        profile_init(&p);
        sbx_error_clear(&err);
        if (profile_load_file(&p, path, &err) < 0) {
                profile_free(&p);
                /* not readable here: the launcher, reading the same file,
                 * refuses an audit = yes in it; a restricted job cannot be
                 * checked, so it does not run */
                if (pol->net != NET_RESTRICTED)
                        return 0;
                snprintf(msg, len, "profile '%s' cannot be checked for a restricted job: %s", profile_name, err.msg);
                return -EINVAL;
        }
        for (size_t i = 0; pol->net == NET_RESTRICTED && r == 0 && i < p.n_caps; i++)
                for (size_t k = 0; k < ARRAY_SIZE(net_caps); k++)
                        if (p.caps[i] == net_caps[k]) {
                                snprintf(msg, len, "profile '%s' keeps %s, with which a restricted job could send around its allowlist",
                                         profile_name, k == 0 ? "CAP_NET_RAW" : k == 1 ? "CAP_NET_ADMIN" : "CAP_SYS_ADMIN");
                                r = -EPERM;
                        }
        if (r == 0 && p.net_audit && !pol->net_audit) {
                if (!caps->net_audit) {
                        snprintf(msg, len, "profile '%s' says [net] audit = yes: this daemon cannot audit network use (%s)", profile_name,
                                 caps->no_net_audit_why ? caps->no_net_audit_why : "no eBPF network audit");
                        r = -EOPNOTSUPP;
                } else
                        pol->net_audit = true;
        }
        profile_free(&p);
        return r;
}

/* CLOCK_BOOTTIME (the programs' clock) to CLOCK_REALTIME milliseconds. */
static uint64_t boot_to_real_ms(uint64_t boot_ns) {
        struct timespec b, rt;
        clock_gettime(CLOCK_BOOTTIME, &b);
        clock_gettime(CLOCK_REALTIME, &rt);
        int64_t now_boot = (int64_t) b.tv_sec * 1000000000 + b.tv_nsec;
        int64_t now_real = (int64_t) rt.tv_sec * 1000000000 + rt.tv_nsec;
        int64_t real = now_real - (now_boot - (int64_t) boot_ns);
        return real > 0 ? (uint64_t) real / 1000000 : 0;
}

static void on_event(void *arg, const struct netaudit_event *e) {
        struct rjob *rj = arg;
        metrics_net_event(&rj->d->metrics, e->kind, e->verdict);
        json_t *ev = netevents_add(&rj->net, e, boot_to_real_ms(e->boot_ns), dnsproxy_name_of(rj, e), NULL);
        /* Followers get what the record keeps, so a flood of attempts
         * costs them no more than the record's bound. */
        if (ev)
                job_tell_event(rj, proto_ev_network(rj->j.id, ev), 0, 0);
        json_decref(ev);
}

int netjob_start(struct rjob *rj, char *msg, size_t len) {
        struct daemon *d = rj->d;
        struct sbx_error err;
        if (!rj->j.pol.net_audit)
                return 0;
        /* The policy let it through only where the audit is loaded. */
        if (!d->netaudit && !d->netremote) {
                snprintf(msg, len, "network audit: not available in this daemon (%s)", d->caps.no_net_audit_why);
                return -EOPNOTSUPP;
        }
        if (rj->cgroup_fd < 0) {
                snprintf(msg, len, "network audit: the job has no cgroup of its own to attach it to");
                return -EOPNOTSUPP;
        }
        sbx_error_clear(&err);
        /* A restricted job's policy: its own entries and deny-ports, and
         * its tenant's deny-ports (the policy checked they fit). */
        struct netpolicy pol;
        if (rj->j.pol.net == NET_RESTRICTED) {
                if (rj->j.req.run.netpol)
                        pol = *rj->j.req.run.netpol;
                else
                        memset(&pol, 0, sizeof(pol));
                if (netpolicy_add_deny(&pol, rj->j.tenant->net_deny, rj->j.tenant->n_net_deny) < 0) {
                        snprintf(msg, len, "network: more deny-ports than %d with the tenant's", NETPOLICY_MAX_DENY);
                        return -E2BIG;
                }
        }
        uint64_t t0 = now_mono_us();
        const struct netpolicy *p = rj->j.pol.net == NET_RESTRICTED ? &pol : NULL;
        int r = d->netremote ? netremote_attach(d->netremote, rj->ph, rj->cgroup_fd, p, d->cfg->network_events, on_event, rj,
                                                &rj->net_ratt, &err) :
                               netaudit_attach(d->netaudit, rj->cgroup_fd, p, d->cfg->network_events, on_event, rj, &rj->net_att, &err);
        log_debug(JOB_LOG ": network audit attached in %llu us", JOB_LOG_ARGS(&rj->j), (unsigned long long) (now_mono_us() - t0));
        if (r < 0) {
                snprintf(msg, len, "%s", err.msg);
                return r;
        }
        rj->net_audited = true;
        return 0;
}

void netjob_end(struct rjob *rj) {
        uint64_t lost = 0, dropped = 0;
        netveth_end(rj);
        if (rj->net_ratt) {
                netremote_detach(rj->d->netremote, rj->net_ratt, &lost, &dropped);
                rj->net_ratt = NULL;
        } else if (rj->net_att) {
                netaudit_detach(rj->d->netaudit, rj->net_att, &lost, &dropped);
                rj->net_att = NULL;
        } else
                return;
        rj->net.lost += lost;
        rj->net.dropped += dropped;
        if (lost)
                log_warning("job %s: network audit: %llu events lost (the ring buffer was full; network_ring is %llu bytes)", rj->j.id,
                            (unsigned long long) lost, (unsigned long long) rj->d->cfg->network_ring);
}

int netjob_allow_addr(struct rjob *rj, const uint8_t addr[16], const struct np_rule *rules, size_t n) {
        if (rj->net_ratt)
                return netremote_allow_addr(rj->d->netremote, rj->net_ratt, addr, rules, n);
        return rj->net_att ? netaudit_allow_addr(rj->d->netaudit, rj->net_att, addr, rules, n) : -ENOTCONN;
}
