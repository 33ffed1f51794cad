/* SPDX-License-Identifier: Apache-2.0 */
/* What session.c and session-files.c share: a session as the daemon holds
 * it, and the one way to ask its agent something. Not for other folders. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/un.h>

#include "initc.h"
#include "loop.h"
#include "session.h"
#include "util.h"

enum session_state {
        S_STARTING, /* the box is queued or starting */
        S_READY,    /* its agent said READY */
        S_ENDING,   /* asked to end, or its agent failed */
};

struct exec_ref {
        struct list link;       /* in session.execs */
        struct rjob *rj;
        struct session *s;
        uint32_t handle;        /* the agent's; 0 before SPAWN answered */
        bool ended;             /* its end was reported to the capture */
        int stdin_fd;           /* its stdin kept open (stdin_open) for session.stdin, or -1 */
        int tty_fd;             /* tty: its terminal's master, for session.resize, or -1 */
};

struct session {
        struct list link;
        struct sessions *ss;
        char id[PROTO_SESSION_ID_LEN + 1];
        const struct tenant *tenant;
        char tenant_name[64];
        struct rjob *box;       /* NULL once it ended */
        enum session_state state;
        struct initc ic;        /* fd -1 until connected */
        struct source ic_src;
        int idle_fd;
        struct source idle_src;
        uint64_t idle_ms;
        uint64_t created_ms;    /* real */
        uint64_t ended_ms;
        const char *end_reason;
        struct list execs;      /* struct exec_ref.link */
        unsigned n_execs;
        /* ports exposed through the service proxy, and their token */
        uint16_t exposed[SESSION_PORTS_MAX];
        unsigned n_exposed;
        char token[SESSION_TOKEN_LEN + 1]; /* "" until the first expose */
        /* EXIT events that came during a call, handled after it */
        struct sbx_init_exit held[16];
        unsigned n_held;
        bool in_call;
        /* Of its tenant's warm pool (session-warm.c): made by the daemon,
         * not a caller; taken by the one job it runs, then it ends. */
        bool warm;
        bool taken;             /* ... or ended on purpose before its use */
        bool was_ready;         /* its agent said READY once */
};

/* bytes random bytes as 2 * bytes lowercase hex digits and a NUL (ids,
 * tokens); bytes at most 64. */
void session_random_hex(char *out, size_t bytes);
/* A live session around box: with a new id (id NULL) or the one it had
 * before a restart; its idle timer made, not armed. NULL with err set. */
struct session *session_alloc(struct sessions *ss, struct rjob *box, const char *id, uint64_t idle_ms, struct sbx_error *err);
/* Connect to its agent (listening at STATE/sessions/ID); READY follows on
 * the loop. A failure ends the session. */
void session_connect(struct session *s);
void sock_path(const struct sessions *ss, const char *id, struct sockaddr_un *sa);
/* rj becomes an exec of s (its session fields set), not yet listed in s
 * or started; NULL when out of memory. */
struct exec_ref *exec_attach(struct session *s, struct rjob *rj);
/* Start an attached exec through the agent; -errno with err set. */
int exec_spawn(struct session *s, struct exec_ref *x, const struct request *req, struct sbx_error *err);
/* Stop the idle timer (a warm sandbox taken: its job's timeout rules). */
void session_idle_stop(struct session *s);
/* Close an exec's kept stdin (its command sees the end of it). */
void exec_stdin_close(struct exec_ref *x);
/* It ended: out of the live list, its socket's file gone, remembered for
 * E_SESSION_ENDED (the newest GONE_MAX). */
void session_forget(struct session *s);
/* End it: its sandbox is stopped, and its record says reason (a static
 * string: "policy"...). */
void session_end(struct session *s, const char *reason);
/* Its agent answered again after a restart: the execs the restart
 * interrupted (box->session_orphans) are killed (session-adopt.c). */
void session_stop_orphans(struct session *s);

/* The reply of the last agent_call (its descriptors are the caller's to
 * take or leave for initc_msg_clear). */
extern struct initc_msg msg_call;

/* One request to the agent and its reply (msg_call), within the deadline.
 * A transport failure ends the session (-ESHUTDOWN). The agent's own
 * answer: 0 or a positive errno in msg_call.hdr.error. */
int agent_call(struct session *s, uint32_t type, const void *payload, size_t len);
