/* SPDX-License-Identifier: Apache-2.0 */
/* Restricted jobs' connectivity: the daemon's network_pool (a /30 per job,
 * and with a network_pool6 the /126 of the same slot; its veths named
 * after its state directory), forwarding (netfwd.h) and the nft tables set up at start (what a crashed daemon left swept first), and per
 * job the launcher's --info-fd/--block-fd handshake: the info line read on
 * the loop, the veth made off it in the namespace the line names, the DNS
 * proxy started, then the sandbox let go. A job's veth goes with its
 * network namespace; its slot is taken again once the name is free. */
#pragma once

#include <stdbool.h>

#include "error.h"

struct daemon;
struct rjob;

/* At start, before anything else of the network: put back the forwarding
 * switches a daemon that died left on (netfwd.h), pool or not. */
void netveth_restore(struct daemon *d);
/* With a network_pool and the audit loaded: d->caps.net_restricted, or
 * why not in d->caps.no_restricted_why. Never fails the daemon. */
void netveth_setup(struct daemon *d);
/* The nft tables and every veth of the daemon's go. */
void netveth_teardown(struct daemon *d);

/* Does rj's launcher get --info-fd and --block-fd (a restricted job)? */
bool netveth_handshake(const struct rjob *rj);
/* The launcher of a restricted job runs: read its info line from info_fd,
 * make the job's veth in the namespace it names, then write to block_fd
 * (or close it unwritten, which fails the launcher at step block-fd and
 * the job with the reason in its record). The job's block of the pool was
 * taken when the scheduler let it start (netveth_setup() makes that the
 * scheduler's gate: past the pool, restricted jobs wait in the queue).
 * Takes both fds, even on error; err says why it cannot. */
int netveth_launched(struct rjob *rj, int info_fd, int block_fd, struct sbx_error *err);
/* Why the job's network could not be set up, or NULL. */
const char *netveth_failure(const struct rjob *rj);
/* The job ended: its DNS proxy stops, its veth is left to the kernel. */
void netveth_end(struct rjob *rj);
