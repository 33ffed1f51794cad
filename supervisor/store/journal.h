/* SPDX-License-Identifier: Apache-2.0 */
/* The accepted-job journal: one JSON line per event, appended to
 * STATE/journal. "accept" is synced before the client hears the job id, so a
 * crash can never lose an acknowledged job; "start" records the launcher's
 * pid (a fallback for killing orphans when there is no cgroup); "done"
 * follows the result record. At start the daemon replays it: every job
 * accepted but without a result gets one ("supervisor restarted").
 *
 * The file is always a sequence of whole lines: an append that fails part
 * way is cut back off, a torn tail left by a crash is cut at open, and
 * replay skips a damaged line and finds the next whole one. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct journal {
        int dirfd;        /* the state directory; not owned */
        int fd;           /* the journal, O_APPEND; -1 when closed */
        off_t size;       /* bytes of whole lines: where a failed append is cut back to */
        unsigned lines;   /* appended since the last open or rewrite */
        bool cut_pending; /* a failed append could not be cut back yet */
        bool dir_unsynced; /* a rewrite's rename is not yet known durable */
        bool reserved;    /* STATE/journal.reserve holds space for "end" lines */
};

/* Open (creating) STATE/journal for appending. A torn tail (a crash in the
 * middle of an append) is cut off so the next line starts a line of its own,
 * and a rewrite's leftover temporary file is removed. On error j->fd is -1. */
int journal_open(struct journal *j, int state_dirfd);
void journal_close(struct journal *j);

/* Append one record as a line, all or nothing: when the write fails or is
 * cut short (ENOSPC, EIO) or, with sync, the fdatasync fails, the file is
 * cut back to its size before the call and the error returned; the record is
 * then not in the journal and its job must not be acknowledged. Should even
 * the cut fail, the next append retries it first and fails until it works,
 * so no line is ever glued onto a torn one. sync: fdatasync before
 * returning; without it the caller syncs j->fd (the group commit). */
int journal_append(struct journal *j, json_t *rec, bool sync);

struct journal_entry {
        char id[24];
        char *tenant;
        uid_t caller_uid;
        json_t *accept;   /* the accept record */
        json_t *start;    /* the last start record, or NULL */
        pid_t pid;        /* 0 if it never started */
        unsigned long long starttime_ticks; /* /proc/PID/stat field 22 at start */
        json_t *end;      /* the result record an "end" line kept, or NULL */
        bool done;
};

/* Read every entry (accepted jobs with their latest state), in accept order.
 * Lines that are not whole records (torn by a crash, glued together by an
 * append from before appends were cut back) are skipped; a whole record
 * glued behind a torn one is still found. A missing journal is empty. */
int journal_replay(int state_dirfd, struct journal_entry **ret, size_t *ret_n);
void journal_entries_free(struct journal_entry *e, size_t n);

/* Replace the journal with just these records (the jobs still in flight),
 * atomically: written to STATE/.journal.tmp, synced, renamed over the
 * journal, and the directory synced; a crash leaves the old journal or the
 * new one, never a mix.
 * On an error before the rename (ENOSPC, EROFS, EIO, ENOMEM) the old journal
 * is untouched and still the one appended to, and the temporary file is
 * gone: the caller keeps whatever it meant to drop and may retry later.
 * When only the directory sync after the rename fails, the new journal is in
 * place and appended to, but a crash could still bring the old one back
 * (which holds every entry the new one does, if the caller only ever drops
 * entries): the error is returned, and every append fails until a retry of
 * the directory sync succeeds, so nothing is acknowledged that such a crash
 * could lose. */
int journal_rewrite(struct journal *j, json_t *const *recs, size_t n);

/* Space kept for the outcomes of jobs whose records cannot be written: a
 * file of JOURNAL_RESERVE_BYTES allocated beside the journal while storage
 * works. When the file system is full, journal_append_outcome() gives it
 * back to the file system and appends into the space it freed, so a full
 * disk does not also lose what jobs that ended did. journal_reserve()
 * makes it again (0 when it is there; -ENOSPC and the like when it cannot
 * be made, and storage does not count as working). */
#define JOURNAL_RESERVE_BYTES (2 * 1024 * 1024)
int journal_reserve(struct journal *j);
/* journal_append() of a job's "end" line, unsynced; when the file system
 * is full, the reserve is released and the append tried once more. */
int journal_append_outcome(struct journal *j, json_t *rec);

/* Start a new empty journal: journal_rewrite() with no records. */
int journal_reset(struct journal *j);

/* /proc/PID/stat starttime (clock ticks since boot), to tell a pid from its
 * reuse. */
int proc_starttime(pid_t pid, unsigned long long *ret_ticks);
