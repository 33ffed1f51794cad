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
 * flood costs the daemon no more than that. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "netaudit.h"

#define DNSPROXY_PENDING 16   /* queries of one job forwarded at once */
#define DNSPROXY_RATE 100     /* queries of one job read a second (and a burst of as many) */
#define DNSPROXY_NAMES 1024   /* addresses of one job whose name is remembered */

struct daemon;
struct rjob;

/* dns_upstream, or the first nameserver of /etc/resolv.conf: 0, or
 * -errno with d->caps saying why hostname entries are refused. */
int dnsproxy_setup(struct daemon *d);
/* Serve rj's queries on fd (taken). */
int dnsproxy_start(struct rjob *rj, int fd);
void dnsproxy_stop(struct rjob *rj);
/* Once a second (housekeeping): read again the sockets of jobs that had
 * used up their queries. */
void dnsproxy_tick(struct daemon *d);
/* The name e's destination was resolved from for rj, or NULL. */
const char *dnsproxy_name_of(const struct rjob *rj, const struct netaudit_event *e);
