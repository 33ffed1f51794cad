/* SPDX-License-Identifier: Apache-2.0 */
/* Forwarding for restricted jobs, switched on only where their packets
 * pass and put back as it was found. IPv4 forwarding is decided by the
 * interface a packet came in on (conf/IF/forwarding), so the host-wide
 * net.ipv4.ip_forward is never touched: the jobs' veths (out) and the
 * interfaces the main routing table sends their packets by (the answers
 * in) get it. IPv6 has the same per interface since Linux 6.17
 * (conf/IF/force_forwarding); before that only the host-wide
 * conf/all/forwarding forwards at all. Every switch the daemon turns on
 * makes room for packets that are not the jobs': nft.c drops, in the
 * daemon's own table, whatever comes in by an interface switched on here
 * and goes to no job's veth (and, with the host-wide IPv6 switch, every
 * forwarded IPv6 packet that is not a job's).
 *
 * What the daemon changed is written to STATE/net-forwarding (durably,
 * before the change) and put back at stop, or at the next start after a
 * crash. Blocking file I/O on /proc/sys: at start and stop, and per veth
 * on a worker thread. */
#pragma once

#include <stdbool.h>

#include "error.h"

#define NETFWD_RECORD "net-forwarding"
#define NETFWD_GUARD_MAX 1024

struct netfwd {
        char *record;                      /* as written: "PATH VALUE\n" per switch, the value found */
        bool force6;                       /* IPv6 per interface (force_forwarding) */
        bool global6;                      /* the daemon turned net.ipv6.conf.all.forwarding on */
        char guard4[NETFWD_GUARD_MAX];     /* nft set elements: "\"eth0\", \"eth1\"" it switched on, or "" */
        char guard6[NETFWD_GUARD_MAX];
};

/* Put back what a record left in dirfd says (a daemon that died with its
 * switches on), then remove the record. *ret_n: the settings written
 * back. No record: 0. An interface gone since is skipped. */
int netfwd_restore(int dirfd, unsigned *ret_n, struct sbx_error *err);

/* What must be switched on for restricted jobs (v6: for their IPv6 too),
 * on every interface but ifprefix* (the daemon's veths): recorded in
 * dirfd before anything changes, and the guards nft.c needs set. Fails,
 * changing nothing, while a record of an earlier run is still there. */
int netfwd_plan(struct netfwd *f, int dirfd, bool v6, const char *ifprefix, struct sbx_error *err);

/* Then, once the guards are in place, switch it on (on failure what was
 * switched is put back). */
int netfwd_switch(struct netfwd *f, int dirfd, struct sbx_error *err);

/* Put back what netfwd_switch() changed and remove the record. */
int netfwd_teardown(struct netfwd *f, int dirfd, struct sbx_error *err);

/* A job's veth (its host end, in the daemon's namespace): forwarding on
 * for packets from the job; with v6, IPv6 too and the router's role on
 * it, so that no router advertisement or redirect from the job is taken
 * (force6: by force_forwarding). Nothing to put back: it goes with the
 * veth. */
int netfwd_veth(const char *ifname, bool v6, bool force6, struct sbx_error *err);
