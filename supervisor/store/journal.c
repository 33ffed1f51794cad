/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"
#include "proto.h"
#include "util.h"

#define JOURNAL "journal"
#define JOURNAL_TMP ".journal.tmp"
#define JOURNAL_RESERVE "journal.reserve"
/* How much of the tail is read at a time when looking for the last newline. */
#define TAIL_CHUNK_BYTES 65536

/* The size of the file up to and including its last newline: what is after
 * it is a line a crash cut short. */
static int whole_lines_size(int fd, off_t *ret) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        char buf[TAIL_CHUNK_BYTES];
        off_t end = st.st_size;
        while (end > 0) {
                size_t want = end < (off_t) sizeof(buf) ? (size_t) end : sizeof(buf);
                ssize_t got = pread(fd, buf, want, end - (off_t) want);
                if (got < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if ((size_t) got != want)
                        return -EIO; /* shrank under us: nobody else may write it */
                char *nl = memrchr(buf, '\n', want);
                if (nl) {
                        *ret = end - (off_t) want + (nl - buf) + 1;
                        return 0;
                }
                end -= (off_t) want;
        }
        *ret = 0;
        return 0;
}

int journal_open(struct journal *j, int state_dirfd) {
        *j = (struct journal){ .dirfd = state_dirfd, .fd = -1 };
        /* A rewrite that died before its rename: the journal is the old one. */
        if (unlinkat(state_dirfd, JOURNAL_TMP, 0) < 0 && errno != ENOENT)
                return -errno;
        _cleanup_close_ int fd = openat(state_dirfd, JOURNAL, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        struct stat st;
        off_t size;
        if (fstat(fd, &st) < 0)
                return -errno;
        int r = whole_lines_size(fd, &size);
        if (r < 0)
                return r;
        /* Without the cut, the next line would be glued onto the torn one
         * and both lost to replay. The torn line was never acknowledged:
         * acknowledgement waits for the sync that follows a whole write. */
        if (size < st.st_size && ftruncate(fd, size) < 0)
                return -errno;
        j->fd = TAKE_FD(fd);
        j->size = size;
        return 0;
}

void journal_close(struct journal *j) {
        if (j->fd >= 0)
                close(j->fd);
        j->fd = -1;
}

/* Undo a failed append: the file goes back to its whole lines. */
static void cut_back(struct journal *j) {
        j->cut_pending = ftruncate(j->fd, j->size) < 0;
}

static int sync_dir(struct journal *j) {
        if (fsync(j->dirfd) < 0)
                return -errno;
        j->dir_unsynced = false;
        return 0;
}

int journal_append(struct journal *j, json_t *rec, bool sync) {
        if (j->fd < 0)
                return -EBADF;
        if (j->cut_pending) {
                cut_back(j);
                if (j->cut_pending)
                        return -errno;
        }
        if (j->dir_unsynced) {
                int r = sync_dir(j);
                if (r < 0)
                        return r;
        }
        size_t len;
        _cleanup_free_ char *line = json_line(rec, &len);
        if (!line)
                return -ENOMEM;
        int r = write_all(j->fd, line, len);
        if (r == 0 && sync && fdatasync(j->fd) < 0)
                r = -errno;
        if (r < 0) {
                cut_back(j);
                return r;
        }
        j->size += (off_t) len;
        j->lines++;
        return 0;
}

/* Write the records to a new file; its size on success. */
static int write_records(int fd, json_t *const *recs, size_t n, off_t *ret_size) {
        off_t size = 0;
        for (size_t i = 0; i < n; i++) {
                size_t len;
                _cleanup_free_ char *line = json_line(recs[i], &len);
                if (!line)
                        return -ENOMEM;
                int r = write_all(fd, line, len);
                if (r < 0)
                        return r;
                size += (off_t) len;
        }
        *ret_size = size;
        return 0;
}

int journal_rewrite(struct journal *j, json_t *const *recs, size_t n) {
        _cleanup_close_ int fd = openat(j->dirfd, JOURNAL_TMP, O_RDWR | O_APPEND | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                                        0600);
        if (fd < 0)
                return -errno;
        off_t size = 0;
        int r = write_records(fd, recs, n, &size);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (r == 0 && renameat(j->dirfd, JOURNAL_TMP, j->dirfd, JOURNAL) < 0)
                r = -errno;
        if (r < 0) {
                unlinkat(j->dirfd, JOURNAL_TMP, 0);
                return r;
        }
        /* The name now points at the new file: appends must go there, even
         * if the directory sync below fails. */
        journal_close(j);
        j->fd = TAKE_FD(fd);
        j->size = size;
        j->lines = (unsigned) n;
        j->cut_pending = false;
        j->dir_unsynced = true;
        return sync_dir(j);
}

/* Allocated blocks, not a sparse file: fallocate where the file system
 * has it, zeros written where it has not. */
static int reserve_fill(int fd) {
        if (fallocate(fd, 0, 0, JOURNAL_RESERVE_BYTES) == 0)
                return 0;
        if (errno != EOPNOTSUPP && errno != ENOSYS)
                return -errno;
        static const char zeros[65536];
        for (off_t off = 0; off < JOURNAL_RESERVE_BYTES; off += (off_t) sizeof(zeros)) {
                int r = write_all(fd, zeros, sizeof(zeros));
                if (r < 0)
                        return r;
        }
        return 0;
}

int journal_reserve(struct journal *j) {
        struct stat st;
        if (j->reserved)
                return 0;
        _cleanup_close_ int fd = openat(j->dirfd, JOURNAL_RESERVE, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        int r = (off_t) st.st_blocks * 512 >= JOURNAL_RESERVE_BYTES ? 0 : reserve_fill(fd);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (r < 0) {
                /* Half a reserve is no promise: give the space back. */
                unlinkat(j->dirfd, JOURNAL_RESERVE, 0);
                return r;
        }
        j->reserved = true;
        return 0;
}

int journal_append_outcome(struct journal *j, json_t *rec) {
        int r = journal_append(j, rec, false);
        if ((r == -ENOSPC || r == -EDQUOT) && unlinkat(j->dirfd, JOURNAL_RESERVE, 0) == 0) {
                j->reserved = false;
                r = journal_append(j, rec, false);
        }
        return r;
}

int journal_reset(struct journal *j) {
        return journal_rewrite(j, NULL, 0);
}

int proc_starttime(pid_t pid, unsigned long long *ret_ticks) {
        char path[64];
        _cleanup_free_ char *s = NULL;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        int r = read_file_at(AT_FDCWD, path, 4096, &s, NULL);
        if (r < 0)
                return r;
        /* the command name may contain spaces and parentheses: start after
         * the last ')' */
        char *p = strrchr(s, ')');
        if (!p)
                return -EIO;
        p++;
        for (int field = 3; field < 22; field++) {
                p = strchr(p + 1, ' ');
                if (!p)
                        return -EIO;
        }
        *ret_ticks = strtoull(p + 1, NULL, 10);
        return 0;
}

/* A journal record: an object with an event name and a valid job id. */
static json_t *as_record(json_t *v) {
        const char *ev = json_string_value(json_object_get(v, "ev"));
        const char *id = json_string_value(json_object_get(v, "job"));
        if (ev && id && proto_valid_job_id(id))
                return v;
        json_decref(v);
        return NULL;
}

/* The record on this line. A line that is not one may be a torn append with
 * a whole record glued behind it (journals written before appends were cut
 * back, or after a cut that failed): the record is then the tail of the line
 * from the first '{' at which the rest parses as one record. A tail starting
 * inside the torn part does not parse: it would leave that part's brackets
 * unclosed around the glued record, or put text behind a closed value. */
static json_t *line_record(const char *line, size_t len) {
        json_t *v = json_loadb(line, len, 0, NULL);
        if (v)
                return as_record(v);
        for (const char *p = line + 1; (p = memchr(p, '{', len - (size_t) (p - line))); p++) {
                v = json_loadb(p, len - (size_t) (p - line), 0, NULL);
                if (v && (v = as_record(v)))
                        return v;
        }
        return NULL;
}

static struct journal_entry *find(struct journal_entry *e, size_t n, const char *id) {
        for (size_t i = 0; i < n; i++)
                if (streq(e[i].id, id))
                        return &e[i];
        return NULL;
}

int journal_replay(int state_dirfd, struct journal_entry **ret, size_t *ret_n) {
        struct journal_entry *e = NULL;
        size_t n = 0;
        *ret = NULL;
        *ret_n = 0;
        int fd = openat(state_dirfd, JOURNAL, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        _cleanup_fclose_ FILE *f = fdopen(fd, "re");
        if (!f) {
                close(fd);
                return -errno;
        }
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        int r = 0;
        while ((len = getline(&line, &cap, f)) > 0) {
                /* A torn last line (crash mid-append) is skipped: its accept
                 * was never acknowledged. */
                json_t *rec = line_record(line, (size_t) len);
                if (!rec)
                        continue;
                const char *ev = json_string_value(json_object_get(rec, "ev"));
                const char *id = json_string_value(json_object_get(rec, "job"));
                struct journal_entry *x = find(e, n, id);
                if (streq(ev, "accept") && !x) {
                        struct journal_entry *ne = realloc(e, (n + 1) * sizeof(*e));
                        if (!ne) {
                                json_decref(rec);
                                r = -ENOMEM;
                                break;
                        }
                        e = ne;
                        x = &e[n++];
                        memset(x, 0, sizeof(*x));
                        snprintf(x->id, sizeof(x->id), "%s", id);
                        const char *t = json_string_value(json_object_get(rec, "tenant"));
                        x->tenant = strdup(t ? t : "?");
                        x->caller_uid = (uid_t) json_integer_value(json_object_get(rec, "uid"));
                        x->accept = json_incref(rec);
                        if (!x->tenant) {
                                json_decref(rec);
                                r = -ENOMEM;
                                break;
                        }
                } else if (x && streq(ev, "start")) {
                        json_decref(x->start);
                        x->start = json_incref(rec);
                        x->pid = (pid_t) json_integer_value(json_object_get(rec, "pid"));
                        x->starttime_ticks = (unsigned long long) json_integer_value(json_object_get(rec, "starttime"));
                } else if (x && streq(ev, "end") && json_is_object(json_object_get(rec, "record"))) {
                        json_decref(x->end);
                        x->end = json_incref(json_object_get(rec, "record"));
                } else if (x && streq(ev, "done"))
                        x->done = true;
                json_decref(rec);
        }
        if (r == 0 && ferror(f))
                r = -EIO;
        if (r < 0) {
                journal_entries_free(e, n);
                return r;
        }
        *ret = e;
        *ret_n = n;
        return 0;
}

void journal_entries_free(struct journal_entry *e, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(e[i].tenant);
                json_decref(e[i].accept);
                json_decref(e[i].start);
                json_decref(e[i].end);
        }
        free(e);
}
