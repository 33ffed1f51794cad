/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db-internal.h"
#include "db.h"
#include "log.h"
#include "util.h"

/* The job rows (cluster/db.h): queued by the accepting node, ended by the
 * node that holds them, read by any. */

int cdb_insert_job(struct cdb *db, const char *id, const char *tenant, const char *key, const char *digest,
                   const char *accept_json, unsigned retries, struct cdb_dup *dup) {
        char rs[16];
        snprintf(rs, sizeof(rs), "%u", retries);
        const char *v[] = { id, tenant, key, digest, accept_json, rs };
        int rows = pg_count(db,
                              "WITH ins AS (INSERT INTO sbx_jobs (id, tenant, idem_key, digest, accept, retries) "
                              "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant, idem_key) DO NOTHING RETURNING id) "
                              "SELECT id, pg_notify('sbx_queue', '') FROM ins",
                              6, v, NULL, NULL, "queueing a job");
        if (rows != 0)
                return rows < 0 ? rows : 0;
        if (!key)
                return log_error("cluster: job %s was not inserted", id), -EIO;
        const char *v2[] = { tenant, key };
        PGresult *r = pg_run(db, "SELECT id, digest, state FROM sbx_jobs WHERE tenant = $1 AND idem_key = $2", 2, v2, NULL, NULL);
        int e = pg_verdict(db, r, "idempotency key");
        if (e < 0)
                return e;
        if (PQntuples(r) != 1) {
                PQclear(r);
                return -EAGAIN; /* pruned between the two statements: try again */
        }
        snprintf(dup->id, sizeof(dup->id), "%s", PQgetvalue(r, 0, 0));
        snprintf(dup->digest, sizeof(dup->digest), "%s", PQgetvalue(r, 0, 1));
        snprintf(dup->state, sizeof(dup->state), "%s", PQgetvalue(r, 0, 2));
        PQclear(r);
        return 1;
}

int cdb_finish(struct cdb *db, const char *id, unsigned attempt, const char *record_json, const char *state, int exit_code,
               const char *out, size_t out_len, const char *err, size_t err_len, const char *cb_entry, size_t cb_len) {
        char at[16], ec[16];
        snprintf(at, sizeof(at), "%u", attempt);
        snprintf(ec, sizeof(ec), "%d", exit_code);
        const char *v[] = { id, at, db->node, record_json, state, exit_code >= 0 ? ec : NULL, out ? out : "", err ? err : "",
                            cb_entry };
        /* the entry is not NUL-terminated: as bytes, which text's binary form is */
        int lens[] = { 0, 0, 0, 0, 0, 0, (int) (out ? out_len : 0), (int) (err ? err_len : 0), (int) cb_len };
        int fmts[] = { 0, 0, 0, 0, 0, 0, 1, 1, 1 };
        int rows = pg_count(db,
                              "WITH up AS (UPDATE sbx_jobs SET state = 'done', ended = now(), lease_until = NULL, record = $4, "
                              "outcome = $5, exit_code = $6, stdout = $7, stderr = $8 "
                              "WHERE id = $1 AND attempt = $2 AND node = $3 AND state = 'running' RETURNING id), "
                              "cb AS (INSERT INTO sbx_callbacks (job, node, entry) SELECT id, $3, $9 FROM up "
                              "WHERE $9::text IS NOT NULL ON CONFLICT (job) DO NOTHING) "
                              "SELECT id, pg_notify('sbx_done', id) FROM up",
                              9, v, lens, fmts, "writing a result");
        if (rows != 0)
                return rows < 0 ? rows : 0;
        /* Written already, by this node at this attempt (a retry after a
         * lost answer, or after a restart)? */
        const char *v2[] = { id, at, db->node };
        rows = pg_count(db, "SELECT 1 FROM sbx_jobs WHERE id = $1 AND attempt = $2 AND node = $3 AND state = 'done'", 3, v2,
                          NULL, NULL, "a result's fence");
        return rows < 0 ? rows : rows == 1 ? 0 : -ESTALE;
}

void cdb_job_free(struct cdb_job *j) {
        free(j->tenant);
        free(j->accept);
        free(j->record);
        free(j->out);
        free(j->err);
        memset(j, 0, sizeof(*j));
}

static char *dup_or_null(PGresult *r, int row, int col) {
        return PQgetisnull(r, row, col) ? NULL : strdup(PQgetvalue(r, row, col));
}

static int hexval(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A bytea column selected as encode(..., 'hex'). */
static char *bytes_of(PGresult *r, int row, int col, size_t *len) {
        *len = 0;
        if (PQgetisnull(r, row, col))
                return NULL;
        const char *h = PQgetvalue(r, row, col);
        size_t n = (size_t) PQgetlength(r, row, col) / 2;
        char *p = malloc(n + 1);
        if (!p)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                int a = hexval(h[2 * i]), b = hexval(h[2 * i + 1]);
                if (a < 0 || b < 0) {
                        free(p);
                        return NULL;
                }
                p[i] = (char) (a << 4 | b);
        }
        p[n] = 0;
        *len = n;
        return p;
}

#define JOB_COLUMNS                                                                                                               \
        "id, tenant, state, coalesce(node, ''), attempt, cancel, (extract(epoch FROM created) * 1000)::bigint, "                 \
        "(extract(epoch FROM ended) * 1000)::bigint"

static void fill_job(PGresult *r, int i, struct cdb_job *j) {
        snprintf(j->id, sizeof(j->id), "%s", PQgetvalue(r, i, 0));
        j->tenant = strdup(PQgetvalue(r, i, 1));
        snprintf(j->state, sizeof(j->state), "%s", PQgetvalue(r, i, 2));
        snprintf(j->node, sizeof(j->node), "%s", PQgetvalue(r, i, 3));
        j->attempt = (unsigned) pg_u64(r, i, 4);
        j->cancel = PQgetvalue(r, i, 5)[0] == 't';
        j->created_ms = pg_u64(r, i, 6);
        j->ended_ms = pg_u64(r, i, 7);
        j->exit_code = -1;
}

int cdb_get(struct cdb *db, const char *id, struct cdb_job *ret) {
        const char *v[] = { id };
        memset(ret, 0, sizeof(*ret));
        PGresult *r = pg_run(db, "SELECT " JOB_COLUMNS ", accept, record, encode(stdout, 'hex'), encode(stderr, 'hex') "
                              "FROM sbx_jobs WHERE id = $1",
                          1, v, NULL, NULL);
        int e = pg_verdict(db, r, "reading a job");
        if (e < 0)
                return e;
        if (PQntuples(r) != 1) {
                PQclear(r);
                return -ENOENT;
        }
        fill_job(r, 0, ret);
        ret->accept = dup_or_null(r, 0, 8);
        ret->record = dup_or_null(r, 0, 9);
        ret->out = bytes_of(r, 0, 10, &ret->out_len);
        ret->err = bytes_of(r, 0, 11, &ret->err_len);
        PQclear(r);
        return ret->tenant ? 0 : -ENOMEM;
}

int cdb_done_among(struct cdb *db, const char *const *ids, size_t n, void (*fn)(void *arg, const char *id), void *arg) {
        _cleanup_free_ char *arr = pg_id_array(ids, n);
        if (!arr)
                return -ENOMEM;
        const char *v[] = { arr };
        PGresult *r = pg_run(db, "SELECT id FROM sbx_jobs WHERE id = ANY ($1::text[]) AND state = 'done'", 1, v, NULL, NULL);
        int e = pg_verdict(db, r, "finding ended jobs");
        if (e < 0)
                return e;
        for (int i = 0; i < PQntuples(r); i++)
                fn(arg, PQgetvalue(r, i, 0));
        PQclear(r);
        return 0;
}

int cdb_list(struct cdb *db, const char *tenant, unsigned limit, void (*fn)(void *arg, const struct cdb_job *j), void *arg) {
        char lim[16];
        snprintf(lim, sizeof(lim), "%u", limit);
        const char *v[] = { tenant, lim };
        PGresult *r = pg_run(db,
                          "SELECT " JOB_COLUMNS ", accept, outcome, exit_code FROM sbx_jobs WHERE tenant = $1 "
                          "ORDER BY seq DESC LIMIT $2",
                          2, v, NULL, NULL);
        int e = pg_verdict(db, r, "listing jobs");
        if (e < 0)
                return e;
        for (int i = 0; i < PQntuples(r); i++) {
                struct cdb_job j = { 0 };
                fill_job(r, i, &j);
                j.accept = PQgetvalue(r, i, 8);
                /* a done job's state is its outcome */
                if (!PQgetisnull(r, i, 9))
                        snprintf(j.state, sizeof(j.state), "%s", PQgetvalue(r, i, 9));
                j.exit_code = PQgetisnull(r, i, 10) ? -1 : (int) strtol(PQgetvalue(r, i, 10), NULL, 10);
                fn(arg, &j);
                free(j.tenant);
        }
        PQclear(r);
        return 0;
}

int cdb_cancel(struct cdb *db, const char *id, uint64_t lease_ms, bool *took, struct cdb_job *ret) {
        char lease[32];
        pg_interval(lease, lease_ms);
        *took = false;
        memset(ret, 0, sizeof(*ret));
        const char *v[] = { id, db->node, lease };
        PGresult *r = pg_run(db,
                          "UPDATE sbx_jobs SET state = 'running', node = $2, attempt = attempt + 1, cancel = true, "
                          "claimed = now(), lease_until = now() + $3::interval WHERE id = $1 AND state = 'queued' "
                          "RETURNING " JOB_COLUMNS ", accept",
                          3, v, NULL, NULL);
        int e = pg_verdict(db, r, "cancelling a queued job");
        if (e < 0)
                return e;
        if (PQntuples(r) == 1) {
                fill_job(r, 0, ret);
                ret->accept = dup_or_null(r, 0, 8);
                *took = true;
                PQclear(r);
                return ret->tenant && ret->accept ? 0 : -ENOMEM;
        }
        PQclear(r);
        int rows = pg_count(db,
                              "WITH up AS (UPDATE sbx_jobs SET cancel = true WHERE id = $1 AND state = 'running' RETURNING id) "
                              "SELECT id, pg_notify('sbx_cancel', id) FROM up",
                              1, v, NULL, NULL, "cancelling a running job");
        return rows < 0 ? rows : rows == 1 ? 0 : -ENOENT;
}
