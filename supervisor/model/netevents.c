/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "netdeny.h"
#include "netevents.h"
#include "profile.h"
#include "proto.h"

void netevents_init(struct netevents *ne, uint64_t max) {
        memset(ne, 0, sizeof(*ne));
        ne->max = max;
}

void netevents_release(struct netevents *ne) {
        json_decref(ne->list);
        ne->list = NULL;
}

static const char *kind_name(unsigned k) {
        switch (k) {
        case NETAUDIT_CONNECT: return "connect";
        case NETAUDIT_SENDMSG: return "sendmsg";
        case NETAUDIT_SOCKET: return "socket";
        case NETAUDIT_DNS: return "dns";
        }
        return "?";
}

/* "tcp", "udp", "icmp", ... or "raw"/"ip-N" for the rest. */
static json_t *protocol_json(const struct netaudit_event *e) {
        char buf[16];
        switch (e->protocol) {
        case IPPROTO_TCP: return json_string("tcp");
        case IPPROTO_UDP: return json_string("udp");
        case IPPROTO_ICMP: return json_string("icmp");
        case IPPROTO_ICMPV6: return json_string("icmpv6");
        case IPPROTO_SCTP: return json_string("sctp");
        case IPPROTO_UDPLITE: return json_string("udplite");
        case IPPROTO_RAW: return json_string("raw");
        case IPPROTO_MPTCP: return json_string("mptcp");
        }
        if (e->sock_type == SOCK_RAW)
                return json_string("raw");
        snprintf(buf, sizeof(buf), "ip-%u", (unsigned) e->protocol);
        return json_string(buf);
}

static json_t *address_json(const struct netaudit_event *e) {
        char buf[INET6_ADDRSTRLEN];
        if (e->kind == NETAUDIT_SOCKET)
                return json_null();
        if (!inet_ntop(e->family == AF_INET6 ? AF_INET6 : AF_INET, e->addr, buf, sizeof(buf)))
                return json_null();
        return json_string(buf);
}

json_t *netevent_json(const struct netaudit_event *e, uint64_t real_ms, const char *hostname, const char *qtype) {
        char comm[sizeof(e->comm) + 1];
        bool dns = e->kind == NETAUDIT_DNS;
        memcpy(comm, e->comm, sizeof(e->comm));
        comm[sizeof(e->comm)] = '\0';
        /* comm is the job's to choose: only printable ASCII goes into JSON. */
        for (char *c = comm; *c; c++)
                if ((unsigned char) *c < 0x20 || (unsigned char) *c > 0x7e)
                        *c = '?';
        json_t *o = json_pack("{s:o, s:o, s:o, s:s, s:o, s:s, s:o, s:o, s:o, s:s}", "time", proto_time(real_ms), "pid",
                              dns ? json_null() : json_integer((json_int_t) e->pid), "comm", dns ? json_null() : json_string(comm),
                              "kind", kind_name(e->kind), "protocol", protocol_json(e), "family",
                              e->family == AF_INET6 ? "ipv6" : "ipv4", "address",
                              dns && !e->reason ? json_null() : address_json(e), "port",
                              e->kind == NETAUDIT_SOCKET || dns ? json_null() : json_integer(e->port), "hostname",
                              hostname ? json_string(hostname) : json_null(), "verdict", e->verdict == NETAUDIT_ALLOW ? "allow" : "deny");
        if (o && dns && qtype)
                json_object_set_new(o, "qtype", json_string(qtype));
        /* denied because the destination is one no restricted job
         * reaches (netdeny.h); for a dns event: an address its answer
         * named, withheld */
        if (o && e->reason)
                json_object_set_new(o, "reason", json_string(netdeny_reason_name(e->reason)));
        return o;
}

json_t *netevents_add(struct netevents *ne, const struct netaudit_event *e, uint64_t real_ms, const char *hostname,
                      const char *qtype) {
        size_t kept = ne->list ? json_array_size(ne->list) : 0;
        if (kept >= ne->max) {
                ne->dropped++;
                return NULL;
        }
        if (!ne->list && !(ne->list = json_array())) {
                ne->dropped++;
                return NULL;
        }
        json_t *ev = netevent_json(e, real_ms, hostname, qtype);
        if (!ev || json_array_append(ne->list, ev) < 0) {
                json_decref(ev);
                ne->dropped++;
                return NULL;
        }
        return ev;
}

static json_t *count_json(const struct netevents *ne, bool audited, uint64_t n) {
        if (!ne && audited)
                return json_null();
        return json_integer((json_int_t) (ne ? n : 0));
}

json_t *netevents_summary(const struct netevents *ne, int mode, bool audited) {
        json_t *o = json_pack("{s:s, s:b, s:o, s:o, s:o}", "mode", proto_net_mode_name(mode), "audit", audited, "events_kept",
                         count_json(ne, audited, ne && ne->list ? json_array_size(ne->list) : 0), "events_dropped",
                         count_json(ne, audited, ne ? ne->dropped : 0), "events_lost", count_json(ne, audited, ne ? ne->lost : 0));
        if (o && mode == NET_RESTRICTED) {
                json_object_set_new(o, "dns_names", count_json(ne, true, ne ? ne->dns_names : 0));
                json_object_set_new(o, "dns_names_refused", count_json(ne, true, ne ? ne->dns_names_refused : 0));
        }
        return o;
}
