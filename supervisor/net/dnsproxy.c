/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "dnsmsg.h"
#include "dnsproxy-internal.h"
#include "jobevents.h"
#include "log.h"
#include "netaudit-bpf.h"
#include "netjob.h"
#include "secretproxy.h"

/* One query forwarded upstream, on a socket of its own (connected: only
 * the upstream resolver's answer arrives there). */
struct dns_pending {
        struct list link;
        struct dnsproxy *px;
        int fd;
        struct source src;
        struct dns_query q;
        struct sockaddr_in peer; /* the job's socket that asked */
        uint64_t since_ms;       /* CLOCK_MONOTONIC */
        bool resent;             /* sent upstream again at half the timeout */
        size_t len;
        uint8_t query[];         /* as the job sent it, for an error answer */
};


int dnsproxy_setup(struct daemon *d) {
        struct sockaddr_in6 *up = &d->dns_upstream;
        if (d->cfg->dns_upstream[0]) {
                memcpy(up, &d->cfg->dns_upstream_addr, sizeof(*up));
        } else {
                /* the host's own resolver */
                FILE *f = fopen("/etc/resolv.conf", "re");
                char line[512], addr[64];
                bool found = false;
                while (f && !found && fgets(line, sizeof(line), f))
                        if (sscanf(line, " nameserver %63s", addr) == 1) {
                                struct in_addr a4;
                                memset(up, 0, sizeof(*up));
                                if (inet_pton(AF_INET, addr, &a4) == 1) {
                                        struct sockaddr_in *s4 = (struct sockaddr_in *) up;
                                        s4->sin_family = AF_INET;
                                        s4->sin_addr = a4;
                                        s4->sin_port = htons(53);
                                        found = true;
                                } else if (inet_pton(AF_INET6, addr, &up->sin6_addr) == 1) {
                                        up->sin6_family = AF_INET6;
                                        up->sin6_port = htons(53);
                                        found = true;
                                }
                        }
                if (f)
                        fclose(f);
                if (!found) {
                        d->caps.no_dns_why = "no dns_upstream is configured and /etc/resolv.conf names no nameserver";
                        return -ENOENT;
                }
        }
        d->caps.dns_proxy = true;
        return 0;
}

void dnsproxy_event(struct dnsproxy *px, const struct dns_query *q, int protocol, bool allowed) {
        struct rjob *rj = px->rj;
        char type[16];
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        struct netaudit_event e = { .family = AF_INET, .port = 53, .protocol = (uint16_t) protocol, .kind = NETAUDIT_DNS,
                                    .verdict = allowed ? NETAUDIT_ALLOW : NETAUDIT_DENY };
        metrics_net_event(&rj->d->metrics, e.kind, e.verdict);
        json_t *ev = netevents_add(&rj->net, &e, (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000, q->name,
                                   dnsmsg_type_name(q->qtype, type, sizeof(type)));
        if (ev)
                job_tell_event(rj, proto_ev_network(rj->j.id, ev), 0, 0);
        json_decref(ev);
}

static void reply(struct dnsproxy *px, const struct sockaddr_in *peer, const uint8_t *buf, size_t len) {
        if (sendto(px->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *) peer, sizeof(*peer)) < 0)
                log_debug(JOB_LOG ": DNS proxy: answer not sent: %s", JOB_LOG_ARGS(&px->rj->j), strerror(errno));
}

static void answer_error(struct dnsproxy *px, const struct sockaddr_in *peer, const uint8_t *q, size_t len, int rcode) {
        uint8_t out[DNSMSG_MAX];
        size_t n;
        if (dnsmsg_error(q, len, rcode, out, sizeof(out), &n) == 0)
                reply(px, peer, out, n);
}

static void refuse(struct dnsproxy *px, const struct sockaddr_in *peer, const uint8_t *q, size_t len) {
        answer_error(px, peer, q, len, DNSMSG_REFUSED);
}

/* The query is done with: counted by what came of it. */
static void pending_free(struct dns_pending *p, enum metrics_dns_outcome o) {
        metrics_dns(&p->px->rj->d->metrics, o, 1);
        loop_del(&p->src);
        close(p->fd);
        list_del(&p->link);
        p->px->n_pending--;
        /* expire() frees others than the one whose event this is: an
         * event of theirs may be next in the batch */
        loop_defer_free(free, p);
}

static void remember(struct dnsproxy *px, const uint8_t addr[16], const char *name) {
        for (size_t i = 0; i < px->n_names; i++)
                if (memcmp(px->names[i].addr, addr, 16) == 0) {
                        snprintf(px->names[i].name, sizeof(px->names[i].name), "%s", name);
                        return;
                }
        if (px->n_names >= DNSPROXY_NAMES)
                return;
        memcpy(px->names[px->n_names].addr, addr, 16);
        snprintf(px->names[px->n_names].name, sizeof(px->names[px->n_names].name), "%s", name);
        px->n_names++;
}

/* An address of an answer the job may never reach (DNS rebinding: a name
 * that resolves to its gateway, the host or 169.254.169.254): a "dns"
 * event with the address and the reason, counted; said in the log once a
 * job. */
static void withhold(struct dnsproxy *px, const struct dns_query *q, int protocol, const uint8_t addr[16], enum netdeny_reason why) {
        struct rjob *rj = px->rj;
        static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
        struct timespec ts;
        char type[16], text[INET6_ADDRSTRLEN];
        /* an AAAA record of a mapped address is shown as it came */
        bool v4 = q->qtype != DNSMSG_TYPE_AAAA && memcmp(addr, mapped, 12) == 0;
        struct netaudit_event e = { .family = v4 ? AF_INET : AF_INET6, .port = 53, .protocol = (uint16_t) protocol,
                                    .kind = NETAUDIT_DNS, .verdict = NETAUDIT_DENY, .reason = (uint8_t) why };
        memcpy(e.addr, v4 ? addr + 12 : addr, v4 ? 4 : 16);
        clock_gettime(CLOCK_REALTIME, &ts);
        metrics_dns_withheld(&rj->d->metrics, why);
        metrics_net_event(&rj->d->metrics, e.kind, e.verdict);
        json_t *ev = netevents_add(&rj->net, &e, (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000, q->name,
                                   dnsmsg_type_name(q->qtype, type, sizeof(type)));
        if (ev)
                job_tell_event(rj, proto_ev_network(rj->j.id, ev), 0, 0);
        json_decref(ev);
        if (!px->rebind_said) {
                inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? addr + 12 : addr, text, sizeof(text));
                log_warning(JOB_LOG ": DNS proxy: %s: the answer names %s (%s), which restricted jobs never reach; "
                            "answers like it are withheld (REFUSED) and shown in the job's network events (logged once)",
                            JOB_LOG_ARGS(&rj->j), q->name, text, netdeny_reason_name(why));
                px->rebind_said = true;
        }
}

enum metrics_dns_outcome dnsproxy_admit(struct dnsproxy *px, const struct dns_query *q, int protocol, const uint8_t *buf, size_t len) {
        struct rjob *rj = px->rj;
        uint8_t addrs[DNSMSG_ADDRS_MAX][16];
        size_t n = 0;
        bool denied = false;
        if (dnsmsg_answers(buf, len, q, addrs, DNSMSG_ADDRS_MAX, &n) < 0)
                return MDNS_UPSTREAM_FAILED;
        /* Before anything is admitted: an answer with one address the job
         * must never reach is withheld whole (it is an attack, or a zone
         * no job should trust), not trimmed. */
        for (size_t i = 0; i < n; i++) {
                enum netdeny_reason why = netdeny_match(rj->d->net_deny, addrs[i]);
                if (why != ND_NONE) {
                        withhold(px, q, protocol, addrs[i], why);
                        denied = true;
                }
        }
        if (denied)
                return MDNS_WITHHELD;
        const struct netpolicy *pol = rj->j.req.run.netpol;
        for (size_t i = 0; pol && (rj->net_att || rj->net_ratt) && i < n; i++) {
                struct np_rule rules[NETPOLICY_MAX_ALLOW];
                size_t nr = netpolicy_rules_for(pol, addrs[i], q->name, rules);
                int r = netjob_allow_addr(rj, addrs[i], rules, nr);
                if (r < 0) {
                        /* once: a job that goes on resolving must not
                         * fill the log (the metrics count every one) */
                        if (!px->withheld_said && r == -EDQUOT)
                                log_warning(JOB_LOG ": DNS proxy: %s: the job has %d addresses admitted, the most a job may have; "
                                            "answers that would add more are withheld (REFUSED) from now on",
                                            JOB_LOG_ARGS(&rj->j), q->name, NETAUDIT_JOB_ALLOW);
                        else if (!px->withheld_said)
                                log_warning(JOB_LOG ": DNS proxy: %s: an address not admitted (%s); the answer is withheld, "
                                            "and so is any other this job's proxy cannot admit (logged once)",
                                            JOB_LOG_ARGS(&rj->j), q->name, strerror(-r));
                        px->withheld_said = true;
                        return MDNS_WITHHELD;
                }
                remember(px, addrs[i], q->name);
        }
        return MDNS_ANSWERED;
}

/* The upstream's answer: its addresses into the job's allow map first,
 * then to the job. */
static void on_upstream(struct source *s, uint32_t events) {
        struct dns_pending *p = container_of(s, struct dns_pending, src);
        struct dnsproxy *px = p->px;
        uint8_t buf[DNSMSG_MAX];
        ssize_t k = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        /* k < 0: an ICMP error (nothing listens there); else perhaps not
         * the answer to this query: the job hears at once, not at its
         * timeout */
        enum metrics_dns_outcome o = k <= 0 ? MDNS_UPSTREAM_FAILED : dnsproxy_admit(px, &p->q, IPPROTO_UDP, buf, (size_t) k);
        if (o == MDNS_ANSWERED)
                reply(px, &p->peer, buf, (size_t) k);
        else if (o == MDNS_WITHHELD)
                refuse(px, &p->peer, p->query, p->len);
        else
                answer_error(px, &p->peer, p->query, p->len, DNSMSG_SERVFAIL);
        pending_free(p, o);
}

static int forward(struct dnsproxy *px, const struct dns_query *q, const struct sockaddr_in *peer, const uint8_t *buf, size_t len) {
        const struct sockaddr_in6 *up = &px->rj->d->dns_upstream;
        socklen_t ul = up->sin6_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        struct dns_pending *p = calloc(1, sizeof(*p) + len);
        if (!p)
                return -ENOMEM;
        memcpy(p->query, buf, len);
        p->len = len;
        p->since_ms = now_mono_ms();
        p->fd = socket(up->sin6_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (p->fd < 0 || connect(p->fd, (const struct sockaddr *) up, ul) < 0 || send(p->fd, buf, len, MSG_NOSIGNAL) < 0) {
                int r = -errno;
                if (p->fd >= 0)
                        close(p->fd);
                free(p);
                return r;
        }
        int r = loop_add(&p->src, p->fd, EPOLLIN, on_upstream);
        if (r < 0) {
                close(p->fd);
                free(p);
                return r;
        }
        p->px = px;
        p->q = *q;
        p->peer = *peer;
        list_add_tail(&px->pending, &p->link);
        px->n_pending++;
        return 0;
}

uint64_t dnsproxy_timeout_ms(const struct dnsproxy *px) {
        return px->rj->d->cfg->dns_upstream_timeout_ms;
}

void dnsproxy_note_timeout(struct dnsproxy *px, const struct dns_query *q) {
        struct dns_failed *f = &px->failed[px->next_failed++ % DNSPROXY_FAILED];
        snprintf(f->name, sizeof(f->name), "%s", q->name);
        f->qtype = q->qtype;
        f->at_ms = now_mono_ms();
}

bool dnsproxy_failed_recently(const struct dnsproxy *px, const struct dns_query *q) {
        uint64_t now = now_mono_ms(), t = dnsproxy_timeout_ms(px);
        for (size_t i = 0; i < DNSPROXY_FAILED; i++) {
                const struct dns_failed *f = &px->failed[i];
                if (f->at_ms && now - f->at_ms < t && f->qtype == q->qtype && streq(f->name, q->name))
                        return true;
        }
        return false;
}

/* A UDP query's next deadline: its second sending at half the timeout
 * (a datagram lost on the way), then its end. */
static uint64_t pending_deadline(const struct dns_pending *p, uint64_t t) {
        return p->since_ms + (p->resent ? t : t / 2);
}

void dnsproxy_arm(struct dnsproxy *px) {
        uint64_t t = dnsproxy_timeout_ms(px), next = dnstcp_expire(px, now_mono_ms()), now = now_mono_ms();
        struct list *pos, *tmp;
        list_for_each_safe(pos, tmp, &px->pending) {
                uint64_t dl = pending_deadline(list_entry(pos, struct dns_pending, link), t);
                if (dl < next)
                        next = dl;
        }
        /* disarmed when nothing is out; else at least 1 ms from now */
        uint64_t in = next == UINT64_MAX ? 0 : next > now ? next - now : 1;
        struct itimerspec its = { .it_value = { .tv_sec = (time_t) (in / 1000), .tv_nsec = (long) (in % 1000) * 1000000 } };
        if (timerfd_settime(px->timer_fd, 0, &its, NULL) < 0)
                log_warning(JOB_LOG ": DNS proxy: cannot set its upstream timer: %s", JOB_LOG_ARGS(&px->rj->j), strerror(errno));
}

/* The upstream had its time: a query past the timeout gets SERVFAIL (the
 * job's resolver gives up now, not after its own timeouts); one past half
 * of it is sent once more. */
static void on_timer(struct source *s, uint32_t events) {
        struct dnsproxy *px = container_of(s, struct dnsproxy, timer_src);
        uint64_t n, now = now_mono_ms(), t = dnsproxy_timeout_ms(px);
        struct list *pos, *tmp;
        if (read(px->timer_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
                return;
        list_for_each_safe(pos, tmp, &px->pending) {
                struct dns_pending *p = list_entry(pos, struct dns_pending, link);
                if (now - p->since_ms >= t) {
                        answer_error(px, &p->peer, p->query, p->len, DNSMSG_SERVFAIL);
                        dnsproxy_note_timeout(px, &p->q);
                        pending_free(p, MDNS_TIMED_OUT);
                } else if (!p->resent && now - p->since_ms >= t / 2) {
                        p->resent = true;
                        if (send(p->fd, p->query, p->len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                                log_debug(JOB_LOG ": DNS proxy: query not sent again: %s", JOB_LOG_ARGS(&px->rj->j), strerror(errno));
                }
        }
        dnsproxy_arm(px); /* TCP's expired there */
}

static uint64_t name_hash(uint64_t seed, const char *name) {
        uint64_t h = 1469598103934665603ull ^ seed;
        for (const unsigned char *c = (const unsigned char *) name; *c; c++)
                h = (h ^ *c) * 1099511628211ull;
        return h ^ (h >> 29);
}

/* The set's slot for name: where it is, or the empty one it would take. */
static char **seen_slot(const struct dnsproxy *px, const char *name) {
        size_t mask = px->cap_seen - 1;
        for (size_t i = name_hash(px->seed, name) & mask;; i = (i + 1) & mask)
                if (!px->seen[i] || streq(px->seen[i], name))
                        return &px->seen[i];
}

static int seen_grow(struct dnsproxy *px) {
        size_t cap = px->cap_seen ? px->cap_seen * 2 : 64;
        char **old = px->seen;
        size_t old_cap = px->cap_seen;
        if (!(px->seen = calloc(cap, sizeof(*px->seen)))) {
                px->seen = old;
                return -ENOMEM;
        }
        px->cap_seen = cap;
        for (size_t i = 0; i < old_cap; i++)
                if (old[i])
                        *seen_slot(px, old[i]) = old[i];
        free(old);
        return 0;
}

/* Names carry data to whoever serves their zone: a job under a wildcard
 * may have at most network_max_names distinct ones forwarded. */
static bool name_admit(struct dnsproxy *px, const char *name) {
        uint64_t max = px->rj->j.tenant->net_max_names;
        if (px->cap_seen && *seen_slot(px, name))
                return true;
        if (px->n_seen >= max || ((px->n_seen + 1) * 2 > px->cap_seen && seen_grow(px) < 0)) {
                px->names_refused++;
                if (!px->names_said)
                        log_warning(JOB_LOG ": DNS proxy: %s: the job has had %zu distinct names resolved, its tenant's network_max_names; "
                                    "new names are refused (REFUSED) from now on (logged once)",
                                    JOB_LOG_ARGS(&px->rj->j), name, px->n_seen);
                px->names_said = true;
                return false;
        }
        char **slot = seen_slot(px, name);
        if (!(*slot = strdup(name)))
                return false;
        px->n_seen++;
        return true;
}

enum metrics_dns_outcome dnsproxy_vet(struct dnsproxy *px, const struct dns_query *q, int protocol) {
        const struct netpolicy *pol = px->rj->j.req.run.netpol;
        enum metrics_dns_outcome o = MDNS_ANSWERED;
        if (!pol || !netpolicy_host_allowed(pol, q->name))
                o = MDNS_REFUSED;
        else if (dnsproxy_failed_recently(px, q))
                o = MDNS_TIMED_OUT;
        else if (!name_admit(px, q->name))
                o = MDNS_NAMES_CAP;
        else if (px->n_pending >= DNSPROXY_PENDING)
                o = MDNS_BUSY;
        dnsproxy_event(px, q, protocol, o == MDNS_ANSWERED || o == MDNS_TIMED_OUT);
        return o;
}

bool dnsproxy_local(struct dnsproxy *px, const struct dns_query *q, int protocol) {
        if (!secretproxy_host(px->rj->sproxy, q->name))
                return false;
        dnsproxy_event(px, q, protocol, true);
        metrics_dns(&px->rj->d->metrics, MDNS_ANSWERED, 1);
        return true;
}

/* A job's queries a second: a token each, DNSPROXY_RATE again every second. */
bool dnsproxy_take_token(struct dnsproxy *px) {
        uint64_t now = now_mono_ms();
        if (now - px->refill_ms >= 1000) {
                px->tokens = DNSPROXY_RATE;
                px->refill_ms = now;
        }
        if (px->tokens == 0)
                return false;
        px->tokens--;
        return true;
}

static void pause_reading(struct dnsproxy *px) {
        if (px->paused || loop_mod(&px->src, 0) < 0)
                return;
        px->paused = true;
        px->rj->d->metrics.net.dns_pauses++;
        list_add_tail(&px->rj->d->dns_paused, &px->paused_link);
}

void dnsproxy_tick(struct daemon *d) {
        while (!list_empty(&d->dns_paused)) {
                struct dnsproxy *px = list_entry(d->dns_paused.next, struct dnsproxy, paused_link);
                list_del(&px->paused_link);
                px->paused = false;
                if (loop_mod(&px->src, EPOLLIN) < 0)
                        log_warning(JOB_LOG ": DNS proxy: cannot read its socket again", JOB_LOG_ARGS(&px->rj->j));
        }
        dnstcp_tick(d);
}

static void on_query(struct source *s, uint32_t events) {
        struct dnsproxy *px = container_of(s, struct dnsproxy, src);
        /* a bounded batch per wakeup: a flood waits its turn in the socket */
        for (int i = 0; i < 64; i++) {
                if (!dnsproxy_take_token(px)) {
                        pause_reading(px);
                        return;
                }
                uint8_t buf[DNSMSG_MAX];
                struct sockaddr_in peer;
                socklen_t pl = sizeof(peer);
                struct dns_query q;
                ssize_t k = recvfrom(px->fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *) &peer, &pl);
                if (k < 0)
                        return;
                if (pl != sizeof(peer) || dnsmsg_parse_query(buf, (size_t) k, &q) < 0) {
                        metrics_dns(&px->rj->d->metrics, MDNS_MALFORMED, 1);
                        continue; /* not a query: no answer */
                }
                if (dnsproxy_local(px, &q, IPPROTO_UDP)) {
                        uint8_t out[DNSMSG_MAX];
                        size_t n;
                        if (dnsmsg_loopback(buf, (size_t) k, out, sizeof(out), &n) == 0)
                                reply(px, &peer, out, n);
                        continue;
                }
                enum metrics_dns_outcome o = dnsproxy_vet(px, &q, IPPROTO_UDP);
                if (o == MDNS_ANSWERED && forward(px, &q, &peer, buf, (size_t) k) == 0) {
                        dnsproxy_arm(px);
                        continue; /* its outcome is counted when it is done with */
                }
                metrics_dns(&px->rj->d->metrics, o == MDNS_ANSWERED ? MDNS_UPSTREAM_FAILED : o, 1);
                if (o == MDNS_TIMED_OUT) {
                        answer_error(px, &peer, buf, (size_t) k, DNSMSG_SERVFAIL);
                        continue;
                }
                refuse(px, &peer, buf, (size_t) k);
        }
}

int dnsproxy_start(struct rjob *rj, int fd, int tcp_fd) {
        struct dnsproxy *px = calloc(1, sizeof(*px));
        if (!px || !(px->names = calloc(DNSPROXY_NAMES, sizeof(*px->names)))) {
                free(px);
                close(fd);
                if (tcp_fd >= 0)
                        close(tcp_fd);
                return -ENOMEM;
        }
        px->rj = rj;
        px->fd = fd;
        px->tokens = DNSPROXY_RATE;
        px->refill_ms = now_mono_ms();
        px->tcp_fd = -1;
        px->timer_fd = -1;
        if (getrandom(&px->seed, sizeof(px->seed), GRND_NONBLOCK) != sizeof(px->seed))
                px->seed = now_mono_us() ^ (uint64_t) (uintptr_t) px;
        list_init(&px->pending);
        list_init(&px->paused_link);
        list_init(&px->conns);
        list_init(&px->tcp_link);
        px->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        int r = px->timer_fd < 0 ? -errno : loop_add(&px->timer_src, px->timer_fd, EPOLLIN, on_timer);
        if (r < 0) {
                if (px->timer_fd >= 0)
                        close(px->timer_fd);
                close(fd);
                if (tcp_fd >= 0)
                        close(tcp_fd);
                free(px->names);
                free(px);
                return r;
        }
        if ((r = loop_add(&px->src, fd, EPOLLIN, on_query)) < 0) {
                loop_del(&px->timer_src);
                close(px->timer_fd);
                close(fd);
                if (tcp_fd >= 0)
                        close(tcp_fd);
                free(px->names);
                free(px);
                return r;
        }
        if ((r = dnstcp_start(px, tcp_fd)) < 0) {
                loop_del(&px->src);
                loop_del(&px->timer_src);
                close(px->timer_fd);
                close(fd);
                free(px->names);
                free(px);
                return r;
        }
        rj->dns = px;
        return 0;
}

/* The job's queries the proxy never read: those the kernel dropped, the
 * socket's buffer full while the proxy was past the job's rate (the
 * socket's drop count, SK_MEMINFO_DROPS), and those still waiting in it
 * now that the job has ended (read and let go: at most a buffer's worth). */
static uint64_t unread(int fd) {
        uint32_t mi[SK_MEMINFO_VARS];
        socklen_t l = sizeof(mi);
        uint64_t n = 0;
        uint8_t buf[1];
        if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &l) == 0 && l > SK_MEMINFO_DROPS * sizeof(mi[0]))
                n = mi[SK_MEMINFO_DROPS];
        /* bounded, should anything still send to it */
        for (int i = 0; i < 4096 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC) >= 0; i++)
                n++;
        return n;
}

void dnsproxy_stop(struct rjob *rj) {
        struct dnsproxy *px = rj->dns;
        if (!px)
                return;
        metrics_dns(&rj->d->metrics, MDNS_RATE_LIMITED, unread(px->fd));
        dnstcp_stop(px);
        while (!list_empty(&px->pending))
                pending_free(list_entry(px->pending.next, struct dns_pending, link), MDNS_UNANSWERED);
        if (px->paused)
                list_del(&px->paused_link);
        loop_del(&px->src);
        close(px->fd);
        loop_del(&px->timer_src);
        close(px->timer_fd);
        free(px->names);
        /* the record's count of names */
        rj->net.dns_names = px->n_seen;
        rj->net.dns_names_refused = px->names_refused;
        for (size_t i = 0; i < px->cap_seen; i++)
                free(px->seen[i]);
        free(px->seen);
        /* its sources (UDP, TCP's listener) may be in the batch yet */
        loop_defer_free(free, px);
        rj->dns = NULL;
}

const char *dnsproxy_name_of(const struct rjob *rj, const struct netaudit_event *e) {
        const struct dnsproxy *px = rj->dns;
        uint8_t a[16] = { 0 };
        if (!px || e->kind == NETAUDIT_SOCKET)
                return NULL;
        if (e->family == AF_INET) {
                a[10] = a[11] = 0xff;
                memcpy(a + 12, e->addr, 4);
        } else
                memcpy(a, e->addr, 16);
        for (size_t i = 0; i < px->n_names; i++)
                if (memcmp(px->names[i].addr, a, 16) == 0)
                        return px->names[i].name;
        return NULL;
}
