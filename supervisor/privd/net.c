/* SPDX-License-Identifier: Apache-2.0 */
/* The jobs' network in the helper: the host's side set up once at start
 * (forwarding, nft tables) over the priv/ primitives, and per job a veth
 * pair from a block of the helper's own pool. The front names a job by its
 * handle and passes on what the launcher reported (the sandbox's pid and
 * network namespace inode); none of it is taken on trust: the process must
 * be the job's, by its cgroup and by its uid, and the namespace must be
 * that process's and not the host's. The front never chooses a block, an
 * address or an interface name. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "netfwd.h"
#include "nft.h"
#include "privd.h"
#include "veth.h"

#define NET_SLOTS_MAX 65536u

struct privd_net {
        char ifprefix[16];        /* "sxHHHHH-": the host ends, then the block's number */
        char table[16];           /* the nft tables' name */
        int state_fd;             /* --net-state: the forwarding record */
        struct netfwd fwd;
        uint32_t n_slots, used, next;
        uint8_t *taken;           /* a bit per block */
        unsigned long long host_netns;  /* the helper's own namespace: never a job's */
};

/* Names of its own from its state directory, as the daemon makes its own:
 * two helpers on one host never sweep each other's veths. Every name
 * starts with "sx": nft.c leaves another's veths to that one's table. */
static void make_names(struct privd_net *n, const char *state) {
        uint32_t h = 2166136261u;
        for (const char *c = state; *c; c++)
                h = (h ^ (uint8_t) *c) * 16777619u;
        snprintf(n->ifprefix, sizeof(n->ifprefix), "sx%05x-", h & 0xfffff);
        snprintf(n->table, sizeof(n->table), "sbxp_%05x", h & 0xfffff);
}

static void slot_name(const struct privd_net *n, uint32_t slot, char *buf, size_t len) {
        snprintf(buf, len, "%.8s%u", n->ifprefix, slot & 0xffff);
}

int privd_net_setup(struct privd *p, char *msg, size_t len) {
        const struct privd_conf *c = p->conf;
        struct sbx_error err;
        unsigned n_swept = 0, n_restored = 0;
        sbx_error_clear(&err);
        struct privd_net *n = calloc(1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        uint64_t slots = (1ull << (32 - c->net_pool_prefix)) / 4;
        n->n_slots = (uint32_t) (slots > NET_SLOTS_MAX ? NET_SLOTS_MAX : slots);
        n->taken = calloc((n->n_slots + 7) / 8, 1);
        n->state_fd = open(c->net_state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (!n->taken || n->state_fd < 0 || stat("/proc/self/ns/net", &st) < 0) {
                int r = n->taken ? -errno : -ENOMEM;
                snprintf(msg, len, "%s: %s", n->taken ? c->net_state : "memory", strerror(-r));
                if (n->state_fd >= 0)
                        close(n->state_fd);
                free(n->taken);
                free(n);
                return r;
        }
        n->host_netns = (unsigned long long) st.st_ino;
        make_names(n, c->net_state);
        struct netfwd *fw = &n->fwd;
        int r;
        /* What a helper that died left switched on goes back first: the
         * plan below refuses to run over its record. */
        if ((r = netfwd_restore(n->state_fd, &n_restored, &err)) < 0 || (r = veth_sweep(n->ifprefix, &n_swept, &err)) < 0 ||
            (r = netfwd_plan(fw, n->state_fd, c->net_pool6_prefix != 0, n->ifprefix, &err)) < 0 ||
            (r = nft_setup(n->table, n->ifprefix, c->net_pool, c->net_pool_prefix, c->net_pool6, c->net_pool6_prefix,
                           &(struct nft_guard){ .ifaces = fw->guard4 }, &(struct nft_guard){ .ifaces = fw->guard6, .all = fw->global6 },
                           &err)) < 0 ||
            (r = netfwd_switch(fw, n->state_fd, &err)) < 0) {
                struct sbx_error ignored;
                netfwd_teardown(fw, n->state_fd, &ignored);
                nft_teardown(n->table);
                snprintf(msg, len, "%s", err.msg);
                close(n->state_fd);
                free(n->taken);
                free(n);
                return r;
        }
        if (n_restored)
                privd_log("network: put back %u forwarding settings an earlier helper changed", n_restored);
        if (n_swept)
                privd_log("network: removed %u veths an earlier helper left (%s*)", n_swept, n->ifprefix);
        p->net = n;
        char a[INET_ADDRSTRLEN], a6[INET6_ADDRSTRLEN] = "";
        inet_ntop(AF_INET, &c->net_pool, a, sizeof(a));
        if (c->net_pool6_prefix)
                inet_ntop(AF_INET6, c->net_pool6, a6, sizeof(a6));
        privd_log("network: %u blocks of %s/%u, IPv6 %s%s%.0u, veths %s*, nft table %s", n->n_slots, a, c->net_pool_prefix,
                  c->net_pool6_prefix ? a6 : "none", c->net_pool6_prefix ? "/" : "", c->net_pool6_prefix, n->ifprefix, n->table);
        return 0;
}

void privd_net_teardown(struct privd *p) {
        struct privd_net *n = p->net;
        struct sbx_error err;
        unsigned swept = 0;
        if (!n)
                return;
        if (netfwd_teardown(&n->fwd, n->state_fd, &err) < 0)
                privd_log("network: %s; the record stays for the next start", err.msg);
        nft_teardown(n->table);
        if (veth_sweep(n->ifprefix, &swept, &err) < 0)
                privd_log("network: %s", err.msg);
        close(n->state_fd);
        free(n->fwd.record);
        free(n->taken);
        free(n);
        p->net = NULL;
}

/* A block whose veth is gone. The kernel removes a job's pair with its
 * namespace, once the job's last process is gone; until then the name is
 * taken and the block is skipped, so no two jobs ever hold one address.
 * Round robin: a block comes back only after every other. */
static int slot_take(struct privd_net *n, uint32_t *ret) {
        for (uint32_t k = 0; k < n->n_slots; k++) {
                uint32_t i = (n->next + k) % n->n_slots;
                char name[IF_NAMESIZE];
                if (n->taken[i / 8] & (1u << (i % 8)))
                        continue;
                slot_name(n, i, name, sizeof(name));
                if (if_nametoindex(name) != 0)
                        continue;
                n->taken[i / 8] |= (uint8_t) (1u << (i % 8));
                n->used++;
                n->next = i + 1;
                *ret = i;
                return 0;
        }
        return -EAGAIN;
}

void privd_net_job_end(struct privd *p, struct pjob *j) {
        struct privd_net *n = p->net;
        if (!n || !j->net_slot1)
                return;
        uint32_t i = j->net_slot1 - 1;
        n->taken[i / 8] &= (uint8_t) ~(1u << (i % 8));
        n->used--;
        j->net_slot1 = 0;
}

/* Is pid N, as /proc/N (procfd) shows it, a process of job j? In the
 * job's cgroup (where the launcher was cloned and which no process of
 * the job can leave: every other cgroup is root's) and running as the
 * job's uid with every one of its four ids (one no other job holds).
 * Either alone would do; both, so that a mistake in one is not a hole.
 * procfd is the process itself: a pid reused after it was opened makes
 * every later openat() on it fail, so the checks are of one process. */
static int job_process(struct pjob *j, int procfd, pid_t pid, const char **ret_why) {
        char buf[4096];
        int fd = openat(procfd, "status", O_RDONLY | O_CLOEXEC);
        ssize_t k = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        if (fd >= 0)
                close(fd);
        if (k <= 0) {
                *ret_why = "gone";
                return -ESRCH;
        }
        buf[k] = '\0';
        unsigned ids[4];
        const char *u = strstr(buf, "\nUid:");
        if (!u || sscanf(u, "\nUid: %u %u %u %u", &ids[0], &ids[1], &ids[2], &ids[3]) != 4) {
                *ret_why = "no Uid line in its status";
                return -ESRCH;
        }
        for (int i = 0; i < 4; i++)
                if (ids[i] != j->uid) {
                        *ret_why = "it does not run as the job's uid";
                        return -EPERM;
                }
        /* The job's cgroup.procs: pid numbers as the helper sees them. */
        fd = openat(j->cgroup_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
        if (!f) {
                if (fd >= 0)
                        close(fd);
                *ret_why = "cannot read the job's cgroup.procs";
                return -EIO;
        }
        long v;
        bool found = false;
        while (!found && fscanf(f, "%ld", &v) == 1)
                found = v == (long) pid;
        fclose(f);
        if (!found) {
                *ret_why = "it is not in the job's cgroup";
                return -EPERM;
        }
        return 0;
}

/* The namespace to put the job's end of the pair in: that of the job's
 * process pid, which must be the inode the launcher reported and not the
 * helper's own (a pair made there would hand the job the host's side). */
static int job_netns(struct privd *p, struct pjob *j, const struct privd_net_open *m, int *ret_fd) {
        const struct privd_hdr *h = &m->h;
        char path[32];
        const char *why = NULL;
        struct stat st;
        snprintf(path, sizeof(path), "/proc/%d", (int) m->pid);
        _cleanup_close_ int procfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (procfd < 0)
                return privd_refuse(h, -ESRCH, "job %s: no process %d", j->name, (int) m->pid);
        int r = job_process(j, procfd, m->pid, &why);
        if (r < 0)
                return privd_refuse(h, r, "job %s: pid %d is not the job's: %s", j->name, (int) m->pid, why);
        _cleanup_close_ int fd = openat(procfd, "ns/net", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return privd_refuse(h, -ESRCH, "job %s: pid %d went away", j->name, (int) m->pid);
        if ((unsigned long long) st.st_ino != m->netns_ino)
                return privd_refuse(h, -ESRCH, "job %s: pid %d's network namespace is inode %llu, not %llu as reported", j->name,
                                    (int) m->pid, (unsigned long long) st.st_ino, (unsigned long long) m->netns_ino);
        if ((unsigned long long) st.st_ino == p->net->host_netns)
                return privd_refuse(h, -EPERM, "job %s: pid %d is in the host's network namespace", j->name, (int) m->pid);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Block i's addresses: the /30's first for the host end, second for the
 * job; the same in the IPv6 pool's /126 at the same place (the pool6 is
 * at most /110, so 4 * i, below 2^18, fits in its last 32 bits). */
static void slot_addrs(const struct privd_conf *c, uint32_t i, struct veth_spec *s) {
        uint32_t base = ntohl(c->net_pool) + 4u * i;
        s->host_addr = htonl(base + 1);
        s->job_addr = htonl(base + 2);
        if (!s->v6)
                return;
        uint32_t last;
        memcpy(&last, c->net_pool6 + 12, 4);
        last = ntohl(last) + 4u * i;
        uint32_t hv = htonl(last + 1), jv = htonl(last + 2);
        memcpy(s->host_addr6, c->net_pool6, 16);
        memcpy(s->job_addr6, c->net_pool6, 16);
        memcpy(s->host_addr6 + 12, &hv, 4);
        memcpy(s->job_addr6 + 12, &jv, 4);
}

int privd_net_open(struct privd *p, const struct privd_net_open *m, struct privd_net_reply *rep, int ret_fds[3]) {
        const struct privd_hdr *h = &m->h;
        struct privd_net *n = p->net;
        int r;
        if (!n)
                return privd_refuse(h, -EOPNOTSUPP, "no network: the helper was started without --net-pool");
        if (m->flags & ~PRIVD_NET_V6)
                return privd_refuse(h, -EINVAL, "unknown flags 0x%x", m->flags);
        if ((m->flags & PRIVD_NET_V6) && !p->conf->net_pool6_prefix)
                return privd_refuse(h, -EINVAL, "IPv6 asked for, and the helper has no --net-pool6");
        if (m->pid <= 0)
                return privd_refuse(h, -EINVAL, "pid %d", (int) m->pid);
        struct pjob *j = privd_job_lookup(p, h, m->job, &r);
        if (!j)
                return r;
        if (j->state != PJOB_SPAWNED)
                return privd_refuse(h, -EPROTO, "job %s is %s: NET_OPEN needs a spawned job", j->name, privd_job_state_name(j->state));
        if (j->net_opened)
                return privd_refuse(h, -EALREADY, "job %s had its network opened already", j->name);
        int nsfd = -1;
        if ((r = job_netns(p, j, m, &nsfd)) < 0)
                return r;
        uint32_t i;
        if (slot_take(n, &i) < 0) {
                close(nsfd);
                return privd_refuse(h, -EAGAIN, "job %s: every block of the pool is taken (%u held, the rest wait for their veths to go)",
                                    j->name, n->used);
        }
        struct veth_spec s = { .v6 = (m->flags & PRIVD_NET_V6) != 0, .force6 = n->fwd.force6, .netns_fd = nsfd,
                               .dns_fd = -1, .dns_tcp_fd = -1, .proxy_fd = -1 };
        slot_name(n, i, s.host_if, sizeof(s.host_if));
        slot_addrs(p->conf, i, &s);
        struct sbx_error err;
        sbx_error_clear(&err);
        r = veth_create(&s, &err);
        close(nsfd);
        j->net_slot1 = i + 1;
        if (r < 0) {
                privd_net_job_end(p, j);
                privd_log("job %s: network: %s", j->name, err.msg);
                return r;
        }
        j->net_opened = true;
        rep->flags = s.v6 ? PRIVD_NET_V6 : 0;
        rep->slot = (uint16_t) i;
        rep->host_addr = s.host_addr;
        rep->job_addr = s.job_addr;
        memcpy(rep->host_addr6, s.host_addr6, 16);
        memcpy(rep->job_addr6, s.job_addr6, 16);
        ret_fds[0] = s.dns_fd;
        ret_fds[1] = s.dns_tcp_fd;
        ret_fds[2] = s.proxy_fd;
        privd_log("job %s: veth %s up", j->name, s.host_if);
        return 0;
}

int privd_net_close(struct privd *p, const struct privd_job *m) {
        int r;
        if (!p->net)
                return privd_refuse(&m->h, -EOPNOTSUPP, "no network: the helper was started without --net-pool");
        struct pjob *j = privd_job_lookup(p, &m->h, m->job, &r);
        if (!j)
                return r;
        if (!j->net_slot1)
                return privd_refuse(&m->h, -ENOENT, "job %s has no network open", j->name);
        char name[IF_NAMESIZE];
        slot_name(p->net, j->net_slot1 - 1, name, sizeof(name));
        /* The job goes on without a network: its pair goes now, and the
         * block with it. */
        r = veth_delete(name);
        if (r < 0)
                return privd_refuse(&m->h, r, "job %s: deleting veth %s", j->name, name);
        privd_net_job_end(p, j);
        return 0;
}

uint32_t privd_net_slots(const struct privd *p) {
        return p->net ? p->net->n_slots : 0;
}
