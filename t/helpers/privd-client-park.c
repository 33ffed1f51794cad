/* SPDX-License-Identifier: Apache-2.0 */
/* Scenarios "park" and "adopt" of t/helpers/privd-client.c (with
 * --connect, t/privd-listen.bats): a job whose SPAWN asked
 * PRIVD_SPAWN_OUTLIVE outlives its front, parked, and the next front takes
 * it back with JOB_ADOPT, and nothing else reaches it meanwhile.
 *
 * "park": SPAWN's flags without a session's descriptor or with an unknown
 * bit are refused; then job P runs `sleep 600` with OUTLIVE and a
 * seqpacket socket as descriptor 8, its uid, pid and handle are printed
 * ("P uid U", "P pid N", "P handle S G") and the client hangs up.
 * "adopt" (PARK_UID, PARK_PID, PARK_SLOT, PARK_GEN in the environment):
 * the old handle, a wrong pid, a wrong uid and a made-up request are
 * refused; the right one is answered with three descriptors (a pidfd of a
 * running process, two directories) and the handle; a second adoption is
 * refused; then P is killed and closed through the handle ("adopted"). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "privd-client.h"

static const char sleeper[] = "sleep\0" "600";
static const char opts[] = "--profile\0" "/dev/fd/4\0" "--";

int park_main(void) {
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                fail("socketpair");
        struct job b;
        open_job("B", &b);
        spawn_flags = PRIVD_SPAWN_OUTLIVE;
        expect_refused("OUTLIVE without a session's descriptor", spawn_opts(&b, opts, sizeof(opts), sleeper, sizeof(sleeper), -1,
                                                                             -1, -1, -1));
        spawn_flags = 0x80;
        expect_refused("an unknown SPAWN flag", spawn_opts(&b, opts, sizeof(opts), sleeper, sizeof(sleeper), -1, -1, -1, sp[0]));
        struct job p;
        open_job("P", &p);
        spawn_flags = PRIVD_SPAWN_OUTLIVE;
        int32_t r = spawn_opts(&p, opts, sizeof(opts), sleeper, sizeof(sleeper), -1, -1, -1, sp[0]);
        spawn_flags = 0;
        if (r < 0) {
                printf("cannot spawn P: %s\n", strerror(-r));
                return 2;
        }
        printf("P pid %d\nP handle %u %u\n", (int) p.pid, p.h.slot, p.h.gen);
        printf("attacks done\n");
        fflush(stdout);
        return accepted ? 1 : 0;
}

static int32_t adopt(uint32_t uid, int32_t pid, struct privd_reply *rep, int fds[3]) {
        struct privd_job_adopt m = { .h = hdr(PRIVD_JOB_ADOPT, sizeof(m)), .uid = uid, .pid = pid };
        fds[0] = fds[1] = fds[2] = -1;
        return call(&m, sizeof(m), NULL, 0, rep, fds, 3);
}

static bool is_dir(int fd) {
        struct stat st;
        return fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

static uint32_t env_u32(const char *name) {
        const char *v = getenv(name);
        if (!v)
                fail(name);
        return (uint32_t) strtoul(v, NULL, 10);
}

int adopt_main(void) {
        uint32_t uid = env_u32("PARK_UID");
        int32_t pid = (int32_t) env_u32("PARK_PID");
        struct privd_handle old = { .slot = env_u32("PARK_SLOT"), .gen = env_u32("PARK_GEN") };
        struct privd_reply rep;
        int fds[3];
        expect_refused("JOB_KILL of a parked job's handle", job_op(PRIVD_JOB_KILL, old));
        expect_refused("JOB_CLOSE of a parked job's handle", job_op(PRIVD_JOB_CLOSE, old));
        expect_refused("JOB_ADOPT with another pid", adopt(uid, pid + 1, &rep, fds));
        expect_refused("JOB_ADOPT with another uid", adopt(uid + 1, pid, &rep, fds));
        expect_refused("JOB_ADOPT of uid 0", adopt(0, pid, &rep, fds));
        int32_t r = adopt(uid, pid, &rep, fds);
        struct pollfd pf = { .fd = fds[0], .events = POLLIN };
        if (r < 0 || fds[0] < 0 || poll(&pf, 1, 0) != 0 || !is_dir(fds[1]) || !is_dir(fds[2]) || rep.pid != pid ||
            rep.job.slot != old.slot || rep.job.gen != old.gen) {
                printf("adoption failed: %s\n", r < 0 ? strerror(-r) : "wrong reply");
                return 2;
        }
        int again[3];
        struct privd_reply rep2;
        expect_refused("a second JOB_ADOPT", adopt(uid, pid, &rep2, again));
        if (job_op(PRIVD_JOB_KILL, rep.job) < 0 || job_op(PRIVD_JOB_CLOSE, rep.job) < 0) {
                printf("the adopted job cannot be killed and closed\n");
                return 2;
        }
        printf("adopted\nattacks done\n");
        fflush(stdout);
        return accepted ? 1 : 0;
}
