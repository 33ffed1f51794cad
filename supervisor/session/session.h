/* SPDX-License-Identifier: Apache-2.0 */
/* Sessions (sbx-protocol(7), SESSIONS): a sandbox that lives across
 * requests. Its sandbox is a job whose command is sbx-init(8) (the box: a
 * uid, cgroup and workspace of its own, the job's limits, its TTL the
 * job's timeout); each command run in it is a job of its own (an exec)
 * that the agent starts, whose output the capture reads and whose record
 * is written like any job's. The daemon speaks to the agent over a socket
 * it connects to by path (STATE/sessions/ID, listening in the agent):
 * every message from it is hostile input (lib/initc.h), and an agent that
 * misbehaves ends its own session only. On the event loop. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "error.h"
#include "jobevents.h"
#include "proto.h"
#include "util.h"

struct daemon;
struct jobs;
struct journal;
struct policy_decision;
struct rjob;
struct scheduler;
struct session;

/* Ports one session may expose at once, and its services' token (hex). */
#define SESSION_PORTS_MAX 8
#define SESSION_TOKEN_LEN 64

struct sessions {
        struct daemon *d;       /* opaque: the jobs are made with it */
        struct jobs *jobs;
        struct journal *journal;
        struct scheduler *sched;
        const struct config *cfg;
        int dir_fd;             /* STATE/sessions */
        int state_fd;           /* STATE: the secrets of its sessions' execs */
        struct list live;       /* struct session.link */
        struct list gone;       /* ended ones, newest last, for E_SESSION_ENDED */
        unsigned n_gone;
};

/* What the job code tells the sessions: the box started (connect to its
 * agent), a box or exec ended. Registered once by the daemon. */
extern const struct job_listener session_listener;

int sessions_init(struct sessions *ss, struct daemon *d, struct jobs *jobs, struct journal *journal, struct scheduler *sched,
                  const struct config *cfg, int state_fd, struct sbx_error *err);
void sessions_done(struct sessions *ss);
/* After recovery: the sessions whose sandboxes outlived the last daemon
 * (job/recover.c found their launchers running) are made again and their
 * agents connected to; sockets of the others are removed. */
void sessions_adopt(struct sessions *ss);
unsigned sessions_count(const struct sessions *ss, const struct tenant *t);
/* After a reload (front/reload.c): each live session goes on under its
 * tenant as cfg has it now, or ends ("policy") when that tenant is gone or
 * no longer allows the session's network mode. What ended is appended to
 * ended (objects "session", "tenant", "why"); the count is returned. A
 * session whose tenant no longer allows services has its ports
 * unexposed, appended to services ("session", "tenant", "ports"): the
 * caller ends their connections. */
unsigned sessions_reloaded(struct sessions *ss, const struct config *cfg, json_t *ended, json_t *services);
/* Does a live session still point at one of old's tenants? */
bool sessions_hold(const struct sessions *ss, const struct config *old);
/* The memory limits of t's live sessions together (bytes); UINT64_MAX
 * when one of them has none. */
uint64_t sessions_memory(const struct sessions *ss, const struct tenant *t);

/* session.create, for its box before it is queued: a new id, the agent's
 * listening socket (the box's session_fd), its idle timeout. */
int session_new(struct sessions *ss, struct rjob *box, uint64_t idle_ms, struct sbx_error *err);
/* The box was refused after session_new: the session never was. */
void session_abandon(struct rjob *box);

/* A live session of tenant t, or NULL with *ret_code (E_NOT_FOUND for an
 * unknown id or another tenant's, E_SESSION_ENDED saying when and why) and
 * msg. Every request that finds one counts as traffic (idle timer). */
struct session *session_find(struct sessions *ss, const struct tenant *t, const char *id, const char **ret_code, char *msg,
                             size_t len);

json_t *session_describe(const struct session *s);
json_t *sessions_list(struct sessions *ss, const struct tenant *t);
void session_close(struct session *s);
/* The TTL from now, at most the tenant's session_ttl_max from its start:
 * the new expiry in *ret_expires_ms (real time). */
int session_extend(struct session *s, uint64_t ttl_ms, uint64_t *ret_expires_ms);

/* session.exec: the exec's job (req's run request taken), started or
 * already ended with why it could not start; NULL with code and msg when
 * it was refused before it became a job. */
struct rjob *session_exec(struct session *s, struct request *req, uid_t caller, const char **ret_code, char *msg, size_t len);
/* session.stdin: data to an exec's stdin kept open (stdin_open), as much
 * as its pipe takes now (*ret_written; 1 MiB in flight at most), closed
 * after it with eof once all went. -ENOENT (not this session's), -ESRCH
 * (ended), -EBADF (not kept open, or closed), -EPIPE (the command closed
 * it). */
int session_stdin(struct session *s, const char *job, const void *data, size_t len, bool eof, size_t *ret_written);
/* session.signal to one of its execs: 0, -ESRCH (not running), -ENOENT
 * (not this session's), or -errno (the agent failed: the session ends). */
int session_signal(struct session *s, const char *job, int signo);
/* session.resize: an exec's terminal (tty) is now rows x cols. 0, -ENOENT
 * (not this session's), -ESRCH (not running), -ENOTTY (no terminal). */
int session_resize(struct session *s, const char *job, uint16_t rows, uint16_t cols);

/* Warm pools (session-warm.c; front/warm.c keeps them). A warm sandbox
 * is a session whose box was marked warm before session_new: it is not
 * counted, listed or found as a caller's session. */
/* Its tenant's warm sandboxes (every tenant's: t NULL) not yet taken nor
 * ending; how many of them are ready in *ret_ready (may be NULL). */
unsigned sessions_warm(const struct sessions *ss, const struct tenant *t, unsigned *ret_ready);
/* A ready one of t's made with the limits of pol (all but the timeout),
 * taken (no longer idle, never given again), or NULL. */
struct session *session_warm_take(struct sessions *ss, const struct tenant *t, const struct policy_decision *pol);
/* rj (accepted; a claimed one journaled already) runs in s as its exec:
 * its uid is the sandbox's, its record says warm. -ENOMEM. */
int session_warm_attach(struct session *s, struct rjob *rj);
/* The job could not be accepted after all: it is no exec of s, and s,
 * taken, ends unused. */
void session_warm_abandon(struct rjob *rj);
/* Journaled and listed: the agent starts it (a failure ends it at once,
 * with why). */
void session_warm_start(struct rjob *rj);
/* End one of t's untaken warm sandboxes (one still starting first; of
 * any tenant's: t NULL), with reason in its record; false when there is
 * none. */
bool sessions_warm_end_one(struct sessions *ss, const struct tenant *t, const char *reason);

/* Services (session-service.c): a port of the sandbox's loopback exposed
 * through the daemon's proxy. expose: 0 (also when it already was), -E2BIG
 * past SESSION_PORTS_MAX; the session's token in *ret_token (made at the
 * first expose, 256 random bits). unexpose: 0 or -ENOENT. */
int session_expose(struct session *s, uint16_t port, const char **ret_token);
int session_unexpose(struct session *s, uint16_t port);
/* After a restart: the ports and token its box's start line journaled. */
void session_restore_service(struct session *s);
/* For the proxy, which authenticates by token, not by tenant: a live,
 * ready session by id, or NULL. */
struct session *session_by_id(struct sessions *ss, const char *id);
bool session_exposes(const struct session *s, uint16_t port);
const char *session_token(const struct session *s);
const char *session_id(const struct session *s);
const struct tenant *session_tenant(const struct session *s);
/* A TCP connection to the exposed port on the sandbox's loopback, made by
 * its agent (CONNECT): its socket, non-blocking, the connect perhaps still
 * in progress, in *ret_fd. -errno (the agent's answer, or ESHUTDOWN: the
 * agent failed and the session ends). */
int session_connect_port(struct session *s, uint16_t port, int *ret_fd);

/* Files beneath its workspace, through the agent. -errno with err set. */
/* put: at offset 0 the file is created or truncated; past 0 it must hold
 * exactly offset bytes (the next piece of an upload, EEXIST otherwise). */
int session_put(struct session *s, const char *path, uint64_t offset, const void *data, size_t len, unsigned mode,
                struct sbx_error *err);
int session_get(struct session *s, const char *path, uint64_t offset, uint64_t max, json_t **ret, struct sbx_error *err);
int session_ls(struct session *s, const char *path, json_t **ret, struct sbx_error *err);
