/* SPDX-License-Identifier: Apache-2.0 */
/* The contract between sbx-privd, the privileged helper, and the process
 * that starts it and speaks for the tenants (the front). The front is
 * assumed hostile: everything it can say is in this header, as fixed-size
 * binary messages over one SOCK_SEQPACKET socketpair, descriptors passed
 * with SCM_RIGHTS. There is no text the helper parses: the front never
 * names a path, a cgroup or a file; the helper makes the names and hands
 * back opaque handles (a slot number and a generation) and descriptors.
 * sbx-privd(8) documents every message and error. Both sides include this
 * header, so a number or a size is spelled once. */
#pragma once

#include <stdint.h>

/* ---- framing ----------------------------------------------------------------- */

#define PRIVD_MAGIC 0x70786273u   /* "sbxp", little-endian */
#define PRIVD_VERSION 4u

/* Requests, front to helper. A reply carries the request's type with
 * PRIVD_REPLY set and the request's sequence number. */
enum privd_type {
        PRIVD_HELLO = 1,       /* struct privd_hello       -> struct privd_hello_reply */
        PRIVD_UID_TAKE,        /* struct privd_hdr         -> struct privd_reply (.uid) */
        PRIVD_UID_RELEASE,     /* struct privd_uid         -> struct privd_reply */
        PRIVD_JOB_OPEN,        /* struct privd_job_open    -> struct privd_reply (.job, .limits) + 2 fds */
        PRIVD_JOB_KILL,        /* struct privd_job         -> struct privd_reply */
        PRIVD_JOB_CLOSE,       /* struct privd_job         -> struct privd_reply */
        PRIVD_SPAWN,           /* struct privd_spawn + fds -> struct privd_reply (.pid) + the pidfd */
        /* The job's network: answered -EOPNOTSUPP by a helper started
         * without --net-pool (sbx-privd(8)). */
        PRIVD_NET_OPEN,        /* struct privd_net_open    -> struct privd_net_reply + 3 fds */
        PRIVD_NET_CLOSE,       /* struct privd_job         -> struct privd_reply */
        PRIVD_WS_HANDOVER,     /* struct privd_job         -> struct privd_reply */
        PRIVD_WS_RECLAIM,      /* struct privd_job         -> struct privd_reply */
        /* The network audit (eBPF on the job's cgroup): answered
         * -EOPNOTSUPP by a helper started without --net-audit. */
        PRIVD_NET_RING,        /* struct privd_hdr         -> struct privd_reply (.ring_bytes) + the ring buffer */
        PRIVD_NET_AUDIT,       /* struct privd_net_audit   -> struct privd_reply */
        PRIVD_NET_ALLOW,       /* struct privd_net_allow   -> struct privd_reply */
        PRIVD_NET_DENY,        /* struct privd_net_deny    -> struct privd_reply */
        PRIVD_NET_UNAUDIT,     /* struct privd_job         -> struct privd_audit_reply */
        PRIVD_JOB_TERM,        /* struct privd_job         -> struct privd_reply */
        PRIVD_JOB_WAIT,        /* struct privd_job         -> struct privd_reply (.status) */
        PRIVD_HOST_ADDR,       /* struct privd_host_addr   -> struct privd_reply (.addr, .count) */
        PRIVD_JOB_ADOPT,       /* struct privd_job_adopt   -> struct privd_reply (.job, .pid, .limits) + 3 fds */
        PRIVD_TYPE_MAX,
};
#define PRIVD_REPLY 0x8000u

/* Every message starts with this. len is the whole message's size in
 * bytes, header included, and must be exactly the size of its type's
 * struct. seq starts at 1 (the HELLO) and goes up by one per request: a
 * repeated, skipped or late number is refused. */
struct privd_hdr {
        uint32_t magic;
        uint16_t version;
        uint16_t type;
        uint32_t seq;
        uint32_t len;
};

/* A job as the front knows it. slot indexes the helper's table; gen is
 * the generation the helper gave that job when it opened it, never given
 * again while the helper runs, so a handle kept after JOB_CLOSE or made
 * up from another job's slot acts on nothing. */
struct privd_handle {
        uint32_t slot;
        uint32_t gen;
};

/* ---- requests ----------------------------------------------------------------- */

/* The first message, and only the first. version: PRIVD_VERSION. */
struct privd_hello {
        struct privd_hdr h;
        uint32_t version;
        uint32_t reserved;  /* 0 */
};

/* UID_RELEASE: a uid the front took and no open job holds. */
struct privd_uid {
        struct privd_hdr h;
        uint32_t uid;
        uint32_t reserved;  /* 0 */
};

/* JOB_OPEN: a cgroup of the helper's making below its cgroup root with
 * these limits (0: none), and a workspace, a tmpfs of workspace_bytes
 * (at most the helper's --workspace-max) mounted on a directory of the
 * helper's making, owned by the front's uid (the helper's --front) until
 * WS_HANDOVER, so the front writes the uploads itself. uid: one the front
 * took with UID_TAKE and no other job holds. The reply carries, in this
 * order, the job's cgroup directory (O_RDONLY, for reading its counters)
 * and the workspace's root directory. */
struct privd_job_open {
        struct privd_hdr h;
        uint32_t uid;
        uint32_t reserved;        /* 0 */
        uint64_t memory_max;      /* bytes: memory.max (memory.swap.max 0) */
        uint64_t pids_max;        /* pids.max */
        uint64_t cpu_milli;       /* cpu.max: thousandths of one CPU */
        uint64_t workspace_bytes;
};

/* JOB_WAIT: how the job's launcher ended (the helper is its parent, so
 * only it can tell): -EAGAIN while it runs; once per job.
 * JOB_TERM (SIGTERM to the job's launcher, which forwards it to the
 * command: the start of its grace period; a spawned job whose launcher
 * has not been reaped), JOB_KILL (cgroup.kill: every process of the job, at once) and
 * JOB_CLOSE (kill, then every process of the job's uid, remove the
 * cgroup, unmount and remove the workspace, return the uid to the pool).
 * WS_HANDOVER: the workspace, walked by descriptor, becomes the job's
 * uid's, or nothing changes if it holds anything but the front's own
 * directories, regular files of one link and symlinks, on the workspace's
 * own mount; SPAWN needs it. WS_RECLAIM: once no process of the job is
 * left, what the job's uid owns in the workspace becomes the front's, so
 * it can read the artifacts. */
struct privd_job {
        struct privd_hdr h;
        struct privd_handle job;
};

/* SPAWN: start sbx-launch as the job's uid in the job's cgroup, at most
 * once per job. The descriptors come with the message (SCM_RIGHTS), one
 * for each bit of fds, in the order of the bits; each must be of the kind
 * named here, or the request is refused. The launcher gets them as its
 * descriptors 0..8 (launch-abi.h); the helper writes its command line:
 *   sbx-launch [--info-fd 5 --block-fd 6] --json-status-fd 3 ARGV...
 * where ARGV are the NUL-terminated strings of the PRIVD_FD_ARGV file:
 * the helper splits them at NUL. They are the launcher's options (its
 * profiles: the front's generated one is --profile /dev/fd/4), "--" and
 * the command. The helper reads the options as the launcher will (each
 * one known, with its arguments) so that they name no descriptor but those
 * it placed: --pass-fd 8 only with PRIVD_FD_PASS sent, no other --pass-fd,
 * --json-status-fd, --info-fd, --block-fd or --sync-fd (the helper writes
 * those it places itself). */
enum privd_fd {
        PRIVD_FD_STDIN = 0,    /* pipe, socket, regular file or /dev/null; absent: /dev/null */
        PRIVD_FD_STDOUT,       /* pipe, socket or /dev/null; absent: /dev/null */
        PRIVD_FD_STDERR,       /* pipe, socket or /dev/null; absent: /dev/null */
        PRIVD_FD_STATUS,       /* pipe, open for writing; required */
        PRIVD_FD_PROFILE,      /* regular file (a sealed memfd); required */
        PRIVD_FD_INFO,         /* pipe; with PRIVD_FD_BLOCK or neither */
        PRIVD_FD_BLOCK,        /* pipe */
        PRIVD_FD_BUNDLE,       /* directory owned by the front (O_PATH or O_RDONLY); the
                                * launcher gets the helper's read-only detached mount of it */
        PRIVD_FD_PASS,         /* AF_UNIX SOCK_SEQPACKET socket; absent: closed */
        PRIVD_FD_ARGV,         /* regular file, PRIVD_ARGV_MAX bytes at most; required */
        PRIVD_FD_COUNT,
};
#define PRIVD_FD_BIT(f) (1u << (f))
#define PRIVD_ARGV_MAX 65536u  /* bytes of the ARGV file */
#define PRIVD_ARGC_MAX 1024u   /* strings in it */

struct privd_spawn {
        struct privd_hdr h;
        struct privd_handle job;
        uint32_t fds;          /* PRIVD_FD_BIT()s of the descriptors sent */
        uint32_t flags;        /* PRIVD_SPAWN_* */
};
/* The job outlives its front (a session's sandbox; only with PRIVD_FD_PASS):
 * when the front's connection ends, a listening helper keeps it, parked,
 * rather than closing it, if its launcher still runs and it has neither a
 * network nor an audit of the helper's; the next front takes it back with
 * JOB_ADOPT. A parked job is closed when its launcher exits, when
 * --park-timeout (PRIVD_PARK_MS unless given) passes without an adoption,
 * or when the helper stops; no request but JOB_ADOPT reaches it. */
#define PRIVD_SPAWN_OUTLIVE 1u
#define PRIVD_PARK_MS 120000u

/* JOB_ADOPT: the parked job of this uid whose launcher has this pid (what
 * the last front's journal holds) becomes this front's, with the handle it
 * had. The reply carries, in this order, a pidfd of its launcher, its
 * cgroup directory and its workspace's root, as SPAWN and JOB_OPEN did. */
struct privd_job_adopt {
        struct privd_hdr h;
        uint32_t uid;
        int32_t pid;
};

/* NET_OPEN: a veth pair for a spawned job, once per job. pid and
 * netns_ino are what the launcher wrote on its --info-fd (child-pid,
 * namespaces.net); the helper takes neither on trust: the process must be
 * in the job's cgroup and run as the job's uid, and its network namespace
 * must be that inode and not the helper's own. The helper picks the
 * job's /30 (and /126 with PRIVD_NET_V6) from its own pool, names the
 * host end, and replies with the addresses and, in this order, a UDP
 * socket and a TCP socket (not listening) bound to 127.0.0.1:53 inside
 * the job's namespace, for the front's DNS proxy, and a TCP socket (not
 * listening) bound to 127.0.0.1:443 there, for its secrets proxy. */
struct privd_net_open {
        struct privd_hdr h;
        struct privd_handle job;
        int32_t pid;
        uint32_t flags;        /* PRIVD_NET_* */
        uint64_t netns_ino;
};
#define PRIVD_NET_V6 1u

/* NET_CLOSE: delete the job's veth pair and give its block of the pool
 * back (JOB_CLOSE does the same). A job's network is opened once: a
 * NET_OPEN after NET_CLOSE is refused. */

/* The network audit (eBPF on the job's cgroup), done by a helper started
 * with --net-audit; any other answers -EOPNOTSUPP. The helper loads the
 * programs once; the front, which may make no bpf() call at all
 * (kernel.unprivileged_bpf_disabled), gets the ring buffer's map once
 * (NET_RING: the descriptor, and its data size in the reply's
 * ring_bytes) and only maps it and waits on it (mmap, epoll). Every
 * job's events are in that one ring, each with its cgroup's id (the
 * inode number of the cgroup directory JOB_OPEN handed over).
 *
 * NET_AUDIT: attach the programs to a job's cgroup, once per job and
 * before SPAWN: PRIVD_AUDIT_ENFORCE drops what no NET_ALLOW entry of the
 * job admits (else the audit only records), deny no entry ever admits
 * (ranges first to last, n_deny used, the rest 0), budget the events the
 * job may put in the ring (past it they are counted only). */
#define PRIVD_AUDIT_DENY_MAX 16u
struct privd_port_range {
        uint16_t first, last;
};
struct privd_net_audit {
        struct privd_hdr h;
        struct privd_handle job;
        uint32_t flags;           /* PRIVD_AUDIT_* */
        uint32_t n_deny;          /* entries of deny used, at most PRIVD_AUDIT_DENY_MAX */
        uint64_t budget;
        struct privd_port_range deny[PRIVD_AUDIT_DENY_MAX];
};
#define PRIVD_AUDIT_ENFORCE 1u

/* NET_ALLOW: port rules for one destination an audited job may reach,
 * from its policy or from an address the front's DNS proxy resolved for
 * it: addr/prefix (IPv4 as ::ffff:a.b.c.d/96+N; no bit set past the
 * prefix), ports first to last, proto IPPROTO_TCP, IPPROTO_UDP or 0
 * (both). Rules for the same addr/prefix add up; the longest prefix
 * holding a destination alone decides, so the front sends with each
 * prefix the rules of the shorter ones that cover it. A job holds at
 * most 512 prefixes, a prefix 32 rules. The host's own addresses stay
 * out of reach whatever the entries say (NET_DENY). */
struct privd_net_allow {
        struct privd_hdr h;
        struct privd_handle job;
        uint8_t addr[16];
        uint8_t prefix;           /* 0 to 128 */
        uint8_t proto;
        uint16_t port_first;
        uint16_t port_last;
        uint16_t reserved;        /* 0 */
};

/* NET_DENY: the prefixes no audited job reaches, whatever its entries
 * say (every job's; checked before the allow entries). The helper holds
 * a set of its own from the start that the front cannot take out (its
 * pool, link-local, multicast, broadcast, unspecified, loopback);
 * PRIVD_DENY_ADD adds addr/prefix (the host's own addresses, the
 * configured ones) with reason, which a denied event carries, and
 * PRIVD_DENY_DEL takes out one the front added. At most 1024 prefixes
 * in all. To change the set, add the new ones first. */
struct privd_net_deny {
        struct privd_hdr h;
        uint8_t addr[16];
        uint8_t prefix;           /* 0 to 128 */
        uint8_t op;               /* PRIVD_DENY_* */
        uint8_t reason;           /* ADD: 1 to 8, as sbx-privd(8) lists */
        uint8_t reserved;         /* 0 */
        uint32_t reserved2;       /* 0 */
};
/* HOST_ADDR: the host's own addresses, one per request, for the front
 * whose service manager leaves it no netlink socket to list them. Index 0
 * takes a fresh list; the reply's count is that list's length, and an
 * index at or past it is -ENOENT. IPv4 addresses come IPv4-mapped. */
struct privd_host_addr {
        struct privd_hdr h;
        uint32_t index;
        uint32_t reserved;        /* 0 */
};
#define PRIVD_HOST_ADDRS_MAX 256u

#define PRIVD_DENY_ADD 1u
#define PRIVD_DENY_DEL 2u

/* NET_UNAUDIT: detach (JOB_CLOSE does too); the reply says how many of
 * the job's events the ring had no room for and how many were past its
 * budget. The front reads what the ring holds first: events that come
 * after belong to no audited job. */
struct privd_audit_reply {
        struct privd_hdr h;
        int32_t err;
        uint32_t reserved;
        uint64_t lost;
        uint64_t dropped;
};

/* ---- replies ------------------------------------------------------------------ */

/* err: 0, or a negative errno saying why the request was refused or
 * failed (sbx-privd(8), ERRORS); a refused request changed nothing. */
struct privd_reply {
        struct privd_hdr h;
        int32_t err;
        uint32_t uid;             /* UID_TAKE */
        struct privd_handle job;  /* JOB_OPEN */
        int32_t pid;              /* SPAWN: the launcher's pid */
        uint32_t limits;          /* JOB_OPEN: PRIVD_LIMIT_* the cgroup enforces, PRIVD_WS_NOSWAP */
        int32_t status;           /* JOB_WAIT: the launcher's wait status (waitpid(2)) */
        uint32_t ring_bytes;      /* NET_RING: the ring buffer's data size */
        uint32_t count;           /* HOST_ADDR: how many addresses the list has */
        uint8_t addr[16];         /* HOST_ADDR: the one asked for */
};
#define PRIVD_LIMIT_MEMORY 1u
#define PRIVD_LIMIT_PIDS 2u
#define PRIVD_LIMIT_CPU 4u
/* JOB_OPEN: the workspace's tmpfs is mounted noswap. */
#define PRIVD_WS_NOSWAP 0x100u

/* NET_OPEN's reply. Addresses in network order; the veth's host end is
 * named by the helper from the slot. */
struct privd_net_reply {
        struct privd_hdr h;
        int32_t err;
        uint16_t flags;           /* PRIVD_NET_V6: the IPv6 pair below is set */
        uint16_t slot;            /* the job's block of the pool */
        uint32_t host_addr;       /* the host end's address, the job's gateway */
        uint32_t job_addr;        /* eth0's, in the job */
        uint8_t host_addr6[16];
        uint8_t job_addr6[16];
};

struct privd_hello_reply {
        struct privd_hdr h;
        int32_t err;
        uint32_t version;
        uint32_t uid_first;       /* the helper's job uid range */
        uint32_t uid_count;
        uint32_t max_jobs;        /* slots */
        uint32_t net_slots;       /* blocks of the network pool; 0: no network */
        uint32_t limits;          /* PRIVD_LIMIT_* its cgroup root gives job cgroups */
};

/* The largest message either side sends; a bigger one is refused. */
#define PRIVD_MSG_MAX 128u
/* The most descriptors one reply carries (JOB_ADOPT, NET_OPEN). */
#define PRIVD_REPLY_FDS_MAX 3u
/* The most descriptors one message carries. */
#define PRIVD_FDS_MAX PRIVD_FD_COUNT
