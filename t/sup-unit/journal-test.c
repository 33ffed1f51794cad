/* SPDX-License-Identifier: Apache-2.0 */
/* The accepted-job journal and result records: what a crash can leave
 * behind is read back correctly (a torn last line is ignored, a job with
 * "done" is not recovered twice), compaction keeps exactly the jobs in
 * flight, and a durable write replaces a record whole. A finished job's
 * workspace goes whatever the job built in it: a tree deeper than the
 * daemon may open directories, symlinks that point out, odd names. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "journal.h"
#include "result.h"
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

#define J1 "j00000000000000000001"
#define J2 "j00000000000000000002"
#define J3 "j00000000000000000003"

static void test_replay(void **state) {
        struct journal j;
        assert_int_equal(journal_open(&j, dfd), 0);
        json_t *r;
        assert_int_equal(journal_append(&j, r = rec("accept", J1), true), 0);
        json_decref(r);
        assert_int_equal(journal_append(&j, r = rec("accept", J2), true), 0);
        json_decref(r);
        r = json_pack("{s:s, s:s, s:i, s:I}", "ev", "start", "job", J1, "pid", 4242, "starttime", (json_int_t) 99);
        assert_int_equal(journal_append(&j, r, false), 0);
        json_decref(r);
        assert_int_equal(journal_append(&j, r = rec("done", J2), false), 0);
        json_decref(r);
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
        assert_int_equal(e[0].starttime, 99);
        assert_int_equal(e[0].caller_uid, 7);
        assert_string_equal(e[0].tenant, "t");
        assert_string_equal(e[1].id, J2);
        assert_true(e[1].done);
        journal_entries_free(e, n);
}

static void test_rewrite(void **state) {
        struct journal j;
        assert_int_equal(journal_open(&j, dfd), 0);
        json_t *keep[1] = { rec("accept", J3) };
        assert_int_equal(journal_rewrite(&j, keep, 1), 0);
        json_decref(keep[0]);
        json_t *r;
        assert_int_equal(journal_append(&j, r = rec("done", J3), false), 0);
        json_decref(r);
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

static void test_result_store(void **state) {
        assert_int_equal(mkdirat(dfd, J1, 0700), 0); /* its output directory */
        json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:s}", "job", J1, "tenant", "t", "state", "succeeded", "created",
                              "2026-11-22T04:00:00.000Z", "ended", "2026-11-22T04:00:01.500Z");
        assert_int_equal(result_store(dfd, J1, r, true), 0);
        json_object_set_new(r, "state", json_string("failed"));
        assert_int_equal(result_store(dfd, J1, r, false), 0);
        assert_int_equal(faccessat(dfd, "." J1 ".json.tmp", F_OK, 0), -1);
        json_decref(r);
        json_t *back;
        assert_int_equal(result_load(dfd, J1, &back), 0);
        assert_string_equal(json_string_value(json_object_get(back, "state")), "failed");
        json_decref(back);
        assert_true(result_exists(dfd, J1));
        assert_false(result_exists(dfd, J2));

        struct result_index ix = { 0 };
        assert_int_equal(result_index_load(&ix, dfd), 0);
        assert_int_equal(ix.n, 1);
        assert_int_equal(ix.e[0].ended_ms - ix.e[0].created_ms, 1500);
        /* retention: kept until it is older than the setting */
        uint64_t ended = ix.e[0].ended_ms;
        assert_int_equal(result_sweep(&ix, dfd, 1000, ended + 500), 0);
        assert_int_equal(result_sweep(&ix, dfd, 1000, ended + 1500), 1);
        assert_int_equal(ix.n, 0);
        assert_false(result_exists(dfd, J1));
        assert_int_equal(faccessat(dfd, J1, F_OK, 0), -1); /* and its files */
        result_index_free(&ix);
}

static void test_rfc3339(void **state) {
        char buf[64];
        uint64_t t = 1795000000123ull;
        assert_int_equal(parse_rfc3339_ms(format_rfc3339(t, buf, sizeof(buf))), t);
        assert_int_equal(parse_rfc3339_ms("garbage"), 0);
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_replay),
                cmocka_unit_test(test_rewrite),
                cmocka_unit_test(test_result_store),
                cmocka_unit_test(test_rfc3339),
                cmocka_unit_test(test_rm_rf_deep),
                cmocka_unit_test(test_rm_rf_plain),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
