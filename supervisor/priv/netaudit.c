/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "log.h"
#include "loop.h"
#include "netaudit-bpf.h"

/* Attachments by cgroup id, for the event path: a job's events find it
 * among the few of its bucket, however many jobs are attached. */
#define BUCKETS 256

struct netaudit {
        struct netaudit_bpf *skel;
        struct ring_buffer *rb;
        struct source src;
        struct list atts;      /* struct netaudit_att.link */
        struct list buckets[BUCKETS]; /* struct netaudit_att.bucket_link */
        uint64_t strays;
        struct netdeny deny;   /* what the deny map holds */
};

static struct list *bucket(struct netaudit *na, uint64_t cgroup_id) {
        return &na->buckets[(cgroup_id ^ (cgroup_id >> 8)) % BUCKETS];
}

/* libbpf's own messages: its warnings (why a load failed) go to our log
 * at debug level; the refusal the caller makes says what failed. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
        char buf[512];
        if (level == LIBBPF_DEBUG)
                return 0;
        vsnprintf(buf, sizeof(buf), fmt, ap);
        buf[strcspn(buf, "\n")] = '\0';
        log_debug("libbpf: %s", buf);
        return 0;
}

static int on_ring_event(void *ctx, void *data, size_t len) {
        struct netaudit *na = ctx;
        const struct netaudit_event *e = data;
        struct list *pos, *tmp;
        if (len < sizeof(*e))
                return 0;
        list_for_each_safe(pos, tmp, bucket(na, e->cgroup_id)) {
                struct netaudit_att *a = list_entry(pos, struct netaudit_att, bucket_link);
                if (a->core.cgroup_id == e->cgroup_id) {
                        a->on_event(a->arg, e);
                        return 0;
                }
        }
        na->strays++;
        return 0;
}

static void on_ring(struct source *s, uint32_t events) {
        struct netaudit *na = container_of(s, struct netaudit, src);
        int r = ring_buffer__consume(na->rb);
        if (r < 0)
                log_warning("network audit: reading the ring buffer: %s", strerror(-r));
}

int netaudit_open(uint64_t ring_bytes, struct netaudit **ret, struct sbx_error *err) {
        int r;
        libbpf_set_print(libbpf_print);
        struct netaudit *na = calloc(1, sizeof(*na));
        if (!na)
                return sbx_error_set(err, ENOMEM, "network audit");
        list_init(&na->atts);
        for (size_t i = 0; i < BUCKETS; i++)
                list_init(&na->buckets[i]);
        na->src.fd = -1;
        if ((r = nacore_load(ring_bytes, &na->skel, err)) < 0)
                goto fail;
        na->rb = ring_buffer__new(nacore_ring_fd(na->skel), on_ring_event, na, NULL);
        if (!na->rb) {
                r = -errno;
                sbx_error_set(err, r, "cannot map its eBPF ring buffer");
                goto fail;
        }
        if ((r = loop_add(&na->src, ring_buffer__epoll_fd(na->rb), EPOLLIN, on_ring)) < 0) {
                sbx_error_set(err, r, "cannot watch its eBPF ring buffer");
                goto fail;
        }
        *ret = na;
        return 0;
fail:
        netaudit_close(na);
        return r;
}

void netaudit_close(struct netaudit *na) {
        if (!na)
                return;
        if (na->src.fd >= 0)
                loop_del(&na->src);
        /* Attachments left at stop belong to jobs that may be freed
         * already: taken down without handing them the ring's events. */
        while (!list_empty(&na->atts)) {
                struct netaudit_att *a = list_entry(na->atts.next, struct netaudit_att, link);
                nacore_drop(na->skel, &a->core, NULL, NULL);
                list_del(&a->link);
                list_del(&a->bucket_link);
                free(a);
        }
        ring_buffer__free(na->rb);
        nacore_unload(na->skel);
        free(na);
}

/* The job's entries: its allow map entries first, then the job entry that
 * makes the programs look at them. */
static int att_map(struct netaudit *na, struct netaudit_att *a, const struct netpolicy *pol, struct netaudit_job *val,
                   struct sbx_error *err) {
        if (!pol)
                return 0;
        struct np_lpm lpm[NETPOLICY_MAX_ALLOW];
        size_t n = netpolicy_lpm(pol, lpm);
        val->flags |= NETAUDIT_F_ENFORCE;
        for (size_t i = 0; i < pol->n_deny && i < NETAUDIT_MAX_DENY; i++)
                val->deny[val->n_deny++] = (struct netaudit_range) { pol->deny[i].lo, pol->deny[i].hi };
        for (size_t i = 0; i < n; i++) {
                struct netaudit_rule rules[NETAUDIT_MAX_RULES];
                size_t nr = 0;
                for (size_t j = 0; j < lpm[i].n_rules && j < NETAUDIT_MAX_RULES; j++)
                        rules[nr++] = (struct netaudit_rule) { lpm[i].rules[j].lo, lpm[i].rules[j].hi,
                                                               (uint8_t) lpm[i].rules[j].protos, { 0 } };
                int r = nacore_allow(na->skel, &a->core, lpm[i].addr, lpm[i].prefix, rules, nr);
                if (r < 0)
                        return sbx_error_set(err, r, "network policy: the job's allow map entries");
        }
        return 0;
}

int netaudit_attach(struct netaudit *na, int cgroup_fd, const struct netpolicy *pol, uint64_t budget,
                    void (*on_event)(void *arg, const struct netaudit_event *e), void *arg, struct netaudit_att **ret,
                    struct sbx_error *err) {
        struct netaudit_job val = { .flags = NETAUDIT_F_AUDIT, .budget = budget };
        struct netaudit_att *a = calloc(1, sizeof(*a));
        if (!a)
                return sbx_error_set(err, ENOMEM, "network audit");
        int r = nacore_init(&a->core, cgroup_fd);
        if (r < 0) {
                free(a);
                return sbx_error_set(err, r, "network audit: job cgroup");
        }
        a->on_event = on_event;
        a->arg = arg;
        if ((r = att_map(na, a, pol, &val, err)) < 0 || (r = nacore_attach(na->skel, &a->core, cgroup_fd, &val, err)) < 0) {
                nacore_drop(na->skel, &a->core, NULL, NULL);
                free(a);
                return r;
        }
        list_add_tail(&na->atts, &a->link);
        list_add_tail(bucket(na, a->core.cgroup_id), &a->bucket_link);
        *ret = a;
        return 0;
}

void netaudit_detach(struct netaudit *na, struct netaudit_att *a, uint64_t *ret_lost, uint64_t *ret_dropped) {
        /* Whatever the job sent before it ended is in the ring now: hand
         * it over while the job is still attached to receive it. */
        int r = ring_buffer__consume(na->rb);
        if (r < 0)
                log_warning("network audit: reading the ring buffer: %s", strerror(-r));
        nacore_drop(na->skel, &a->core, ret_lost, ret_dropped);
        list_del(&a->bucket_link);
        list_del(&a->link);
        free(a);
}

int netaudit_allow_addr(struct netaudit *na, struct netaudit_att *a, const uint8_t addr[16], const struct np_rule *rules,
                        size_t n) {
        struct netaudit_rule v[NETAUDIT_MAX_RULES];
        if (n > NETAUDIT_MAX_RULES)
                return -E2BIG;
        for (size_t i = 0; i < n; i++)
                v[i] = (struct netaudit_rule) { rules[i].lo, rules[i].hi, (uint8_t) rules[i].protos, { 0 } };
        return nacore_allow(na->skel, &a->core, addr, 128, v, n);
}

static bool deny_has(const struct netdeny *nd, const struct netdeny_net *e) {
        for (size_t i = 0; i < nd->n; i++)
                if (nd->nets[i].prefix == e->prefix && nd->nets[i].reason == e->reason && memcmp(nd->nets[i].addr, e->addr, 16) == 0)
                        return true;
        return false;
}

int netaudit_deny_set(struct netaudit *na, const struct netdeny *nd) {
        int r = 0;
        /* new prefixes first, then the gone ones taken out: never a moment
         * with less denied than either set */
        for (size_t i = 0; i < nd->n; i++) {
                const struct netdeny_net *e = &nd->nets[i];
                if (deny_has(&na->deny, e))
                        continue;
                int q = nacore_deny_put(na->skel, e->addr, e->prefix, e->reason);
                if (q < 0 && r == 0)
                        r = q;
        }
        for (size_t i = 0; i < na->deny.n; i++) {
                const struct netdeny_net *e = &na->deny.nets[i];
                bool kept = false;
                for (size_t j = 0; j < nd->n && !kept; j++)
                        kept = nd->nets[j].prefix == e->prefix && memcmp(nd->nets[j].addr, e->addr, 16) == 0;
                if (!kept)
                        nacore_deny_del(na->skel, e->addr, e->prefix);
        }
        if (r == 0)
                na->deny = *nd;
        return r;
}

uint64_t netaudit_strays(const struct netaudit *na) {
        return na ? na->strays : 0;
}
