/* SPDX-License-Identifier: Apache-2.0 */
/* What the scenarios of t/helpers/privd-client share: the socket, the
 * requests, and the jobs they open. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "privd-abi.h"

struct job {
        struct privd_handle h;
        uint32_t uid;
        int cg, ws, pidfd, status_rd;
        pid_t pid;
};

extern int sock;
extern uint32_t seq;
extern int accepted;          /* attacks the helper accepted: the exit status is 1 */
extern const char *profile_file;
extern uint32_t spawn_flags;   /* SPAWN's flags (PRIVD_SPAWN_*), 0 unless a scenario sets them */

_Noreturn void fail(const char *what);
struct privd_hdr hdr(uint16_t type, uint32_t len);
void send_raw(const void *msg, size_t len, const int *fds, unsigned n_fds);
int32_t recv_reply(struct privd_reply *rep, int *fds, unsigned max_fds);
int32_t call(const void *msg, size_t len, const int *fds, unsigned n, struct privd_reply *rep, int *rfds, unsigned max);
/* Print "refused WHAT: ERRNO", or "ACCEPTED WHAT" and count it. */
void expect_refused(const char *what, int32_t err);
int32_t uid_take(uint32_t *uid);
int32_t uid_release(uint32_t uid);
/* JOB_OPEN only: the workspace is still the front's. */
int32_t job_open(uint32_t uid, struct job *j);
int32_t job_open_sized(uint32_t uid, uint64_t bytes, struct job *j);
int32_t job_op(uint16_t type, struct privd_handle h);
int memfd_with(const char *name, const void *data, size_t len);
int profile_fd(void);
int32_t spawn(struct job *j, const char *argv, size_t argv_len, int status_override);
int32_t spawn_with(struct job *j, const char *argv, size_t argv_len, int status_override, int profile, int bundle);
int32_t spawn_opts(struct job *j, const char *opts, size_t opts_len, const char *argv, size_t argv_len, int status_override,
                   int profile, int bundle, int pass);
void attack_passfd(void);
void print_job(const char *name, const struct job *j);
/* UID_TAKE, JOB_OPEN and WS_HANDOVER, or exit 2. */
void open_job(const char *name, struct job *j);
bool alive(int pidfd);

/* privd-client-fs.c: uploads, artifacts and bundle trees (t/privd-fs.bats).
 * fs_planter_start, before the client drops to the front's user: a child
 * that stays root, to put in a workspace what the front cannot (a root-owned
 * file, a device node, a mount). */
void fs_planter_start(void);
int fs_artifacts(const char *bundle_dir);
int fs_many(void);
void attack_uploads(void);
void attack_states(struct job *a);
void attack_reclaim(void);
void attack_race(void);
void attack_bundle(struct job *a, const char *root_dir);

/* privd-client-net.c: a job's network (t/privd-net.bats). flags:
 * PRIVD_NET_V6 or 0; with hold, wait for SIGUSR1 (usr1, blocked) before
 * hanging up. */
int net_main(const char *scenario, uint32_t flags, bool hold, sigset_t *usr1);

/* privd-client-audit.c: the network audit (t/privd-audit.bats). */
int audit_main(const char *scenario);

/* privd-client-park.c: jobs that outlive their front (t/privd-listen.bats). */
int park_main(void);
int adopt_main(void);
