/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>

#include "db-internal.h"
#include "db.h"

/* The sessions' rows (cluster/db.h): written by the node a session lives
 * on, read by the others to send its requests there. */

int cdb_session_add(struct cdb *db, const char *id, const char *tenant) {
        const char *v[] = { id, tenant, db->node };
        return pg_exec0(db, "INSERT INTO sbx_sessions (id, tenant, node) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING", 3, v,
                        "a session's row");
}

int cdb_session_end(struct cdb *db, const char *id, const char *why) {
        const char *v[] = { id, why, db->node };
        return pg_exec0(db, "UPDATE sbx_sessions SET ended = now(), why = $2 WHERE id = $1 AND node = $3 AND ended IS NULL", 3,
                        v, "a session's end");
}

int cdb_session_where(struct cdb *db, const char *id, const char *tenant, char node[static CDB_NODE_MAX], uint64_t *ended_ms,
                      char why[static 32]) {
        const char *v[] = { id, tenant };
        PGresult *r = pg_run(db,
                             "SELECT node, (extract(epoch FROM ended) * 1000)::bigint, coalesce(why, '') FROM sbx_sessions "
                             "WHERE id = $1 AND tenant = $2",
                             2, v, NULL, NULL);
        int e = pg_verdict(db, r, "finding a session");
        if (e < 0)
                return e;
        if (PQntuples(r) != 1) {
                PQclear(r);
                return -ENOENT;
        }
        snprintf(node, CDB_NODE_MAX, "%s", PQgetvalue(r, 0, 0));
        *ended_ms = pg_u64(r, 0, 1);
        snprintf(why, 32, "%s", PQgetvalue(r, 0, 2));
        PQclear(r);
        return 0;
}
