/* SPDX-License-Identifier: Apache-2.0 */
/* For bench/session.sh. Without arguments: print CLOCK_REALTIME in
 * nanoseconds, the first thing it does (built static, so no dynamic
 * loading runs before it). With "--spawn N": start itself N times with
 * posix_spawn, straight from here, and print the p50, p95 and p99 in ms
 * from before the call to the child's clock read: the floor of any
 * "request to the first instruction of a new program" on this machine. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        return (long long) t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
        long long x = *(const long long *) a, y = *(const long long *) b;
        return (x > y) - (x < y);
}

int main(int argc, char **argv) {
        if (argc < 3 || strcmp(argv[1], "--spawn") != 0) {
                char b[32];
                int n = snprintf(b, sizeof(b), "%lld\n", now_ns());
                return write(1, b, (size_t) n) == n ? 0 : 1;
        }
        int runs = atoi(argv[2]);
        if (runs < 1)
                return 2;
        long long *v = calloc((size_t) runs, sizeof(*v));
        char self[4096];
        ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (!v || sl < 0)
                return 1;
        self[sl] = '\0';
        for (int i = 0; i < runs; i++) {
                int p[2];
                if (pipe(p) < 0)
                        return 1;
                posix_spawn_file_actions_t fa;
                posix_spawn_file_actions_init(&fa);
                posix_spawn_file_actions_adddup2(&fa, p[1], 1);
                char *av[] = { self, NULL };
                pid_t pid;
                long long t0 = now_ns();
                if (posix_spawn(&pid, self, &fa, NULL, av, NULL) != 0)
                        return 1;
                posix_spawn_file_actions_destroy(&fa);
                close(p[1]);
                char b[32] = { 0 };
                ssize_t n = read(p[0], b, sizeof(b) - 1);
                close(p[0]);
                waitpid(pid, NULL, 0);
                if (n <= 0)
                        return 1;
                v[i] = atoll(b) - t0;
        }
        qsort(v, (size_t) runs, sizeof(*v), by_value);
        printf("p50 %.2f  p95 %.2f  p99 %.2f  (n %d)\n", v[runs / 2] / 1e6, v[runs * 95 / 100] / 1e6, v[runs * 99 / 100] / 1e6,
               runs);
        return 0;
}
