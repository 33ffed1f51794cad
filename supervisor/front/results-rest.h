/* SPDX-License-Identifier: Apache-2.0 */
/* Finished jobs the results index lacks at start (its cache file was lost,
 * or this is the first start after an upgrade): read in batches on a
 * worker thread while the daemon serves, instead of before it does.
 * Requests whose answer needs a finished job wait until every batch is
 * in: listing, a submit with an idempotency key, and operations on a job
 * that is neither running nor indexed yet. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct daemon;
struct conn;

/* Load d->done from the results directory; start reading what the cache
 * lacks in the background when that is much. */
int results_open(struct daemon *d);
/* After the worker threads started: the first batch. */
void results_rest_start(struct daemon *d);
/* True while records are still being read. */
bool results_incomplete(const struct daemon *d);
/* Keep the request line for when the index is complete (the connection
 * reads nothing more until then); false when out of memory. */
bool results_wait(struct conn *c, const char *line, size_t len);
/* At shutdown, before the workers stop: no further batch. */
void results_rest_abandon(struct daemon *d);
/* At shutdown, after the connections closed and the workers stopped. */
void results_rest_done(struct daemon *d);
