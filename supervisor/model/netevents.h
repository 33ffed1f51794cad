/* SPDX-License-Identifier: Apache-2.0 */
/* A job's network events: what the audit programs reported for its cgroup,
 * as JSON for its result, the audit log and its followers. Bounded: past
 * the daemon's network_events cap an event is only counted (dropped), and
 * events the kernel's ring buffer had no room for are counted too (lost).
 * Pure, unit-tested. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "netaudit.h"

struct netevents {
        json_t *list;      /* kept events, in the order they came */
        uint64_t max;      /* kept at most */
        uint64_t dropped;  /* past max: counted, not kept */
        uint64_t lost;     /* the ring buffer was full: never seen */
        uint64_t dns_names;         /* distinct names its DNS proxy forwarded (restricted jobs) */
        uint64_t dns_names_refused; /* queries of new names past network_max_names */
};

void netevents_init(struct netevents *ne, uint64_t max);
void netevents_release(struct netevents *ne);
/* One event as JSON: time (real_ms), pid, comm, kind, protocol, address,
 * port, hostname (the name the job resolved the address from through the
 * DNS proxy, or asked it for; null: not known), verdict; a "dns" event has
 * qtype, and null pid, comm, address and port; an event with a reason
 * (e->reason, enum netdeny_reason) has "reason": a connect to a
 * destination no restricted job reaches, or a "dns" event with the
 * address an answer named, withheld. */
json_t *netevent_json(const struct netaudit_event *e, uint64_t real_ms, const char *hostname, const char *qtype);
/* Keep e (or count it as dropped). Returns the kept event (a new
 * reference, for followers) or NULL when it was dropped or memory ran
 * out (then it is counted as dropped too). */
json_t *netevents_add(struct netevents *ne, const struct netaudit_event *e, uint64_t real_ms, const char *hostname,
                      const char *qtype);
/* The result's "network" member: {"mode", "audit", "events_kept",
 * "events_dropped", "events_lost"}, and for a restricted job "dns_names"
 * and "dns_names_refused"; with ne NULL (a job whose daemon died:
 * its events went with it) an audited job's counts are null, unknown. */
json_t *netevents_summary(const struct netevents *ne, int mode, bool audited);
