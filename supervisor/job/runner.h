/* SPDX-License-Identifier: Apache-2.0 */
/* Running jobs: starting queued jobs when the scheduler has room (the
 * job's cgroup, its generated profile, the launcher spawned as the job uid),
 * stopping them (SIGTERM, then every process after the grace period), and
 * ending them (artifacts off the loop, then the record through the group
 * commit). */
#pragma once

#include <jansson.h>

#include "job.h"

struct daemon;
struct rjob;

/* Start what may start, at the end of this loop turn. */
void runner_schedule(struct daemon *d);
/* At the end of the loop turn: start jobs the scheduler lets run. */
void runner_start_ready(struct daemon *d);
/* The job is ready (prepare.c): spawn its launcher. */
void runner_launch(struct rjob *rj);
/* Timeout, cancel or shutdown of a running job. */
void runner_stop(struct rjob *rj, enum job_event why);
/* The launcher is gone and its pipes are drained (capture.c). */
void runner_exited(struct rjob *rj);
/* The journal's start line for a running job (also rewritten by
 * compaction). */
json_t *runner_start_record(const struct rjob *rj);
/* Every running job with a CPU time limit and a cgroup: stopped when its
 * processes together have used it (the cgroup's cpu.stat counts them all,
 * children and the departed included). */
void runner_check_cpu(struct daemon *d);
/* The job is done (never started, or exited): free its slot and cgroup,
 * collect artifacts, then commit its record. */
void runner_end(struct rjob *rj);

/* A command a session's agent runs in its sandbox (session/): no
 * workspace, cgroup or launcher of its own. Started once the agent handed
 * over its output pipes (which the capture takes); its end comes from the
 * agent (capture_exec_exited), a stop or a kill through rj->session_signal.
 * runner_exec_start: 0, or -errno with err set (the caller then fails it). */
int runner_exec_start(struct rjob *rj, int out_fd, int err_fd, struct sbx_error *err);
/* It could not be started: it ends with E_SPAWN and why. */
void runner_exec_failed(struct rjob *rj, const char *why);
/* A running job's wall clock is timeout_ms from its start instead (a
 * session's TTL extended), journaled (synced) before it counts: 0, -EAGAIN
 * when it is not running, or -errno. */
int runner_extend(struct rjob *rj, uint64_t timeout_ms);
/* A running job's start line again, synced (what it records changed). */
int runner_journal_start(struct rjob *rj);
/* A session's box that outlived the daemon (recovery: rj->pid and
 * rj->starttime from the journal, its cgroup and workspace kept): watched
 * again through a pidfd — its launcher is not the daemon's child any more,
 * so its exit status is not known — with its wall clock counting from its
 * start. 0; -ESRCH when that launcher is gone; -errno. */
int runner_adopt(struct rjob *rj);
