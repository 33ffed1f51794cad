/* SPDX-License-Identifier: Apache-2.0 */
/* Network: a new network namespace starts with a loopback interface that is
 * down; bring it up through rtnetlink (libnl-route-3) so that jobs can talk
 * to themselves over 127.0.0.1 and nothing else. */
#include <errno.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include "launch.h"

static void nl_socket_freep(struct nl_sock **s) {
        if (*s)
                nl_socket_free(*s);
}

static void rtnl_link_putp(struct rtnl_link **l) {
        if (*l)
                rtnl_link_put(*l);
}

int net_loopback_up(struct sbx_error *err) {
        _cleanup_(nl_socket_freep) struct nl_sock *sock = nl_socket_alloc();
        _cleanup_(rtnl_link_putp) struct rtnl_link *lo = rtnl_link_alloc();
        _cleanup_(rtnl_link_putp) struct rtnl_link *change = rtnl_link_alloc();
        int r;

        if (!sock || !lo || !change)
                return sbx_error_set(err, ENOMEM, "lo");
        r = nl_connect(sock, NETLINK_ROUTE);
        if (r < 0)
                return sbx_error_msg(err, EIO, "lo: netlink: %s", nl_geterror(r));
        /* In a fresh network namespace the loopback device is always the
         * first one: no need to ask the kernel for it. */
        rtnl_link_set_ifindex(lo, 1);
        rtnl_link_set_name(lo, "lo");
        rtnl_link_set_flags(change, IFF_UP);
        r = rtnl_link_change(sock, lo, change, 0);
        if (r < 0)
                return sbx_error_msg(err, EIO, "lo: bring up: %s", nl_geterror(r));
        return 0;
}
