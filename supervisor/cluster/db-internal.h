/* SPDX-License-Identifier: Apache-2.0 */
/* What db.c, db-jobs.c and db-callbacks.c share: statements run within the connection's
 * deadline, and their verdicts. Not for use outside cluster/. */
#pragma once

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "db.h"

#define PG(db) ((PGconn *) (db)->pg)

/* Send one statement (n < 0: a simple query, which may hold several) and
 * wait for its last result within the deadline. NULL: the connection
 * failed (dropped; db->err says why). A result with an error status is
 * returned for the caller to look at. */
PGresult *pg_run(struct cdb *db, const char *sql, int n, const char *const *vals, const int *lens, const int *fmts);
/* 0 for a result that worked, -EAGAIN for none (the connection failed),
 * -EIO for a statement that failed (logged with what; r cleared). */
int pg_verdict(struct cdb *db, PGresult *r, const char *what);
/* A statement whose result only has to say it worked (pg_verdict()). */
int pg_exec0(struct cdb *db, const char *sql, int n, const char *const *vals, const char *what);
/* A statement whose rows are only counted: how many, or as pg_verdict(). */
int pg_count(struct cdb *db, const char *sql, int n, const char *const *vals, const int *lens, const int *fmts, const char *what);
void pg_rollback(struct cdb *db);
uint64_t pg_u64(PGresult *r, int row, int col);
/* A duration as an SQL interval's text. */
void pg_interval(char out[static 32], uint64_t ms);
/* A text[] literal of job ids (letters and digits kept, nothing else). */
char *pg_id_array(const char *const *ids, size_t n);
