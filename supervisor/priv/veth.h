/* SPDX-License-Identifier: Apache-2.0 */
/* A restricted job's link to the world, through libnl-route-3: a veth pair
 * whose host end (named by the daemon) carries the first address of the
 * job's /30 and whose other end, eth0, is made inside the job's network
 * namespace with the second address and a default route through the
 * first; with an IPv6 /126 too, the same for IPv6 (addresses without
 * duplicate address detection, usable at once). Blocking netlink calls:
 * run off the event loop. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

struct veth_spec {
        char host_if[16];  /* IFNAMSIZ */
        uint32_t host_addr; /* network order */
        uint32_t job_addr;
        bool v6;            /* the two below are set */
        bool force6;        /* IPv6 forwarding per interface (netfwd_veth()) */
        uint8_t host_addr6[16];
        uint8_t job_addr6[16];
        int netns_fd;       /* the job's network namespace */
        int dns_fd;         /* out: a UDP socket on 127.0.0.1:53 inside it (the DNS proxy's), or -1 */
        int dns_tcp_fd;     /* out: a TCP one, bound there too (not listening yet), or -1 */
        int proxy_fd;       /* out: a TCP socket on 127.0.0.1:443 inside it (the secrets proxy's, not listening yet), or -1 */
};

/* Also opens s->dns_fd, s->dns_tcp_fd and s->proxy_fd (non-blocking,
 * close-on-exec) in the namespace. */
int veth_create(struct veth_spec *s, struct sbx_error *err);
/* Delete the pair by its host end; a pair already gone is not an error. */
int veth_delete(const char *host_if);
/* Delete every link whose name starts with prefix (what a daemon that died
 * left); *ret_n: how many. */
int veth_sweep(const char *prefix, unsigned *ret_n, struct sbx_error *err);
