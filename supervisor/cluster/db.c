/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db-internal.h"
#include "db.h"
#include "log.h"
#include "util.h"

#define BACKOFF_MIN_MS 1000
/* pg_advisory_xact_lock keys: schema changes, and claims (one claim at a
 * time across the cluster, so that each tenant's running jobs are counted
 * exactly). */
#define LOCK_SCHEMA 0x5b780001
#define LOCK_CLAIM 0x5b780002

/* Version n+1 from version n. Applied in one transaction each. */
static const char *const migrations[CDB_SCHEMA_VERSION] = {
        "CREATE TABLE sbx_jobs ("
        " id text PRIMARY KEY,"
        " seq bigserial NOT NULL UNIQUE,"
        " tenant text NOT NULL,"
        " idem_key text,"
        " digest text NOT NULL,"
        " accept text NOT NULL,"
        " retries integer NOT NULL DEFAULT 0,"
        " state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done')),"
        " attempt integer NOT NULL DEFAULT 0,"
        " node text,"
        " lease_until timestamptz,"
        " cancel boolean NOT NULL DEFAULT false,"
        " created timestamptz NOT NULL DEFAULT now(),"
        " claimed timestamptz,"
        " ended timestamptz,"
        " outcome text,"
        " exit_code integer,"
        " record text,"
        " stdout bytea,"
        " stderr bytea,"
        " UNIQUE (tenant, idem_key));"
        "CREATE INDEX sbx_jobs_queued ON sbx_jobs (seq) WHERE state = 'queued';"
        "CREATE INDEX sbx_jobs_running ON sbx_jobs (node, tenant) WHERE state = 'running';"
        "CREATE INDEX sbx_jobs_lease ON sbx_jobs (lease_until) WHERE state = 'running';"
        "CREATE INDEX sbx_jobs_tenant ON sbx_jobs (tenant, seq);"
        "CREATE INDEX sbx_jobs_ended ON sbx_jobs (ended) WHERE state = 'done';"
        "CREATE TABLE sbx_nodes ("
        " name text PRIMARY KEY,"
        " role text NOT NULL,"
        " max_jobs integer NOT NULL,"
        " running integer NOT NULL DEFAULT 0,"
        " draining boolean NOT NULL DEFAULT false,"
        " started timestamptz NOT NULL DEFAULT now(),"
        " seen timestamptz NOT NULL DEFAULT now());"
        "CREATE TABLE sbx_tenants (name text PRIMARY KEY, max_jobs integer NOT NULL);",
        /* 2: callbacks that outlive the node that ran their job, and
         * where each node's HTTP API is */
        "ALTER TABLE sbx_nodes ADD COLUMN api_url text;"
        "CREATE TABLE sbx_callbacks ("
        " job text PRIMARY KEY REFERENCES sbx_jobs (id) ON DELETE CASCADE,"
        " node text NOT NULL,"
        " taken_from text,"
        " state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead', 'dropped')),"
        " entry text NOT NULL,"
        " updated timestamptz NOT NULL DEFAULT now());"
        "CREATE INDEX sbx_callbacks_pending ON sbx_callbacks (node) WHERE state = 'pending';"
        "CREATE INDEX sbx_callbacks_taken ON sbx_callbacks (taken_from) WHERE taken_from IS NOT NULL;",
        /* 3: where each session lives, for requests through other nodes */
        "CREATE TABLE sbx_sessions ("
        " id text PRIMARY KEY,"
        " tenant text NOT NULL,"
        " node text NOT NULL,"
        " created timestamptz NOT NULL DEFAULT now(),"
        " ended timestamptz,"
        " why text);"
        "CREATE INDEX sbx_sessions_ended ON sbx_sessions (ended) WHERE ended IS NOT NULL;",
};

void cdb_init(struct cdb *db, const char *conninfo, const char *node, unsigned timeout_ms, unsigned backoff_max_ms) {
        memset(db, 0, sizeof(*db));
        db->backoff_max_ms = backoff_max_ms > BACKOFF_MIN_MS ? backoff_max_ms : BACKOFF_MIN_MS;
        db->conninfo = conninfo;
        db->node = node;
        db->timeout_ms = timeout_ms ? timeout_ms : 5000;
        db->listen = true;
        snprintf(db->err, sizeof(db->err), "not connected yet");
}

static void drop(struct cdb *db, const char *why) {
        if (why)
                snprintf(db->err, sizeof(db->err), "%s", why);
        if (db->pg) {
                log_warning("cluster: the database is unreachable: %s", db->err);
                PQfinish(PG(db));
                db->pg = NULL;
        }
        db->n_prepared = 0;
        db->claim_prepared = false;
        db->backoff_ms = db->backoff_ms ? (db->backoff_ms * 2 < db->backoff_max_ms ? db->backoff_ms * 2 : db->backoff_max_ms)
                                        : BACKOFF_MIN_MS;
        db->retry_at_ms = now_mono_ms() + db->backoff_ms;
}

void cdb_close(struct cdb *db) {
        if (db->pg)
                PQfinish(PG(db));
        db->pg = NULL;
}

bool cdb_up(const struct cdb *db) {
        return db->pg != NULL;
}

int cdb_fd(const struct cdb *db) {
        return db->pg ? PQsocket(PG(db)) : -1;
}

/* Wait until the socket is ready for what libpq wants, or the deadline. */
static int wait_fd(int fd, bool out, uint64_t deadline) {
        uint64_t now = now_mono_ms();
        if (now >= deadline)
                return -ETIMEDOUT;
        struct pollfd p = { .fd = fd, .events = out ? POLLOUT : POLLIN };
        int r = poll(&p, 1, (int) (deadline - now));
        if (r < 0)
                return errno == EINTR ? 0 : -errno;
        return r == 0 ? -ETIMEDOUT : 0;
}

static PGresult *collect(struct cdb *db, uint64_t deadline);

/* The name of sql's prepared statement on this connection, prepared now
 * if it is not yet: each statement is parsed and planned once per
 * connection (the session plans generically: cdb_ensure), not at every
 * call. NULL: it is run unprepared (no room), or the connection failed
 * (db->pg NULL). */
static const char *prepared(struct cdb *db, const char *sql, char name[static 16], uint64_t deadline) {
        size_t i;
        for (i = 0; i < db->n_prepared; i++)
                if (db->prepared[i] == sql)
                        break;
        if (i == CDB_PREPARED_MAX)
                return NULL;
        snprintf(name, 16, "sbx%zu", i);
        if (i < db->n_prepared)
                return name;
        PGconn *c = PG(db);
        if (!PQsendPrepare(c, name, sql, 0, NULL)) {
                drop(db, PQerrorMessage(c));
                return NULL;
        }
        PGresult *r = collect(db, deadline);
        if (!r)
                return NULL;
        bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (!ok)
                return NULL; /* run unprepared: its own error says what is wrong */
        db->prepared[db->n_prepared++] = sql;
        return name;
}

/* Send one statement and wait for its last result, within the deadline.
 * NULL: the connection failed (dropped; db->err says why). A result with
 * an error status is returned for the caller to look at. Statements with
 * parameters (n >= 0) are prepared once per connection: sql is a string
 * that lives as long as the daemon (a literal), known by its address. */
PGresult *pg_run(struct cdb *db, const char *sql, int n, const char *const *vals, const int *lens, const int *fmts) {
        PGconn *c = PG(db);
        if (!c)
                return NULL;
        uint64_t deadline = now_mono_ms() + db->timeout_ms;
        char name[16];
        const char *p = n >= 0 ? prepared(db, sql, name, deadline) : NULL;
        if (!db->pg)
                return NULL;
        int ok = n < 0   ? PQsendQuery(c, sql)
                 : p     ? PQsendQueryPrepared(c, p, n, vals, lens, fmts, 0)
                         : PQsendQueryParams(c, sql, n, NULL, vals, lens, fmts, 0);
        if (!ok) {
                drop(db, PQerrorMessage(c));
                return NULL;
        }
        return collect(db, deadline);
}

/* The statement's results: the one that matters (pg_run()), or NULL when
 * the connection failed. */
static PGresult *collect(struct cdb *db, uint64_t deadline) {
        PGconn *c = PG(db);
        /* Of several statements' results: the first that failed, else the
         * last with rows, else the last. */
        PGresult *last = NULL, *r;
        for (;;) {
                int f;
                while ((f = PQflush(c)) != 0 || PQisBusy(c)) {
                        int w = f < 0 ? -EIO : wait_fd(PQsocket(c), f > 0, deadline);
                        if (w < 0 || !PQconsumeInput(c)) {
                                PQclear(last);
                                drop(db, w == -ETIMEDOUT ? "no answer within the statement deadline" : PQerrorMessage(c));
                                return NULL;
                        }
                }
                if (!(r = PQgetResult(c)))
                        break;
                ExecStatusType kept = last ? PQresultStatus(last) : PGRES_EMPTY_QUERY;
                if (last && (kept == PGRES_FATAL_ERROR || (kept == PGRES_TUPLES_OK && PQresultStatus(r) == PGRES_COMMAND_OK))) {
                        PQclear(r);
                        continue;
                }
                PQclear(last);
                last = r;
        }
        if (!last || PQstatus(c) != CONNECTION_OK) {
                PQclear(last);
                drop(db, PQerrorMessage(c));
                return NULL;
        }
        ExecStatusType st = PQresultStatus(last);
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
                /* the server's message itself, without its context */
                const char *m = PQresultErrorField(last, PG_DIAG_MESSAGE_PRIMARY);
                snprintf(db->err, sizeof(db->err), "%s", m ? m : PQresultErrorMessage(last));
                size_t l = strlen(db->err);
                while (l && db->err[l - 1] == '\n')
                        db->err[--l] = 0;
        }
        return last;
}

/* A statement whose result only has to say it worked: 0, -EAGAIN (the
 * connection failed), -EIO (the statement failed; logged). */
int pg_verdict(struct cdb *db, PGresult *r, const char *what) {
        if (!r)
                return -EAGAIN;
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
                return 0;
        log_error("cluster: %s: %s", what, db->err);
        PQclear(r);
        return -EIO;
}

int pg_exec0(struct cdb *db, const char *sql, int n, const char *const *vals, const char *what) {
        PGresult *r = pg_run(db, sql, n, vals, NULL, NULL);
        int e = pg_verdict(db, r, what);
        if (e == 0)
                PQclear(r);
        return e;
}

/* A statement whose rows are only counted: how many, or as pg_verdict(). */
int pg_count(struct cdb *db, const char *sql, int n, const char *const *vals, const int *lens, const int *fmts,
                      const char *what) {
        PGresult *r = pg_run(db, sql, n, vals, lens, fmts);
        int e = pg_verdict(db, r, what);
        if (e < 0)
                return e;
        int rows = PQntuples(r);
        PQclear(r);
        return rows;
}

void pg_rollback(struct cdb *db) {
        if (db->pg)
                pg_exec0(db, "ROLLBACK", -1, NULL, "rollback");
}

uint64_t pg_u64(PGresult *r, int row, int col) {
        return PQgetisnull(r, row, col) ? 0 : strtoull(PQgetvalue(r, row, col), NULL, 10);
}

static void quiet(void *arg, const char *msg) {
        (void) arg;
        (void) msg;
}

static int connect_now(struct cdb *db) {
        const char *keys[] = { "dbname", "application_name", NULL };
        const char *vals[] = { db->conninfo, "sbx-supervisord", NULL };
        PGconn *c = PQconnectStartParams(keys, vals, 1);
        if (!c)
                return drop(db, "out of memory"), -EAGAIN;
        uint64_t deadline = now_mono_ms() + db->timeout_ms;
        PostgresPollingStatusType ps = PGRES_POLLING_WRITING;
        while (PQstatus(c) != CONNECTION_BAD && ps != PGRES_POLLING_OK && ps != PGRES_POLLING_FAILED) {
                if (wait_fd(PQsocket(c), ps == PGRES_POLLING_WRITING, deadline) < 0) {
                        snprintf(db->err, sizeof(db->err), "no connection within %u ms", db->timeout_ms);
                        PQfinish(c);
                        drop(db, NULL);
                        return -EAGAIN;
                }
                ps = PQconnectPoll(c);
        }
        if (PQstatus(c) != CONNECTION_OK) {
                snprintf(db->err, sizeof(db->err), "%s", PQerrorMessage(c));
                size_t l = strlen(db->err);
                while (l && db->err[l - 1] == '\n')
                        db->err[--l] = 0;
                PQfinish(c);
                drop(db, NULL);
                return -EAGAIN;
        }
        /* The server's notices (a table that exists already) are not
         * the daemon's to print. */
        PQsetNoticeProcessor(c, quiet, NULL);
        db->pg = (struct pg_conn *) c;
        db->n_prepared = 0;
        db->claim_prepared = false;
        return 0;
}

/* Bring the schema to CDB_SCHEMA_VERSION, or refuse a newer one. */
static int migrate(struct cdb *db) {
        char lock[64];
        snprintf(lock, sizeof(lock), "SELECT pg_advisory_xact_lock(%d)", LOCK_SCHEMA);
        int e = pg_exec0(db, "BEGIN", -1, NULL, "schema");
        if (e == 0)
                e = pg_exec0(db, lock, -1, NULL, "schema lock");
        if (e == 0)
                e = pg_exec0(db, "CREATE TABLE IF NOT EXISTS sbx_schema (version integer NOT NULL)", -1, NULL, "schema table");
        PGresult *r = e == 0 ? pg_run(db, "SELECT coalesce(max(version), 0) FROM sbx_schema", 0, NULL, NULL, NULL) : NULL;
        if (e == 0 && (e = pg_verdict(db, r, "schema version")) == 0) {
                long v = strtol(PQgetvalue(r, 0, 0), NULL, 10);
                PQclear(r);
                if (v > CDB_SCHEMA_VERSION) {
                        pg_rollback(db);
                        snprintf(db->err, sizeof(db->err),
                                 "the database's sbx schema is version %ld, newer than this sbx-supervisord knows (%d): "
                                 "upgrade this node",
                                 v, CDB_SCHEMA_VERSION);
                        return -EPROTO;
                }
                for (long k = v; k < CDB_SCHEMA_VERSION && e == 0; k++) {
                        char set[96];
                        log_notice("cluster: upgrading the database's sbx schema from version %ld to %ld", k, k + 1);
                        e = pg_exec0(db, migrations[k], -1, NULL, "schema migration");
                        snprintf(set, sizeof(set), "DELETE FROM sbx_schema; INSERT INTO sbx_schema VALUES (%ld)", k + 1);
                        if (e == 0)
                                e = pg_exec0(db, set, -1, NULL, "schema version");
                }
        }
        if (e == 0)
                e = pg_exec0(db, "COMMIT", -1, NULL, "schema");
        else
                pg_rollback(db);
        return e;
}

int cdb_ensure(struct cdb *db, uint64_t now_ms) {
        if (db->pg)
                return 0;
        if (now_ms < db->retry_at_ms)
                return -EAGAIN;
        if (connect_now(db) < 0)
                return -EAGAIN;
        int e = migrate(db);
        /* Its statements are planned once (prepared()): for any values. */
        if (e == 0)
                e = pg_exec0(db, "SET plan_cache_mode = force_generic_plan", -1, NULL, "planning");
        if (e == 0 && db->listen)
                e = pg_exec0(db, "LISTEN sbx_queue; LISTEN sbx_done; LISTEN sbx_cancel; LISTEN sbx_drain", -1, NULL, "listen");
        if (e == -EPROTO) {
                PQfinish(PG(db));
                db->pg = NULL;
                return -EPROTO;
        }
        if (e < 0) {
                drop(db, NULL);
                return -EAGAIN;
        }
        if (db->ever_up)
                log_notice("cluster: connected to the database again");
        db->ever_up = true;
        db->backoff_ms = 0;
        db->up_since_ms = now_mono_ms();
        db->gen++;
        __atomic_store_n(&db->backend_pid, PQbackendPID(PG(db)), __ATOMIC_RELAXED);
        return 1;
}

int cdb_notifies(struct cdb *db, bool read, void (*fn)(void *arg, const char *channel, const char *payload), void *arg) {
        PGconn *c = PG(db);
        int k = 0;
        if (!c)
                return 0;
        if (read && !PQconsumeInput(c)) {
                drop(db, PQerrorMessage(c));
                return 0;
        }
        PGnotify *n;
        while ((n = PQnotifies(c))) {
                const char *ch = n->relname;
                /* a job this node's own writer queued: its claim is
                 * asked for when the writer says so (cdb.quiet_pid) */
                if (!strncmp(ch, "sbx_", 4) && !(db->quiet_pid && n->be_pid == db->quiet_pid && streq(ch, "sbx_queue")))
                        fn(arg, ch + 4, n->extra ? n->extra : "");
                PQfreemem(n);
                k++;
        }
        return k;
}

int cdb_set_tenants(struct cdb *db, const char *const *names, const unsigned *max_jobs, size_t n) {
        int e = pg_exec0(db, "BEGIN", -1, NULL, "tenants");
        for (size_t i = 0; i < n && e == 0; i++) {
                char m[16];
                snprintf(m, sizeof(m), "%u", max_jobs[i]);
                const char *v[] = { names[i], m };
                e = pg_exec0(db,
                          "INSERT INTO sbx_tenants (name, max_jobs) VALUES ($1, $2) "
                          "ON CONFLICT (name) DO UPDATE SET max_jobs = excluded.max_jobs",
                          2, v, "tenants");
        }
        if (e == 0)
                return pg_exec0(db, "COMMIT", -1, NULL, "tenants");
        pg_rollback(db);
        return e;
}

void pg_interval(char out[static 32], uint64_t ms) {
        snprintf(out, 32, "%" PRIu64 " milliseconds", ms);
}

int cdb_claim(struct cdb *db, unsigned n, uint64_t lease_ms, const char *const *skip, size_t n_skip, unsigned *left,
              unsigned *runnable, void (*fn)(void *arg, const char *id, const char *accept_json, unsigned attempt), void *arg) {
        if (!db->pg)
                return -EAGAIN;
        /* (letters and digits only: quoted as they are) */
        _cleanup_free_ char *skipped = pg_id_array(skip, n_skip);
        if (!skipped)
                return -ENOMEM;
        /* One round trip: the claim lock, the claim, its commit. Queued
         * jobs in order, each tenant's only while its running ones and
         * those taken before it in this claim stay within its max_jobs;
         * the claim lock makes the count exact, and SKIP LOCKED passes
         * over rows another transaction holds (a cancel). The commit does
         * not wait for the disk: a claim a crash of the database loses
         * leaves the job queued, and the fence (attempt and node) refuses
         * the result of the node that ran it under the lost claim. (The
         * node's name is checked by the configuration and quoted here.) */
        /* The claim itself is planned once per connection (a generic
         * plan: cdb_ensure()), and run within the one round trip. */
        if (!db->claim_prepared) {
                int e = pg_exec0(db,
                                 "PREPARE sbx_claim (text[], integer, text, bigint) AS "
                                 "WITH running AS (SELECT tenant, count(*) AS n FROM sbx_jobs WHERE state = 'running' GROUP BY tenant), "
                                 "cand AS (SELECT id, tenant, seq, row_number() OVER (PARTITION BY tenant ORDER BY seq) AS rn "
                                 "FROM sbx_jobs WHERE state = 'queued' AND NOT (id = ANY ($1))), "
                                 "ok AS (SELECT c.id, c.seq FROM cand c LEFT JOIN running r ON r.tenant = c.tenant "
                                 "LEFT JOIN sbx_tenants t ON t.name = c.tenant "
                                 "WHERE c.rn + coalesce(r.n, 0) <= coalesce(t.max_jobs, 2147483647)), "
                                 "pick AS (SELECT id FROM ok ORDER BY seq LIMIT $2), "
                                 "locked AS (SELECT j.id FROM sbx_jobs j JOIN pick p ON p.id = j.id WHERE j.state = 'queued' "
                                 "FOR UPDATE OF j SKIP LOCKED), "
                                 "up AS (UPDATE sbx_jobs j SET state = 'running', node = $3, attempt = j.attempt + 1, claimed = now(), "
                                 "lease_until = now() + $4 * interval '1 millisecond' FROM locked WHERE j.id = locked.id "
                                 "RETURNING j.id, j.accept, j.attempt) "
                                 "SELECT id, accept, attempt, NULL::bigint FROM up "
                                 "UNION ALL SELECT NULL, NULL, (SELECT count(*) FROM cand), (SELECT count(*) FROM ok)",
                                 -1, NULL, "preparing the claim");
                if (e < 0)
                        return e;
                db->claim_prepared = true;
        }
        char *node = PQescapeLiteral(PG(db), db->node, strlen(db->node));
        if (!node)
                return -ENOMEM;
        char *sql = NULL;
        int k = asprintf(&sql,
                         "BEGIN; SET LOCAL synchronous_commit = off; SELECT pg_advisory_xact_lock(%d); "
                         "EXECUTE sbx_claim ('%s', %u, %s, %" PRIu64 "); COMMIT",
                         LOCK_CLAIM, skipped, n, node, lease_ms);
        PQfreemem(node);
        if (k < 0)
                return -ENOMEM;
        PGresult *r = pg_run(db, sql, -1, NULL, NULL, NULL);
        free(sql);
        int e = pg_verdict(db, r, "claim");
        if (e < 0) {
                pg_rollback(db);
                return e;
        }
        /* committed (else the result would be the failure); the last
         * row counts the queued jobs the claim saw, and those of them
         * within their tenants' limits, those it took among them */
        int rows = PQresultStatus(r) == PGRES_TUPLES_OK ? PQntuples(r) : 0, claimed = 0;
        uint64_t queued = 0, ok = 0;
        for (int i = 0; i < rows; i++) {
                if (PQgetisnull(r, i, 0)) {
                        queued = pg_u64(r, i, 2);
                        ok = pg_u64(r, i, 3);
                        continue;
                }
                fn(arg, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), (unsigned) pg_u64(r, i, 2));
                claimed++;
        }
        PQclear(r);
        *left = queued > (uint64_t) claimed ? (unsigned) (queued - (uint64_t) claimed) : 0;
        *runnable = ok > (uint64_t) claimed ? (unsigned) (ok - (uint64_t) claimed) : 0;
        return claimed;
}

int cdb_heartbeat(struct cdb *db, const char *role, unsigned max_jobs, const char *const *held, size_t n_held, uint64_t lease_ms,
                  const char *api_url, bool *draining) {
        char lease[32], mj[16], rn[16];
        pg_interval(lease, lease_ms);
        snprintf(mj, sizeof(mj), "%u", max_jobs);
        snprintf(rn, sizeof(rn), "%zu", n_held);
        /* By id: a job this node gave back at its start still names it
         * until another node takes it, and must not be renewed. */
        if (n_held) {
                _cleanup_free_ char *ids = pg_id_array(held, n_held);
                if (!ids)
                        return -ENOMEM;
                const char *v[] = { db->node, lease, ids };
                int e = pg_exec0(db,
                                 "UPDATE sbx_jobs SET lease_until = now() + $2::interval WHERE node = $1 AND state = 'running' "
                                 "AND id = ANY ($3::text[])",
                                 3, v, "renewing leases");
                if (e < 0)
                        return e;
        }
        const char *v2[] = { db->node, role, mj, rn, api_url };
        PGresult *r = pg_run(db,
                          "INSERT INTO sbx_nodes (name, role, max_jobs, running, api_url) VALUES ($1, $2, $3, $4, $5) "
                          "ON CONFLICT (name) DO UPDATE SET role = $2, max_jobs = $3, running = $4, api_url = $5, seen = now() "
                          "RETURNING draining",
                          5, v2, NULL, NULL);
        int e = pg_verdict(db, r, "heartbeat");
        if (e < 0)
                return e;
        *draining = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
        PQclear(r);
        return 0;
}

int cdb_expire(struct cdb *db, uint64_t lease_ms, unsigned *requeued,
               void (*fn)(void *arg, const char *id, const char *accept_json, unsigned attempt, const char *was_node), void *arg) {
        char lease[32];
        pg_interval(lease, lease_ms);
        *requeued = 0;
        PGresult *r = pg_run(db,
                          "WITH up AS (UPDATE sbx_jobs SET state = 'queued', node = NULL, lease_until = NULL "
                          "WHERE state = 'running' AND lease_until < now() AND attempt <= retries AND NOT cancel RETURNING id) "
                          "SELECT count(*), pg_notify('sbx_queue', '') FROM up HAVING count(*) > 0",
                          0, NULL, NULL, NULL);
        int e = pg_verdict(db, r, "queueing jobs of expired leases again");
        if (e < 0)
                return e;
        if (PQntuples(r) == 1)
                *requeued = (unsigned) pg_u64(r, 0, 0);
        PQclear(r);
        const char *v[] = { db->node, lease };
        r = pg_run(db,
                "UPDATE sbx_jobs j SET node = $1, lease_until = now() + $2::interval FROM "
                "(SELECT id, node FROM sbx_jobs WHERE state = 'running' AND lease_until < now() ORDER BY lease_until LIMIT 64 "
                "FOR UPDATE SKIP LOCKED) old WHERE j.id = old.id RETURNING j.id, j.accept, j.attempt, old.node",
                2, v, NULL, NULL);
        if ((e = pg_verdict(db, r, "taking jobs of expired leases")) < 0)
                return e;
        for (int i = 0; i < PQntuples(r); i++)
                fn(arg, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), (unsigned) pg_u64(r, i, 2),
                   PQgetisnull(r, i, 3) ? "?" : PQgetvalue(r, i, 3));
        PQclear(r);
        return 0;
}

/* A text[] literal of ids (each a job id: letters and digits only). */
char *pg_id_array(const char *const *ids, size_t n) {
        size_t len = 3;
        for (size_t i = 0; i < n; i++)
                len += strlen(ids[i]) + 1;
        char *s = malloc(len), *p = s;
        if (!s)
                return NULL;
        *p++ = '{';
        for (size_t i = 0; i < n; i++) {
                if (i)
                        *p++ = ',';
                for (const char *q = ids[i]; *q; q++)
                        if ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9'))
                                *p++ = *q;
        }
        *p++ = '}';
        *p = 0;
        return s;
}

int cdb_release_node(struct cdb *db, const char *const *keep, size_t n_keep) {
        _cleanup_free_ char *arr = pg_id_array(keep, n_keep);
        if (!arr)
                return -ENOMEM;
        const char *v[] = { db->node, arr };
        return pg_exec0(db,
                     "UPDATE sbx_jobs SET lease_until = now() - interval '1 second' WHERE node = $1 AND state = 'running' "
                     "AND NOT (id = ANY ($2::text[]))",
                     2, v, "giving back the jobs of before a restart");
}

int cdb_nodes(struct cdb *db, void (*fn)(void *arg, const struct cdb_node *n), void *arg) {
        PGresult *r = pg_run(db,
                          "SELECT name, role, max_jobs, running, draining, extract(epoch FROM now() - seen), "
                          "(extract(epoch FROM started) * 1000)::bigint FROM sbx_nodes ORDER BY name",
                          0, NULL, NULL, NULL);
        int e = pg_verdict(db, r, "listing nodes");
        if (e < 0)
                return e;
        for (int i = 0; i < PQntuples(r); i++) {
                struct cdb_node n = {
                        .name = PQgetvalue(r, i, 0),
                        .role = PQgetvalue(r, i, 1),
                        .max_jobs = (unsigned) pg_u64(r, i, 2),
                        .running = (unsigned) pg_u64(r, i, 3),
                        .draining = PQgetvalue(r, i, 4)[0] == 't',
                        .seen_s = strtod(PQgetvalue(r, i, 5), NULL),
                        .started_ms = pg_u64(r, i, 6),
                };
                fn(arg, &n);
        }
        PQclear(r);
        return 0;
}

int cdb_node_url(struct cdb *db, const char *node, char url[static CDB_URL_MAX]) {
        const char *v[] = { node };
        PGresult *r = pg_run(db, "SELECT api_url FROM sbx_nodes WHERE name = $1 AND api_url IS NOT NULL", 1, v, NULL, NULL);
        int e = pg_verdict(db, r, "a node's address");
        if (e < 0)
                return e;
        e = PQntuples(r) == 1 ? 0 : -ENOENT;
        if (e == 0)
                snprintf(url, CDB_URL_MAX, "%s", PQgetvalue(r, 0, 0));
        PQclear(r);
        return e;
}

int cdb_drain(struct cdb *db, const char *node, bool drain) {
        const char *v[] = { node, drain ? "t" : "f" };
        PGresult *r = pg_run(db,
                          "WITH up AS (UPDATE sbx_nodes SET draining = $2 WHERE name = $1 RETURNING name, draining) "
                          "SELECT name, pg_notify('sbx_drain', name || (CASE WHEN draining THEN ':1' ELSE ':0' END)) FROM up",
                          2, v, NULL, NULL);
        int e = pg_verdict(db, r, "draining a node");
        if (e < 0)
                return e;
        bool found = PQntuples(r) == 1;
        PQclear(r);
        return found ? 0 : -ENOENT;
}

long cdb_prune(struct cdb *db, uint64_t retention_ms) {
        char ret[32];
        pg_interval(ret, retention_ms);
        const char *v[] = { ret };
        PGresult *r = pg_run(db,
                             "WITH s AS (DELETE FROM sbx_sessions WHERE ended < now() - $1::interval) "
                             "DELETE FROM sbx_jobs WHERE state = 'done' AND ended < now() - $1::interval",
                             1, v, NULL, NULL);
        int e = pg_verdict(db, r, "pruning ended jobs");
        if (e < 0)
                return e;
        long n = strtol(PQcmdTuples(r), NULL, 10);
        PQclear(r);
        return n;
}
