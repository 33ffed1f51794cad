/* SPDX-License-Identifier: Apache-2.0 */
/* The accepted-job journal: what a crash can leave behind is read back
 * correctly (a torn line is skipped and the next whole one found, a job with
 * "done" is not recovered twice), a torn tail is cut at open, compaction
 * keeps exactly the jobs in flight. (Full and read-only disks:
 * storage-fault-test.) Also the workspace remover: whatever the job built
 * goes, however deep or odd. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "journal.h"
#include "util.h"

static char dir[64];
static int dfd = -1;

static int setup(void **state) {
        strcpy(dir, "/tmp/sbx-journal-test.XXXXXX");
        assert_non_null(mkdtemp(dir));
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        return 0;
}

static int teardown(void **state) {
        int up = open("/tmp", O_RDONLY | O_DIRECTORY);
        rm_rf_at(up, dir + 5);
        close(up);
        close(dfd);
        return 0;
}

static json_t *rec(const char *ev, const char *id) {
        return json_pack("{s:s, s:s, s:s, s:i, s:[s]}", "ev", ev, "job", id, "tenant", "t", "uid", 7, "command", "true");
}

static void append_ok(struct journal *j, json_t *r, bool sync) {
        assert_int_equal(journal_append(j, r, sync), 0);
        json_decref(r);
}

static char *slurp(int dirfd, const char *name, size_t *ret_len) {
        char *s = NULL;
        int r = read_file_at(dirfd, name, 1 << 24, &s, ret_len);
        assert_int_equal(r, 0);
        return s;
}

/* The journal is a sequence of whole lines, each one JSON object. */
static void assert_whole_lines(int dirfd) {
        size_t len;
        char *s = slurp(dirfd, "journal", &len);
        assert_true(len == 0 || s[len - 1] == '\n');
        for (char *p = s; p < s + len;) {
                char *nl = memchr(p, '\n', (size_t) (s + len - p));
                assert_non_null(nl);
                json_t *v = json_loadb(p, (size_t) (nl - p), 0, NULL);
                assert_true(json_is_object(v));
                json_decref(v);
                p = nl + 1;
        }
        free(s);
}

static void replay_ids(int dirfd, const char *const *want, size_t n_want) {
        struct journal_entry *e;
        size_t n;
        assert_int_equal(journal_replay(dirfd, &e, &n), 0);
        assert_int_equal(n, n_want);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(e[i].id, want[i]);
        journal_entries_free(e, n);
}

#define J1 "j00000000000000000001"
#define J2 "j00000000000000000002"
#define J3 "j00000000000000000003"
#define J4 "j00000000000000000004"
#define J5 "j00000000000000000005"

static void test_replay(void **state) {
        struct journal j;
        assert_int_equal(journal_open(&j, dfd), 0);
        append_ok(&j, rec("accept", J1), true);
        append_ok(&j, rec("accept", J2), true);
        append_ok(&j, json_pack("{s:s, s:s, s:i, s:I, s:s}", "ev", "start", "job", J1, "pid", 4242, "starttime",
                                (json_int_t) 99, "started", "2026-11-23T10:00:00.000Z"),
                  false);
        append_ok(&j, rec("done", J2), false);
        assert_int_equal(j.lines, 4);
        /* a crash in the middle of an append */
        assert_int_equal(write(j.fd, "{\"ev\":\"accept\",\"job\":\"" J3 "\",\"ten", 38), 38);
        journal_close(&j);

        struct journal_entry *e;
        size_t n;
        assert_int_equal(journal_replay(dfd, &e, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(e[0].id, J1);
        assert_false(e[0].done);
        assert_int_equal(e[0].pid, 4242);
        assert_int_equal(e[0].starttime_ticks, 99);
        assert_string_equal(json_string_value(json_object_get(e[0].start, "started")), "2026-11-23T10:00:00.000Z");
        assert_null(e[1].start);
        assert_int_equal(e[0].caller_uid, 7);
        assert_string_equal(e[0].tenant, "t");
        assert_string_equal(e[1].id, J2);
        assert_true(e[1].done);
        journal_entries_free(e, n);
}

/* A pending record's "end" line is read back with the job; the last one
 * counts, and a line without a record object is not an outcome. */
static void test_replay_end(void **state) {
        struct journal j;
        assert_int_equal(journal_open(&j, dfd), 0);
        append_ok(&j, rec("accept", J1), true);
        append_ok(&j, rec("accept", J2), true);
        append_ok(&j, json_pack("{s:s, s:s, s:{s:s, s:i}}", "ev", "end", "job", J1, "record", "state", "failed", "exit_code", 3),
                  false);
        append_ok(&j, json_pack("{s:s, s:s, s:{s:s, s:i}}", "ev", "end", "job", J1, "record", "state", "succeeded", "exit_code", 0),
                  false);
        append_ok(&j, json_pack("{s:s, s:s, s:s}", "ev", "end", "job", J2, "record", "nonsense"), true);
        journal_close(&j);
        struct journal_entry *e;
        size_t n;
        assert_int_equal(journal_replay(dfd, &e, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(json_string_value(json_object_get(e[0].end, "state")), "succeeded");
        assert_null(e[1].end);
        journal_entries_free(e, n);
}

/* The reserve is allocated space, and an outcome appended after it is
 * given up lands in the journal. */
static void test_reserve(void **state) {
        struct journal j;
        struct stat st;
        assert_int_equal(journal_open(&j, dfd), 0);
        assert_int_equal(journal_reserve(&j), 0);
        assert_true(j.reserved);
        assert_int_equal(fstatat(dfd, "journal.reserve", &st, 0), 0);
        assert_true((off_t) st.st_blocks * 512 >= JOURNAL_RESERVE_BYTES);
        /* made again only when it is gone */
        assert_int_equal(journal_reserve(&j), 0);
        json_t *r = rec("end", J1);
        assert_int_equal(journal_append_outcome(&j, r), 0);
        json_decref(r);
        assert_true(j.reserved); /* the disk had room: kept */
        journal_close(&j);
        assert_whole_lines(dfd);
}

static void test_replay_missing(void **state) {
        struct journal_entry *e;
        size_t n = 1;
        assert_int_equal(journal_replay(dfd, &e, &n), 0);
        assert_int_equal(n, 0);
        assert_null(e);
}

/* Torn lines in the middle (a journal from before appends were cut back,
 * or a power loss that left zeros): every whole record is still found,
 * including one glued behind a torn one. */
static void test_replay_resync(void **state) {
        static const char text[] =
                "{\"ev\":\"accept\",\"job\":\"" J1 "\",\"tenant\":\"t\"}\n"
                /* torn, with braces inside its strings, then a record glued on */
                "{\"ev\":\"accept\",\"job\":\"" J5 "\",\"command\":[\"{x\",\"{}\",\"{ \\\"a"
                "{\"ev\":\"accept\",\"job\":\"" J2 "\",\"tenant\":\"t\"}\n"
                "not json at all\n"
                /* torn inside a nested object, then a record glued on */
                "{\"ev\":\"accept\",\"job\":\"" J5 "\",\"x\":{\"y\":"
                "{\"ev\":\"accept\",\"job\":\"" J3 "\",\"tenant\":\"t\"}\n"
                "\0\0\0\0{\"ev\":\"accept\",\"job\":\"" J4 "\",\"tenant\":\"t\"}\n"
                "{\"ev\":\"done\",\"job\":\"" J2 "\"}\n"
                "{\"ev\":\"accept\",\"job\":\"not-an-id\"}\n"
                "{\"ev\":\"acc";
        int fd = openat(dfd, "journal", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, sizeof(text) - 1), sizeof(text) - 1);
        close(fd);

        struct journal_entry *e;
        size_t n;
        assert_int_equal(journal_replay(dfd, &e, &n), 0);
        assert_int_equal(n, 4);
        assert_string_equal(e[0].id, J1);
        assert_string_equal(e[1].id, J2);
        assert_true(e[1].done);
        assert_string_equal(e[2].id, J3);
        assert_string_equal(e[3].id, J4);
        for (size_t i = 0; i < n; i++)
                assert_string_equal(e[i].tenant, "t");
        journal_entries_free(e, n);
}

/* A crash left a torn tail: open cuts it, so the next append is a line of
 * its own instead of being glued onto it (and lost with it). */
static void test_open_cuts_torn_tail(void **state) {
        struct journal j;
        assert_int_equal(journal_open(&j, dfd), 0);
        append_ok(&j, rec("accept", J1), true);
        off_t whole = j.size;
        assert_int_equal(write(j.fd, "{\"ev\":\"accept\",\"job\":\"" J2 "\",\"ten", 38), 38);
        journal_close(&j);

        assert_int_equal(journal_open(&j, dfd), 0);
        assert_int_equal(j.size, whole);
        struct stat st;
        assert_int_equal(fstat(j.fd, &st), 0);
        assert_int_equal(st.st_size, whole);
        append_ok(&j, rec("accept", J3), true);
        journal_close(&j);
        assert_whole_lines(dfd);
        replay_ids(dfd, (const char *const[]){ J1, J3 }, 2);

        /* a journal that is nothing but a torn line */
        int fd = openat(dfd, "journal", O_WRONLY | O_TRUNC | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "{\"ev\"", 5), 5);
        close(fd);
        assert_int_equal(journal_open(&j, dfd), 0);
        assert_int_equal(j.size, 0);
        append_ok(&j, rec("accept", J4), true);
        journal_close(&j);
        replay_ids(dfd, (const char *const[]){ J4 }, 1);
}

static void test_rewrite(void **state) {
        struct journal j;
        assert_int_equal(journal_open(&j, dfd), 0);
        append_ok(&j, rec("accept", J1), false);
        append_ok(&j, rec("accept", J2), false);
        append_ok(&j, rec("done", J1), false);
        json_t *keep[1] = { rec("accept", J3) };
        assert_int_equal(journal_rewrite(&j, keep, 1), 0);
        json_decref(keep[0]);
        assert_int_equal(j.lines, 1);
        append_ok(&j, rec("done", J3), false);
        journal_close(&j);
        struct journal_entry *e;
        size_t n;
        assert_int_equal(journal_replay(dfd, &e, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(e[0].id, J3);
        assert_true(e[0].done);
        journal_entries_free(e, n);
        /* no temporary file is left */
        assert_int_equal(faccessat(dfd, ".journal.tmp", F_OK, 0), -1);
        assert_int_equal(journal_open(&j, dfd), 0);
        assert_int_equal(journal_reset(&j), 0);
        journal_close(&j);
        assert_int_equal(journal_replay(dfd, &e, &n), 0);
        assert_int_equal(n, 0);
        free(e);
}

/* A rewrite that died before its rename left its temporary file: the next
 * open removes it and keeps the journal. */
static void test_open_removes_stale_tmp(void **state) {
        struct journal j;
        assert_int_equal(journal_open(&j, dfd), 0);
        append_ok(&j, rec("accept", J1), true);
        journal_close(&j);
        int fd = openat(dfd, ".journal.tmp", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "{\"ev\":\"acc", 10), 10);
        close(fd);
        assert_int_equal(journal_open(&j, dfd), 0);
        assert_int_equal(faccessat(dfd, ".journal.tmp", F_OK, 0), -1);
        journal_close(&j);
        replay_ids(dfd, (const char *const[]){ J1 }, 1);
}

static void test_proc_starttime(void **state) {
        unsigned long long a, b;
        assert_int_equal(proc_starttime(getpid(), &a), 0);
        assert_int_equal(proc_starttime(getpid(), &b), 0);
        assert_true(a > 0);
        assert_int_equal(a, b);
        unsigned long long one;
        assert_int_equal(proc_starttime(1, &one), 0);
        assert_true(one <= a);
}

static void test_rm_rf_deep(void **state) {
        /* 3000 levels with 64 file descriptors to spare */
        assert_int_equal(mkdirat(dfd, "ws", 0700), 0);
        int cur = openat(dfd, "ws", O_RDONLY | O_DIRECTORY);
        assert_true(cur >= 0);
        for (int i = 0; i < 3000; i++) {
                char f[16];
                snprintf(f, sizeof(f), "f%d", i);
                int fd = openat(cur, f, O_WRONLY | O_CREAT, 0600);
                assert_true(fd >= 0);
                close(fd);
                assert_int_equal(mkdirat(cur, "d", 0700), 0);
                int next = openat(cur, "d", O_RDONLY | O_DIRECTORY);
                assert_true(next >= 0);
                close(cur);
                cur = next;
        }
        /* the job's own names at the top do not get in the way */
        assert_int_equal(mkdirat(dfd, "ws/.sbx-rm-0", 0700), 0);
        assert_int_equal(mkdirat(dfd, "ws/.sbx-rm-0/x", 0700), 0);
        assert_int_equal(symlinkat("/etc", dfd, "ws/out"), 0);
        assert_int_equal(symlinkat("/etc", cur, "out"), 0);
        close(cur);

        struct rlimit old, low;
        assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
        low = old;
        low.rlim_cur = 64;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
        int r = rm_rf_at(dfd, "ws");
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
        assert_int_equal(r, 0);
        struct stat st;
        assert_int_equal(fstatat(dfd, "ws", &st, AT_SYMLINK_NOFOLLOW), -1);
        /* the symlinks went, not what they pointed at */
        assert_int_equal(stat("/etc/passwd", &st), 0);
}

static void test_rm_rf_plain(void **state) {
        assert_int_equal(rm_rf_at(dfd, "absent"), 0);
        int fd = openat(dfd, "file", O_WRONLY | O_CREAT, 0600);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(rm_rf_at(dfd, "file"), 0);
        struct stat st;
        assert_int_equal(fstatat(dfd, "file", &st, 0), -1);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
        const struct CMUnitTest tests[] = {
                T(test_replay),
                T(test_replay_end),
                T(test_reserve),
                T(test_replay_missing),
                T(test_replay_resync),
                T(test_open_cuts_torn_tail),
                T(test_rewrite),
                T(test_open_removes_stale_tmp),
                T(test_proc_starttime),
                T(test_rm_rf_deep),
                T(test_rm_rf_plain),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
