/* SPDX-License-Identifier: Apache-2.0 */
/* Scenario "passfd": the launcher's descriptor 8 (PRIVD_FD_PASS) of a kind
 * other than a SOCK_SEQPACKET socket, and launcher options that name a
 * descriptor the helper did not place. Then the right socket with
 * --pass-fd 8 is accepted ("passed 8"). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "privd-client.h"

#define OPTS(s) s, sizeof(s)

static int32_t try(struct job *j, const char *opts, size_t len, int pass) {
        return spawn_opts(j, opts, len, OPTS("true"), -1, -1, -1, pass);
}

void attack_passfd(void) {
        struct job c;
        open_job("C", &c);
        int file = memfd_with("not-a-socket", "x", 1), pipe_fds[2], stream[2], sp[2];
        if (pipe2(pipe_fds, O_CLOEXEC) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, stream) < 0 ||
            socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                fail("pipe");
        static const char pass8[] = "--profile\0/dev/fd/4\0--pass-fd\0" "8\0--";
        expect_refused("SPAWN with a regular file in slot 8", try(&c, OPTS(pass8), file));
        expect_refused("SPAWN with a pipe in slot 8", try(&c, OPTS(pass8), pipe_fds[1]));
        expect_refused("SPAWN with a SOCK_STREAM socket in slot 8", try(&c, OPTS(pass8), stream[0]));
        expect_refused("--pass-fd 8 without slot 8", try(&c, OPTS(pass8), -1));
        expect_refused("--pass-fd 3", try(&c, OPTS("--profile\0/dev/fd/4\0--pass-fd\0" "3\0--"), sp[0]));
        expect_refused("--pass-fd=9", try(&c, OPTS("--profile\0/dev/fd/4\0--pass-fd=9\0--"), sp[0]));
        /* "--" as an option's value is not the end of the options. */
        expect_refused("--pass-fd 5 behind --hostname --",
                       try(&c, OPTS("--hostname\0--\0--pass-fd\0" "5\0--"), sp[0]));
        expect_refused("--json-status-fd from the front", try(&c, OPTS("--json-status-fd\0" "4\0--"), -1));
        expect_refused("--sync-fd from the front", try(&c, OPTS("--sync-fd=2\0--"), -1));
        expect_refused("an option unknown to the launcher", try(&c, OPTS("--no-such-option\0--"), -1));
        int32_t r = try(&c, OPTS(pass8), sp[0]);
        if (r == 0)
                printf("passed 8\n");
        else
                printf("--pass-fd 8 with a socket refused: %s\n", strerror(-r));
        fflush(stdout);
        close(file);
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        close(stream[0]);
        close(stream[1]);
        close(sp[0]);
        close(sp[1]);
}
