/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-init, the agent inside a session's sandbox: the parts share the
 * socket to the daemon, the workspace's directory and the process table. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "init-abi.h"
#include "macro.h"

struct proc {
        pid_t pid;         /* 0: free slot */
        uint32_t handle;
};

struct agent {
        int sock;          /* to the daemon; the only way in (-1: between connections) */
        int listen;        /* --listen-fd: where the next connection comes from, or -1 */
        uint32_t connection; /* connections accepted or inherited so far */
        unsigned n_held;   /* EXIT events kept while no one is connected */
        struct sbx_init_exit held[SBX_INIT_PROCS_MAX];
        int workspace;     /* O_PATH directory every path is resolved beneath */
        uint32_t next_handle;
        unsigned n_procs;
        struct proc procs[SBX_INIT_PROCS_MAX];
};

/* A request as received: header checked against the datagram's size. */
struct request {
        struct sbx_init_hdr hdr;
        const char *payload;
        size_t len;
};

/* wire.c. A failure the agent cannot go on after: a message on stderr,
 * exit status 1. */
_noreturn_ void agent_fatal(const char *what, int errnum);

/* Send a reply (error 0) with payload and descriptors; the descriptors are
 * not closed. A failed send ends the connection: without --listen-fd the
 * agent exits, with it the agent waits for the next one. */
void agent_reply(struct agent *a, const struct request *rq, const void *payload, size_t len,
                 const int *fds, unsigned n_fds);
void agent_reply_error(struct agent *a, const struct request *rq, int errnum);
void agent_send(struct agent *a, uint32_t type, uint32_t id, int32_t error, const void *payload,
                size_t len, const int *fds, unsigned n_fds);

/* spawn.c */
void spawn_request(struct agent *a, const struct request *rq);
void signal_request(struct agent *a, const struct request *rq);
/* Reap every ended child; a started one's end is sent as an EXIT event
 * (held, while no one is connected). */
void spawn_reap(struct agent *a);
/* The connection is over (the other end closed it or a send failed). */
void agent_disconnect(struct agent *a);

/* connect.c: CONNECT (a service's port on the sandbox's loopback). */
void connect_request(struct agent *a, const struct request *rq);

/* files.c: each answers the request itself. */
void files_request(struct agent *a, const struct request *rq);
/* Resolve a relative, checked path beneath the workspace and open it with
 * flags (O_CLOEXEC and O_NOFOLLOW are added): a descriptor or -errno. */
int files_open_beneath(struct agent *a, const char *path, int flags, mode_t mode);
/* The NUL-terminated path at p[0..len): checked as sbx-init(8) says. */
int files_check_path(const char *p, size_t len, bool allow_dot);
