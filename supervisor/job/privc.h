/* SPDX-License-Identifier: Apache-2.0 */
/* The front's side of the socket to sbx-privd (lib/privd-abi.h): one
 * request, one reply, in order, each call under a lock so that the event
 * loop and the worker threads can all ask. Every call returns 0 or a
 * negative errno: the helper's refusal (its reason is in its log) or the
 * socket's failure (-EPIPE: the helper is gone, and with it every job). */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "privd-abi.h"

struct privc {
        int fd;                    /* -1: no helper */
        pid_t pid;                 /* the helper, when this process started it */
        uint32_t seq;
        pthread_mutex_t lock;
        uint32_t uid_first, uid_count, max_jobs; /* from its HELLO reply */
        uint32_t limits;                         /* PRIVD_LIMIT_*, from its HELLO reply */
        uint32_t net_slots;        /* blocks of its network pool; 0: no network */
};

static inline bool privc_on(const struct privc *c) {
        return c->fd >= 0;
}

/* HELLO over fd (taken). */
int privc_open(struct privc *c, int fd, pid_t pid, struct sbx_error *err);
void privc_close(struct privc *c);

int privc_uid_take(struct privc *c, uid_t *ret_uid);
int privc_uid_release(struct privc *c, uid_t uid);
/* *m's header is filled in here. */
int privc_job_open(struct privc *c, struct privd_job_open *m, struct privd_handle *ret_job, unsigned *ret_limits,
                   int *ret_cgroup_fd, int *ret_workspace_fd);
int privc_ws_handover(struct privc *c, struct privd_handle job);
int privc_ws_reclaim(struct privc *c, struct privd_handle job);
int privc_job_term(struct privc *c, struct privd_handle job);
int privc_job_kill(struct privc *c, struct privd_handle job);
/* -EAGAIN while the launcher runs. */
int privc_job_wait(struct privc *c, struct privd_handle job, int *ret_status);
int privc_job_close(struct privc *c, struct privd_handle job);
/* fds: one per enum privd_fd, -1 where none; they stay the caller's. */
int privc_spawn(struct privc *c, struct privd_handle job, const int fds[PRIVD_FD_COUNT], uint32_t flags, pid_t *ret_pid,
                int *ret_pidfd);
/* A parked job of the last front (privd-abi.h, JOB_ADOPT): its handle and
 * limits, and the launcher's pidfd, the cgroup and the workspace. */
int privc_job_adopt(struct privc *c, uid_t uid, pid_t pid, struct privd_handle *ret_job, unsigned *ret_limits, int ret_fds[3]);

/* The job's network (NET_OPEN: the launcher's sandbox pid and network
 * namespace inode; the DNS proxy's UDP and TCP sockets and the secrets
 * proxy's TCP socket come back). */
int privc_net_open(struct privc *c, struct privd_handle job, pid_t pid, uint64_t netns_ino, bool v6, struct privd_net_reply *ret,
                   int *ret_dns_fd, int *ret_dns_tcp_fd, int *ret_proxy_fd);
int privc_net_close(struct privc *c, struct privd_handle job);
/* The audit's ring buffer map and its data size, once. */
int privc_net_ring(struct privc *c, int *ret_fd, uint32_t *ret_bytes);
/* *m's header is filled in here. */
int privc_net_audit(struct privc *c, struct privd_net_audit *m);
int privc_net_allow(struct privc *c, struct privd_net_allow *m);
int privc_net_deny(struct privc *c, struct privd_net_deny *m);
/* The host's address at index of the helper's list (index 0 reads it
 * afresh) and the list's length; -ENOENT past its end. */
int privc_host_addr(struct privc *c, uint32_t index, uint8_t ret_addr[16], uint32_t *ret_count);
int privc_net_unaudit(struct privc *c, struct privd_handle job, uint64_t *ret_lost, uint64_t *ret_dropped);
