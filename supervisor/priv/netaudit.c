/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "loop.h"
#include "netaudit-bpf.h"
#include "netaudit.skel.h"

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

static struct bpf_program *const *progs_of(struct netaudit_bpf *s, struct bpf_program *out[5]) {
        out[0] = s->progs.sbx_connect4;
        out[1] = s->progs.sbx_connect6;
        out[2] = s->progs.sbx_sendmsg4;
        out[3] = s->progs.sbx_sendmsg6;
        out[4] = s->progs.sbx_sock_create;
        return out;
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

static void links_destroy(struct netaudit_att *a);
static void att_unmap(struct netaudit *na, struct netaudit_att *a);

static int on_ring_event(void *ctx, void *data, size_t len) {
        struct netaudit *na = ctx;
        const struct netaudit_event *e = data;
        struct list *pos, *tmp;
        if (len < sizeof(*e))
                return 0;
        list_for_each_safe(pos, tmp, bucket(na, e->cgroup_id)) {
                struct netaudit_att *a = list_entry(pos, struct netaudit_att, bucket_link);
                if (a->cgroup_id == e->cgroup_id) {
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
        na->skel = netaudit_bpf__open();
        if (!na->skel) {
                r = -errno;
                sbx_error_set(err, r, "cannot open its eBPF programs");
                goto fail;
        }
        if ((r = bpf_map__set_max_entries(na->skel->maps.events, (uint32_t) ring_bytes)) < 0) {
                sbx_error_set(err, r, "network_ring %llu", (unsigned long long) ring_bytes);
                goto fail;
        }
        if ((r = netaudit_bpf__load(na->skel)) < 0) {
                sbx_error_set(err, r, "cannot load its eBPF programs");
                goto fail;
        }
        na->rb = ring_buffer__new(bpf_map__fd(na->skel->maps.events), on_ring_event, na, NULL);
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
                links_destroy(a);
                att_unmap(na, a);
                list_del(&a->link);
                list_del(&a->bucket_link);
                free(a->keys);
                free(a);
        }
        ring_buffer__free(na->rb);
        netaudit_bpf__destroy(na->skel);
        free(na);
}

static void links_destroy(struct netaudit_att *a) {
        for (size_t i = 0; i < ARRAY_SIZE(a->links); i++) {
                bpf_link__destroy(a->links[i]);
                a->links[i] = NULL;
        }
}

/* Room for one more key in a->keys: -EDQUOT past the job's bound,
 * -ENOMEM. */
static int key_slot(struct netaudit_att *a, struct netaudit_key **ret) {
        if (a->n_keys >= NETAUDIT_JOB_ALLOW)
                return -EDQUOT;
        if (a->n_keys == a->cap_keys) {
                size_t cap = a->cap_keys ? a->cap_keys * 2 : NETPOLICY_MAX_ALLOW;
                struct netaudit_key *k = realloc(a->keys, cap * sizeof(*k));
                if (!k)
                        return -ENOMEM;
                a->keys = k;
                a->cap_keys = cap;
        }
        *ret = &a->keys[a->n_keys];
        return 0;
}

static void att_unmap(struct netaudit *na, struct netaudit_att *a) {
        for (size_t i = 0; i < a->n_keys; i++)
                bpf_map__delete_elem(na->skel->maps.allow, &a->keys[i], sizeof(a->keys[i]), 0);
        a->n_keys = 0;
        bpf_map__delete_elem(na->skel->maps.jobs, &a->cgroup_id, sizeof(a->cgroup_id), 0);
}

/* The job's entries: its allow map entries first, then the job entry that
 * makes the programs look at them. */
static int att_map(struct netaudit *na, struct netaudit_att *a, const struct netpolicy *pol, uint64_t budget,
                   struct sbx_error *err) {
        struct netaudit_job val = { .flags = NETAUDIT_F_AUDIT, .budget = budget };
        int r;
        if (pol) {
                struct np_lpm lpm[NETPOLICY_MAX_ALLOW];
                size_t n = netpolicy_lpm(pol, lpm);
                val.flags |= NETAUDIT_F_ENFORCE;
                for (size_t i = 0; i < pol->n_deny && i < NETAUDIT_MAX_DENY; i++)
                        val.deny[val.n_deny++] = (struct netaudit_range) { pol->deny[i].lo, pol->deny[i].hi };
                for (size_t i = 0; i < n; i++) {
                        struct netaudit_key *k;
                        if ((r = key_slot(a, &k)) < 0) {
                                att_unmap(na, a);
                                return sbx_error_set(err, -r, "network policy: the job's allow map entries");
                        }
                        struct netaudit_rules rules = { .n = (uint32_t) lpm[i].n_rules };
                        memset(k, 0, sizeof(*k));
                        k->prefixlen = 64 + lpm[i].prefix;
                        memcpy(k->cgroup_id, &a->cgroup_id, 8);
                        memcpy(k->addr, lpm[i].addr, 16);
                        for (size_t j = 0; j < lpm[i].n_rules && j < NETAUDIT_MAX_RULES; j++)
                                rules.r[j] = (struct netaudit_rule) { lpm[i].rules[j].lo, lpm[i].rules[j].hi,
                                                                      (uint8_t) lpm[i].rules[j].protos, { 0 } };
                        r = bpf_map__update_elem(na->skel->maps.allow, k, sizeof(*k), &rules, sizeof(rules), BPF_ANY);
                        if (r < 0) {
                                att_unmap(na, a);
                                return sbx_error_set(err, r, "network policy: the job's allow map entries");
                        }
                        a->n_keys++;
                }
        }
        r = bpf_map__update_elem(na->skel->maps.jobs, &a->cgroup_id, sizeof(a->cgroup_id), &val, sizeof(val), BPF_NOEXIST);
        if (r < 0) {
                att_unmap(na, a);
                return sbx_error_set(err, r, "network audit: the job's map entry");
        }
        return 0;
}

int netaudit_attach(struct netaudit *na, int cgroup_fd, const struct netpolicy *pol, uint64_t budget,
                    void (*on_event)(void *arg, const struct netaudit_event *e), void *arg, struct netaudit_att **ret,
                    struct sbx_error *err) {
        struct stat st;
        struct bpf_program *progs[5];
        /* On cgroup2 a directory's inode number is the cgroup's id, the
         * one bpf_get_current_cgroup_id() returns. */
        if (fstat(cgroup_fd, &st) < 0)
                return sbx_error_set(err, errno, "network audit: job cgroup");
        struct netaudit_att *a = calloc(1, sizeof(*a));
        if (!a)
                return sbx_error_set(err, ENOMEM, "network audit");
        a->cgroup_id = (uint64_t) st.st_ino;
        a->on_event = on_event;
        a->arg = arg;
        int r = att_map(na, a, pol, budget, err);
        if (r < 0) {
                free(a->keys);
                free(a);
                return r;
        }
        progs_of(na->skel, progs);
        for (size_t i = 0; i < ARRAY_SIZE(progs); i++) {
                a->links[i] = bpf_program__attach_cgroup(progs[i], cgroup_fd);
                if (!a->links[i]) {
                        r = -errno;
                        links_destroy(a);
                        att_unmap(na, a);
                        free(a->keys);
                        free(a);
                        return sbx_error_set(err, r, "network audit: cannot attach %s to the job's cgroup", bpf_program__name(progs[i]));
                }
        }
        list_add_tail(&na->atts, &a->link);
        list_add_tail(bucket(na, a->cgroup_id), &a->bucket_link);
        *ret = a;
        return 0;
}

void netaudit_detach(struct netaudit *na, struct netaudit_att *a, uint64_t *ret_lost, uint64_t *ret_dropped) {
        struct netaudit_job val = { 0 };
        /* Whatever the job sent before it ended is in the ring now: hand
         * it over while the job is still attached to receive it. */
        int r = ring_buffer__consume(na->rb);
        if (r < 0)
                log_warning("network audit: reading the ring buffer: %s", strerror(-r));
        links_destroy(a);
        if (bpf_map__lookup_elem(na->skel->maps.jobs, &a->cgroup_id, sizeof(a->cgroup_id), &val, sizeof(val), 0) < 0)
                val.lost = val.dropped = 0;
        att_unmap(na, a);
        list_del(&a->bucket_link);
        if (ret_lost)
                *ret_lost = val.lost;
        if (ret_dropped)
                *ret_dropped = val.dropped;
        list_del(&a->link);
        free(a->keys);
        free(a);
}

int netaudit_allow_addr(struct netaudit *na, struct netaudit_att *a, const uint8_t addr[16], const struct np_rule *rules,
                        size_t n) {
        struct netaudit_key k = { .prefixlen = 64 + 128 };
        struct netaudit_rules v = { 0 };
        bool known = false;
        memcpy(k.cgroup_id, &a->cgroup_id, 8);
        memcpy(k.addr, addr, 16);
        for (size_t i = 0; i < a->n_keys && !known; i++)
                known = memcmp(&a->keys[i], &k, sizeof(k)) == 0;
        if (known && bpf_map__lookup_elem(na->skel->maps.allow, &k, sizeof(k), &v, sizeof(v), 0) < 0)
                memset(&v, 0, sizeof(v));
        for (size_t i = 0; i < n; i++) {
                bool dup = false;
                for (uint32_t j = 0; j < v.n && !dup; j++)
                        dup = v.r[j].lo == rules[i].lo && v.r[j].hi == rules[i].hi && v.r[j].protos == rules[i].protos;
                if (dup)
                        continue;
                if (v.n >= NETAUDIT_MAX_RULES)
                        return -E2BIG;
                v.r[v.n++] = (struct netaudit_rule) { rules[i].lo, rules[i].hi, (uint8_t) rules[i].protos, { 0 } };
        }
        if (!known) {
                struct netaudit_key *slot;
                int r = key_slot(a, &slot);
                if (r < 0)
                        return r;
                *slot = k;
        }
        int r = bpf_map__update_elem(na->skel->maps.allow, &k, sizeof(k), &v, sizeof(v), BPF_ANY);
        if (r < 0)
                return r;
        if (!known)
                a->n_keys++;
        return 0;
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
                struct netaudit_dkey k = { .prefixlen = e->prefix };
                uint8_t why = e->reason;
                memcpy(k.addr, e->addr, 16);
                int q = bpf_map__update_elem(na->skel->maps.deny, &k, sizeof(k), &why, sizeof(why), BPF_ANY);
                if (q < 0 && r == 0)
                        r = q;
        }
        for (size_t i = 0; i < na->deny.n; i++) {
                const struct netdeny_net *e = &na->deny.nets[i];
                bool kept = false;
                for (size_t j = 0; j < nd->n && !kept; j++)
                        kept = nd->nets[j].prefix == e->prefix && memcmp(nd->nets[j].addr, e->addr, 16) == 0;
                if (kept)
                        continue;
                struct netaudit_dkey k = { .prefixlen = e->prefix };
                memcpy(k.addr, e->addr, 16);
                bpf_map__delete_elem(na->skel->maps.deny, &k, sizeof(k), 0);
        }
        if (r == 0)
                na->deny = *nd;
        return r;
}

uint64_t netaudit_strays(const struct netaudit *na) {
        return na ? na->strays : 0;
}
