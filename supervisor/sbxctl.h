/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl's pieces shared by its commands (sbxctl.c: jobs; sbxctl-bundle.c:
 * bundles and the cache). */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "macro.h"

extern bool json_out;

_noreturn_ _printf_(1, 2) void die(const char *fmt, ...);
/* A usage error: the message and exit 2. */
_noreturn_ _printf_(1, 2) void usage_error(const char *fmt, ...);
void connect_daemon(void);
json_t *new_req(const char *op);
/* Send req (stolen); the ok response (borrowed until the next request),
 * or exit 125 with the daemon's error. */
json_t *request(json_t *req);
/* The next message from the daemon (printed as it is with --json); exits
 * 125 if the daemon hung up. */
json_t *recv_message(void);

/* sbxctl callbacks ls [--state S] | retry JOB | drop JOB */
int sbxctl_callbacks(int argc, char **argv);
/* A job's callback delivery, lines of sbxctl result. */
void print_callback(json_t *cb);

/* sbxctl download [-o FILE] JOB PATH | --stream S JOB */
int sbxctl_download(int argc, char **argv);

/* sbxctl bundle show REF | cache ls | cache gc [--all] */
int sbxctl_bundle(int argc, char **argv);
/* The result record's bundle, a line of print_result. */
void print_bundle(json_t *b);
