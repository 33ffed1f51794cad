/* SPDX-License-Identifier: Apache-2.0 */
/* What a restricted job's veth pair costs alone: veth_create() (the pair,
 * the host end's address, the job end's address, route, lo and the DNS
 * sockets inside) and veth_delete(), N times, each into a network namespace
 * of its own held by a child. Prints p50 and p90 of each in microseconds.
 * Usage: bench/veth [N]   (as root; links are named sbxbv0.. sbxbv99) */
#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "veth.h"

static long usec_now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static int by_value(const void *a, const void *b) {
        long x = *(const long *) a, y = *(const long *) b;
        return x > y ? 1 : x < y ? -1 : 0;
}

/* A child in a network namespace of its own, and that namespace. */
static pid_t holder(int *ret_ns) {
        int p[2];
        char c, path[64];
        if (pipe(p) < 0)
                return -1;
        pid_t pid = fork();
        if (pid == 0) {
                if (unshare(CLONE_NEWNET) < 0 || write(p[1], "x", 1) != 1)
                        _exit(1);
                pause();
                _exit(0);
        }
        close(p[1]);
        ssize_t n = pid > 0 ? read(p[0], &c, 1) : -1;
        close(p[0]);
        if (n != 1)
                return -1;
        snprintf(path, sizeof(path), "/proc/%d/ns/net", (int) pid);
        *ret_ns = open(path, O_RDONLY | O_CLOEXEC);
        return *ret_ns < 0 ? -1 : pid;
}

int main(int argc, char **argv) {
        int n = argc > 1 ? atoi(argv[1]) : 100;
        if (n < 1) {
                fprintf(stderr, "usage: bench/veth [N]\n");
                return 2;
        }
        long *made = calloc((size_t) n, sizeof(long)), *gone = calloc((size_t) n, sizeof(long));
        if (!made || !gone)
                return 1;
        for (int i = 0; i < n; i++) {
                int ns = -1;
                pid_t pid = holder(&ns);
                if (pid < 0) {
                        perror("bench/veth: a network namespace");
                        return 1;
                }
                struct veth_spec s = { .netns_fd = ns, .dns_fd = -1, .dns_tcp_fd = -1, .proxy_fd = -1 };
                snprintf(s.host_if, sizeof(s.host_if), "sbxbv%d", i % 100);
                s.host_addr = htonl(0x0a6f0001);
                s.job_addr = htonl(0x0a6f0002);
                struct sbx_error err = { 0 };
                long t0 = usec_now();
                if (veth_create(&s, &err) < 0) {
                        fprintf(stderr, "bench/veth: %s\n", err.msg);
                        return 1;
                }
                long t1 = usec_now();
                veth_delete(s.host_if);
                long t2 = usec_now();
                made[i] = t1 - t0;
                gone[i] = t2 - t1;
                close(s.dns_fd);
                close(s.dns_tcp_fd);
                close(s.proxy_fd);
                close(ns);
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
        qsort(made, (size_t) n, sizeof(long), by_value);
        qsort(gone, (size_t) n, sizeof(long), by_value);
        printf("veth_create: runs %d p50_us %ld p90_us %ld\n", n, made[n / 2], made[n * 9 / 10]);
        printf("veth_delete: runs %d p50_us %ld p90_us %ld\n", n, gone[n / 2], gone[n * 9 / 10]);
        free(made);
        free(gone);
        return 0;
}
