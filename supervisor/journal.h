/* SPDX-License-Identifier: Apache-2.0 */
/* The accepted-job journal: one JSON line per event, appended to
 * STATE/journal. "accept" is synced before the client hears the job id, so a
 * crash can never lose an acknowledged job; "start" records the launcher's
 * pid (a fallback for killing orphans when there is no cgroup); "done"
 * follows the result record. At start the daemon replays it: every job
 * accepted but without a result gets one ("supervisor restarted"). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct journal {
        int dirfd;
        int fd;
        unsigned lines;
        unsigned active;
};

int journal_open(struct journal *j, int state_dirfd);
void journal_close(struct journal *j);
/* Append one record; sync: fdatasync before returning. */
int journal_append(struct journal *j, json_t *rec, bool sync);

struct journal_entry {
        char id[24];
        char *tenant;
        uid_t caller_uid;
        json_t *accept;   /* the accept record */
        json_t *start;    /* the last start record, or NULL */
        pid_t pid;        /* 0 if it never started */
        unsigned long long starttime; /* /proc/PID/stat field 22 at start */
        bool done;
};

/* Read every entry (accepted jobs with their latest state). */
int journal_replay(int state_dirfd, struct journal_entry **ret, size_t *ret_n);
void journal_entries_free(struct journal_entry *e, size_t n);

/* Start a new empty journal (after recovery wrote every record). */
int journal_reset(struct journal *j);

/* Replace the journal with just these records (the jobs still in flight),
 * atomically: a crash during the rewrite leaves the old journal or the new
 * one, never a mix. */
int journal_rewrite(struct journal *j, json_t *const *recs, size_t n);

/* /proc/PID/stat starttime, to tell a pid from its reuse. */
int proc_starttime(pid_t pid, unsigned long long *ret);
