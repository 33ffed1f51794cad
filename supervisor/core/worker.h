/* SPDX-License-Identifier: Apache-2.0 */
/* Blocking work off the event loop: copying artifacts, creating
 * workspaces, reading captures for clients. The daemon's general pool
 * (pool.h) of a few threads. */
#pragma once

#include "pool.h"

/* Start the threads (with every signal blocked, as the caller's mask must
 * already be); returns the eventfd that is readable when items are done. */
int worker_start(void);
void worker_submit(struct work *w);
/* After the eventfd fired: call done() of every finished item. */
void worker_complete(void);
/* Finish what was submitted, then stop the threads. */
void worker_stop(void);
