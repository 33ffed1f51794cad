/* SPDX-License-Identifier: Apache-2.0 */
/* CONNECT: a TCP connection to a port on the sandbox's own loopback,
 * handed to the daemon, which proxies a service the session exposed
 * (sbx-supervisord(8), SERVICES). The agent runs in the sandbox's network
 * namespace, so no veth is needed, and it connects to the loopback address
 * only: the daemon cannot make it reach anything else. The connect does
 * not wait (the agent never blocks): the daemon learns its outcome when
 * the socket becomes writable. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"

void connect_request(struct agent *a, const struct request *rq) {
        struct sbx_init_connect c;
        if (rq->len != sizeof(c)) {
                agent_reply_error(a, rq, EBADMSG);
                return;
        }
        memcpy(&c, rq->payload, sizeof(c));
        if (c.port == 0 || (c.family != 4 && c.family != 6) || c.reserved) {
                agent_reply_error(a, rq, EINVAL);
                return;
        }
        union {
                struct sockaddr_in v4;
                struct sockaddr_in6 v6;
        } sa;
        socklen_t len;
        memset(&sa, 0, sizeof(sa));
        if (c.family == 4) {
                sa.v4.sin_family = AF_INET;
                sa.v4.sin_port = htons(c.port);
                sa.v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                len = sizeof(sa.v4);
        } else {
                sa.v6.sin6_family = AF_INET6;
                sa.v6.sin6_port = htons(c.port);
                sa.v6.sin6_addr = in6addr_loopback;
                len = sizeof(sa.v6);
        }
        int fd = socket(c.family == 4 ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                agent_reply_error(a, rq, errno);
                return;
        }
        if (connect(fd, (struct sockaddr *) &sa, len) < 0 && errno != EINPROGRESS) {
                int e = errno;
                close(fd);
                agent_reply_error(a, rq, e);
                return;
        }
        agent_reply(a, rq, NULL, 0, &fd, 1);
        close(fd);
}
