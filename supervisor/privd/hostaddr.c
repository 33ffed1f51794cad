/* SPDX-License-Identifier: Apache-2.0 */
/* HOST_ADDR: the host's own addresses for a front that cannot list them
 * (its unit allows it no netlink socket), which it adds to what restricted
 * jobs never reach and withholds from their DNS answers. */
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "privd.h"

static struct {
        uint8_t addr[PRIVD_HOST_ADDRS_MAX][16];
        uint32_t n;
} list;

static int list_read(void) {
        struct ifaddrs *ifa = NULL;
        list.n = 0;
        if (getifaddrs(&ifa) < 0)
                return -errno;
        for (struct ifaddrs *i = ifa; i && list.n < PRIVD_HOST_ADDRS_MAX; i = i->ifa_next) {
                uint8_t *a = list.addr[list.n];
                if (!i->ifa_addr)
                        continue;
                if (i->ifa_addr->sa_family == AF_INET) {
                        memset(a, 0, 10);
                        a[10] = a[11] = 0xff;
                        memcpy(a + 12, &((const struct sockaddr_in *) i->ifa_addr)->sin_addr, 4);
                } else if (i->ifa_addr->sa_family == AF_INET6) {
                        memcpy(a, &((const struct sockaddr_in6 *) i->ifa_addr)->sin6_addr, 16);
                } else {
                        continue;
                }
                list.n++;
        }
        freeifaddrs(ifa);
        return 0;
}

int privd_host_addr(const struct privd_host_addr *m, struct privd_reply *rep) {
        if (m->reserved)
                return privd_refuse(&m->h, -EINVAL, "reserved field set");
        if (m->index == 0) {
                int r = list_read();
                if (r < 0)
                        return privd_refuse(&m->h, r, "the host's addresses");
        }
        /* Past the end is the front's normal stop, not worth a log line. */
        if (m->index >= list.n)
                return -ENOENT;
        rep->count = list.n;
        memcpy(rep->addr, list.addr[m->index], 16);
        return 0;
}
