/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auditring.h"
#include "util.h"
#include "log.h"
#include "loop.h"
#include "netremote.h"

struct netremote_att {
        struct list link;
        uint64_t cgroup_id;
        struct privd_handle job;
        void (*on_event)(void *arg, const struct netaudit_event *e);
        void *arg;
};

struct netremote {
        const struct netpriv *ops;
        int ring_fd;
        struct auditring ring;
        struct source src;
        struct list atts;         /* struct netremote_att.link: a few, the running audited jobs */
        uint64_t strays;
        struct netdeny added;     /* what this side added to the helper's set */
};

static void on_record(void *arg, const void *rec, size_t len) {
        struct netremote *nr = arg;
        struct netaudit_event e;
        struct list *pos, *tmp;
        if (len < sizeof(e))
                return;
        /* A copy: the ring is the kernel's memory, and an aligned one. */
        memcpy(&e, rec, sizeof(e));
        list_for_each_safe(pos, tmp, &nr->atts) {
                struct netremote_att *a = list_entry(pos, struct netremote_att, link);
                if (a->cgroup_id == e.cgroup_id) {
                        a->on_event(a->arg, &e);
                        return;
                }
        }
        nr->strays++;
}

static void drain(struct netremote *nr) {
        int r = auditring_consume(&nr->ring, on_record, nr);
        if (r < 0)
                log_warning("network audit: reading the ring buffer sbx-privd handed over: %s", strerror(-r));
}

static void on_ring(struct source *s, uint32_t events) {
        drain(container_of(s, struct netremote, src));
}

int netremote_open(const struct netpriv *ops, struct netremote **ret, struct sbx_error *err) {
        struct netremote *nr = calloc(1, sizeof(*nr));
        uint32_t bytes = 0;
        if (!nr)
                return sbx_error_set(err, ENOMEM, "network audit");
        nr->ops = ops;
        nr->ring_fd = -1;
        nr->src.fd = -1;
        list_init(&nr->atts);
        int r = ops->ring(ops->arg, &nr->ring_fd, &bytes);
        if (r < 0) {
                sbx_error_set(err, r, r == -EOPNOTSUPP ? "sbx-privd has no network audit (its --net-audit)" : "sbx-privd: NET_RING");
                goto fail;
        }
        if ((r = auditring_map(&nr->ring, nr->ring_fd, bytes)) < 0) {
                sbx_error_set(err, r, "cannot map the ring buffer sbx-privd handed over");
                goto fail;
        }
        if ((r = loop_add(&nr->src, nr->ring_fd, EPOLLIN, on_ring)) < 0) {
                sbx_error_set(err, r, "cannot watch the network audit's ring buffer");
                goto fail;
        }
        *ret = nr;
        return 0;
fail:
        netremote_close(nr);
        return r;
}

void netremote_close(struct netremote *nr) {
        if (!nr)
                return;
        if (nr->src.fd >= 0)
                loop_del(&nr->src);
        /* Attachments left at stop: the helper takes them down with the
         * jobs (JOB_CLOSE). */
        while (!list_empty(&nr->atts)) {
                struct netremote_att *a = list_entry(nr->atts.next, struct netremote_att, link);
                list_del(&a->link);
                free(a);
        }
        if (nr->ring.data)
                auditring_unmap(&nr->ring);
        if (nr->ring_fd >= 0)
                close(nr->ring_fd);
        free(nr);
}

static uint8_t proto_of(unsigned protos) {
        return protos == NETPOLICY_TCP ? IPPROTO_TCP : protos == NETPOLICY_UDP ? IPPROTO_UDP : 0;
}

/* One NET_ALLOW per rule: the helper adds the rules of one prefix up. */
static int allow(struct netremote *nr, struct privd_handle job, const uint8_t addr[16], unsigned prefix, const struct np_rule *rules,
                 size_t n) {
        for (size_t i = 0; i < n; i++) {
                struct privd_net_allow m = { .job = job, .prefix = (uint8_t) prefix, .proto = proto_of(rules[i].protos),
                                             .port_first = rules[i].lo, .port_last = rules[i].hi };
                memcpy(m.addr, addr, 16);
                int r = nr->ops->allow(nr->ops->arg, &m);
                if (r < 0)
                        return r;
        }
        return 0;
}

int netremote_attach(struct netremote *nr, struct privd_handle job, int cgroup_fd, const struct netpolicy *pol, uint64_t budget,
                     void (*on_event)(void *arg, const struct netaudit_event *e), void *arg, struct netremote_att **ret,
                     struct sbx_error *err) {
        struct privd_net_audit m = { .job = job, .budget = budget };
        struct stat st;
        /* On cgroup2 a directory's inode number is the cgroup's id, the
         * one the events carry. */
        if (fstat(cgroup_fd, &st) < 0)
                return sbx_error_set(err, errno, "network audit: the job's cgroup");
        if (pol) {
                m.flags = PRIVD_AUDIT_ENFORCE;
                for (size_t i = 0; i < pol->n_deny && i < PRIVD_AUDIT_DENY_MAX; i++)
                        m.deny[m.n_deny++] = (struct privd_port_range){ pol->deny[i].lo, pol->deny[i].hi };
        }
        struct netremote_att *a = calloc(1, sizeof(*a));
        if (!a)
                return sbx_error_set(err, ENOMEM, "network audit");
        *a = (struct netremote_att){ .cgroup_id = (uint64_t) st.st_ino, .job = job, .on_event = on_event, .arg = arg };
        int r = nr->ops->audit(nr->ops->arg, &m);
        if (r < 0) {
                free(a);
                return sbx_error_set(err, r, "network audit: sbx-privd refused NET_AUDIT (its log says why)");
        }
        list_add_tail(&nr->atts, &a->link);
        if (pol) {
                struct np_lpm lpm[NETPOLICY_MAX_ALLOW];
                size_t n = netpolicy_lpm(pol, lpm);
                for (size_t i = 0; i < n && r == 0; i++)
                        r = allow(nr, job, lpm[i].addr, lpm[i].prefix, lpm[i].rules, lpm[i].n_rules);
        }
        if (r < 0) {
                netremote_detach(nr, a, NULL, NULL);
                return sbx_error_set(err, r, "network policy: sbx-privd refused the job's allow entries (NET_ALLOW; its log says why)");
        }
        *ret = a;
        return 0;
}

void netremote_detach(struct netremote *nr, struct netremote_att *a, uint64_t *ret_lost, uint64_t *ret_dropped) {
        uint64_t lost = 0, dropped = 0;
        /* What the job sent before it ended is in the ring: to the job
         * while it is still there to get it. */
        drain(nr);
        int r = nr->ops->unaudit(nr->ops->arg, a->job, &lost, &dropped);
        if (r < 0)
                log_warning("network audit: sbx-privd: NET_UNAUDIT: %s (the job's counters are unknown)", strerror(-r));
        list_del(&a->link);
        free(a);
        if (ret_lost)
                *ret_lost = lost;
        if (ret_dropped)
                *ret_dropped = dropped;
}

int netremote_allow_addr(struct netremote *nr, struct netremote_att *a, const uint8_t addr[16], const struct np_rule *rules,
                         size_t n) {
        if (n > NETAUDIT_MAX_RULES)
                return -E2BIG;
        /* -EDQUOT past a job's 512 prefixes, as netaudit.c says it */
        return allow(nr, a->job, addr, 128, rules, n);
}

static bool has(const struct netdeny *nd, const struct netdeny_net *e) {
        for (size_t i = 0; i < nd->n; i++)
                if (nd->nets[i].prefix == e->prefix && memcmp(nd->nets[i].addr, e->addr, 16) == 0)
                        return true;
        return false;
}

static int deny(struct netremote *nr, const struct netdeny_net *e, uint8_t op) {
        struct privd_net_deny m = { .prefix = (uint8_t) e->prefix, .op = op, .reason = op == PRIVD_DENY_ADD ? (uint8_t) e->reason : 0 };
        memcpy(m.addr, e->addr, 16);
        return nr->ops->deny(nr->ops->arg, &m);
}

int netremote_deny_set(struct netremote *nr, const struct netdeny *nd) {
        struct netdeny next = { .n = 0 };
        int r = 0;
        /* The fixed classes and the pools are in the helper's own set
         * already: only the host's addresses and network_deny are ours. */
        for (size_t i = 0; i < nd->n; i++) {
                const struct netdeny_net *e = &nd->nets[i];
                if (e->reason != ND_HOST && e->reason != ND_CONFIGURED)
                        continue;
                int q = has(&nr->added, e) ? 0 : deny(nr, e, PRIVD_DENY_ADD);
                if (q < 0 && r == 0)
                        r = q;
                if (q == 0)
                        next.nets[next.n++] = *e;
        }
        /* new prefixes first, then the gone ones out: never less denied */
        for (size_t i = 0; i < nr->added.n; i++)
                if (!has(&next, &nr->added.nets[i]) && deny(nr, &nr->added.nets[i], PRIVD_DENY_DEL) < 0)
                        next.nets[next.n++] = nr->added.nets[i];
        nr->added = next;
        return r;
}

uint64_t netremote_strays(const struct netremote *nr) {
        return nr ? nr->strays : 0;
}
