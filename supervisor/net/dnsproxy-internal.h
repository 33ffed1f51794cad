/* SPDX-License-Identifier: Apache-2.0 */
/* What the DNS proxy's UDP side (dnsproxy.c) and its TCP side (dnstcp.c)
 * share: one proxy per job, one policy, one rate, one count of queries out
 * upstream. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dnsmsg.h"
#include "dnsproxy.h"
#include "loop.h"
#include "metrics.h"
#include "util.h"

struct dns_name {
        uint8_t addr[16];
        char name[DNSMSG_NAME_MAX + 2];
};

/* A query whose upstream did not answer in time: the job's resolver asks
 * again at once (glibc does, on SERVFAIL), and is answered at once. */
struct dns_failed {
        char name[DNSMSG_NAME_MAX + 2];
        uint16_t qtype;
        uint64_t at_ms;          /* CLOCK_MONOTONIC; 0: unused */
};
#define DNSPROXY_FAILED 8

struct dnsproxy {
        struct rjob *rj;
        int fd;
        struct source src;
        unsigned tokens;         /* queries it may still read before refill_ms + 1 s */
        uint64_t refill_ms;      /* CLOCK_MONOTONIC */
        bool paused;             /* its UDP socket is not read until dnsproxy_tick() */
        struct list paused_link; /* in the daemon's dns_paused */
        struct list pending;     /* struct dns_pending.link */
        unsigned n_pending;      /* queries out upstream, over UDP and TCP */
        struct dns_name *names;  /* addresses its answers gave, with their names */
        size_t n_names;
        bool withheld_said;      /* an answer was withheld: logged once, not per query */
        bool rebind_said;        /* an answer named an address of the deny set: logged once */
        int timer_fd;            /* fires at the next upstream deadline (UDP and TCP) */
        struct source timer_src;
        struct dns_failed failed[DNSPROXY_FAILED]; /* the last timed-out queries, a ring */
        unsigned next_failed;
        /* the distinct names forwarded upstream: a set (open addressing,
         * strings of its own), at most the tenant's network_max_names */
        char **seen;
        size_t n_seen, cap_seen;
        uint64_t seed;           /* of the set's hash: names a job picks cannot collide at will */
        uint64_t names_refused;  /* queries of new names past network_max_names */
        bool names_said;         /* logged once */
        /* TCP (dnstcp.c) */
        int tcp_fd;              /* listening, or -1 */
        struct source tcp_src;
        bool tcp_paused;         /* not accepting until dnsproxy_tick(): its rate is used up */
        struct list conns;       /* struct dnstcp_conn.link */
        unsigned n_conns;
        struct list tcp_link;    /* in the daemon's dns_tcp while it has connections or is paused */
        bool tcp_listed;
};

/* Each query of a job: a "dns" network event, allowed or not, with the
 * protocol it came over (IPPROTO_UDP, IPPROTO_TCP). */
void dnsproxy_event(struct dnsproxy *px, const struct dns_query *q, int protocol, bool allowed);
/* What a query of the job comes to before it goes upstream: MDNS_ANSWERED
 * (forward it), MDNS_REFUSED (not the job's name), MDNS_TIMED_OUT (it timed
 * out upstream a moment ago: SERVFAIL at once), MDNS_NAMES_CAP (a new name
 * past network_max_names), MDNS_BUSY; its event recorded. */
/* q names a host of the job's header secrets (secretproxy.c): counted
 * and shown as answered, for the caller to answer with 127.0.0.1. */
bool dnsproxy_local(struct dnsproxy *px, const struct dns_query *q, int protocol);
enum metrics_dns_outcome dnsproxy_vet(struct dnsproxy *px, const struct dns_query *q, int protocol);
/* A token of the job's rate (DNSPROXY_RATE a second, shared by UDP and
 * TCP): false when it is used up. */
bool dnsproxy_take_token(struct dnsproxy *px);
/* The upstream's answer (len bytes) to q, which came over protocol: its
 * addresses into the job's allow map, with q's name's ports.
 * MDNS_ANSWERED: the answer may go to the job; MDNS_UPSTREAM_FAILED: it is
 * not an answer to q; MDNS_WITHHELD: an address is one no restricted job
 * reaches (each a "dns" event with its reason; none is admitted), or
 * could not be admitted. */
enum metrics_dns_outcome dnsproxy_admit(struct dnsproxy *px, const struct dns_query *q, int protocol, const uint8_t *buf, size_t len);

/* dns_upstream_timeout. */
uint64_t dnsproxy_timeout_ms(const struct dnsproxy *px);
/* Set the timer to the earliest deadline of the queries out upstream. */
void dnsproxy_arm(struct dnsproxy *px);
/* q timed out upstream (it was answered SERVFAIL): remembered for a
 * timeout's length. */
void dnsproxy_note_timeout(struct dnsproxy *px, const struct dns_query *q);
/* Did q time out upstream less than a timeout ago? */
bool dnsproxy_failed_recently(const struct dnsproxy *px, const struct dns_query *q);

/* TCP: listen on fd (taken; may be -1: no TCP); stop; the daemon's tick. */
int dnstcp_start(struct dnsproxy *px, int fd);
void dnstcp_stop(struct dnsproxy *px);
void dnstcp_tick(struct daemon *d);
/* TCP queries out upstream past the timeout at now: SERVFAIL. Returns
 * the earliest deadline of those left (UINT64_MAX: none). */
uint64_t dnstcp_expire(struct dnsproxy *px, uint64_t now);
