/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "daemon.h"
#include "dnsproxy.h"
#include "launch-abi.h"
#include "log.h"
#include "netfwd.h"
#include "netveth.h"
#include "nft.h"
#include "secretproxy.h"
#include "veth.h"

/* Names of its own for this daemon's veths and nft table, from its state
 * directory: two daemons on one host (each with its own network_pool)
 * never sweep each other's. */
/* Every daemon's veths start with "sx": nft.c leaves packets to and from
 * another daemon's to that daemon's table. */
static void names(struct daemon *d) {
        uint32_t h = 2166136261u;
        for (const char *c = d->cfg->state_dir; *c; c++)
                h = (h ^ (uint8_t) *c) * 16777619u;
        snprintf(d->net_ifprefix, sizeof(d->net_ifprefix), "sx%05x-", h & 0xfffff);
        snprintf(d->net_table, sizeof(d->net_table), "sbx_%05x", h & 0xfffff);
}

void netveth_restore(struct daemon *d) {
        struct sbx_error err;
        unsigned n = 0;
        sbx_error_clear(&err);
        /* sbx-privd keeps a record of its own and puts it back itself */
        if (d->netpriv)
                return;
        if (netfwd_restore(d->dirs.state_fd, &n, &err) < 0)
                log_error("network: the forwarding switches a previous run turned on: %s", err.msg);
        else if (n)
                log_notice("network: put back %u forwarding settings a previous run changed (%s)", n, NETFWD_RECORD);
}

static bool gate_take(void *arg, struct job *j);
static void on_retry(struct source *s, uint32_t events);

/* The scheduler's gate and its retry timer, either way. */
static void gate_setup(struct daemon *d) {
        int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        d->net_retry_src.fd = -1;
        if (tfd >= 0 && loop_add(&d->net_retry_src, tfd, EPOLLIN, on_retry) < 0) {
                close(tfd);
                tfd = -1;
        }
        d->net_retry_src.fd = tfd;
        if (tfd < 0)
                log_warning("restricted jobs: no timer (%s): a job waiting for a block of the pool waits for the next job's end",
                            strerror(errno));
        d->sched.gate = (struct sched_gate) { .take = gate_take, .arg = d };
}

/* With "user" set sbx-privd holds the pool, makes the veths, switches
 * forwarding on and loads the nft tables; this process counts the blocks
 * in use, to keep jobs past the pool in the queue. */
static void setup_remote(struct daemon *d) {
        if (!d->netpriv->net_slots) {
                d->caps.no_restricted_why = "sbx-privd has no network (it was started without a network_pool)";
                return;
        }
        d->net_slots = d->netpriv->net_slots;
        if (dnsproxy_setup(d) < 0)
                log_warning("restricted jobs: hostname entries are refused: %s", d->caps.no_dns_why);
        d->caps.net_restricted = true;
        gate_setup(d);
        log_info("restricted jobs: veths made by sbx-privd, %u blocks of the network_pool%s", d->net_slots,
                 d->cfg->net_pool6_prefix ? " and the network_pool6" : " (IPv4 only: no network_pool6)");
}

void netveth_setup(struct daemon *d) {
        struct sbx_error err;
        unsigned swept = 0;
        int r;
        sbx_error_clear(&err);
        if (!d->cfg->net_pool) {
                d->caps.no_restricted_why = "no network_pool is configured";
                return;
        }
        if (d->netpriv) {
                setup_remote(d);
                return;
        }
        names(d);
        uint64_t slots = (1ull << (32 - d->cfg->net_pool_prefix)) / 4;
        d->net_slots = (unsigned) (slots > 65536 ? 65536 : slots);
        d->net_used = calloc((d->net_slots + 7) / 8, 1);
        if (!d->net_used) {
                d->caps.no_restricted_why = "out of memory";
                return;
        }
        const struct config *cf = d->cfg;
        struct netfwd *fw = &d->net_fwd;
        if ((r = veth_sweep(d->net_ifprefix, &swept, &err)) < 0 ||
            (r = netfwd_plan(fw, d->dirs.state_fd, cf->net_pool6_prefix != 0, d->net_ifprefix, &err)) < 0 ||
            (r = nft_setup(d->net_table, d->net_ifprefix, cf->net_pool, cf->net_pool_prefix, cf->net_pool6, cf->net_pool6_prefix,
                           &(struct nft_guard) { .ifaces = fw->guard4 }, &(struct nft_guard) { .ifaces = fw->guard6, .all = fw->global6 },
                           &err)) < 0 ||
            (r = netfwd_switch(fw, d->dirs.state_fd, &err)) < 0) {
                struct sbx_error ignored;
                netfwd_teardown(fw, d->dirs.state_fd, &ignored);
                nft_teardown(d->net_table);
                snprintf(d->no_restricted_why, sizeof(d->no_restricted_why), "its network set-up failed: %s", err.msg);
                d->caps.no_restricted_why = d->no_restricted_why;
                log_warning("restricted jobs unavailable: %s", err.msg);
                return;
        }
        log_info("network: forwarding switched on for restricted jobs: IPv4 on their veths%s%s%s; IPv6 %s%s%s (nft drops what else "
                 "it would forward)",
                 fw->guard4[0] ? " and " : "", fw->guard4, fw->guard4[0] ? "" : " only (the rest was on)",
                 !cf->net_pool6_prefix ? "not used" : fw->global6 ? "host-wide (net.ipv6.conf.all.forwarding: this kernel has "
                                                                    "no force_forwarding)" :
                 fw->force6 ? "on their veths and " : "already on host-wide",
                 fw->force6 ? fw->guard6 : "", fw->force6 && !fw->guard6[0] ? "(the rest was on)" : "");
        if (swept)
                log_notice("network: removed %u veths a previous run left (%s*)", swept, d->net_ifprefix);
        if (dnsproxy_setup(d) < 0)
                log_warning("restricted jobs: hostname entries are refused: %s", d->caps.no_dns_why);
        d->caps.net_restricted = true;
        gate_setup(d);
        log_info("restricted jobs: veths %s* with /30s of the network_pool%s, nft table ip %s%s", d->net_ifprefix,
                 cf->net_pool6_prefix ? " and /126s of the network_pool6" : " (IPv4 only: no network_pool6)", d->net_table,
                 cf->net_pool6_prefix ? " and ip6 too" : "");
}

void netveth_teardown(struct daemon *d) {
        unsigned n = 0;
        struct sbx_error err;
        if (d->caps.net_restricted) {
                d->sched.gate.take = NULL;
                if (d->net_retry_src.fd >= 0) {
                        loop_del(&d->net_retry_src);
                        close(d->net_retry_src.fd);
                        d->net_retry_src.fd = -1;
                }
        }
        if (d->caps.net_restricted && !d->netpriv) {
                if (netfwd_teardown(&d->net_fwd, d->dirs.state_fd, &err) < 0)
                        log_error("network: %s; the record stays for the next start", err.msg);
                nft_teardown(d->net_table);
                if (veth_sweep(d->net_ifprefix, &n, &err) < 0)
                        log_warning("network: %s", err.msg);
        }
        free(d->net_used);
        d->net_used = NULL;
}


/* A job's veth and the work on it; it outlives the job while the work
 * runs (rj NULL then). */
struct netlink_job {
        struct daemon *d;
        struct rjob *rj;
        struct source info_src;
        int info_fd, block_fd, netns_fd;
        char buf[4096];
        size_t len;
        pid_t child;
        unsigned long long net_ino;
        int slot;
        bool remote;              /* sbx-privd makes it: slot is its business */
        struct privd_handle job;  /* remote: the job's, for NET_OPEN */
        bool working;
        struct veth_spec spec;
        struct work work;
        int err;
        char msg[SBX_ERROR_MAX];
        uint64_t t_launched, t_info, t_run, t_made; /* CLOCK_MONOTONIC us, for the debug log */
};

bool netveth_handshake(const struct rjob *rj) {
        return rj->j.pol.net == NET_RESTRICTED;
}

const char *netveth_failure(const struct rjob *rj) {
        return rj->net_fail;
}

#define REMOTE_SLOT INT32_MAX

static void slot_name(const struct daemon *d, unsigned slot, char *buf, size_t len) {
        /* "sxHHHHH-" and at most 65535: 13 bytes, within IFNAMSIZ */
        snprintf(buf, len, "%.8s%u", d->net_ifprefix, slot & 0xffff);
}

/* A slot whose veth is gone. The kernel removes a job's pair with its
 * namespace, when the job's last process has gone (not deleting it
 * ourselves keeps the RTNL lock and an RCU grace period off the next
 * job's way); until then the name is taken and the slot is skipped.
 * Round robin, so that a slot comes back only after every other. */
static int slot_take(struct daemon *d) {
        for (unsigned k = 0; k < d->net_slots; k++) {
                unsigned i = (d->net_next + k) % d->net_slots;
                char name[16];
                if (d->net_used[i / 8] & (1u << (i % 8)))
                        continue;
                slot_name(d, i, name, sizeof(name));
                if (if_nametoindex(name) != 0)
                        continue;
                d->net_used[i / 8] |= (uint8_t) (1u << (i % 8));
                d->net_slots_used++;
                d->net_next = i + 1;
                return (int) i;
        }
        return -1;
}

static void slot_give(struct daemon *d, int slot) {
        if (slot < 0)
                return;
        /* a block of sbx-privd's: counted only */
        if (slot != REMOTE_SLOT)
                d->net_used[slot / 8] &= (uint8_t) ~(1u << (slot % 8));
        d->net_slots_used--;
        /* a restricted job may be waiting for it */
        d->net_room(d);
}

static void on_retry(struct source *s, uint32_t events) {
        struct daemon *d = container_of(s, struct daemon, net_retry_src);
        uint64_t n;
        (void) !read(d->net_retry_src.fd, &n, sizeof(n));
        d->net_retry_armed = false;
        d->net_room(d);
}

/* Ask the scheduler again in 10 ms (once, however many jobs wait). */
static void retry_arm(struct daemon *d) {
        struct itimerspec its = { .it_value.tv_nsec = 10 * 1000000 };
        if (d->net_retry_armed || d->net_retry_src.fd < 0)
                return;
        if (timerfd_settime(d->net_retry_src.fd, 0, &its, NULL) == 0)
                d->net_retry_armed = true;
}

static void nl_free(struct netlink_job *n) {
        if (n->info_fd >= 0) {
                loop_del(&n->info_src);
                close(n->info_fd);
        }
        if (n->block_fd >= 0)
                close(n->block_fd);
        if (n->netns_fd >= 0)
                close(n->netns_fd);
        slot_give(n->d, n->slot);
        free(n);
}

/* The job is gone: its veth goes with its network namespace. */
static void nl_retire(struct netlink_job *n) {
        n->rj = NULL;
        if (n->working)
                return; /* setup_done() retires it */
        nl_free(n);
}

/* NET_OPEN: the helper checks the pid and the namespace itself. A block
 * given back by the job before is free only once that job's veth has
 * gone with its namespace, which no event tells: asked again a while. */
static void setup_remote_run(struct netlink_job *n) {
        const struct netpriv *np = n->d->netpriv;
        struct privd_net_reply rep;
        for (int tries = 0;; tries++) {
                memset(&rep, 0, sizeof(rep));
                n->err = np->net_open(np->arg, n->job, n->child, n->net_ino, n->d->cfg->net_pool6_prefix != 0, &rep, &n->spec.dns_fd,
                                      &n->spec.dns_tcp_fd, &n->spec.proxy_fd);
                if (n->err != -EAGAIN || tries >= 500)
                        break;
                usleep(10000);
        }
        n->t_made = now_mono_us();
        if (n->err < 0) {
                n->spec.dns_fd = n->spec.dns_tcp_fd = n->spec.proxy_fd = -1;
                snprintf(n->msg, sizeof(n->msg), "sbx-privd: NET_OPEN: %s (its log says why)", strerror(-n->err));
                return;
        }
        snprintf(n->spec.host_if, sizeof(n->spec.host_if), "block %u", (unsigned) rep.slot);
}

static void setup_run(struct work *w) {
        struct netlink_job *n = container_of(w, struct netlink_job, work);
        struct sbx_error err;
        struct stat st;
        char path[64];
        n->t_run = now_mono_us();
        sbx_error_clear(&err);
        if (n->remote) {
                setup_remote_run(n);
                return;
        }
        snprintf(path, sizeof(path), "/proc/%d/ns/net", (int) n->child);
        n->netns_fd = open(path, O_RDONLY | O_CLOEXEC);
        if (n->netns_fd < 0) {
                n->err = -errno;
                snprintf(n->msg, sizeof(n->msg), "the job's network namespace (%s): %s", path, strerror(errno));
                return;
        }
        /* The pid could be another process's by now: the namespace must
         * be the one the launcher reported. */
        if (fstat(n->netns_fd, &st) < 0 || (unsigned long long) st.st_ino != n->net_ino) {
                n->err = -ESRCH;
                snprintf(n->msg, sizeof(n->msg), "the job's sandbox went away before its network was set up");
                return;
        }
        n->spec.netns_fd = n->netns_fd;
        n->err = veth_create(&n->spec, &err);
        n->t_made = now_mono_us();
        if (n->err < 0)
                snprintf(n->msg, sizeof(n->msg), "%s", err.msg);
}

static void setup_done(struct work *w) {
        struct netlink_job *n = container_of(w, struct netlink_job, work);
        n->working = false;
        if (n->netns_fd >= 0) {
                close(n->netns_fd);
                n->netns_fd = -1;
        }
        if (!n->rj) {
                if (n->spec.dns_fd >= 0)
                        close(n->spec.dns_fd);
                if (n->spec.dns_tcp_fd >= 0)
                        close(n->spec.dns_tcp_fd);
                if (n->spec.proxy_fd >= 0)
                        close(n->spec.proxy_fd);
                nl_retire(n);
                return;
        }
        struct rjob *rj = n->rj;
        if (n->err < 0) {
                metrics_net_setup_failed(&n->d->metrics, MNET_VETH);
                log_error(JOB_LOG ": network: %s", JOB_LOG_ARGS(&rj->j), n->msg);
                free(rj->net_fail);
                rj->net_fail = strdup(n->msg);
        } else if (n->spec.dns_fd >= 0 && dnsproxy_start(rj, n->spec.dns_fd, n->spec.dns_tcp_fd) < 0) {
                /* dnsproxy_start() took its two; the third is still ours */
                if (n->spec.proxy_fd >= 0)
                        close(n->spec.proxy_fd);
                n->spec.dns_fd = n->spec.dns_tcp_fd = n->spec.proxy_fd = -1;
                metrics_net_setup_failed(&n->d->metrics, MNET_DNS);
                free(rj->net_fail);
                rj->net_fail = strdup("cannot serve the job's DNS proxy");
                log_error(JOB_LOG ": %s", JOB_LOG_ARGS(&rj->j), rj->net_fail);
        } else if (n->spec.proxy_fd >= 0 && secretproxy_listen(rj->sproxy, n->spec.proxy_fd) < 0) {
                /* taken, as the DNS proxy's are; the DNS proxy started
                 * goes with the job (netveth_end()) */
                n->spec.proxy_fd = -1;
                metrics_net_setup_failed(&n->d->metrics, MNET_DNS);
                free(rj->net_fail);
                rj->net_fail = strdup("cannot serve the job's secrets proxy");
                log_error(JOB_LOG ": %s", JOB_LOG_ARGS(&rj->j), rj->net_fail);
        } else if (write(n->block_fd, "1", 1) != 1) {
                metrics_net_setup_failed(&n->d->metrics, MNET_HANDSHAKE);
                log_error(JOB_LOG ": network: cannot let the sandbox go on: %s", JOB_LOG_ARGS(&rj->j), strerror(errno));
        } else {
                log_debug(JOB_LOG ": network: %s up: the info line %llu us after the launcher started, the worker %llu us "
                          "later, the veth made in %llu us, the sandbox let go %llu us later", JOB_LOG_ARGS(&rj->j), n->spec.host_if,
                          (unsigned long long) (n->t_info - n->t_launched), (unsigned long long) (n->t_run - n->t_info),
                          (unsigned long long) (n->t_made - n->t_run), (unsigned long long) (now_mono_us() - n->t_made));
        }
        /* Unwritten, the launcher sees end of file and fails at block-fd. */
        close(n->block_fd);
        n->block_fd = -1;
}

/* The info line: {"child-pid": N, "namespaces": {"net": INODE, ...}}. */
static int parse_info(struct netlink_job *n) {
        json_error_t je;
        json_t *o = json_loadb(n->buf, n->len, 0, &je);
        json_int_t pid = 0, ino = 0;
        int r = json_unpack(o, "{s:I, s:{s:I}}", SBX_STATUS_CHILD_PID, &pid, SBX_INFO_NAMESPACES, "net", &ino);
        json_decref(o);
        if (r < 0 || pid <= 1 || ino <= 0)
                return -EINVAL;
        n->child = (pid_t) pid;
        n->net_ino = (unsigned long long) ino;
        return 0;
}

static void on_info(struct source *s, uint32_t events) {
        struct netlink_job *n = container_of(s, struct netlink_job, info_src);
        ssize_t k = read(n->info_fd, n->buf + n->len, sizeof(n->buf) - 1 - n->len);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (k > 0) {
                n->len += (size_t) k;
                if (n->len < sizeof(n->buf) - 1)
                        return; /* until end of file: the launcher closes it after its line */
        }
        loop_del(&n->info_src);
        close(n->info_fd);
        n->info_fd = -1;
        struct rjob *rj = n->rj;
        n->t_info = now_mono_us();
        if (!rj)
                return;
        if (n->len == 0)
                return; /* the launcher failed before its namespaces existed: its own error says why */
        if (parse_info(n) < 0) {
                snprintf(n->msg, sizeof(n->msg), "the launcher's --info-fd line is not what sbx-launch(1) says");
                metrics_net_setup_failed(&n->d->metrics, MNET_HANDSHAKE);
                log_error(JOB_LOG ": %s", JOB_LOG_ARGS(&rj->j), n->msg);
                free(rj->net_fail);
                rj->net_fail = strdup(n->msg);
                close(n->block_fd);
                n->block_fd = -1;
                return;
        }
        n->working = true;
        n->work.run = setup_run;
        n->work.done = setup_done;
        worker_submit(&n->work);
}

/* The scheduler's gate: a restricted job starts only once a block of the
 * pool is its own, so that one past the pool waits in the queue (counted
 * there, in its place) instead of failing after its acknowledgement. */
static bool gate_take(void *arg, struct job *j) {
        struct daemon *d = arg;
        if (j->pol.net != NET_RESTRICTED)
                return true;
        struct rjob *rj = rjob_of(j);
        struct netlink_job *n = calloc(1, sizeof(*n));
        /* Let it go: netveth_launched() says it is out of memory. */
        if (!n)
                return true;
        if (d->netpriv) {
                n->remote = true;
                n->slot = -1;
                if (d->net_slots_used < d->net_slots) {
                        n->slot = REMOTE_SLOT;
                        d->net_slots_used++;
                }
        } else
                n->slot = slot_take(d);
        if (n->slot < 0) {
                free(n);
                /* Blocks given back whose veths the kernel has not removed
                 * yet: no event says when it has, so ask again soon. */
                if (d->net_slots_used < d->net_slots)
                        retry_arm(d);
                return false;
        }
        n->d = d;
        n->rj = rj;
        n->info_fd = n->block_fd = n->netns_fd = -1;
        n->spec.dns_fd = n->spec.dns_tcp_fd = n->spec.proxy_fd = -1;
        n->spec.force6 = d->net_fwd.force6;
        rj->netlink = n;
        return true;
}

int netveth_launched(struct rjob *rj, int info_fd, int block_fd, struct sbx_error *err) {
        struct daemon *d = rj->d;
        struct netlink_job *n = rj->netlink;
        if (!n) {
                close(info_fd);
                close(block_fd);
                return sbx_error_set(err, ENOMEM, "network");
        }
        n->t_launched = now_mono_us();
        n->block_fd = block_fd;
        if (n->remote) {
                n->job = rj->ph;
                goto watch;
        }
        uint32_t base = ntohl(d->cfg->net_pool) + 4u * (uint32_t) n->slot;
        n->spec.host_addr = htonl(base + 1);
        n->spec.job_addr = htonl(base + 2);
        if (d->cfg->net_pool6_prefix) {
                /* the slot's /126: the prefix is at most /110, so a
                 * slot (below 65536) times 4 fits in its last 32 bits */
                uint32_t last;
                memcpy(&last, d->cfg->net_pool6 + 12, 4);
                last = ntohl(last) + 4u * (uint32_t) n->slot;
                n->spec.v6 = true;
                memcpy(n->spec.host_addr6, d->cfg->net_pool6, 16);
                memcpy(n->spec.job_addr6, d->cfg->net_pool6, 16);
                uint32_t h = htonl(last + 1), j = htonl(last + 2);
                memcpy(n->spec.host_addr6 + 12, &h, 4);
                memcpy(n->spec.job_addr6 + 12, &j, 4);
        }
        slot_name(d, (unsigned) n->slot, n->spec.host_if, sizeof(n->spec.host_if));
watch:;
        int r = loop_add(&n->info_src, info_fd, EPOLLIN, on_info);
        if (r < 0) {
                close(info_fd);
                metrics_net_setup_failed(&d->metrics, MNET_HANDSHAKE);
                return sbx_error_set(err, r, "network: cannot watch the launcher's --info-fd");
        }
        n->info_fd = info_fd;
        return 0;
}

void netveth_end(struct rjob *rj) {
        dnsproxy_stop(rj);
        secretproxy_close(rj->sproxy);
        if (!rj->netlink)
                return;
        nl_retire(rj->netlink);
        rj->netlink = NULL;
}
