/* SPDX-License-Identifier: Apache-2.0 */
/* The network audit in the helper, over priv/netaudit-core.h: the
 * programs loaded once at start, the ring buffer handed to the front once,
 * a job's programs attached before it runs, its allow entries, the deny
 * map every job shares, and the job's counters at the end. The front
 * says what a job may reach (it holds the tenants' policies); the helper
 * holds the bounds: one attachment per job and only before SPAWN, the
 * job's own handle, at most NETAUDIT_JOB_ALLOW prefixes a job, and a deny
 * set of its own that the front can add to but not take from. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "macro.h"
#include "netaudit-core.h"
#include "netdeny.h"
#include "privd.h"

_Static_assert(PRIVD_AUDIT_DENY_MAX == NETAUDIT_MAX_DENY, "a job's deny ranges");
_Static_assert(NETDENY_MAX == NETAUDIT_MAX_DENY_NETS, "the deny map's size");

struct privd_audit {
        struct netaudit_bpf *skel;
        bool ring_given;          /* NET_RING answered (once) */
        struct netdeny own;       /* the helper's: never taken out */
        struct netdeny set;       /* what the deny map holds: own and the front's */
};

/* libbpf's warnings (why a load or an attach failed) as the helper's
 * lines; its debug output is dropped. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
        char buf[512];
        if (level == LIBBPF_DEBUG)
                return 0;
        vsnprintf(buf, sizeof(buf), fmt, ap);
        buf[strcspn(buf, "\n")] = '\0';
        privd_log("libbpf: %s", buf);
        return 0;
}

static int own_pool(struct privd_audit *a, const struct privd_conf *c) {
        uint8_t addr[16] = { [10] = 0xff, [11] = 0xff };
        int r = 0;
        if (c->net_pool_prefix) {
                memcpy(addr + 12, &c->net_pool, 4);
                r = netdeny_add(&a->own, addr, 96 + c->net_pool_prefix, ND_POOL);
        }
        if (r == 0 && c->net_pool6_prefix)
                r = netdeny_add(&a->own, c->net_pool6, c->net_pool6_prefix, ND_POOL);
        return r;
}

int privd_audit_setup(struct privd *p, char *msg, size_t len) {
        struct sbx_error err;
        sbx_error_clear(&err);
        struct privd_audit *a = calloc(1, sizeof(*a));
        if (!a) {
                snprintf(msg, len, "out of memory");
                return -ENOMEM;
        }
        libbpf_set_print(libbpf_print);
        int r = nacore_load(p->conf->audit_ring, &a->skel, &err);
        if (r < 0) {
                snprintf(msg, len, "%s", err.msg);
                free(a);
                return r;
        }
        if ((r = netdeny_add_fixed(&a->own)) < 0 || (r = own_pool(a, p->conf)) < 0) {
                snprintf(msg, len, "its own deny set: %s", strerror(-r));
                goto fail;
        }
        for (size_t i = 0; i < a->own.n; i++) {
                const struct netdeny_net *e = &a->own.nets[i];
                if ((r = nacore_deny_put(a->skel, e->addr, e->prefix, e->reason)) < 0) {
                        snprintf(msg, len, "the deny map: %s", strerror(-r));
                        goto fail;
                }
        }
        a->set = a->own;
        p->audit = a;
        privd_log("network audit: loaded, a ring of %llu bytes, %zu prefixes denied to every job",
                  (unsigned long long) p->conf->audit_ring, a->own.n);
        return 0;
fail:
        nacore_unload(a->skel);
        free(a);
        return r;
}

void privd_audit_teardown(struct privd *p) {
        if (!p->audit)
                return;
        nacore_unload(p->audit->skel);
        free(p->audit);
        p->audit = NULL;
}

void privd_audit_front_gone(struct privd *p) {
        /* The next front (listening mode) is the ring's one reader then:
         * it is the same user as the last, which could have passed its
         * descriptor on, but no one else. */
        if (p->audit)
                p->audit->ring_given = false;
}

static int no_audit(const struct privd_hdr *h) {
        return privd_refuse(h, -EOPNOTSUPP, "no network audit in this helper (see --net-audit)");
}

int privd_net_ring(struct privd *p, const struct privd_hdr *h, struct privd_reply *rep, int *ret_fd) {
        if (!p->audit)
                return no_audit(h);
        /* One reader: a second descriptor would be a second consumer
         * moving the same position. */
        if (p->audit->ring_given)
                return privd_refuse(h, -EALREADY, "the ring buffer was handed over already");
        int fd = fcntl(nacore_ring_fd(p->audit->skel), F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return privd_refuse(h, -errno, "ring buffer");
        p->audit->ring_given = true;
        rep->ring_bytes = (uint32_t) p->conf->audit_ring;
        *ret_fd = fd;
        return 0;
}

int privd_net_audit(struct privd *p, const struct privd_net_audit *m) {
        const struct privd_hdr *h = &m->h;
        int r;
        if (!p->audit)
                return no_audit(h);
        struct pjob *j = privd_job_lookup(p, h, m->job, &r);
        if (!j)
                return r;
        if (j->audit_done)
                return privd_refuse(h, -EALREADY, "job %s: audited once already", j->name);
        /* Attached after the launcher started, the job would have run a
         * while unaudited and unrestricted. */
        if (j->state != PJOB_OPEN && j->state != PJOB_READY)
                return privd_refuse(h, -EPROTO, "job %s is %s: NET_AUDIT comes before SPAWN", j->name, privd_job_state_name(j->state));
        if (m->flags & ~PRIVD_AUDIT_ENFORCE)
                return privd_refuse(h, -EINVAL, "unknown flags %#x", m->flags & ~PRIVD_AUDIT_ENFORCE);
        if (m->n_deny > PRIVD_AUDIT_DENY_MAX)
                return privd_refuse(h, -E2BIG, "%u deny ranges (at most %u)", m->n_deny, PRIVD_AUDIT_DENY_MAX);
        struct netaudit_job val = { .flags = NETAUDIT_F_AUDIT, .budget = m->budget, .n_deny = m->n_deny };
        if (m->flags & PRIVD_AUDIT_ENFORCE)
                val.flags |= NETAUDIT_F_ENFORCE;
        for (uint32_t i = 0; i < PRIVD_AUDIT_DENY_MAX; i++) {
                const struct privd_port_range *d = &m->deny[i];
                if (i >= m->n_deny && (d->first || d->last))
                        return privd_refuse(h, -EINVAL, "deny range %u set past n_deny %u", i, m->n_deny);
                if (i < m->n_deny && d->first > d->last)
                        return privd_refuse(h, -EINVAL, "deny range %u: %u-%u", i, d->first, d->last);
                if (i < m->n_deny)
                        val.deny[i] = (struct netaudit_range) { d->first, d->last };
        }
        _cleanup_free_ struct nacore_att *att = malloc(sizeof(*att));
        if (!att)
                return privd_refuse(h, -ENOMEM, "job %s", j->name);
        struct sbx_error err;
        sbx_error_clear(&err);
        if ((r = nacore_init(att, j->cgroup_fd)) < 0 || (r = nacore_attach(p->audit->skel, att, j->cgroup_fd, &val, &err)) < 0) {
                nacore_drop(p->audit->skel, att, NULL, NULL);
                return privd_refuse(h, r, "job %s: %s", j->name, err.msg[0] ? err.msg : "its cgroup");
        }
        j->audit = TAKE_PTR(att);
        j->audit_done = true;
        return 0;
}

/* No bit of addr set past prefix: a prefix names one network. */
static bool masked(const uint8_t addr[16], unsigned prefix) {
        for (unsigned bit = prefix; bit < 128; bit++)
                if (addr[bit / 8] & (0x80u >> (bit % 8)))
                        return false;
        return true;
}

int privd_net_allow(struct privd *p, const struct privd_net_allow *m) {
        const struct privd_hdr *h = &m->h;
        int r;
        if (!p->audit)
                return no_audit(h);
        struct pjob *j = privd_job_lookup(p, h, m->job, &r);
        if (!j)
                return r;
        if (!j->audit)
                return privd_refuse(h, -EPROTO, "job %s is not audited (NET_AUDIT first; none after NET_UNAUDIT)", j->name);
        if (j->state != PJOB_OPEN && j->state != PJOB_READY && j->state != PJOB_SPAWNED)
                return privd_refuse(h, -EPROTO, "job %s is %s: no more entries", j->name, privd_job_state_name(j->state));
        if (m->reserved)
                return privd_refuse(h, -EINVAL, "reserved field set");
        if (m->prefix > 128 || !masked(m->addr, m->prefix))
                return privd_refuse(h, -EINVAL, "prefix /%u: more than 128 bits, or address bits set past it", m->prefix);
        if (m->proto != 0 && m->proto != IPPROTO_TCP && m->proto != IPPROTO_UDP)
                return privd_refuse(h, -EINVAL, "protocol %u (TCP, UDP or 0)", m->proto);
        if (m->port_first > m->port_last)
                return privd_refuse(h, -EINVAL, "ports %u-%u", m->port_first, m->port_last);
        if (!privd_caps_admit(p, m->addr, m->prefix, m->proto, m->port_first, m->port_last))
                return privd_refuse(h, -EPERM, "job %s: /%u ports %u-%u lies within no tenant's network_allow (--config)", j->name,
                                    m->prefix, m->port_first, m->port_last);
        struct netaudit_rule rule = {
                .lo = m->port_first,
                .hi = m->port_last,
                .protos = m->proto == IPPROTO_TCP ? NETAUDIT_TCP : m->proto == IPPROTO_UDP ? NETAUDIT_UDP : NETAUDIT_TCP | NETAUDIT_UDP,
        };
        r = nacore_allow(p->audit->skel, j->audit, m->addr, m->prefix, &rule, 1);
        if (r == -EDQUOT)
                return privd_refuse(h, r, "job %s: more than %u prefixes", j->name, NETAUDIT_JOB_ALLOW);
        if (r == -E2BIG)
                return privd_refuse(h, r, "job %s: more than %u rules for one prefix", j->name, NETAUDIT_MAX_RULES);
        if (r < 0)
                return privd_refuse(h, r, "job %s: the allow map", j->name);
        return 0;
}

static ssize_t deny_find(const struct netdeny *nd, const uint8_t addr[16], unsigned prefix) {
        for (size_t i = 0; i < nd->n; i++)
                if (nd->nets[i].prefix == prefix && memcmp(nd->nets[i].addr, addr, 16) == 0)
                        return (ssize_t) i;
        return -1;
}

int privd_net_deny(struct privd *p, const struct privd_net_deny *m) {
        const struct privd_hdr *h = &m->h;
        if (!p->audit)
                return no_audit(h);
        struct privd_audit *a = p->audit;
        if (m->reserved || m->reserved2)
                return privd_refuse(h, -EINVAL, "reserved field set");
        if (m->prefix > 128 || !masked(m->addr, m->prefix))
                return privd_refuse(h, -EINVAL, "prefix /%u: more than 128 bits, or address bits set past it", m->prefix);
        if (m->op == PRIVD_DENY_ADD) {
                if (m->reason == ND_NONE || m->reason >= ND_REASONS)
                        return privd_refuse(h, -EINVAL, "reason %u", m->reason);
                ssize_t i = deny_find(&a->set, m->addr, m->prefix);
                if (i >= 0 && a->set.nets[i].reason == m->reason)
                        return 0;
                if (i >= 0)
                        return privd_refuse(h, -EEXIST, "that prefix is denied already, as %s", netdeny_reason_name(a->set.nets[i].reason));
                if (a->set.n >= NETDENY_MAX)
                        return privd_refuse(h, -E2BIG, "more than %u prefixes", NETDENY_MAX);
                int r = nacore_deny_put(a->skel, m->addr, m->prefix, m->reason);
                if (r < 0)
                        return privd_refuse(h, r, "the deny map");
                return netdeny_add(&a->set, m->addr, m->prefix, m->reason);
        }
        if (m->op != PRIVD_DENY_DEL)
                return privd_refuse(h, -EINVAL, "op %u (ADD or DEL)", m->op);
        if (m->reason)
                return privd_refuse(h, -EINVAL, "a reason with DEL");
        if (deny_find(&a->own, m->addr, m->prefix) >= 0)
                return privd_refuse(h, -EPERM, "the helper's own prefix: it stays");
        ssize_t i = deny_find(&a->set, m->addr, m->prefix);
        if (i < 0)
                return privd_refuse(h, -ENOENT, "no such prefix in the set");
        int r = nacore_deny_del(a->skel, m->addr, m->prefix);
        if (r < 0 && r != -ENOENT)
                return privd_refuse(h, r, "the deny map");
        a->set.nets[i] = a->set.nets[--a->set.n];
        return 0;
}

int privd_net_unaudit(struct privd *p, const struct privd_job *m, struct privd_audit_reply *rep) {
        int r;
        if (!p->audit)
                return no_audit(&m->h);
        struct pjob *j = privd_job_lookup(p, &m->h, m->job, &r);
        if (!j)
                return r;
        if (!j->audit)
                return privd_refuse(&m->h, -EPROTO, "job %s is not audited", j->name);
        nacore_drop(p->audit->skel, j->audit, &rep->lost, &rep->dropped);
        free(j->audit);
        j->audit = NULL;
        return 0;
}

void privd_audit_job_end(struct privd *p, struct pjob *j) {
        if (!j->audit || !p->audit)
                return;
        nacore_drop(p->audit->skel, j->audit, NULL, NULL);
        free(j->audit);
        j->audit = NULL;
}
