/* SPDX-License-Identifier: Apache-2.0 */
/* privd-client's scenarios for a job's network (t/privd-net.bats): jobs
 * spawned as restricted jobs are, held at --block-fd, NET_OPEN with what
 * their launchers reported, and the requests a hostile front would send
 * instead. "net": job A's network, printed ("A slot N", "A addr ADDR",
 * "A child PID", its DNS sockets and its secrets proxy's); "net-attacks", "net-reuse",
 * "net-job-close" and "net-audit" go on from there. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "privd-client.h"

/* A job spawned as restricted jobs are: `sleep 600` in a network
 * namespace of its own, held at --block-fd; its --info-fd line read. */
struct netjob {
        struct job j;
        int block_wr;
        int32_t child;
        uint64_t ino;
        int socks[3];     /* the DNS proxy's sockets and the secrets proxy's, once its network is open */
};

static void spawn_held(const char *name, struct netjob *n) {
        static const char cmd[] = "sleep\0" "600";
        int st[2], info[2], block[2];
        open_job(name, &n->j);
        if (pipe2(st, O_CLOEXEC) < 0 || pipe2(info, O_CLOEXEC) < 0 || pipe2(block, O_CLOEXEC) < 0)
                fail("pipe");
        int fds[5] = { st[1], profile_fd(), info[1], block[0], memfd_with("argv", cmd, sizeof(cmd)) };
        struct privd_spawn m = { .h = hdr(PRIVD_SPAWN, sizeof(m)), .job = n->j.h,
                                 .fds = PRIVD_FD_BIT(PRIVD_FD_STATUS) | PRIVD_FD_BIT(PRIVD_FD_PROFILE) | PRIVD_FD_BIT(PRIVD_FD_INFO) |
                                        PRIVD_FD_BIT(PRIVD_FD_BLOCK) | PRIVD_FD_BIT(PRIVD_FD_ARGV) };
        struct privd_reply rep;
        int pidfd = -1;
        int32_t r = call(&m, sizeof(m), fds, 5, &rep, &pidfd, 1);
        for (int i = 0; i < 5; i++)
                close(fds[i]);
        /* Kept open: a launcher that writes its status to a pipe nobody
         * reads dies of SIGPIPE. */
        n->j.status_rd = st[0];
        if (r < 0) {
                fprintf(stderr, "privd-client: cannot spawn %s: %s\n", name, strerror(-r));
                exit(2);
        }
        n->j.pid = rep.pid;
        n->j.pidfd = pidfd;
        n->block_wr = block[1];
        /* The launcher closes it after its one line. */
        char buf[1024];
        ssize_t k, tot = 0;
        while (tot < (ssize_t) sizeof(buf) - 1 && (k = read(info[0], buf + tot, sizeof(buf) - 1 - (size_t) tot)) > 0)
                tot += k;
        buf[tot] = '\0';
        close(info[0]);
        const char *c = strstr(buf, "\"child-pid\": "), *ns = strstr(buf, "\"net\": ");
        if (!c || !ns) {
                fprintf(stderr, "privd-client: %s's info line: '%s'\n", name, buf);
                exit(2);
        }
        n->child = (int32_t) atoi(c + 13);
        n->ino = strtoull(ns + 7, NULL, 10);
        printf("%s child %d\n%s netns %llu\n", name, (int) n->child, name, (unsigned long long) n->ino);
}

/* socks: NET_OPEN's three descriptors (UDP 53, TCP 53, TCP 443), or -1
 * each unless exactly three came; NULL: closed. */
static int32_t net_open(struct privd_handle h, int32_t pid, uint64_t ino, uint32_t flags, struct privd_net_reply *rep, int socks[3]) {
        struct privd_net_open m = { .h = hdr(PRIVD_NET_OPEN, sizeof(m)), .job = h, .pid = pid, .flags = flags, .netns_ino = ino };
        int fds[3] = { -1, -1, -1 };
        send_raw(&m, sizeof(m), NULL, 0);
        union {
                struct privd_net_reply r;
                char raw[PRIVD_MSG_MAX];
        } u;
        char cbuf[CMSG_SPACE(4 * sizeof(int))];
        struct iovec iov = { .iov_base = &u, .iov_len = sizeof(u) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
        memset(&u, 0, sizeof(u));
        ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (n != (ssize_t) sizeof(u.r))
                fail("NET_OPEN's reply");
        /* Any other count is the helper's fault: every one received is
         * closed, and net_up() fails on the -1s. */
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                int got[4];
                size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                if (k > 4)
                        k = 4;
                memcpy(got, CMSG_DATA(c), k * sizeof(int));
                if (k == 3)
                        memcpy(fds, got, sizeof(fds));
                else
                        for (size_t i = 0; i < k; i++)
                                close(got[i]);
        }
        if (rep)
                *rep = u.r;
        for (int i = 0; i < 3; i++) {
                if (socks)
                        socks[i] = fds[i];
                else if (fds[i] >= 0)
                        close(fds[i]);
        }
        return u.r.err;
}

/* The job's network open: its addresses, and where its DNS sockets are. */
static void net_up(const char *name, struct netjob *n, uint32_t flags) {
        struct privd_net_reply rep;
        int socks[3] = { -1, -1, -1 };
        int32_t r = net_open(n->j.h, n->child, n->ino, flags, &rep, socks);
        if (r < 0) {
                printf("%s NET_OPEN failed: %s\n", name, strerror(-r));
                fflush(stdout);
                exit(2);
        }
        char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];
        printf("%s slot %u\n%s host %s\n%s addr %s\n", name, rep.slot, name, inet_ntop(AF_INET, &rep.host_addr, a, sizeof(a)), name,
               inet_ntop(AF_INET, &rep.job_addr, b, sizeof(b)));
        if (rep.flags & PRIVD_NET_V6)
                printf("%s addr6 %s\n", name, inet_ntop(AF_INET6, rep.job_addr6, a, sizeof(a)));
        /* Where they are bound; in which namespace, t/privd-net.bats asks
         * ss inside the job (SIOCGSKNS would need CAP_NET_ADMIN). */
        for (int i = 0; i < 3; i++) {
                struct sockaddr_in sa;
                socklen_t len = sizeof(sa), tlen = sizeof(int);
                int type = 0;
                if (socks[i] < 0 || getsockname(socks[i], (struct sockaddr *) &sa, &len) < 0 ||
                    getsockopt(socks[i], SOL_SOCKET, SO_TYPE, &type, &tlen) < 0)
                        fail(i < 2 ? "the DNS sockets" : "the secrets proxy's socket");
                printf("%s %s %s %s:%u\n", name, i < 2 ? "dns" : "proxy", type == SOCK_STREAM ? "tcp" : type == SOCK_DGRAM ? "udp" : "?",
                       inet_ntop(AF_INET, &sa.sin_addr, a, sizeof(a)), ntohs(sa.sin_port));
        }
        /* Held, as the proxies hold them while the job runs: they keep
         * the job's namespace, and so its pair, alive. */
        memcpy(n->socks, socks, sizeof(socks));
        /* Let the sandbox go on, as the front does. */
        if (write(n->block_wr, "1", 1) != 1)
                fail("block-fd");
}

static int32_t net_close(struct privd_handle h) {
        return job_op(PRIVD_NET_CLOSE, h);
}

/* A has its veth (block 0 of a /29's two), B and E are spawned and held;
 * each attack is refused, A's veth stays, B then takes the last block
 * and E finds the pool exhausted. */
static void attack_net(struct netjob *a) {
        struct netjob b, e;
        struct job c, d;
        struct stat st;
        spawn_held("B", &b);
        spawn_held("E", &e);
        if (stat("/proc/self/ns/net", &st) < 0)
                fail("own netns");
        expect_refused("NET_OPEN made-up handle", net_open((struct privd_handle){ .slot = 999999, .gen = 1 }, b.child, b.ino, 0, NULL, NULL));
        expect_refused("NET_OPEN B with E's process", net_open(b.j.h, e.child, e.ino, 0, NULL, NULL));
        expect_refused("NET_OPEN B with A's process", net_open(b.j.h, a->child, a->ino, 0, NULL, NULL));
        expect_refused("NET_OPEN B with pid 1", net_open(b.j.h, 1, (uint64_t) st.st_ino, 0, NULL, NULL));
        expect_refused("NET_OPEN B with the front's own pid", net_open(b.j.h, (int32_t) getpid(), (uint64_t) st.st_ino, 0, NULL, NULL));
        expect_refused("NET_OPEN B with a wrong inode", net_open(b.j.h, b.child, b.ino + 1, 0, NULL, NULL));
        expect_refused("NET_OPEN A twice", net_open(a->j.h, a->child, a->ino, 0, NULL, NULL));
        open_job("C", &c);
        expect_refused("NET_OPEN before SPAWN", net_open(c.h, b.child, b.ino, 0, NULL, NULL));
        if (job_op(PRIVD_JOB_CLOSE, c.h) < 0)
                fail("close C");
        open_job("D", &d);
        expect_refused("NET_OPEN stale generation", net_open(c.h, b.child, b.ino, 0, NULL, NULL));
        expect_refused("NET_CLOSE of a job without a network", net_close(b.j.h));
        net_up("B", &b, 0);
        expect_refused("NET_OPEN with the pool exhausted", net_open(e.j.h, e.child, e.ino, 0, NULL, NULL));
}

/* NET_CLOSE gives A's block back; B takes it; A cannot open again. */
static void net_reuse(struct netjob *a) {
        struct netjob b;
        spawn_held("B", &b);
        expect_refused("NET_OPEN B while A holds the block", net_open(b.j.h, b.child, b.ino, 0, NULL, NULL));
        int32_t r = net_close(a->j.h);
        printf("A NET_CLOSE: %s\n", r ? strerror(-r) : "ok");
        expect_refused("NET_OPEN A after its NET_CLOSE", net_open(a->j.h, a->child, a->ino, 0, NULL, NULL));
        net_up("B", &b, 0);
        expect_refused("NET_CLOSE A twice", net_close(a->j.h));
}

/* JOB_CLOSE gives A's block back too: once the kernel has removed A's
 * pair with its namespace (no event says when), B's NET_OPEN gets it. */
static void net_job_close(struct netjob *a) {
        struct netjob b;
        spawn_held("B", &b);
        expect_refused("NET_OPEN B while A holds the block", net_open(b.j.h, b.child, b.ino, 0, NULL, NULL));
        int32_t r = job_op(PRIVD_JOB_CLOSE, a->j.h);
        printf("A JOB_CLOSE: %s\n", r ? strerror(-r) : "ok");
        /* The proxies let go of A's sockets at its end, as the front's
         * do: the last hold on A's namespace. */
        for (int i = 0; i < 3; i++)
                close(a->socks[i]);
        struct privd_net_reply rep;
        unsigned tries = 1;
        while ((r = net_open(b.j.h, b.child, b.ino, 0, &rep, NULL)) == -EAGAIN && tries < 400) {
                tries++;
                nanosleep(&(struct timespec){ .tv_nsec = 25 * 1000 * 1000 }, NULL);
        }
        if (r < 0) {
                printf("B NET_OPEN failed after %u tries: %s\n", tries, strerror(-r));
                return;
        }
        char a4[INET_ADDRSTRLEN];
        printf("B slot %u\nB addr %s\n", rep.slot, inet_ntop(AF_INET, &rep.job_addr, a4, sizeof(a4)));
        fflush(stdout);
}

/* The audit's messages to a helper started without --net-audit: each
 * answered EOPNOTSUPP, A's network as it was. */
static void audit_undone(struct netjob *a) {
        struct privd_hdr ring = hdr(PRIVD_NET_RING, sizeof(ring));
        expect_refused("NET_RING", call(&ring, sizeof(ring), NULL, 0, NULL, NULL, 0));
        struct privd_net_audit au = { .h = hdr(PRIVD_NET_AUDIT, sizeof(au)), .job = a->j.h, .flags = PRIVD_AUDIT_ENFORCE,
                                      .n_deny = 1, .budget = 1000, .deny = { { 25, 25 } } };
        expect_refused("NET_AUDIT", call(&au, sizeof(au), NULL, 0, NULL, NULL, 0));
        struct privd_net_allow al = { .h = hdr(PRIVD_NET_ALLOW, sizeof(al)), .job = a->j.h, .addr = { [10] = 0xff, [11] = 0xff, [12] = 192, [13] = 0, [14] = 2, [15] = 1 },
                                      .prefix = 128, .proto = 6, .port_first = 80, .port_last = 80 };
        expect_refused("NET_ALLOW", call(&al, sizeof(al), NULL, 0, NULL, NULL, 0));
        struct privd_net_deny de = { .h = hdr(PRIVD_NET_DENY, sizeof(de)), .op = PRIVD_DENY_ADD, .prefix = 128, .reason = 7 };
        expect_refused("NET_DENY", call(&de, sizeof(de), NULL, 0, NULL, NULL, 0));
        expect_refused("NET_UNAUDIT", job_op(PRIVD_NET_UNAUDIT, a->j.h));
}

int net_main(const char *scenario, uint32_t flags, bool hold, sigset_t *usr1) {
        struct netjob a;
        spawn_held("A", &a);
        net_up("A", &a, flags);
        if (!strcmp(scenario, "net-attacks"))
                attack_net(&a);
        else if (!strcmp(scenario, "net-reuse"))
                net_reuse(&a);
        else if (!strcmp(scenario, "net-job-close"))
                net_job_close(&a);
        else if (!strcmp(scenario, "net-audit"))
                audit_undone(&a);
        uint32_t uid;
        if (uid_take(&uid) == 0 && uid_release(uid) == 0)
                printf("alive\n");
        printf("attacks done\n");
        fflush(stdout);
        if (hold) {
                int sig;
                sigwait(usr1, &sig);
        }
        return accepted ? 1 : 0;
}
