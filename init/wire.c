/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-init's side of the wire: every datagram it sends goes out here, and
 * a connection that fails ends here (lib/init-abi.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "fd-util.h"

_noreturn_ void agent_fatal(const char *what, int errnum) {
        dprintf(STDERR_FILENO, "sbx-init: %s: %s\n", what, strerror(errnum));
        _exit(1);
}

void agent_disconnect(struct agent *a) {
        if (a->listen < 0)
                _exit(0); /* the daemon closed its end: the session is over */
        if (a->sock >= 0)
                close(a->sock);
        a->sock = -1;
}

void agent_send(struct agent *a, uint32_t type, uint32_t id, int32_t error, const void *payload,
                size_t len, const int *fds, unsigned n_fds) {
        char buf[SBX_INIT_MSG_MAX];
        if (a->sock < 0)
                return; /* between connections: a reply has no one to go to */
        struct sbx_init_hdr h = { .type = type, .id = id, .len = (uint32_t) len, .error = error };
        if (len > sizeof(buf) - sizeof(h))
                agent_fatal("reply", EMSGSIZE);
        memcpy(buf, &h, sizeof(h));
        if (len)
                memcpy(buf + sizeof(h), payload, len);
        /* Blocking: a daemon that stops reading stalls this session only. */
        int r = fd_send_with(a->sock, buf, sizeof(h) + len, fds, n_fds);
        if (r == -EPIPE || r == -ECONNRESET) {
                agent_disconnect(a);
                return;
        }
        if (r < 0)
                agent_fatal("send", -r);
}

void agent_reply(struct agent *a, const struct request *rq, const void *payload, size_t len,
                 const int *fds, unsigned n_fds) {
        agent_send(a, rq->hdr.type | SBX_INIT_REPLY, rq->hdr.id, 0, payload, len, fds, n_fds);
}

void agent_reply_error(struct agent *a, const struct request *rq, int errnum) {
        agent_send(a, (rq->hdr.type & 0xffffu) | SBX_INIT_REPLY, rq->hdr.id, errnum, NULL, 0, NULL, 0);
}
