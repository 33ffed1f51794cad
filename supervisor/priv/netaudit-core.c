/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "netaudit-core.h"
#include "netaudit.skel.h"

int nacore_load(uint64_t ring_bytes, struct netaudit_bpf **ret, struct sbx_error *err) {
        int r;
        struct netaudit_bpf *s = netaudit_bpf__open();
        if (!s)
                return sbx_error_set(err, errno, "cannot open its eBPF programs");
        if ((r = bpf_map__set_max_entries(s->maps.events, (uint32_t) ring_bytes)) < 0) {
                netaudit_bpf__destroy(s);
                return sbx_error_set(err, -r, "network_ring %llu", (unsigned long long) ring_bytes);
        }
        if ((r = netaudit_bpf__load(s)) < 0) {
                netaudit_bpf__destroy(s);
                return sbx_error_set(err, -r, "cannot load its eBPF programs");
        }
        *ret = s;
        return 0;
}

void nacore_unload(struct netaudit_bpf *s) {
        netaudit_bpf__destroy(s);
}

int nacore_ring_fd(struct netaudit_bpf *s) {
        return bpf_map__fd(s->maps.events);
}

int nacore_init(struct nacore_att *a, int cgroup_fd) {
        struct stat st;
        memset(a, 0, sizeof(*a));
        /* On cgroup2 a directory's inode number is the cgroup's id, the
         * one bpf_get_current_cgroup_id() returns. */
        if (fstat(cgroup_fd, &st) < 0)
                return -errno;
        a->cgroup_id = (uint64_t) st.st_ino;
        return 0;
}

static void progs_of(struct netaudit_bpf *s, struct bpf_program *out[NACORE_PROGS]) {
        out[0] = s->progs.sbx_connect4;
        out[1] = s->progs.sbx_connect6;
        out[2] = s->progs.sbx_sendmsg4;
        out[3] = s->progs.sbx_sendmsg6;
        out[4] = s->progs.sbx_sock_create;
}

static void links_destroy(struct nacore_att *a) {
        for (size_t i = 0; i < NACORE_PROGS; i++) {
                bpf_link__destroy(a->links[i]);
                a->links[i] = NULL;
        }
}

int nacore_attach(struct netaudit_bpf *s, struct nacore_att *a, int cgroup_fd, const struct netaudit_job *val,
                  struct sbx_error *err) {
        struct bpf_program *progs[NACORE_PROGS];
        int r = bpf_map__update_elem(s->maps.jobs, &a->cgroup_id, sizeof(a->cgroup_id), val, sizeof(*val), BPF_NOEXIST);
        if (r < 0)
                return sbx_error_set(err, -r, "network audit: the job's map entry");
        a->mapped = true;
        progs_of(s, progs);
        for (size_t i = 0; i < NACORE_PROGS; i++) {
                a->links[i] = bpf_program__attach_cgroup(progs[i], cgroup_fd);
                if (!a->links[i]) {
                        r = -errno;
                        links_destroy(a);
                        bpf_map__delete_elem(s->maps.jobs, &a->cgroup_id, sizeof(a->cgroup_id), 0);
                        a->mapped = false;
                        return sbx_error_set(err, -r, "network audit: cannot attach %s to the job's cgroup",
                                             bpf_program__name(progs[i]));
                }
        }
        return 0;
}

/* Room for one more key in a->keys: -EDQUOT past the job's bound,
 * -ENOMEM. */
static int key_slot(struct nacore_att *a, struct netaudit_key **ret) {
        if (a->n_keys >= NETAUDIT_JOB_ALLOW)
                return -EDQUOT;
        if (a->n_keys == a->cap_keys) {
                size_t cap = a->cap_keys ? a->cap_keys * 2 : 32;
                struct netaudit_key *k = realloc(a->keys, cap * sizeof(*k));
                if (!k)
                        return -ENOMEM;
                a->keys = k;
                a->cap_keys = cap;
        }
        *ret = &a->keys[a->n_keys];
        return 0;
}

int nacore_allow(struct netaudit_bpf *s, struct nacore_att *a, const uint8_t addr[16], unsigned prefix,
                 const struct netaudit_rule *rules, size_t n) {
        struct netaudit_key k = { .prefixlen = 64 + prefix };
        struct netaudit_rules v = { 0 };
        bool known = false;
        memcpy(k.cgroup_id, &a->cgroup_id, 8);
        memcpy(k.addr, addr, 16);
        for (size_t i = 0; i < a->n_keys && !known; i++)
                known = memcmp(&a->keys[i], &k, sizeof(k)) == 0;
        if (known && bpf_map__lookup_elem(s->maps.allow, &k, sizeof(k), &v, sizeof(v), 0) < 0)
                memset(&v, 0, sizeof(v));
        for (size_t i = 0; i < n; i++) {
                bool dup = false;
                for (uint32_t j = 0; j < v.n && !dup; j++)
                        dup = v.r[j].lo == rules[i].lo && v.r[j].hi == rules[i].hi && v.r[j].protos == rules[i].protos;
                if (dup)
                        continue;
                if (v.n >= NETAUDIT_MAX_RULES)
                        return -E2BIG;
                v.r[v.n++] = (struct netaudit_rule) { rules[i].lo, rules[i].hi, rules[i].protos, { 0 } };
        }
        if (!known) {
                struct netaudit_key *slot;
                int r = key_slot(a, &slot);
                if (r < 0)
                        return r;
                *slot = k;
        }
        int r = bpf_map__update_elem(s->maps.allow, &k, sizeof(k), &v, sizeof(v), BPF_ANY);
        if (r < 0)
                return r;
        if (!known)
                a->n_keys++;
        return 0;
}

void nacore_drop(struct netaudit_bpf *s, struct nacore_att *a, uint64_t *ret_lost, uint64_t *ret_dropped) {
        struct netaudit_job val = { 0 };
        links_destroy(a);
        if (a->mapped &&
            bpf_map__lookup_elem(s->maps.jobs, &a->cgroup_id, sizeof(a->cgroup_id), &val, sizeof(val), 0) < 0)
                val.lost = val.dropped = 0;
        for (size_t i = 0; i < a->n_keys; i++)
                bpf_map__delete_elem(s->maps.allow, &a->keys[i], sizeof(a->keys[i]), 0);
        if (a->mapped)
                bpf_map__delete_elem(s->maps.jobs, &a->cgroup_id, sizeof(a->cgroup_id), 0);
        free(a->keys);
        a->keys = NULL;
        a->n_keys = a->cap_keys = 0;
        a->mapped = false;
        if (ret_lost)
                *ret_lost = val.lost;
        if (ret_dropped)
                *ret_dropped = val.dropped;
}

int nacore_deny_put(struct netaudit_bpf *s, const uint8_t addr[16], unsigned prefix, uint8_t reason) {
        struct netaudit_dkey k = { .prefixlen = prefix };
        memcpy(k.addr, addr, 16);
        return bpf_map__update_elem(s->maps.deny, &k, sizeof(k), &reason, sizeof(reason), BPF_ANY);
}

int nacore_deny_del(struct netaudit_bpf *s, const uint8_t addr[16], unsigned prefix) {
        struct netaudit_dkey k = { .prefixlen = prefix };
        memcpy(k.addr, addr, 16);
        return bpf_map__delete_elem(s->maps.deny, &k, sizeof(k), 0);
}
