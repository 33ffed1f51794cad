/* SPDX-License-Identifier: Apache-2.0 */
/* Network: a new network namespace starts with a loopback interface that is
 * down; bring it up with one rtnetlink request so that jobs can talk to
 * themselves over 127.0.0.1 and nothing else. The request is built by hand:
 * linking libnl for it cost every launch about 0.2 ms of loading and
 * library constructors, for one message. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "launch.h"

int net_loopback_up(struct sbx_error *err) {
        struct {
                struct nlmsghdr nh;
                struct ifinfomsg ifi;
        } req = {
                .nh = {
                        .nlmsg_len = sizeof(req),
                        .nlmsg_type = RTM_NEWLINK,
                        .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK,
                        .nlmsg_seq = 1,
                },
                /* In a fresh network namespace the loopback device is
                 * always the first one: no need to ask the kernel for it. */
                .ifi = {
                        .ifi_family = AF_UNSPEC,
                        .ifi_index = 1,
                        .ifi_flags = IFF_UP,
                        .ifi_change = IFF_UP,
                },
        };
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        union {
                struct nlmsghdr nh;
                char buf[512];
        } ans;
        _cleanup_close_ int fd = -1;
        ssize_t n;

        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (fd < 0)
                return sbx_error_set(err, errno, "lo: netlink socket");
        if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *) &kernel, sizeof(kernel)) != (ssize_t) sizeof(req))
                return sbx_error_set(err, errno, "lo: bring up: sending the request");
        for (;;) {
                n = recv(fd, &ans, sizeof(ans), 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return sbx_error_set(err, errno, "lo: bring up: reading the answer");
                break;
        }
        /* NLM_F_ACK: the answer is one NLMSG_ERROR, error 0 on success. */
        if (!NLMSG_OK(&ans.nh, (size_t) n) || ans.nh.nlmsg_type != NLMSG_ERROR ||
            ans.nh.nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
                return sbx_error_msg(err, EIO, "lo: bring up: unexpected netlink answer");
        const struct nlmsgerr *e = NLMSG_DATA(&ans.nh);
        if (e->error != 0)
                return sbx_error_set(err, -e->error, "lo: bring up");
        return 0;
}
