/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "journal.h"
#include "proto.h"
#include "util.h"

#define JOURNAL "journal"
#define JOURNAL_MAX (256u << 20)

int journal_open(struct journal *j, int state_dirfd) {
        j->dirfd = state_dirfd;
        j->fd = openat(state_dirfd, JOURNAL, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        j->lines = 0;
        return j->fd < 0 ? -errno : 0;
}

void journal_close(struct journal *j) {
        if (j->fd >= 0)
                close(j->fd);
        j->fd = -1;
}

int journal_append(struct journal *j, json_t *rec, bool sync) {
        char *s = json_dumps(rec, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        size_t n = strlen(s);
        s[n] = '\n'; /* json_dumps' NUL becomes the newline; write n+1 bytes */
        int r = write_all(j->fd, s, n + 1);
        free(s);
        if (r < 0)
                return r;
        j->lines++;
        if (sync && fdatasync(j->fd) < 0)
                return -errno;
        return 0;
}

int journal_rewrite(struct journal *j, json_t *const *recs, size_t n) {
        _cleanup_close_ int fd = openat(j->dirfd, ".journal.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        for (size_t i = 0; i < n; i++) {
                char *s = json_dumps(recs[i], JSON_COMPACT);
                if (!s)
                        return -ENOMEM;
                size_t len = strlen(s);
                s[len] = '\n';
                int r = write_all(fd, s, len + 1);
                free(s);
                if (r < 0)
                        return r;
        }
        if (fsync(fd) < 0 || renameat(j->dirfd, ".journal.tmp", j->dirfd, JOURNAL) < 0 || fsync(j->dirfd) < 0)
                return -errno;
        journal_close(j);
        int r = journal_open(j, j->dirfd);
        if (r == 0)
                j->lines = (unsigned) n;
        return r;
}

int journal_reset(struct journal *j) {
        return journal_rewrite(j, NULL, 0);
}

int proc_starttime(pid_t pid, unsigned long long *ret) {
        char path[64];
        _cleanup_free_ char *s = NULL;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        int r = read_file_at(AT_FDCWD, path, 4096, &s, NULL);
        if (r < 0) {
                /* /proc files report size 0: read them by hand */
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                char buf[4096];
                ssize_t n = read(fd, buf, sizeof(buf) - 1);
                if (n <= 0)
                        return -EIO;
                buf[n] = '\0';
                s = strdup(buf);
                if (!s)
                        return -ENOMEM;
        }
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
        *ret = strtoull(p + 1, NULL, 10);
        return 0;
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
        FILE *f = fdopen(fd, "re");
        if (!f) {
                close(fd);
                return -errno;
        }
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        while ((len = getline(&line, &cap, f)) > 0) {
                /* A torn last line (crash mid-append) is not valid JSON and
                 * is skipped: its accept was never acknowledged. */
                json_t *rec = json_loadb(line, (size_t) len, 0, NULL);
                if (!rec)
                        continue;
                const char *ev = json_string_value(json_object_get(rec, "ev"));
                const char *id = json_string_value(json_object_get(rec, "job"));
                if (!ev || !id || !proto_valid_job_id(id)) {
                        json_decref(rec);
                        continue;
                }
                struct journal_entry *x = find(e, n, id);
                if (streq(ev, "accept") && !x) {
                        struct journal_entry *ne = realloc(e, (n + 1) * sizeof(*e));
                        if (!ne) {
                                json_decref(rec);
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
                } else if (x && streq(ev, "start")) {
                        json_decref(x->start);
                        x->start = json_incref(rec);
                        x->pid = (pid_t) json_integer_value(json_object_get(rec, "pid"));
                        x->starttime = (unsigned long long) json_integer_value(json_object_get(rec, "starttime"));
                } else if (x && streq(ev, "done"))
                        x->done = true;
                json_decref(rec);
        }
        free(line);
        fclose(f);
        *ret = e;
        *ret_n = n;
        return 0;
}

void journal_entries_free(struct journal_entry *e, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(e[i].tenant);
                json_decref(e[i].accept);
                json_decref(e[i].start);
        }
        free(e);
}
