/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/initc.c: the daemon's side of sbx-init's socket reads
 * what a hostile agent sends. A fake agent writes crafted datagrams on the
 * other end of a socketpair; nothing malformed reaches the caller, no
 * descriptor leaks, and no wait outlives its deadline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fd-util.h"
#include "initc.h"

static struct initc_msg M;

struct pair {
        struct initc c;
        int agent;
};

static void open_pair(struct pair *p) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        assert_int_equal(initc_init(&p->c, sv[0]), 0);
        p->agent = sv[1];
}

static void close_pair(struct pair *p) {
        close(p->c.fd);
        close(p->agent);
}

static void agent_says(struct pair *p, uint32_t type, uint32_t id, int32_t error, const void *payload,
                       size_t len, uint32_t claimed_len, const int *fds, unsigned n_fds) {
        char buf[512];
        struct sbx_init_hdr h = { .type = type, .id = id, .len = claimed_len, .error = error };
        memcpy(buf, &h, sizeof(h));
        if (len)
                memcpy(buf + sizeof(h), payload, len);
        assert_int_equal(fd_send_with(p->agent, buf, sizeof(h) + len, fds, n_fds), 0);
}

/* The lowest free descriptor: unchanged after a refused message means
 * nothing it carried was left open. */
static int lowest_free(void) {
        int fd = dup(0);
        close(fd);
        return fd;
}

static void test_good_event_and_reply(void **state) {
        (void) state;
        struct pair p;
        open_pair(&p);
        struct sbx_init_ready r = { .version = SBX_INIT_VERSION, .pid = 2 };
        agent_says(&p, SBX_INIT_EV_READY, 0, 0, &r, sizeof(r), sizeof(r), NULL, 0);
        assert_int_equal(initc_recv(&p.c, &M, 1000), 0);
        assert_int_equal(M.hdr.type, SBX_INIT_EV_READY);
        struct sbx_init_stat st = { .mode = S_IFREG | 0644, .size = 3 };
        agent_says(&p, SBX_INIT_STAT | SBX_INIT_REPLY, 7, 0, &st, sizeof(st), sizeof(st), NULL, 0);
        assert_int_equal(initc_recv(&p.c, &M, 1000), 0);
        assert_int_equal(M.hdr.id, 7);
        agent_says(&p, SBX_INIT_OPEN | SBX_INIT_REPLY, 8, ENOENT, NULL, 0, 0, NULL, 0);
        assert_int_equal(initc_recv(&p.c, &M, 1000), 0);
        assert_int_equal(M.hdr.error, ENOENT);
        close_pair(&p);
}

static void test_sizes_types_and_errors_checked(void **state) {
        (void) state;
        struct pair p;
        struct sbx_init_stat st = { 0 };
        char ten[10] = { 0 };
        open_pair(&p);
        /* a length that is not the datagram's */
        agent_says(&p, SBX_INIT_STAT | SBX_INIT_REPLY, 1, 0, &st, sizeof(st), sizeof(st) + 1, NULL, 0);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        /* a payload of the wrong size for its type */
        agent_says(&p, SBX_INIT_STAT | SBX_INIT_REPLY, 1, 0, ten, sizeof(ten), sizeof(ten), NULL, 0);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        /* an unknown type, an event with an id, an error on an event */
        agent_says(&p, 0x12345, 1, 0, NULL, 0, 0, NULL, 0);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        agent_says(&p, SBX_INIT_EV_EXIT, 9, 0, ten, 0, 0, NULL, 0);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        agent_says(&p, SBX_INIT_EV_EXIT, 0, EIO, NULL, 0, 0, NULL, 0);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        /* an error reply with a payload, or with an errno out of range */
        agent_says(&p, SBX_INIT_STAT | SBX_INIT_REPLY, 1, EIO, ten, sizeof(ten), sizeof(ten), NULL, 0);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        agent_says(&p, SBX_INIT_STAT | SBX_INIT_REPLY, 1, -5, NULL, 0, 0, NULL, 0);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        /* a listing whose entries do not fill it, or name a path */
        char list[32] = { 0 };
        struct sbx_init_list lh = { .count = 2 };
        memcpy(list, &lh, sizeof(lh));
        memcpy(list + sizeof(lh), "\x08" "a\0", 3);
        agent_says(&p, SBX_INIT_LIST | SBX_INIT_REPLY, 1, 0, list, sizeof(lh) + 3, sizeof(lh) + 3, NULL, 0);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        lh.count = 1;
        memcpy(list, &lh, sizeof(lh));
        memcpy(list + sizeof(lh), "\x08" "../x\0", 6);
        agent_says(&p, SBX_INIT_LIST | SBX_INIT_REPLY, 1, 0, list, sizeof(lh) + 6, sizeof(lh) + 6, NULL, 0);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        close_pair(&p);
}

static void test_descriptors_checked_and_never_leaked(void **state) {
        (void) state;
        struct pair p;
        struct sbx_init_stat st = { 0 };
        int pp[2], dirfd;
        open_pair(&p);
        assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
        dirfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dirfd >= 0);
        int before = lowest_free();

        /* OPEN must hand a regular file: a FIFO (a pipe) or a directory is
         * refused and closed. */
        agent_says(&p, SBX_INIT_OPEN | SBX_INIT_REPLY, 1, 0, &st, sizeof(st), sizeof(st), &pp[0], 1);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        agent_says(&p, SBX_INIT_OPEN | SBX_INIT_REPLY, 1, 0, &st, sizeof(st), sizeof(st), &dirfd, 1);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        /* descriptors on a message that carries none, or too many */
        agent_says(&p, SBX_INIT_STAT | SBX_INIT_REPLY, 1, 0, &st, sizeof(st), sizeof(st), &pp[0], 1);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        int many[5] = { pp[0], pp[1], pp[0], pp[1], pp[0] };
        struct sbx_init_spawned sp = { .handle = 1, .pid = 3 };
        agent_says(&p, SBX_INIT_SPAWN | SBX_INIT_REPLY, 1, 0, &sp, sizeof(sp), sizeof(sp), many, 5);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        /* a spawn whose stdout is a directory */
        int bad[3] = { pp[1], dirfd, pp[0] };
        agent_says(&p, SBX_INIT_SPAWN | SBX_INIT_REPLY, 1, 0, &sp, sizeof(sp), sizeof(sp), bad, 3);
        assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        /* a device as stdin or stdout: only a terminal's master, and
         * stdout only the same one as stdin (sbx-init's SPAWN_TTY) */
        int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
        int m1 = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), m2 = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        assert_true(zero >= 0 && m1 >= 0 && m2 >= 0);
        int m1b = fcntl(m1, F_DUPFD_CLOEXEC, 3);
        int dev_in[3] = { zero, pp[0], pp[0] }, dev_out[3] = { m1, zero, pp[0] }, other_master[3] = { m1, m2, pp[0] },
            in_pipe_out_master[3] = { pp[1], m1, pp[0] }, dev_err[3] = { m1, m1b, m2 };
        int *bads[] = { dev_in, dev_out, other_master, in_pipe_out_master, dev_err };
        for (size_t k = 0; k < sizeof(bads) / sizeof(bads[0]); k++) {
                agent_says(&p, SBX_INIT_SPAWN | SBX_INIT_REPLY, 1, 0, &sp, sizeof(sp), sizeof(sp), bads[k], 3);
                assert_int_equal(initc_recv(&p.c, &M, 1000), -EPROTO);
        }
        int tty[3] = { m1, m1b, pp[0] };
        agent_says(&p, SBX_INIT_SPAWN | SBX_INIT_REPLY, 1, 0, &sp, sizeof(sp), sizeof(sp), tty, 3);
        assert_int_equal(initc_recv(&p.c, &M, 1000), 0);
        initc_msg_clear(&M);
        close(zero);
        close(m1);
        close(m1b);
        close(m2);
        assert_int_equal(lowest_free(), before);

        /* and a good one: pipes, made non-blocking for the caller */
        int good[3] = { pp[1], pp[0], pp[0] };
        agent_says(&p, SBX_INIT_SPAWN | SBX_INIT_REPLY, 1, 0, &sp, sizeof(sp), sizeof(sp), good, 3);
        assert_int_equal(initc_recv(&p.c, &M, 1000), 0);
        assert_int_equal(M.n_fds, 3);
        assert_true(fcntl(M.fds[1], F_GETFL) & O_NONBLOCK);
        initc_msg_clear(&M);
        assert_int_equal(lowest_free(), before);
        close(pp[0]);
        close(pp[1]);
        close(dirfd);
        close_pair(&p);
}

static long elapsed_ms(struct timespec t0) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
}

static void test_deadlines_and_end(void **state) {
        (void) state;
        struct pair p;
        struct timespec t0;
        char buf[64];
        size_t len;
        open_pair(&p);
        assert_int_equal(initc_encode_path(buf, sizeof(buf), 0, 0, ".", &len), 0);

        /* an agent that never answers: a timeout, on time */
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(initc_call(&p.c, SBX_INIT_STAT, buf, len, 200, &M, NULL, NULL), -ETIMEDOUT);
        assert_true(elapsed_ms(t0) < 2000);

        /* one that streams events instead of the reply: the deadline is
         * looked at before each read, so a call whose time is up reads
         * none of them (they could keep coming for ever). */
        struct sbx_init_exit ex = { 0 };
        for (int i = 0; i < 200; i++)
                agent_says(&p, SBX_INIT_EV_EXIT, 0, 0, &ex, sizeof(ex), sizeof(ex), NULL, 0);
        assert_int_equal(initc_call(&p.c, SBX_INIT_STAT, buf, len, 0, &M, NULL, NULL), -ETIMEDOUT);
        int left = 0;
        while (initc_recv(&p.c, &M, 0) == 0)
                left++;
        assert_int_equal(left, 200);
        close_pair(&p);

        /* an agent that is gone: end-of-file, at once */
        open_pair(&p);
        close(p.agent);
        p.agent = -1;
        assert_int_equal(initc_call(&p.c, SBX_INIT_STAT, buf, len, 5000, &M, NULL, NULL), -EPIPE);
        close(p.c.fd);
}

static void test_reply_to_another_request(void **state) {
        (void) state;
        struct pair p;
        char buf[64];
        size_t len;
        open_pair(&p);
        assert_int_equal(initc_encode_path(buf, sizeof(buf), 0, 0, ".", &len), 0);
        struct sbx_init_stat st = { 0 };
        /* the request will be id 1; the agent answers id 2 */
        agent_says(&p, SBX_INIT_STAT | SBX_INIT_REPLY, 2, 0, &st, sizeof(st), sizeof(st), NULL, 0);
        assert_int_equal(initc_call(&p.c, SBX_INIT_STAT, buf, len, 1000, &M, NULL, NULL), -EPROTO);
        close_pair(&p);
}

static void test_encoders_bound(void **state) {
        (void) state;
        static char buf[SBX_INIT_MSG_MAX];
        static char big[SBX_INIT_PATH_MAX + 1];
        size_t len;
        const char *argv[] = { "sh", "-c", "true", NULL };
        const char *none[] = { NULL };
        assert_int_equal(initc_encode_spawn(buf, sizeof(buf), 0, NULL, ".", argv, NULL, &len), 0);
        assert_int_equal(len, sizeof(struct sbx_init_spawn) + 2 + 3 + 3 + 5);
        /* a terminal's size: its flag, right after the header */
        const struct sbx_init_winsize ws = { .rows = 50, .cols = 132 };
        assert_int_equal(initc_encode_spawn(buf, sizeof(buf), SBX_INIT_SPAWN_TTY, &ws, ".", argv, NULL, &len), 0);
        assert_int_equal(len, sizeof(struct sbx_init_spawn) + sizeof(ws) + 2 + 3 + 3 + 5);
        struct sbx_init_spawn h;
        struct sbx_init_winsize back;
        memcpy(&h, buf, sizeof(h));
        memcpy(&back, buf + sizeof(h), sizeof(back));
        assert_int_equal(h.flags, SBX_INIT_SPAWN_TTY | SBX_INIT_SPAWN_WINSIZE);
        assert_int_equal(back.rows, 50);
        assert_int_equal(back.cols, 132);
        assert_string_equal(buf + sizeof(h) + sizeof(ws), ".");
        assert_int_equal(initc_encode_spawn(buf, sizeof(buf), 0, NULL, ".", none, NULL, &len), -EINVAL);
        assert_int_equal(initc_encode_spawn(buf, 16, 0, NULL, ".", argv, NULL, &len), -E2BIG);
        memset(big, 'a', sizeof(big) - 1);
        assert_int_equal(initc_encode_path(buf, sizeof(buf), 0, 0, big, &len), -E2BIG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_good_event_and_reply),
                cmocka_unit_test(test_sizes_types_and_errors_checked),
                cmocka_unit_test(test_descriptors_checked_and_never_leaked),
                cmocka_unit_test(test_deadlines_and_end),
                cmocka_unit_test(test_reply_to_another_request),
                cmocka_unit_test(test_encoders_bound),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
