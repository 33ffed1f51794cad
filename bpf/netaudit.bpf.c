// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/* The network audit, on the kernel side: cgroup programs that sbx-supervisord
 * attaches to the cgroup of each job under audit. One loaded object serves
 * every job: the jobs map, keyed by the cgroup id of the calling task, says
 * what to do for it, and every attempt goes to one ring buffer with that id.
 *
 * What a job could send with, and which hook sees it:
 *  - TCP connect (and TCP Fast Open's sendmsg, which connects through the
 *    same pre-connect hook), connected UDP: connect4/connect6;
 *  - UDP datagrams with an address: sendmsg4/sendmsg6;
 *  - everything else of the INET families (raw sockets, ICMP "ping"
 *    sockets, SCTP, MPTCP, UDP-Lite): refused at socket creation by
 *    sock_create, since no hook above would see what they send;
 *  - AF_PACKET and other families: refused by sbx-launch's seccomp filter
 *    (families other than UNIX, INET, INET6, NETLINK), and they need
 *    CAP_NET_RAW in the network namespace, which a job never has.
 * A task of the cgroup without an entry (it would have to be in a cgroup
 * below the job's) is refused: fail closed.
 *
 * A restricted job (NETAUDIT_F_ENFORCE) is admitted only what its deny-ports
 * leave, the deny map does not hold and its entries of the allow map let
 * through; everything else fails with EPERM and is recorded with verdict
 * deny. The deny map comes before the allow map: an allow entry or a DNS
 * answer naming the host (the job's gateway, the metadata service at
 * 169.254.169.254) must not reach it (DNS rebinding). */
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/socket.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "netaudit.h"

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif
#define SOCK_STREAM 1
#define SOCK_DGRAM 2

/* What the kernel is told: of this file's two licenses (the SPDX line),
 * the GPL, which some helpers require of the programs that call them. */
char LICENSE[] SEC("license") = "GPL";

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, NETAUDIT_MAX_JOBS);
        __type(key, __u64);
        __type(value, struct netaudit_job);
} jobs SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_LPM_TRIE);
        __uint(max_entries, NETAUDIT_MAX_ALLOW);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, struct netaudit_key);
        __type(value, struct netaudit_rules);
} allow SEC(".maps");

/* Shared by every job: set by the daemon at start (and as the host's own
 * addresses change). */
struct {
        __uint(type, BPF_MAP_TYPE_LPM_TRIE);
        __uint(max_entries, NETAUDIT_MAX_DENY_NETS);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, struct netaudit_dkey);
        __type(value, __u8);
} deny SEC(".maps");

/* Its size is set by the daemon before loading (network_ring). */
struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 256 * 1024);
} events SEC(".maps");

static __always_inline void record(struct netaudit_job *job, __u64 cg, __u8 kind, __u8 verdict, __u8 reason, __u16 family,
                                   __u16 protocol, __u8 sock_type, __u16 port, const __u32 *addr, int words) {
        struct netaudit_event *e;

        if (job && !(job->flags & NETAUDIT_F_AUDIT))
                return;
        /* Past what the daemon keeps, counting is all it would do: done
         * here, without waking it (a flood then costs an atomic add). */
        if (job && job->sent >= job->budget) {
                __sync_fetch_and_add(&job->dropped, 1);
                return;
        }
        e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
        if (!e) {
                if (job)
                        __sync_fetch_and_add(&job->lost, 1);
                return;
        }
        if (job)
                __sync_fetch_and_add(&job->sent, 1);
        e->cgroup_id = cg;
        e->boot_ns = bpf_ktime_get_boot_ns();
        e->pid = (__u32) (bpf_get_current_pid_tgid() >> 32);
        e->family = family;
        e->port = port;
        e->kind = kind;
        e->verdict = verdict;
        e->protocol = protocol;
        e->sock_type = sock_type;
        e->reason = reason;
        e->pad[0] = e->pad[1] = 0;
        __builtin_memset(e->addr, 0, sizeof(e->addr));
        for (int i = 0; i < 4; i++)
                if (i < words)
                        __builtin_memcpy(e->addr + 4 * i, &addr[i], 4);
        bpf_get_current_comm(e->comm, sizeof(e->comm));
        bpf_ringbuf_submit(e, 0);
}

/* A restricted job's verdict: deny-ports first, then its own loopback
 * (its network namespace is its own), then the deny map (*reason set),
 * then the longest allow entry for the destination and its port rules.
 * addr: IPv6, IPv4 mapped. */
static __always_inline int admits(struct netaudit_job *job, __u64 cg, const __u32 *addr, __u16 port, __u8 proto,
                                  __u8 *reason) {
        struct netaudit_key key = { .prefixlen = 64 + 128 };
        struct netaudit_dkey dkey = { .prefixlen = 128 };
        struct netaudit_rules *rules;
        __u8 *why;
        __u32 n;

        for (int i = 0; i < NETAUDIT_MAX_DENY; i++) {
                if (i >= job->n_deny)
                        break;
                if (port >= job->deny[i].lo && port <= job->deny[i].hi)
                        return 0;
        }
        if (addr[0] == 0 && addr[1] == 0 && addr[2] == 0 && addr[3] == bpf_htonl(1))
                return 1;
        if (addr[0] == 0 && addr[1] == 0 && addr[2] == bpf_htonl(0xffff) && (bpf_ntohl(addr[3]) >> 24) == 127)
                return 1;
        __builtin_memcpy(dkey.addr, addr, 16);
        why = bpf_map_lookup_elem(&deny, &dkey);
        if (why) {
                *reason = *why;
                return 0;
        }
        __builtin_memcpy(key.cgroup_id, &cg, 8);
        __builtin_memcpy(key.addr, addr, 16);
        rules = bpf_map_lookup_elem(&allow, &key);
        if (!rules)
                return 0;
        n = rules->n;
        for (int i = 0; i < NETAUDIT_MAX_RULES; i++) {
                if (i >= n)
                        break;
                if ((rules->r[i].protos & proto) && port >= rules->r[i].lo && port <= rules->r[i].hi)
                        return 1;
        }
        return 0;
}

static __always_inline int on_addr(struct bpf_sock_addr *ctx, __u8 kind, int v6) {
        __u64 cg = bpf_get_current_cgroup_id();
        struct netaudit_job *job = bpf_map_lookup_elem(&jobs, &cg);
        __u32 addr[4];
        __u8 verdict = job ? NETAUDIT_ALLOW : NETAUDIT_DENY;
        __u8 reason = 0;
        __u16 port = bpf_ntohs((__u16) ctx->user_port);
        __u8 proto = ctx->protocol == IPPROTO_TCP ? NETAUDIT_TCP : ctx->protocol == IPPROTO_UDP ? NETAUDIT_UDP : 0;

        if (v6) {
                addr[0] = ctx->user_ip6[0];
                addr[1] = ctx->user_ip6[1];
                addr[2] = ctx->user_ip6[2];
                addr[3] = ctx->user_ip6[3];
        } else {
                addr[0] = 0;
                addr[1] = 0;
                addr[2] = bpf_htonl(0xffff);
                addr[3] = ctx->user_ip4;
        }
        if (job && (job->flags & NETAUDIT_F_ENFORCE) && !admits(job, cg, addr, port, proto, &reason))
                verdict = NETAUDIT_DENY;
        record(job, cg, kind, verdict, reason, v6 ? AF_INET6 : AF_INET, (__u16) ctx->protocol, (__u8) ctx->type, port,
               v6 ? addr : &addr[3], v6 ? 4 : 1);
        return verdict == NETAUDIT_ALLOW;
}

SEC("cgroup/connect4")
int sbx_connect4(struct bpf_sock_addr *ctx) {
        return on_addr(ctx, NETAUDIT_CONNECT, 0);
}

SEC("cgroup/connect6")
int sbx_connect6(struct bpf_sock_addr *ctx) {
        return on_addr(ctx, NETAUDIT_CONNECT, 1);
}

SEC("cgroup/sendmsg4")
int sbx_sendmsg4(struct bpf_sock_addr *ctx) {
        return on_addr(ctx, NETAUDIT_SENDMSG, 0);
}

SEC("cgroup/sendmsg6")
int sbx_sendmsg6(struct bpf_sock_addr *ctx) {
        return on_addr(ctx, NETAUDIT_SENDMSG, 1);
}

/* TCP and UDP only: the kernel has resolved protocol 0 to the type's
 * default by the time this runs. */
SEC("cgroup/sock_create")
int sbx_sock_create(struct bpf_sock *ctx) {
        __u64 cg;
        struct netaudit_job *job;
        __u32 none[4] = { 0 };

        if (ctx->family != AF_INET && ctx->family != AF_INET6)
                return 1;
        if ((ctx->type == SOCK_STREAM && ctx->protocol == IPPROTO_TCP) ||
            (ctx->type == SOCK_DGRAM && ctx->protocol == IPPROTO_UDP))
                return 1;
        cg = bpf_get_current_cgroup_id();
        job = bpf_map_lookup_elem(&jobs, &cg);
        record(job, cg, NETAUDIT_SOCKET, NETAUDIT_DENY, 0, (__u16) ctx->family, (__u16) ctx->protocol, (__u8) ctx->type, 0,
               none, 0);
        return 0;
}
