/* SPDX-License-Identifier: Apache-2.0 */
/* What a running job gives back: its stdout and stderr (kept in
 * STATE/results/ID/ up to the output cap, and streamed to followers), the
 * launcher's status record, the daemon child's spawn error, and its exit
 * (pidfd). When the launcher has exited, everything still buffered is read
 * and the runner hears of it (runner_exited). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "loop.h"
#include "redact.h"

struct rjob;

struct capture {
        struct source out_src[2], status_src, pid_src;
        int out_fd[2];           /* read ends of the stdout/stderr pipes, -1 when closed */
        int file_fd[2];          /* the capture files, -1 until the first byte */
        uint64_t produced[2];    /* bytes the job wrote per stream */
        uint64_t kept[2];        /* bytes in the files */
        bool truncated[2];       /* the output cap was reached */
        int write_err[2];        /* the file could not be written (-errno), 0 */
        bool no_splice[2];       /* not a pipe (an exec's terminal): read, never spliced */
        int status_fd;           /* read end of the launcher's status record */
        char *status_buf;
        size_t status_len;
        json_t *status_end;      /* the launcher's end record */
        json_t *start_prot;      /* the protections its start line reported (an exec: its box's), or NULL */
        int spawn_err_fd;        /* the daemon child's report before exec */
        char *spawn_error;       /* what it reported */
        int pidfd;
        bool adopted;            /* the launcher is not the daemon's child (runner_adopt) */
        bool exited;
        int exit_status;         /* the launcher's, or -1 */
        int exit_signal;
        int result_dir_fd;       /* STATE/results/ID, created on the first byte kept */
        /* a job with secrets: its output through the job's redactor, held
         * back where a secret may begin, flushed at capture_stop */
        bool redacting;
        struct redact_stream rs[2];
};

void capture_init(struct capture *cap);
/* Watch the pipes (their write ends already handed to the launcher). */
int capture_start(struct rjob *rj, int out_fd, int err_fd, int status_fd, int spawn_err_fd, int pidfd);
/* A launcher that is not the daemon's child (a session's box after a
 * restart): its pidfd only; its end is the runner's guess (capture.c). */
int capture_adopt(struct rjob *rj, int pidfd);
/* A session's exec: its stdout and stderr only (the agent reports its
 * end, capture_exec_exited). */
int capture_start_exec(struct rjob *rj, int out_fd, int err_fd);
/* It ended with this wait status: what is left in the pipes is read, and
 * the runner hears of it (runner_exited). */
void capture_exec_exited(struct rjob *rj, int wait_status);
/* Close and free everything but the capture files and the result
 * directory, which the group commit syncs with the record. */
void capture_stop(struct capture *cap);
void capture_release(struct capture *cap);
/* STATE/results/ID, created on first need; -errno on failure. */
int capture_result_dir(struct rjob *rj);
