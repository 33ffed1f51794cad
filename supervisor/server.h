/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon proper: clients on the socket, requests dispatched to jobs, and
 * each job's life from acceptance to its durable result. */
#pragma once

#include "conf.h"
#include "error.h"

/* Set up state directories, recover after a crash, open the socket (or take
 * it from systemd). */
int server_init(struct config *cfg, struct sbx_error *err);
/* Run the event loop until SIGTERM/SIGINT and every job is finished. */
int server_run(void);
void server_done(void);
