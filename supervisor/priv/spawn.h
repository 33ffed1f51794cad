/* SPDX-License-Identifier: Apache-2.0 */
/* Start sbx-launch for a job: a child sharing the daemon's memory until it
 * execs (as posix_spawn(3)), with a pidfd, that moves into the job's cgroup
 * (when there is one), drops to the
 * tenant's unprivileged job uid/gid — the launcher never runs as root — and
 * ask for SIGKILL if the daemon dies, so no job outlives it unwatched. */
#pragma once

#include <stddef.h>
#include <stdbool.h>
#include <sys/types.h>

/* The launcher's descriptors 0..8: stdin, stdout, stderr, the status pipe,
 * the generated profile, for a restricted job the --info-fd and
 * --block-fd pipes, a bundle job's tree, and a session's agent's
 * listening socket (launch-abi.h). */
#define SPAWN_FDS 9

struct spawn_params {
        const char *path;    /* the launcher */
        char **argv;
        char **envp;
        int fds[SPAWN_FDS];  /* become the child's 0..7 (-1: /dev/null for 0..2, closed otherwise) */
        uid_t uid;
        gid_t gid;
        int cgroup_fd;       /* -1: stay in the daemon's cgroup */
        int err_fd;          /* the child reports a failure before exec here (struct spawn_report); -1: none */
        bool outlive;        /* a session's box: it outlives the daemon (no parent-death signal) */
};

/* What the child writes to err_fd when it cannot exec the launcher: exec
 * closes err_fd, so end-of-file there means the launcher started. */
enum spawn_step {
        SPAWN_STEP_FDS = 1,
        SPAWN_STEP_IDS,
        SPAWN_STEP_PARENT,
        SPAWN_STEP_EXEC,
        SPAWN_STEP_CGROUP,
};

struct spawn_report {
        int step;            /* enum spawn_step */
        int err;             /* errno */
};

/* Kill every process that runs as uid: a child switches to it and sends
 * SIGKILL to all it may signal (kill(-1)) until the kernel counts no other
 * task of the uid (killed ones count until reaped: a few rounds, about 2 s
 * at most). Blocking (not on the event loop). 0, -EAGAIN if some task of
 * the uid is still there, or -errno. */
int spawn_kill_uid(uid_t uid, gid_t gid);

/* "cannot switch to the job uid: Operation not permitted" */
void spawn_report_format(const struct spawn_report *r, char *buf, size_t len);

/* 0 with *ret_pid and *ret_pidfd, or -errno. */
int spawn_launcher(const struct spawn_params *p, pid_t *ret_pid, int *ret_pidfd);
