/* SPDX-License-Identifier: Apache-2.0 */
/* The DNS proxy of restricted jobs, on the daemon's event loop: each job's
 * 127.0.0.1:53 (a socket the daemon opened inside the job's namespace)
 * answers only names the job's allow entries name, forwarding them to the
 * upstream resolver (dns_upstream); the addresses of each answer go into
 * the job's allow map, with the name's ports, before the job hears the
 * answer. Other names get REFUSED. Every query is a network event; at
 * most DNSPROXY_PENDING per job are forwarded at once, more are REFUSED
 * (a burst cannot hold the daemon's sockets or tunnel data out). Past
 * DNSPROXY_RATE queries a second the proxy stops reading the job's socket
 * until the next second (the kernel drops what does not fit): a job's
 * flood costs the daemon no more than that. The same over TCP, on a
 * listening socket at the same address (dnstcp.c), within bounds of its
 * own (DNSTCP_*). An upstream that has not answered a query in
 * dns_upstream_timeout (over UDP: sent again at half of it) gets the job a
 * SERVFAIL, and the same query again within that time gets one at once:
 * a resolver that drops queries makes a lookup fail in seconds, not at
 * the job's resolver's timeouts. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "netaudit.h"

#define DNSPROXY_PENDING 16   /* queries of one job forwarded at once */
#define DNSPROXY_RATE 100     /* queries of one job read a second (and a burst of as many) */
#define DNSPROXY_NAMES 1024   /* addresses of one job whose name is remembered */
#define DNSTCP_CONNS 8        /* TCP connections of one job at once */

struct daemon;
struct rjob;

/* dns_upstream, or the first nameserver of /etc/resolv.conf: 0, or
 * -errno with d->caps saying why hostname entries are refused. */
int dnsproxy_setup(struct daemon *d);
/* Serve rj's queries on fd (UDP) and on the connections of tcp_fd (a
 * listening TCP socket, or -1); both taken. */
int dnsproxy_start(struct rjob *rj, int fd, int tcp_fd);
void dnsproxy_stop(struct rjob *rj);
/* Once a second (housekeeping): read again the sockets of jobs that had
 * used up their queries; close idle TCP connections. */
void dnsproxy_tick(struct daemon *d);
/* The name e's destination was resolved from for rj, or NULL. */
const char *dnsproxy_name_of(const struct rjob *rj, const struct netaudit_event *e);
