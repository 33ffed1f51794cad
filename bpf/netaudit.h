/* SPDX-License-Identifier: Apache-2.0 */
/* What the network audit programs (bpf/netaudit.bpf.c) and sbx-supervisord
 * (supervisor/priv/netaudit.c) share: the per-job entry of the jobs map, keyed by
 * the job cgroup's id, and the event each attempt puts in the ring buffer.
 * Fixed-size types only: this header is compiled for the BPF target too. */
#pragma once

#include <linux/types.h>

/* At most this many jobs at once have an entry (the jobs map's size). */
#define NETAUDIT_MAX_JOBS 16384

/* struct netaudit_job.flags */
#define NETAUDIT_F_AUDIT 1u   /* record every attempt */
#define NETAUDIT_F_ENFORCE 2u /* admit only what the allow map and deny-ports let through */

#define NETAUDIT_MAX_DENY 16  /* deny-port ranges of one job */
#define NETAUDIT_MAX_RULES 32 /* port rules of one allow map entry */
#define NETAUDIT_MAX_ALLOW 65536 /* allow map entries of every job together */
/* Allow map entries of one job: its allow entries and the addresses its
 * DNS answers admitted. A job that resolves name after name cannot take
 * the map from the others: 128 jobs at this bound fill it. */
#define NETAUDIT_JOB_ALLOW 512

/* Prefixes no restricted job reaches, whatever its allow entries (the
 * deny map; supervisor/model/netdeny.h says which and why). */
#define NETAUDIT_MAX_DENY_NETS 1024

/* The deny map: a longest-prefix-match trie over the destination as IPv6
 * (IPv4 mapped), shared by every job; the value is the reason (enum
 * netdeny_reason), which a denied attempt's event carries. */
struct netaudit_dkey {
        __u32 prefixlen;
        __u8 addr[16];
};

/* struct netaudit_rule.protos */
#define NETAUDIT_TCP 1u
#define NETAUDIT_UDP 2u

struct netaudit_range {
        __u16 lo, hi;
};

struct netaudit_job {
        __u32 flags;
        __u32 n_deny;
        __u64 lost;    /* events the ring buffer had no room for */
        __u64 budget;  /* events to send at most (the daemon keeps no more) */
        __u64 sent;    /* events put in the ring buffer */
        __u64 dropped; /* past the budget: counted here, never sent */
        struct netaudit_range deny[NETAUDIT_MAX_DENY];
};

/* The allow map: a longest-prefix-match trie over the job's cgroup id
 * (always all 64 bits) followed by the destination as IPv6 (IPv4 mapped,
 * ::ffff:a.b.c.d), so jobs never share an entry. Bytes, not a __u64: no
 * padding may sit inside the matched data. */
struct netaudit_key {
        __u32 prefixlen; /* 64 + the destination's prefix */
        __u8 cgroup_id[8];
        __u8 addr[16];
};

struct netaudit_rule {
        __u16 lo, hi;
        __u8 protos;
        __u8 pad[3];
};

/* Every rule of every allow entry whose prefix covers this one: the
 * longest match alone decides. */
struct netaudit_rules {
        __u32 n;
        struct netaudit_rule r[NETAUDIT_MAX_RULES];
};

/* struct netaudit_event.kind: which hook saw the attempt */
enum netaudit_kind {
        NETAUDIT_CONNECT = 1, /* connect(2) of a TCP or UDP socket */
        NETAUDIT_SENDMSG = 2, /* sendto(2)/sendmsg(2) with an address, UDP */
        NETAUDIT_SOCKET = 3,  /* socket(2) of a kind the hooks above never see (raw, ICMP, SCTP, ...) */
        NETAUDIT_DNS = 4,     /* a query to the daemon's DNS proxy (made by the daemon, not the programs) */
};

/* struct netaudit_event.verdict */
#define NETAUDIT_ALLOW 1
#define NETAUDIT_DENY 2

struct netaudit_event {
        __u64 cgroup_id;
        __u64 boot_ns;    /* CLOCK_BOOTTIME */
        __u32 pid;        /* thread group id, as the host sees it */
        __u16 family;     /* AF_INET or AF_INET6 */
        __u16 port;       /* destination port, host order; 0 for NETAUDIT_SOCKET */
        __u16 protocol;   /* IPPROTO_* (IPPROTO_MPTCP is 262) */
        __u8 kind;        /* enum netaudit_kind */
        __u8 verdict;
        __u8 sock_type;   /* SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, ... */
        __u8 reason;      /* denied by the deny map: its reason; else 0 */
        __u8 pad[2];
        __u8 addr[16];    /* IPv4 in the first 4 bytes; network order */
        char comm[16];
};
