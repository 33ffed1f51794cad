/* SPDX-License-Identifier: Apache-2.0 */
/* Cluster mode's callbacks (db.h): the row a job's end leaves with its
 * outbox entry, settled as the node that delivers it hears back, and taken
 * over by another node when that node's heartbeat has stopped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db-internal.h"
#include "db.h"
#include "util.h"

int cdb_cb_settle(struct cdb *db, const char *const *jobs, const char *const *states, size_t n) {
        if (n == 0)
                return 0;
        _cleanup_free_ char *ja = pg_id_array(jobs, n), *sa = pg_id_array(states, n);
        if (!ja || !sa)
                return -ENOMEM;
        const char *v[] = { ja, sa, db->node };
        return pg_exec0(db,
                        "UPDATE sbx_callbacks c SET state = x.s, updated = now() "
                        "FROM unnest($1::text[], $2::text[]) AS x(job, s) WHERE c.job = x.job AND c.node = $3",
                        3, v, "settling callbacks");
}

int cdb_cb_adopt(struct cdb *db, uint64_t lease_ms, unsigned limit,
                 void (*fn)(void *arg, const char *job, const char *was_node, const char *entry), void *arg) {
        char lease[32], lim[16];
        pg_interval(lease, lease_ms);
        snprintf(lim, sizeof(lim), "%u", limit);
        const char *v[] = { db->node, lease, lim };
        /* a node with no row at all is as gone as one whose heartbeat stopped */
        PGresult *r = pg_run(db,
                             "WITH pick AS (SELECT c.job, c.node FROM sbx_callbacks c LEFT JOIN sbx_nodes n ON n.name = c.node "
                             "WHERE c.state = 'pending' AND c.node <> $1 AND (n.name IS NULL OR n.seen < now() - $2::interval) "
                             "ORDER BY c.updated LIMIT $3::integer FOR UPDATE OF c SKIP LOCKED) "
                             "UPDATE sbx_callbacks c SET node = $1, taken_from = pick.node, updated = now() FROM pick "
                             "WHERE c.job = pick.job RETURNING c.job, pick.node, c.entry",
                             3, v, NULL, NULL);
        int e = pg_verdict(db, r, "taking over callbacks of stopped nodes");
        if (e < 0)
                return e;
        for (int i = 0; i < PQntuples(r); i++)
                fn(arg, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2));
        PQclear(r);
        return 0;
}

int cdb_cb_taken(struct cdb *db, void (*fn)(void *arg, const char *job, const char *by), void *arg) {
        const char *v[] = { db->node };
        PGresult *r = pg_run(db,
                             "UPDATE sbx_callbacks SET taken_from = NULL WHERE taken_from = $1 AND node <> $1 RETURNING job, node",
                             1, v, NULL, NULL);
        int e = pg_verdict(db, r, "callbacks taken over from this node");
        if (e < 0)
                return e;
        for (int i = 0; i < PQntuples(r); i++)
                fn(arg, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1));
        PQclear(r);
        return 0;
}

int cdb_cb_state(struct cdb *db, const char *job, char state[static 16], char node[static CDB_NODE_MAX]) {
        const char *v[] = { job };
        PGresult *r = pg_run(db, "SELECT state, node FROM sbx_callbacks WHERE job = $1", 1, v, NULL, NULL);
        int e = pg_verdict(db, r, "a callback's state");
        if (e < 0)
                return e;
        if (PQntuples(r) != 1) {
                PQclear(r);
                return -ENOENT;
        }
        snprintf(state, 16, "%s", PQgetvalue(r, 0, 0));
        snprintf(node, CDB_NODE_MAX, "%s", PQgetvalue(r, 0, 1));
        PQclear(r);
        return 0;
}
