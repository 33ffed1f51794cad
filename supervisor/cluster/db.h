/* SPDX-License-Identifier: Apache-2.0 */
/* Cluster mode's database (sbx-supervisord(8) RUNNING MANY NODES): the
 * jobs, their leases and results, and the nodes, in PostgreSQL through
 * libpq. Knows nothing of the daemon: each call takes and gives plain
 * values, and the daemon's glue (front/cluster-ops.c) turns them into jobs.
 *
 * Every statement runs on the calling thread (the event loop) with a
 * deadline (db->timeout_ms): a server that stops answering costs the loop
 * at most that long, after which the connection is dropped, the database
 * counts as down, and cdb_ensure() connects again with a backoff (1 s
 * doubling up to backoff_max_ms). Notifications (LISTEN sbx_queue, sbx_done,
 * sbx_cancel, sbx_drain) arrive on cdb_fd(); cdb_notifies() hands them over. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CDB_SCHEMA_VERSION 3
#define CDB_NODE_MAX 64
#define CDB_URL_MAX 272
#define CDB_PREPARED_MAX 48

struct pg_conn;

struct cdb {
        struct pg_conn *pg;      /* NULL: not connected */
        const char *conninfo;    /* the configuration's; not owned */
        const char *node;        /* this node's name; not owned */
        unsigned timeout_ms;     /* each statement's deadline */
        uint64_t retry_at_ms;    /* monotonic: the next connection attempt */
        unsigned backoff_ms, backoff_max_ms;
        uint64_t up_since_ms;    /* monotonic: when the connection was made */
        unsigned gen;            /* connections made so far: which one cdb_fd() is of */
        bool ever_up;
        bool listen;             /* its connections listen (cdb_notifies); cdb_init: yes */
        const char *prepared[CDB_PREPARED_MAX]; /* the connection's prepared statements (db.c) */
        size_t n_prepared;
        bool claim_prepared;
        int backend_pid;         /* the server's process of the connection (read from any thread) */
        int quiet_pid;           /* "queue" notifications of this server process are not passed on */
        char err[256];           /* why it is down, or the last statement's error */
};

void cdb_init(struct cdb *db, const char *conninfo, const char *node, unsigned timeout_ms, unsigned backoff_max_ms);
void cdb_close(struct cdb *db);
/* Connected (and the schema current)? Connects when it is time to try
 * again: 1 just connected, 0 up, -EAGAIN down (db->err says why), -EPROTO
 * the database's schema is newer than this daemon knows (never usable). */
int cdb_ensure(struct cdb *db, uint64_t now_ms);
bool cdb_up(const struct cdb *db);
/* The connection's socket for the event loop (notifications), or -1. */
int cdb_fd(const struct cdb *db);

/* Notifications received: channel "queue" (a job was queued), "done"
 * (payload: the job id), "cancel" (payload: the job id), "drain"
 * (payload: NODE:1 or NODE:0, as cdb_drain() set it). fn is called for
 * each. With read, what is waiting on the socket is read first; without,
 * only those that came in with the answers to statements (which leave
 * the socket with nothing to read: look after each). How many there were. */
int cdb_notifies(struct cdb *db, bool read, void (*fn)(void *arg, const char *channel, const char *payload), void *arg);

/* A new job row. 0: inserted; 1: the tenant already has a job with this
 * key (*dup_id, *dup_digest and *dup_state filled); -EAGAIN: the database
 * is down. */
struct cdb_dup {
        char id[24];
        char digest[65];
        char state[16];
};
int cdb_insert_job(struct cdb *db, const char *id, const char *tenant, const char *key, const char *digest,
                   const char *accept_json, unsigned retries, struct cdb_dup *dup);

/* The tenants' job limits, counted across all nodes by the claim. */
int cdb_set_tenants(struct cdb *db, const char *const *names, const unsigned *max_jobs, size_t n);

/* Claim up to n queued jobs for this node (state running, attempt + 1, a
 * lease of lease_ms), within every tenant's max_jobs counted over the
 * cluster, but none of the skip ids (n_skip of them). fn gets each job's
 * accept record (JSON text) and attempt. The number claimed, or -EAGAIN;
 * *left: the queued jobs it saw and did not take (their tenants' limits,
 * or n); *runnable: those of them that their tenants' limits let run
 * (a larger n would have taken them). */
int cdb_claim(struct cdb *db, unsigned n, uint64_t lease_ms, const char *const *skip, size_t n_skip, unsigned *left,
              unsigned *runnable,
              void (*fn)(void *arg, const char *id, const char *accept_json, unsigned attempt), void *arg);

/* Renew the leases of the jobs this node holds (held, n_held of them:
 * never one it gave back, which stays to expire) and its heartbeat row
 * (role, max_jobs, running, and api_url: where its HTTP API is, or
 * NULL); *draining: whether the node is told to drain. */
int cdb_heartbeat(struct cdb *db, const char *role, unsigned max_jobs, const char *const *held, size_t n_held, uint64_t lease_ms,
                  const char *api_url, bool *draining);
/* Jobs whose leases expired: those with retries left are queued again
 * (*requeued of them); the others (at most 64 a call) are taken by this
 * node to be recorded as interrupted: fn gets each with its accept
 * record, attempt and the node that held it. */
int cdb_expire(struct cdb *db, uint64_t lease_ms, unsigned *requeued,
               void (*fn)(void *arg, const char *id, const char *accept_json, unsigned attempt, const char *was_node), void *arg);
/* This node's leases end now except those of the keep jobs: it restarted,
 * and nothing it ran before goes on. */
int cdb_release_node(struct cdb *db, const char *const *keep, size_t n_keep);

/* The job's result, fenced: written only while this node holds the job
 * at this attempt. 0 written (or written before by this node at this
 * attempt), -ESTALE the lease was lost (another node took the job), or
 * -EAGAIN. out/err: the start of its output (may be NULL). cb_entry: its
 * callback's outbox entry (cb_len bytes of JSON text) or NULL, written in
 * the same transaction, pending for this node. */
int cdb_finish(struct cdb *db, const char *id, unsigned attempt, const char *record_json, const char *state, int exit_code,
               const char *out, size_t out_len, const char *err, size_t err_len, const char *cb_entry, size_t cb_len);

/* Callbacks (db-callbacks.c). Each job's is delivered by one node at a
 * time: the one that ran it, or one that took it over when that node's
 * heartbeat stopped for a lease. */
/* Their states as this node's deliveries settled: jobs[i] is now
 * states[i] (delivered, dead, dropped, or pending again). Rows another
 * node took over are left alone. */
int cdb_cb_settle(struct cdb *db, const char *const *jobs, const char *const *states, size_t n);
/* Take up to limit pending callbacks of nodes whose heartbeat is older
 * than lease_ms: fn gets each with the node it was taken from and its
 * outbox entry. */
int cdb_cb_adopt(struct cdb *db, uint64_t lease_ms, unsigned limit,
                 void (*fn)(void *arg, const char *job, const char *was_node, const char *entry), void *arg);
/* Those taken from this node while it was away: fn gets each with the
 * node that took it (then they are not reported again). */
int cdb_cb_taken(struct cdb *db, void (*fn)(void *arg, const char *job, const char *by), void *arg);
/* A job's callback as the database has it: *state (pending, delivered,
 * dead, dropped) and *node (who delivers it). -ENOENT: none. */
int cdb_cb_state(struct cdb *db, const char *job, char state[static 16], char node[static CDB_NODE_MAX]);

/* One job as the database has it (cdb_job_free() it). */
struct cdb_job {
        char id[24];
        char *tenant;
        char state[16];          /* queued, running, done */
        char node[CDB_NODE_MAX]; /* "" when none */
        unsigned attempt;
        bool cancel;
        char *accept;            /* JSON text */
        char *record;            /* JSON text, or NULL until done */
        char *out, *err;         /* the start of its output (done jobs), or NULL */
        size_t out_len, err_len;
        uint64_t created_ms, ended_ms;
        int exit_code;           /* cdb_list()'s, -1: none */
};
void cdb_job_free(struct cdb_job *j);
/* 0 found, -ENOENT, -EAGAIN. */
int cdb_get(struct cdb *db, const char *id, struct cdb_job *ret);
/* Which of these jobs are done (fn for each). */
int cdb_done_among(struct cdb *db, const char *const *ids, size_t n, void (*fn)(void *arg, const char *id), void *arg);
/* The tenant's jobs, newest first (fn for each; its record NULL). */
int cdb_list(struct cdb *db, const char *tenant, unsigned limit, void (*fn)(void *arg, const struct cdb_job *j), void *arg);
/* Ask the node running a job to cancel it (and tell it). A queued job is
 * taken by this node instead (*took, with its accept and attempt in ret),
 * to be recorded as cancelled. -ENOENT when it is done or not there. */
int cdb_cancel(struct cdb *db, const char *id, uint64_t lease_ms, bool *took, struct cdb_job *ret);

/* The nodes (fn for each): name, role, max_jobs, running, draining,
 * seconds since its heartbeat, and its start (ms since the epoch). */
struct cdb_node {
        const char *name, *role;
        unsigned max_jobs, running;
        bool draining;
        double seen_s;
        uint64_t started_ms;
};
int cdb_nodes(struct cdb *db, void (*fn)(void *arg, const struct cdb_node *n), void *arg);
/* Where a node's HTTP API is, as it advertises it. -ENOENT: it says
 * nothing (or there is no such node). */
int cdb_node_url(struct cdb *db, const char *node, char url[static CDB_URL_MAX]);
/* Mark a node draining (or not), and tell it. -ENOENT: no such node. */
int cdb_drain(struct cdb *db, const char *node, bool drain);
/* Sessions (db-sessions.c): each lives on the node that created it, and
 * its row says which, so that other nodes send its requests there. */
/* This node's new session; its end (why: closed, ttl, idle, ...). */
int cdb_session_add(struct cdb *db, const char *id, const char *tenant);
int cdb_session_end(struct cdb *db, const char *id, const char *why);
/* Where the tenant's session is: *node, and when it ended (*ended_ms 0:
 * it has not) and why. -ENOENT: no such session of the tenant. */
int cdb_session_where(struct cdb *db, const char *id, const char *tenant, char node[static CDB_NODE_MAX], uint64_t *ended_ms,
                      char why[static 32]);

/* Delete done jobs, and ended sessions' rows, that ended more than
 * retention_ms ago; how many jobs. */
long cdb_prune(struct cdb *db, uint64_t retention_ms);
