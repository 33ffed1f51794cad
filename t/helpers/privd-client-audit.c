/* SPDX-License-Identifier: Apache-2.0 */
/* privd-client's scenarios for the network audit (t/privd-audit.bats),
 * against a helper started with --net-audit. The front's side is what a
 * front without privilege has: the ring buffer's descriptor from
 * NET_RING, read by mmap (supervisor/net/auditring.c), never bpf().
 * "audit": job A audited and enforcing, with one NET_ALLOW entry and one
 * address of it in the deny set, tries three connects; its events are
 * printed as the ring holds them ("A event connect 192.0.2.1:80 allow
 * ..."), then its counters. "audit-attacks": the same job, and before it
 * runs every hostile request of a front, each printed refused or
 * ACCEPTED. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "auditring.h"
#include "netaudit.h"
#include "privd-client.h"

#define ND_HOST 7 /* enum netdeny_reason */

static struct auditring ring;
static int ring_fd = -1;

static void mapped4(uint8_t out[16], const char *a) {
        memset(out, 0, 16);
        out[10] = out[11] = 0xff;
        if (inet_pton(AF_INET, a, out + 12) != 1)
                fail("address");
}

static int32_t net_ring(void) {
        struct privd_hdr m = hdr(PRIVD_NET_RING, sizeof(m));
        struct privd_reply rep;
        int fd = -1;
        int32_t r = call(&m, sizeof(m), NULL, 0, &rep, &fd, 1);
        if (r == 0 && ring_fd < 0) {
                int e = auditring_map(&ring, fd, rep.ring_bytes);
                printf("ring %u bytes: %s\n", rep.ring_bytes, e ? strerror(-e) : "mapped");
                if (e)
                        exit(2);
                ring_fd = fd;
        } else if (fd >= 0)
                close(fd);
        return r;
}

static int32_t net_audit(struct privd_handle h, uint32_t flags, uint32_t n_deny, const struct privd_port_range *deny) {
        struct privd_net_audit m = { .h = hdr(PRIVD_NET_AUDIT, sizeof(m)), .job = h, .flags = flags, .n_deny = n_deny, .budget = 100 };
        if (deny)
                memcpy(m.deny, deny, sizeof(m.deny));
        return call(&m, sizeof(m), NULL, 0, NULL, NULL, 0);
}

static int32_t net_allow_raw(struct privd_handle h, const uint8_t addr[16], uint8_t prefix, uint8_t proto, uint16_t first,
                             uint16_t last, uint16_t reserved) {
        struct privd_net_allow m = { .h = hdr(PRIVD_NET_ALLOW, sizeof(m)), .job = h, .prefix = prefix, .proto = proto,
                                     .port_first = first, .port_last = last, .reserved = reserved };
        memcpy(m.addr, addr, 16);
        return call(&m, sizeof(m), NULL, 0, NULL, NULL, 0);
}

static int32_t net_allow(struct privd_handle h, const char *a4, uint16_t port) {
        uint8_t addr[16];
        mapped4(addr, a4);
        return net_allow_raw(h, addr, 128, IPPROTO_TCP, port, port, 0);
}

static int32_t net_deny_raw(const uint8_t addr[16], uint8_t prefix, uint8_t op, uint8_t reason, uint8_t reserved) {
        struct privd_net_deny m = { .h = hdr(PRIVD_NET_DENY, sizeof(m)), .prefix = prefix, .op = op, .reason = reason, .reserved = reserved };
        memcpy(m.addr, addr, 16);
        return call(&m, sizeof(m), NULL, 0, NULL, NULL, 0);
}

static int32_t net_unaudit(struct privd_handle h, uint64_t *lost, uint64_t *dropped) {
        struct privd_job m = { .h = hdr(PRIVD_NET_UNAUDIT, sizeof(m)), .job = h };
        union {
                struct privd_audit_reply a;
                char raw[PRIVD_MSG_MAX];
        } u;
        send_raw(&m, sizeof(m), NULL, 0);
        memset(&u, 0, sizeof(u));
        if (recv(sock, &u, sizeof(u), 0) != (ssize_t) sizeof(u.a))
                fail("NET_UNAUDIT's reply");
        if (lost)
                *lost = u.a.lost;
        if (dropped)
                *dropped = u.a.dropped;
        return u.a.err;
}

struct seen {
        const char *name;
        uint64_t cgroup_id;
        unsigned mine, strays;
};

static void on_event(void *arg, const void *rec, size_t len) {
        struct seen *s = arg;
        const struct netaudit_event *e = rec;
        char a[INET6_ADDRSTRLEN];
        if (len < sizeof(*e) || e->cgroup_id != s->cgroup_id) {
                s->strays++;
                return;
        }
        s->mine++;
        inet_ntop(e->family, e->addr, a, sizeof(a));
        printf("%s event %s %s:%u %s reason %u comm %.16s\n", s->name, e->kind == NETAUDIT_CONNECT ? "connect" : "other", a, e->port,
               e->verdict == NETAUDIT_ALLOW ? "allow" : "deny", e->reason, e->comm);
}

/* A connects to 192.0.2.1, .2 and .3, port 80, and ends; its events are
 * read from the ring as a front without bpf() reads them. */
static void run_and_read(struct job *a) {
        static const char cmd[] = "python3\0-c\0"
                                  "import socket\n"
                                  "for h in ('192.0.2.1', '192.0.2.2', '192.0.2.3'):\n"
                                  "    s = socket.socket()\n"
                                  "    try:\n"
                                  "        s.connect((h, 80))\n"
                                  "    except OSError as e:\n"
                                  "        print(h, e.errno)\n"
                                  "    s.close()\n";
        int32_t r = spawn(a, cmd, sizeof(cmd), -1);
        if (r < 0) {
                printf("cannot spawn A: %s\n", strerror(-r));
                exit(2);
        }
        struct pollfd pf = { .fd = a->pidfd, .events = POLLIN };
        if (poll(&pf, 1, 60000) != 1)
                fail("A did not end");
        struct stat st;
        if (fstat(a->cg, &st) < 0)
                fail("A's cgroup");
        struct seen s = { .name = "A", .cgroup_id = (uint64_t) st.st_ino };
        /* The ring says when it holds something: the wait is on its
         * descriptor, as the front's loop waits. */
        struct pollfd rp = { .fd = ring_fd, .events = POLLIN };
        while (s.mine < 3 && poll(&rp, 1, 10000) == 1) {
                int n = auditring_consume(&ring, on_event, &s);
                if (n < 0) {
                        printf("ring: %s\n", strerror(-n));
                        break;
                }
        }
        uint64_t lost = 0, dropped = 0;
        r = net_unaudit(a->h, &lost, &dropped);
        printf("A NET_UNAUDIT: %s, lost %llu, dropped %llu, events %u, strays %u\n", r ? strerror(-r) : "ok", (unsigned long long) lost,
               (unsigned long long) dropped, s.mine, s.strays);
}

/* A: audited, enforcing; 192.0.2.1 and .3 admitted on TCP 80, .3 in
 * the deny set (as a host address is). */
static void audit_a(struct job *a) {
        uint8_t host[16];
        open_job("A", a);
        if (net_audit(a->h, PRIVD_AUDIT_ENFORCE, 0, NULL) < 0 || net_allow(a->h, "192.0.2.1", 80) < 0 ||
            net_allow(a->h, "192.0.2.3", 80) < 0)
                fail("audit A");
        mapped4(host, "192.0.2.3");
        if (net_deny_raw(host, 128, PRIVD_DENY_ADD, ND_HOST, 0) < 0)
                fail("deny 192.0.2.3");
}

static int32_t host_addr(uint32_t index, uint32_t reserved, struct privd_reply *rep) {
        struct privd_host_addr m = { .h = hdr(PRIVD_HOST_ADDR, sizeof(m)), .index = index, .reserved = reserved };
        return call(&m, sizeof(m), NULL, 0, rep, NULL, 0);
}

/* The host's addresses: listed in full, loopback among them; past the end
 * and a reserved field refused. */
static void host_addrs(void) {
        struct privd_reply rep;
        uint32_t count = 1;
        bool loopback = false;
        for (uint32_t i = 0; i < count; i++) {
                int32_t r = host_addr(i, 0, &rep);
                if (r < 0 || rep.count == 0 || rep.count > PRIVD_HOST_ADDRS_MAX)
                        fail("HOST_ADDR: an address of the list refused, or a count of none or too many");
                count = rep.count;
                loopback |= rep.addr[10] == 0xff && rep.addr[11] == 0xff && rep.addr[12] == 127 && rep.addr[15] == 1;
        }
        printf("host addresses: %u, loopback %s\n", count, loopback ? "among them" : "missing");
        expect_refused("HOST_ADDR past the end", host_addr(count, 0, &rep));
        expect_refused("HOST_ADDR reserved set", host_addr(0, 1, &rep));
}

static void attacks(struct job *a) {
        struct job b, c, d, e;
        uint8_t addr[16];
        host_addrs();
        expect_refused("NET_RING twice", net_ring());
        /* handles */
        expect_refused("NET_AUDIT made-up handle", net_audit((struct privd_handle){ .slot = 999999, .gen = 1 }, 0, 0, NULL));
        expect_refused("NET_AUDIT A twice", net_audit(a->h, PRIVD_AUDIT_ENFORCE, 0, NULL));
        expect_refused("NET_UNAUDIT A's slot, another generation",
                       net_unaudit((struct privd_handle){ .slot = a->h.slot, .gen = a->h.gen + 1 }, NULL, NULL));
        expect_refused("NET_ALLOW A's slot, another generation",
                       net_allow((struct privd_handle){ .slot = a->h.slot, .gen = a->h.gen + 1 }, "198.51.100.1", 443));
        open_job("C", &c);
        if (job_op(PRIVD_JOB_CLOSE, c.h) < 0)
                fail("close C");
        expect_refused("NET_AUDIT stale handle", net_audit(c.h, 0, 0, NULL));
        expect_refused("NET_ALLOW stale handle", net_allow(c.h, "198.51.100.1", 443));
        /* states */
        open_job("B", &b);
        static const char sleeper[] = "sleep\0" "600";
        if (spawn(&b, sleeper, sizeof(sleeper), -1) < 0)
                fail("spawn B");
        expect_refused("NET_AUDIT after SPAWN", net_audit(b.h, PRIVD_AUDIT_ENFORCE, 0, NULL));
        expect_refused("NET_ALLOW before NET_AUDIT", net_allow(b.h, "198.51.100.1", 443));
        expect_refused("NET_UNAUDIT of a job never audited", net_unaudit(b.h, NULL, NULL));
        /* fields */
        open_job("D", &d);
        struct privd_port_range deny[PRIVD_AUDIT_DENY_MAX] = { { 25, 25 } };
        expect_refused("NET_AUDIT unknown flags", net_audit(d.h, 0x80, 0, NULL));
        expect_refused("NET_AUDIT 17 deny ranges", net_audit(d.h, PRIVD_AUDIT_ENFORCE, PRIVD_AUDIT_DENY_MAX + 1, NULL));
        deny[1] = (struct privd_port_range){ 100, 99 };
        expect_refused("NET_AUDIT reversed deny range", net_audit(d.h, PRIVD_AUDIT_ENFORCE, 2, deny));
        deny[1] = (struct privd_port_range){ 99, 100 };
        expect_refused("NET_AUDIT deny range past n_deny", net_audit(d.h, PRIVD_AUDIT_ENFORCE, 1, deny));
        if (net_audit(d.h, PRIVD_AUDIT_ENFORCE, 2, deny) < 0)
                fail("audit D");
        mapped4(addr, "198.51.100.0");
        expect_refused("NET_ALLOW prefix 129", net_allow_raw(d.h, addr, 129, IPPROTO_TCP, 1, 2, 0));
        expect_refused("NET_ALLOW bits past the prefix", net_allow_raw(d.h, addr, 96 + 16, IPPROTO_TCP, 1, 2, 0));
        expect_refused("NET_ALLOW protocol 1", net_allow_raw(d.h, addr, 128, 1, 1, 2, 0));
        expect_refused("NET_ALLOW reversed ports", net_allow_raw(d.h, addr, 128, IPPROTO_TCP, 443, 80, 0));
        expect_refused("NET_ALLOW reserved set", net_allow_raw(d.h, addr, 128, IPPROTO_TCP, 80, 80, 1));
        /* oversized sets: 32 rules a prefix, 512 prefixes a job */
        unsigned n;
        int32_t r = 0;
        for (n = 0; n < 40 && (r = net_allow_raw(d.h, addr, 128, IPPROTO_TCP, (uint16_t) (1000 + n), (uint16_t) (1000 + n), 0)) == 0; n++)
                ;
        printf("D rules for one prefix: %u accepted\n", n);
        expect_refused("NET_ALLOW a 33rd rule for one prefix", r);
        for (n = 1; n < 600; n++) {
                addr[14] = (uint8_t) (n >> 8);
                addr[15] = (uint8_t) n;
                if ((r = net_allow_raw(d.h, addr, 128, IPPROTO_TCP, 80, 80, 0)) < 0)
                        break;
        }
        printf("D prefixes: %u accepted\n", n);
        expect_refused("NET_ALLOW a 513th prefix", r);
        uint64_t lost, dropped;
        if (net_unaudit(d.h, &lost, &dropped) < 0)
                fail("unaudit D");
        expect_refused("NET_UNAUDIT twice", net_unaudit(d.h, NULL, NULL));
        expect_refused("NET_ALLOW after NET_UNAUDIT", net_allow(d.h, "198.51.100.1", 443));
        expect_refused("NET_AUDIT after NET_UNAUDIT", net_audit(d.h, 0, 0, NULL));
        /* the deny set */
        mapped4(addr, "169.254.0.0");
        expect_refused("NET_DENY DEL of the helper's own prefix", net_deny_raw(addr, 96 + 16, PRIVD_DENY_DEL, 0, 0));
        mapped4(addr, "198.51.100.7");
        expect_refused("NET_DENY DEL of a prefix not in the set", net_deny_raw(addr, 128, PRIVD_DENY_DEL, 0, 0));
        expect_refused("NET_DENY unknown op", net_deny_raw(addr, 128, 9, ND_HOST, 0));
        expect_refused("NET_DENY ADD reason 0", net_deny_raw(addr, 128, PRIVD_DENY_ADD, 0, 0));
        expect_refused("NET_DENY ADD reason 200", net_deny_raw(addr, 128, PRIVD_DENY_ADD, 200, 0));
        expect_refused("NET_DENY prefix 129", net_deny_raw(addr, 129, PRIVD_DENY_ADD, ND_HOST, 0));
        expect_refused("NET_DENY reserved set", net_deny_raw(addr, 128, PRIVD_DENY_ADD, ND_HOST, 1));
        mapped4(addr, "10.99.0.0");
        for (n = 0; n < 1100; n++) {
                addr[14] = (uint8_t) (n >> 8);
                addr[15] = (uint8_t) n;
                if ((r = net_deny_raw(addr, 128, PRIVD_DENY_ADD, ND_HOST, 0)) < 0)
                        break;
        }
        printf("deny prefixes added: %u\n", n);
        expect_refused("NET_DENY past 1024 prefixes", r);
        /* what the flood added goes again; A's entry .3 stays */
        while (n-- > 0) {
                addr[14] = (uint8_t) (n >> 8);
                addr[15] = (uint8_t) n;
                if (net_deny_raw(addr, 128, PRIVD_DENY_DEL, 0, 0) < 0)
                        fail("deny DEL");
        }
        /* E: audited, closed with its attachment: JOB_CLOSE takes it down */
        open_job("E", &e);
        if (net_audit(e.h, PRIVD_AUDIT_ENFORCE, 0, NULL) < 0 || job_op(PRIVD_JOB_CLOSE, e.h) < 0)
                fail("E");
        expect_refused("NET_UNAUDIT of a closed job", net_unaudit(e.h, NULL, NULL));
        if (job_op(PRIVD_JOB_KILL, b.h) < 0 || job_op(PRIVD_JOB_CLOSE, b.h) < 0 || job_op(PRIVD_JOB_CLOSE, d.h) < 0)
                fail("close B, D");
}

/* The front as the daemon's user mode confines it: bpf(2) denied
 * (its own seccomp filter; kernel.unprivileged_bpf_disabled does the
 * same), so everything below reads the ring without it. */
static void deny_bpf(void) {
        struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bpf, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                fail("seccomp");
        long r = syscall(__NR_bpf, 0, NULL, 0);
        printf("bpf(): %s\n", r < 0 ? strerror(errno) : "allowed");
}

/* With --config: NET_ALLOW within the tenants' network_allow only
 * (192.0.2.0/24:80 and api.example:443 in t/privd-audit.bats). */
static void caps(struct job *a) {
        uint8_t addr[16];
        if (net_allow(a->h, "192.0.2.9", 80) < 0)
                fail("192.0.2.9:80, within 192.0.2.0/24:80, refused");
        if (net_allow(a->h, "198.51.100.7", 443) < 0)
                fail("198.51.100.7:443, one address on the ports of api.example:443, refused");
        printf("within the caps: admitted\n");
        expect_refused("an address within no cap", net_allow(a->h, "10.9.9.9", 80));
        expect_refused("a port of no cap", net_allow(a->h, "198.51.100.7", 22));
        expect_refused("the port of a cap, UDP only in none", net_allow_raw(a->h, (mapped4(addr, "192.0.2.9"), addr), 128, IPPROTO_UDP,
                                                                           80, 80, 0));
        mapped4(addr, "198.51.100.0");
        expect_refused("a /24 on a hostname cap's port", net_allow_raw(a->h, addr, 120, IPPROTO_TCP, 443, 443, 0));
        mapped4(addr, "192.0.0.0");
        expect_refused("a prefix wider than the cap's", net_allow_raw(a->h, addr, 112, IPPROTO_TCP, 80, 80, 0));
}

int audit_main(const char *scenario) {
        struct job a;
        deny_bpf();
        if (net_ring() < 0) {
                printf("NET_RING refused\n");
                return 2;
        }
        audit_a(&a);
        if (!strcmp(scenario, "audit-attacks"))
                attacks(&a);
        if (!strcmp(scenario, "audit-caps"))
                caps(&a);
        run_and_read(&a);
        uint32_t uid;
        if (uid_take(&uid) == 0 && uid_release(uid) == 0)
                printf("alive\n");
        printf("attacks done\n");
        fflush(stdout);
        auditring_unmap(&ring);
        return accepted ? 1 : 0;
}
