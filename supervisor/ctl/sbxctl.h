/* SPDX-License-Identifier: Apache-2.0 */
/* sbxctl's pieces shared by its commands (sbxctl.c: the job commands and
 * main; sbxctl-run.c: run requests; sbxctl-print.c: human output;
 * sbxctl-bundle.c: bundles and the cache; sbxctl-download.c, sbxctl-callbacks.c;
 * client.c: the connection, errors). */
#pragma once

#include <jansson.h>
#include <stdio.h>
#include <stdbool.h>

#include "macro.h"

/* client.c: the connection (to sbxctl_socket) and the exits. */
extern bool json_out;
extern const char *sbxctl_socket;
/* The last response, freed at exit (the sanitizer build checks leaks). */
void sbxctl_client_free(void);

_noreturn_ _printf_(1, 2) void die(const char *fmt, ...);
/* A usage error: the message and exit 2. */
_noreturn_ _printf_(1, 2) void usage_error(const char *fmt, ...);
/* getopt_long's '?' or ':' for an option at argv[optind - 1]: a usage
 * error naming it (where: "" or "COMMAND: "). */
_noreturn_ void sbxctl_bad_option(const char *where, int o, char **argv);
void connect_daemon(void);
json_t *new_req(const char *op);
/* Send req (stolen); the ok response (borrowed until the next request),
 * or exit 125 with the daemon's error. */
json_t *request(json_t *req);
/* Send req (stolen) without waiting for the answer. */
void send_request(json_t *req);
/* m itself if it is an ok response; otherwise the daemon's error on
 * stderr and exit 125. */
json_t *expect_ok(json_t *m);
/* The next message from the daemon (printed as it is with --json); exits
 * 125 if the daemon hung up. */
json_t *recv_message(void);

/* sbxctl callbacks ls [--state S] | retry JOB | drop JOB */
int sbxctl_callbacks(int argc, char **argv);
/* A job's callback delivery, lines of sbxctl result. */
void print_callback(json_t *cb);

/* sbxctl download [-o FILE] JOB PATH | --stream S JOB */
int sbxctl_download(int argc, char **argv);

int sbxctl_reload(int argc, char **argv);
int sbxctl_policy(int argc, char **argv);
int sbxctl_secret(int argc, char **argv);
/* sbxctl-nodes.c: a cluster's nodes, and draining one. */
int sbxctl_nodes(int argc, char **argv);
int sbxctl_drain(int argc, char **argv);
void sbxctl_print_reload(json_t *r);

/* sbxctl session ... (sbxctl-session.c) */
int sbxctl_session(int argc, char **argv);
/* sbxctl session forward SESSION PORT [--listen [ADDR:]LPORT] (argv[0]
 * is "forward"; sbxctl-forward.c) */
int sbxctl_session_forward(int argc, char **argv);
/* sbxctl-print.c: print a followed job's output events until its end;
 * its status. */
int sbxctl_follow_to_end(bool show_result);

/* sbxctl bundle show REF | cache ls | cache gc [--all] */
int sbxctl_bundle(int argc, char **argv);
/* The result record's bundle, a line of print_result. */
void print_bundle(json_t *b);

/* sbxctl-run.c: a file's bytes (FILE "-": standard input), at most
 * 256 MiB; dies naming it on an error. */
unsigned char *sbxctl_slurp(const char *path, size_t *ret_len);
/* --npm-lock FILE: the lock's production packages appended to npm as
 * pins with their integrity (sbxctl-lock.c); dies naming what it cannot
 * pin. */
void sbxctl_npm_lock(json_t *npm, const char *path);
/* --pip-requirements FILE: each NAME==VERSION of a requirements file, with
 * its --hash=sha256: hashes, appended to pip as pins; dies naming the
 * line of what it cannot pin (options, ranges, extras, markers). */
void sbxctl_pip_requirements(json_t *pip, const char *path);
/* sbxctl-run.c: the run request of run/submit's command line (options
 * from argv[0], the command after them); follow asks for its events. */
json_t *sbxctl_build_run(int argc, char **argv, bool follow);

/* sbxctl-print.c */
/* An output event's data, decoded, to f. */
void sbxctl_write_data(FILE *f, json_t *ev);
/* sbxctl's exit status for a finished job's result: the job's own. */
int sbxctl_exit_status(json_t *res);
void sbxctl_print_net_event(FILE *f, const char *prefix, json_t *e);
/* A result record, readably, to stdout. */
void sbxctl_print_result(json_t *res);
