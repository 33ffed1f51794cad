/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/if_addr.h>

#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>

#include "netfwd.h"
#include "util.h"
#include "veth.h"

#define JOB_IF "eth0"

static void sock_freep(struct nl_sock **s) {
        if (*s)
                nl_socket_free(*s);
}
static void link_putp(struct rtnl_link **l) {
        if (*l)
                rtnl_link_put(*l);
}
static void addr_putp(struct nl_addr **a) {
        if (*a)
                nl_addr_put(*a);
}
#define _cleanup_nlsock_ __attribute__((cleanup(sock_freep)))
#define _cleanup_link_ __attribute__((cleanup(link_putp)))
#define _cleanup_nladdr_ __attribute__((cleanup(addr_putp)))

/* libnl's errors are its own numbers: turned into errno values. */
static int nlerr(int r) {
        switch (-r) {
        case NLE_EXIST: return -EEXIST;
        case NLE_OBJ_NOTFOUND:
        case NLE_NODEV: return -ENODEV;
        case NLE_PERM: return -EPERM;
        case NLE_NOMEM: return -ENOMEM;
        case NLE_INVAL: return -EINVAL;
        }
        return -EIO;
}

static int route_socket(struct nl_sock **ret) {
        struct nl_sock *s = nl_socket_alloc();
        if (!s)
                return -ENOMEM;
        int r = nl_connect(s, NETLINK_ROUTE);
        if (r < 0) {
                nl_socket_free(s);
                return nlerr(r);
        }
        *ret = s;
        return 0;
}

/* The host's side of every pair is made through one socket per thread,
 * kept: opening a netlink socket cost about 0.18 ms a job here. A socket
 * that saw an error is dropped, so no late reply of a failed exchange is
 * read as the answer to the next one. */
static __thread struct nl_sock *host_sock;

static int host_socket(struct nl_sock **ret) {
        if (!host_sock) {
                int r = route_socket(&host_sock);
                if (r < 0)
                        return r;
        }
        *ret = host_sock;
        return 0;
}

static void host_socket_failed(void) {
        if (host_sock)
                nl_socket_free(host_sock);
        host_sock = NULL;
}

static int link_up(struct nl_sock *s, const char *name, int *ret_index) {
        _cleanup_link_ struct rtnl_link *l = NULL, *change = NULL;
        int r = rtnl_link_get_kernel(s, 0, name, &l);
        if (r < 0)
                return nlerr(r);
        if (!(change = rtnl_link_alloc()))
                return -ENOMEM;
        rtnl_link_set_flags(change, IFF_UP);
        if ((r = rtnl_link_change(s, l, change, 0)) < 0)
                return nlerr(r);
        *ret_index = rtnl_link_get_ifindex(l);
        return 0;
}

/* addr: 4 bytes (IPv4, network order) or 16 (IPv6, then without
 * duplicate address detection: nothing else takes an address of the pool,
 * and a tentative one could not be used for a second or so). */
static int add_addr(struct nl_sock *s, int ifindex, const void *addr, unsigned len, unsigned prefix) {
        _cleanup_nladdr_ struct nl_addr *local = nl_addr_build(len == 16 ? AF_INET6 : AF_INET, addr, len);
        struct rtnl_addr *a = rtnl_addr_alloc();
        int r = -ENOMEM;
        if (local && a) {
                nl_addr_set_prefixlen(local, (int) prefix);
                rtnl_addr_set_ifindex(a, ifindex);
                rtnl_addr_set_local(a, local);
                if (len == 16)
                        rtnl_addr_set_flags(a, IFA_F_NODAD);
                r = rtnl_addr_add(s, a, 0);
                r = r < 0 ? nlerr(r) : 0;
        }
        if (a)
                rtnl_addr_put(a);
        return r;
}

/* gw: 4 bytes (IPv4) or 16 (IPv6). */
static int add_default_route(struct nl_sock *s, int ifindex, const void *gw, unsigned len) {
        static const uint8_t any[16];
        int family = len == 16 ? AF_INET6 : AF_INET;
        _cleanup_nladdr_ struct nl_addr *dst = nl_addr_build(family, any, len), *via = nl_addr_build(family, gw, len);
        struct rtnl_route *rt = rtnl_route_alloc();
        struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
        int r = -ENOMEM;
        if (dst && via && rt && nh) {
                nl_addr_set_prefixlen(dst, 0);
                rtnl_route_set_family(rt, (uint8_t) family);
                rtnl_route_set_dst(rt, dst);
                rtnl_route_nh_set_ifindex(nh, ifindex);
                rtnl_route_nh_set_gateway(nh, via);
                rtnl_route_add_nexthop(rt, nh);
                nh = NULL; /* the route's now */
                r = rtnl_route_add(s, rt, NLM_F_CREATE | NLM_F_EXCL);
                r = r < 0 ? nlerr(r) : 0;
        }
        if (nh)
                rtnl_route_nh_free(nh);
        if (rt)
                rtnl_route_put(rt);
        return r;
}

/* Inside the job's namespace: the calling thread enters it (setns
 * changes only the calling thread's network namespace), makes its sockets
 * there and goes back. A thread that could not go back ends the process:
 * no thread of the daemon is ever left in a job's namespace. (A thread of
 * its own per job, which entered and died there, cost about 0.45 ms a job
 * in its start and join.) */
struct inside {
        struct veth_spec *s;
        int err;
        const char *step;
};

/* A socket on the job's own 127.0.0.1, served by the daemon from outside
 * (type: SOCK_DGRAM, SOCK_STREAM): port 53 is where glibc looks for a
 * resolver when the sandbox has no resolv.conf, 443 where the job's names
 * of its header secrets' hosts lead (the secrets proxy). */
static int loopback_socket(int type, uint16_t port, int *ret) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        *ret = fd;
        return 0;
}

static void inside_run(struct inside *in) {
        _cleanup_nlsock_ struct nl_sock *s = NULL;
        int idx = 0, lo = 0;
        if ((in->err = route_socket(&s)) < 0)
                in->step = "netlink in the job's namespace";
        else if ((in->err = link_up(s, JOB_IF, &idx)) < 0)
                in->step = "eth0 up";
        else if ((in->err = add_addr(s, idx, &in->s->job_addr, 4, 30)) < 0)
                in->step = "eth0's address";
        else if ((in->err = add_default_route(s, idx, &in->s->host_addr, 4)) < 0)
                in->step = "the default route";
        else if (in->s->v6 && (in->err = add_addr(s, idx, in->s->job_addr6, 16, 126)) < 0)
                in->step = "eth0's IPv6 address";
        else if (in->s->v6 && (in->err = add_default_route(s, idx, in->s->host_addr6, 16)) < 0)
                in->step = "the IPv6 default route";
        /* The launcher brings lo up too, perhaps not yet: the socket
         * below needs it now. */
        else if ((in->err = link_up(s, "lo", &lo)) < 0)
                in->step = "lo up";
        else if ((in->err = loopback_socket(SOCK_DGRAM, 53, &in->s->dns_fd)) < 0)
                in->step = "the DNS proxy's socket on 127.0.0.1:53";
        else if ((in->err = loopback_socket(SOCK_STREAM, 53, &in->s->dns_tcp_fd)) < 0)
                in->step = "the DNS proxy's TCP socket on 127.0.0.1:53";
        else if ((in->err = loopback_socket(SOCK_STREAM, 443, &in->s->proxy_fd)) < 0)
                in->step = "the secrets proxy's socket on 127.0.0.1:443";
}

static void inside(struct inside *in) {
        _cleanup_close_ int home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        if (home < 0) {
                in->err = -errno;
                in->step = "opening this thread's network namespace";
                return;
        }
        if (setns(in->s->netns_fd, CLONE_NEWNET) < 0) {
                in->err = -errno;
                in->step = "entering the job's network namespace";
                return;
        }
        inside_run(in);
        if (setns(home, CLONE_NEWNET) < 0) {
                fprintf(stderr, "veth %s: cannot return from the job's network namespace (%s): ending the process\n",
                        in->s->host_if, strerror(errno));
                abort();
        }
}

int veth_create(struct veth_spec *sp, struct sbx_error *err) {
        struct nl_sock *s = NULL;
        _cleanup_link_ struct rtnl_link *veth = NULL;
        int idx = 0, r = host_socket(&s);
        if (r < 0)
                return sbx_error_set(err, r, "netlink");
        if (!(veth = rtnl_link_veth_alloc()))
                return sbx_error_set(err, ENOMEM, "veth");
        rtnl_link_set_name(veth, sp->host_if);
        struct rtnl_link *peer = rtnl_link_veth_get_peer(veth);
        rtnl_link_set_name(peer, JOB_IF);
        rtnl_link_set_ns_fd(peer, sp->netns_fd);
        rtnl_link_put(peer);
        if ((r = rtnl_link_add(s, veth, NLM_F_CREATE | NLM_F_EXCL)) < 0) {
                host_socket_failed();
                return sbx_error_set(err, nlerr(r), "veth %s: creating the pair", sp->host_if);
        }
        /* Forwarding on the host end before it is up: the job's packets
         * are forwarded by it and by no switch of the host's. */
        if ((r = netfwd_veth(sp->host_if, sp->v6, sp->force6, err)) < 0) {
                veth_delete(sp->host_if);
                return r;
        }
        if ((r = link_up(s, sp->host_if, &idx)) < 0 || (r = add_addr(s, idx, &sp->host_addr, 4, 30)) < 0 ||
            (sp->v6 && (r = add_addr(s, idx, sp->host_addr6, 16, 126)) < 0)) {
                host_socket_failed();
                veth_delete(sp->host_if);
                return sbx_error_set(err, r, "veth %s: host end", sp->host_if);
        }
        struct inside in = { .s = sp };
        inside(&in);
        if (in.err < 0) {
                if (sp->dns_fd >= 0) {
                        close(sp->dns_fd);
                        sp->dns_fd = -1;
                }
                if (sp->dns_tcp_fd >= 0) {
                        close(sp->dns_tcp_fd);
                        sp->dns_tcp_fd = -1;
                }
                if (sp->proxy_fd >= 0) {
                        close(sp->proxy_fd);
                        sp->proxy_fd = -1;
                }
                veth_delete(sp->host_if);
                return sbx_error_set(err, in.err, "veth %s: %s", sp->host_if, in.step);
        }
        return 0;
}

int veth_delete(const char *host_if) {
        _cleanup_nlsock_ struct nl_sock *s = NULL;
        _cleanup_link_ struct rtnl_link *l = NULL;
        int r = route_socket(&s);
        if (r < 0)
                return r;
        if (!(l = rtnl_link_alloc()))
                return -ENOMEM;
        rtnl_link_set_name(l, host_if);
        r = rtnl_link_delete(s, l);
        return r < 0 && nlerr(r) != -ENODEV ? nlerr(r) : 0;
}

struct sweep {
        struct nl_sock *s;
        const char *prefix;
        unsigned n;
        int err;
};

static void sweep_one(struct nl_object *o, void *arg) {
        struct sweep *sw = arg;
        struct rtnl_link *l = (struct rtnl_link *) o;
        const char *name = rtnl_link_get_name(l);
        if (!name || strncmp(name, sw->prefix, strlen(sw->prefix)) != 0)
                return;
        int r = rtnl_link_delete(sw->s, l);
        if (r < 0 && nlerr(r) != -ENODEV)
                sw->err = nlerr(r);
        else
                sw->n++;
}

int veth_sweep(const char *prefix, unsigned *ret_n, struct sbx_error *err) {
        _cleanup_nlsock_ struct nl_sock *s = NULL;
        struct nl_cache *cache = NULL;
        int r = route_socket(&s);
        if (r < 0)
                return sbx_error_set(err, r, "netlink");
        if ((r = rtnl_link_alloc_cache(s, AF_UNSPEC, &cache)) < 0)
                return sbx_error_set(err, nlerr(r), "listing links");
        struct sweep sw = { .s = s, .prefix = prefix };
        nl_cache_foreach(cache, sweep_one, &sw);
        nl_cache_free(cache);
        *ret_n = sw.n;
        return sw.err < 0 ? sbx_error_set(err, sw.err, "deleting a leftover link %s*", prefix) : 0;
}
