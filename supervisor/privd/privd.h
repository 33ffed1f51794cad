/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-privd: the privileged helper. It holds the job uid range, the cgroup
 * root and the workspace directory, all given on its own command line by
 * whoever starts it as root, and does for the front only what needs
 * privilege, one fixed-size message at a time (privd-abi.h). Every request
 * is checked here again, as if the front were hostile: it is the process
 * that parses what tenants, registries and jobs send. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "privd-abi.h"
#include "uidpool.h"

/* One job's life, and the only place it changes is jobs.c:
 *
 *   FREE --JOB_OPEN--> OPEN          the workspace is the front's: uploads
 *   OPEN --WS_HANDOVER--> READY      the workspace is the job's uid's
 *   READY --SPAWN--> SPAWNED         the launcher runs
 *   OPEN, READY, SPAWNED, KILLED --JOB_KILL--> KILLED
 *   KILLED --WS_RECLAIM--> RECLAIMED the job's files are the front's
 *   any but FREE --JOB_CLOSE--> FREE (the generation is spent)
 *
 * A WS_HANDOVER that fails after it changed an owner (the front changed
 * the tree under it) leaves the job KILLED: it never runs, and RECLAIM
 * gives the front back what was handed over. WS_RECLAIM also needs the
 * launcher reaped and the cgroup empty. A request that does not fit the
 * job's state is refused. */
enum pjob_state {
        PJOB_FREE = 0,
        PJOB_OPEN,
        PJOB_READY,
        PJOB_SPAWNED,
        PJOB_KILLED,
        PJOB_RECLAIMED,
};

struct pjob {
        enum pjob_state state;
        uint32_t gen;
        uid_t uid;
        int cgroup_fd;            /* the job's cgroup directory */
        int ws_fd;                /* the workspace's root, for the walks (wstree.h) */
        pid_t pid;                /* the launcher, once spawned, until reaped */
        int wstatus;              /* how it ended, once reaped */
        bool reaped, waited;      /* reaped: wstatus is set; waited: JOB_WAIT told it */
        uint32_t net_slot1;       /* net.c: the job's block of the pool plus one; 0: none */
        bool net_opened;          /* net.c: NET_OPEN done (once per job) */
        struct nacore_att *audit; /* audit.c: attached (NET_AUDIT until NET_UNAUDIT) */
        bool audit_done;          /* audit.c: NET_AUDIT done (once per job) */
        uint32_t limits;          /* JOB_OPEN's reply: PRIVD_LIMIT_*, PRIVD_WS_NOSWAP */
        bool outlive;             /* SPAWN asked PRIVD_SPAWN_OUTLIVE */
        bool parked;              /* its front went away: kept for the next one (JOB_ADOPT) */
        uint64_t park_until_ms;   /* CLOCK_MONOTONIC: closed then if not adopted */
        char name[32];            /* "job-p<slot>-<gen>": cgroup and workspace */
};

struct privd_conf {
        int fd;                   /* --fd: the socket to the one front; -1 in listening mode */
        int listen_fd;            /* --listen or --socket: fronts connect here, one at a time; -1: none */
        const char *socket_path;  /* --socket: made by the helper */
        const char *bundle_cache; /* --bundle-cache: the front's cache, for bundle trees (jobfs.h) */
        uid_t uid_first;
        uint32_t uid_count;
        const char *cgroup;       /* absolute directories, made and checked at start */
        const char *workspace;
        const char *launcher;
        const char *profile_path; /* SBX_PROFILE_PATH for the launcher, or NULL */
        uid_t front_uid;          /* --front: who the front runs as; never 0 */
        gid_t front_gid;
        uint64_t workspace_max;
        uint32_t max_jobs;
        /* The jobs' network (net.c); net_pool_prefix 0: none. */
        uint32_t net_pool;        /* network order */
        unsigned net_pool_prefix; /* 8 to 30 */
        uint8_t net_pool6[16];
        unsigned net_pool6_prefix; /* 48 to 110, or 0: IPv4 only */
        const char *net_state;    /* the directory of the forwarding record */
        uint64_t audit_ring;      /* --net-audit: the ring buffer's bytes; 0: no audit */
        uint32_t park_ms;         /* --park-timeout: how long a parked job waits for a front; 0: none is parked */
        const char *config;       /* --config: the daemon's configuration, for the tenants' network caps */
};

struct privd_net;
struct privd_audit;
struct np_allow;
struct nacore_att;

struct privd {
        const struct privd_conf *conf;
        int fd;                   /* the connected front's socket */
        int sig_fd;               /* signalfd: SIGCHLD, SIGTERM, SIGINT */
        struct uidpool uids;      /* taken by the front (UID_TAKE) */
        struct pjob *jobs;        /* conf->max_jobs slots */
        uint32_t next_gen;
        int cgroup_fd, workspace_fd;
        unsigned cg_have;         /* PRIVD_LIMIT_* the cgroup root offers its children */
        char *profile_env;        /* SBX_PROFILE_PATH=... or NULL */
        uint32_t expect_seq;      /* the next request's sequence number */
        bool hello;               /* HELLO seen */
        struct privd_net *net;    /* NULL: no network (NET_* answer -EOPNOTSUPP) */
        struct privd_audit *audit; /* NULL: no audit (NET_RING and the rest answer -EOPNOTSUPP) */
        struct np_allow *caps;    /* caps.c: the tenants' network_allow entries (--config) */
        size_t n_caps;
        bool caps_loaded;         /* --config given: NET_ALLOW is checked against caps */
};

/* A refusal or failure: one line on stderr naming the request and the
 * reason, at most PRIVD_LOG_BURST a second (then one line saying how many
 * were not written). Returns err (negative errno) for the reply. */
int privd_refuse(const struct privd_hdr *h, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void privd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Say how many refusals were not logged, if any. */
void privd_log_flush(void);

/* jobs.c: the state machine. Each checks the request and returns 0 or a
 * negative errno (already logged); ret_fds are descriptors for the reply,
 * owned by the caller, -1 where none. */
int privd_setup(struct privd *p, const struct privd_conf *conf);
int privd_uid_take(struct privd *p, const struct privd_hdr *h, uint32_t *ret_uid);
int privd_uid_release(struct privd *p, const struct privd_uid *m);
int privd_job_open(struct privd *p, const struct privd_job_open *m, struct privd_reply *rep, int ret_fds[2]);
int privd_job_term(struct privd *p, const struct privd_job *m);
int privd_job_wait(struct privd *p, const struct privd_job *m, struct privd_reply *rep);
int privd_job_kill(struct privd *p, const struct privd_job *m);
int privd_job_close(struct privd *p, const struct privd_job *m);
int privd_ws_handover(struct privd *p, const struct privd_job *m);
int privd_ws_reclaim(struct privd *p, const struct privd_job *m);
/* fds: the received descriptors, in the order of m->fds' bits; taken. */
int privd_spawn(struct privd *p, const struct privd_spawn *m, int *fds, unsigned n_fds, struct privd_reply *rep, int *ret_pidfd);
/* The front is gone: kill and close every job; with park (a listening
 * helper that waits for the next front), a spawned job whose SPAWN asked
 * PRIVD_SPAWN_OUTLIVE, whose launcher runs and which has no network or
 * audit is parked instead (privd-abi.h). */
void privd_close_all(struct privd *p, bool park);
/* JOB_ADOPT: fds are the launcher's pidfd, the cgroup and the workspace. */
int privd_job_adopt(struct privd *p, const struct privd_job_adopt *m, struct privd_reply *rep, int ret_fds[3]);
/* Milliseconds until the next parked job's deadline, or -1 (a poll timeout). */
int privd_park_timeout(const struct privd *p);
/* Close the parked jobs whose deadline has passed. */
void privd_park_expire(struct privd *p);
/* Reap exited launchers (SIGCHLD). */
void privd_reap(struct privd *p);

/* caps.c: read the tenants' network caps from the daemon's configuration
 * (--config); privd_caps_admit: does one of them hold this NET_ALLOW rule
 * (always, without --config)? */
int privd_caps_load(struct privd *p, const char *path, char *why, size_t len);
bool privd_caps_admit(const struct privd *p, const uint8_t addr[16], unsigned prefix, unsigned proto, uint16_t lo, uint16_t hi);

/* The job a handle names, or NULL (refused and logged, *ret_err set). */
struct pjob *privd_job_lookup(struct privd *p, const struct privd_hdr *h, struct privd_handle hd, int *ret_err);
const char *privd_job_state_name(enum pjob_state s);

/* net.c: the jobs' veths, from the helper's own pool. privd_net_setup
 * (at start, when conf->net_pool_prefix is set): put back what an earlier
 * helper's record says, remove its veths, plan and switch forwarding, make
 * the nft tables; fails changing nothing. privd_net_teardown: undo it all
 * (the front went away). */
int privd_net_setup(struct privd *p, char *ret_msg, size_t len);
void privd_net_teardown(struct privd *p);
/* Blocks of the pool, 0 without a network. */
uint32_t privd_net_slots(const struct privd *p);
int privd_net_open(struct privd *p, const struct privd_net_open *m, struct privd_net_reply *rep, int ret_fds[3]);
int privd_net_close(struct privd *p, const struct privd_job *m);
/* The job is closing: its block goes back to the pool (its veth goes
 * with its network namespace). */
void privd_net_job_end(struct privd *p, struct pjob *j);

/* audit.c: the network audit. privd_audit_setup (at start, with
 * conf->audit_ring): load the programs and fill the deny map with the
 * helper's own set; fails changing nothing. Each request below is
 * checked against the job's state and the helper's own bounds. */
int privd_audit_setup(struct privd *p, char *ret_msg, size_t len);
void privd_audit_teardown(struct privd *p);
/* The front hung up, its jobs closed: NET_RING may be answered again. */
void privd_audit_front_gone(struct privd *p);
int privd_net_ring(struct privd *p, const struct privd_hdr *h, struct privd_reply *rep, int *ret_fd);
int privd_net_audit(struct privd *p, const struct privd_net_audit *m);
int privd_net_allow(struct privd *p, const struct privd_net_allow *m);
int privd_net_deny(struct privd *p, const struct privd_net_deny *m);
/* HOST_ADDR: one of the host's addresses (getifaddrs(3) at index 0). */
int privd_host_addr(const struct privd_host_addr *m, struct privd_reply *rep);
int privd_net_unaudit(struct privd *p, const struct privd_job *m, struct privd_audit_reply *rep);
/* The job is closing: its programs and map entries go. */
void privd_audit_job_end(struct privd *p, struct pjob *j);

/* serve.c: read, check and answer requests until the front hangs up
 * (0) or SIGTERM or SIGINT comes (-ECANCELED). A second front connecting
 * to conf->listen_fd meanwhile is refused. */
int privd_serve(struct privd *p);
/* Block SIGCHLD, SIGTERM and SIGINT and read them from p->sig_fd. */
int privd_signals(struct privd *p);
/* Read p->sig_fd: reap what exited; -ECANCELED for SIGTERM or SIGINT. */
int privd_signal_read(struct privd *p);

/* listen.c: listening mode. The socket of --socket PATH (made here, mode
 * 0660, group the front's) or --listen N (handed over, by systemd). */
int privd_listen_open(struct privd_conf *c, char *why, size_t why_len);
/* The next front: a connection whose SO_PEERCRED uid is the front's;
 * any other is refused and logged. -ECANCELED on SIGTERM or SIGINT. */
int privd_accept(struct privd *p);
/* A connection while a front is served: accepted, logged, closed. */
void privd_refuse_second(struct privd *p);
/* When the helper sits in the cgroup it is given (systemd's Delegate=yes
 * of its own unit), it moves into the leaf DIR/sbx-privd: a cgroup with
 * processes can give its children no controllers. */
int privd_cgroup_leaf(int cgroup_fd);
/* --cgroup self: the cgroup2 directory the helper is in (its unit's,
 * with Delegate=yes). */
int privd_cgroup_self(char *buf, size_t len);
