/* SPDX-License-Identifier: Apache-2.0 */
/* The journal and the results on a disk that fills up or is read-only, with
 * the faults injected for real: a tiny tmpfs filled to its last page (so
 * that a write is cut short in the middle, as ENOSPC does it), and a
 * read-only bind mount. A journal append is all or nothing and the next one
 * after space is freed is replayed; a journal rewrite that fails leaves the
 * old journal whole and in use; a record that cannot be written leaves
 * nothing; the results cache stays whole lines, a record it missed is found
 * at the next load, and it is never held open for writing. Needs root
 * (mounts, in a mount namespace of its own); skipped with the reason
 * otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "journal.h"
#include "result.h"
#include "util.h"

static char dir[64];
static int fsfd = -1; /* the tiny file system */

static void sub(char path[static 128], const char *name) {
        snprintf(path, 128, "%s/%s", dir, name);
}

/* A fresh tmpfs of size_kib at DIR/fs for each test. */
static int mount_tiny(void **state, unsigned size_kib) {
        char path[128], opts[64];
        strcpy(dir, "/tmp/sbx-fault-test.XXXXXX");
        assert_non_null(mkdtemp(dir));
        sub(path, "fs");
        snprintf(opts, sizeof(opts), "size=%uk,mode=0700", size_kib);
        assert_int_equal(mkdir(path, 0700), 0);
        assert_int_equal(mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts), 0);
        fsfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fsfd >= 0);
        return 0;
}

static int setup_64k(void **state) {
        return mount_tiny(state, 64);
}

static int setup_256k(void **state) {
        return mount_tiny(state, 256);
}

static int teardown(void **state) {
        char path[128];
        close(fsfd);
        sub(path, "ro");
        umount2(path, MNT_DETACH);
        sub(path, "fs");
        umount2(path, MNT_DETACH);
        int up = open("/tmp", O_RDONLY | O_DIRECTORY);
        rm_rf_at(up, dir + 5);
        close(up);
        return 0;
}

/* Fill the file system to its last page; what is left is the slack at the
 * end of the files already there. */
static void fill(void) {
        int fd = openat(fsfd, "filler", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        static const char page[4096];
        ssize_t n;
        while ((n = write(fd, page, sizeof(page))) > 0)
                ;
        assert_int_equal(n, -1);
        assert_int_equal(errno, ENOSPC);
        close(fd);
}

static void unfill(void) {
        assert_int_equal(unlinkat(fsfd, "filler", 0), 0);
}

/* The same file system through a read-only bind mount, at DIR/ro: files
 * stay open for writing on the first one (remounting it read-only would be
 * refused while they are). */
static int read_only_view(void) {
        char fs[128], ro[128];
        sub(fs, "fs");
        sub(ro, "ro");
        assert_int_equal(mkdir(ro, 0700), 0);
        assert_int_equal(mount(fs, ro, NULL, MS_BIND, NULL), 0);
        assert_int_equal(mount(NULL, ro, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), 0);
        int fd = open(ro, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        return fd;
}

/* The fault is real: a plain write of len bytes at fd's end is cut short
 * (the slack in the last page), not refused. The file is put back. */
static void assert_write_cut_short(int fd, off_t size, size_t len) {
        char *buf = calloc(1, len);
        assert_non_null(buf);
        ssize_t w = write(fd, buf, len);
        free(buf);
        assert_true(w > 0 && (size_t) w < len);
        assert_int_equal(ftruncate(fd, size), 0);
}

static char *slurp(int dirfd, const char *name, size_t *ret_len) {
        char *s = NULL;
        int r = read_file_at(dirfd, name, 1 << 24, &s, ret_len);
        assert_int_equal(r, 0);
        return s;
}

/* Every line whole and ending in a newline; check(line) for each. */
static unsigned assert_whole_lines(const char *name, bool json) {
        size_t len;
        char *s = slurp(fsfd, name, &len);
        unsigned n = 0;
        assert_true(len == 0 || s[len - 1] == '\n');
        for (char *p = s; p < s + len; n++) {
                char *nl = memchr(p, '\n', (size_t) (s + len - p));
                assert_non_null(nl);
                if (json) {
                        json_t *v = json_loadb(p, (size_t) (nl - p), 0, NULL);
                        assert_true(json_is_object(v));
                        json_decref(v);
                }
                p = nl + 1;
        }
        free(s);
        return n;
}

/* ------------------------------------------------------------ journal */

#define J1 "j00000000000000000001"
#define J2 "j00000000000000000002"
#define J3 "j00000000000000000003"
#define J4 "j00000000000000000004"

static json_t *rec(const char *ev, const char *id) {
        return json_pack("{s:s, s:s, s:s, s:i, s:[s]}", "ev", ev, "job", id, "tenant", "t", "uid", 7, "command", "true");
}

/* An accept record with a command of len bytes. */
static json_t *big_rec(const char *id, size_t len) {
        char *arg = malloc(len + 1);
        assert_non_null(arg);
        memset(arg, 'x', len);
        arg[len] = '\0';
        json_t *r = json_pack("{s:s, s:s, s:s, s:i, s:[s]}", "ev", "accept", "job", id, "tenant", "t", "uid", 7, "command", arg);
        free(arg);
        return r;
}

static void append_ok(struct journal *j, json_t *r) {
        assert_int_equal(journal_append(j, r, true), 0);
        json_decref(r);
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

/* What the torture run found: ENOSPC in the middle of an append left half a
 * line, and the next job's entry was glued onto it. */
static void test_journal_append_enospc(void **state) {
        struct journal j;
        assert_int_equal(journal_open(&j, fsfd), 0);
        append_ok(&j, rec("accept", J1));
        off_t before = j.size;
        fill();
        assert_write_cut_short(j.fd, before, 6000);

        json_t *big = big_rec(J2, 6000);
        for (int sync = 0; sync < 2; sync++) {
                assert_int_equal(journal_append(&j, big, sync), -ENOSPC);
                struct stat st;
                assert_int_equal(fstat(j.fd, &st), 0);
                assert_int_equal(st.st_size, before);
                assert_int_equal(j.size, before);
                assert_int_equal(j.lines, 1);
                assert_int_equal(assert_whole_lines("journal", true), 1);
        }
        json_decref(big);

        /* once there is room again, the next job's entry is a whole line
         * and is replayed */
        unfill();
        append_ok(&j, rec("accept", J3));
        append_ok(&j, big_rec(J4, 6000));
        journal_close(&j);
        assert_int_equal(assert_whole_lines("journal", true), 3);
        replay_ids(fsfd, (const char *const[]){ J1, J3, J4 }, 3);
}

/* After a failed rewrite the old journal is whole, and no temporary file is
 * left behind. */
static void assert_old_journal_kept(const char *old, size_t old_len) {
        size_t len;
        char *now = slurp(fsfd, "journal", &len);
        assert_int_equal(len, old_len);
        assert_memory_equal(now, old, len);
        free(now);
        assert_int_equal(faccessat(fsfd, ".journal.tmp", F_OK, AT_SYMLINK_NOFOLLOW), -1);
        assert_int_equal(errno, ENOENT);
}

/* Recovery rewrites the journal to the entries whose record is not durable:
 * on a full disk that fails, and it must fail without losing any. */
static void test_journal_rewrite_enospc(void **state) {
        struct journal j;
        assert_int_equal(journal_open(&j, fsfd), 0);
        append_ok(&j, rec("accept", J1));
        append_ok(&j, rec("accept", J2));
        append_ok(&j, rec("done", J1));
        size_t old_len;
        char *old = slurp(fsfd, "journal", &old_len);
        fill();

        json_t *keep[2] = { rec("accept", J2), big_rec(J3, 6000) };
        assert_int_equal(journal_rewrite(&j, keep, 2), -ENOSPC);
        json_decref(keep[0]);
        json_decref(keep[1]);
        assert_old_journal_kept(old, old_len);
        free(old);
        assert_int_equal(j.size, (off_t) old_len);
        /* still the one appended to */
        unfill();
        append_ok(&j, rec("accept", J4));
        journal_close(&j);
        replay_ids(fsfd, (const char *const[]){ J1, J2, J4 }, 3);
}

static void test_journal_read_only(void **state) {
        struct journal j;
        assert_int_equal(journal_open(&j, fsfd), 0);
        append_ok(&j, rec("accept", J1));
        append_ok(&j, rec("done", J1));
        append_ok(&j, rec("accept", J2));
        size_t old_len;
        char *old = slurp(fsfd, "journal", &old_len);
        int rofd = read_only_view();

        struct journal other;
        assert_int_equal(journal_open(&other, rofd), -EROFS);
        assert_int_equal(other.fd, -1);

        j.dirfd = rofd; /* the directory turned read-only under the daemon */
        json_t *keep[1] = { rec("accept", J2) };
        assert_int_equal(journal_rewrite(&j, keep, 1), -EROFS);
        json_decref(keep[0]);
        assert_int_equal(journal_reset(&j), -EROFS);
        assert_old_journal_kept(old, old_len);
        free(old);
        append_ok(&j, rec("accept", J3));
        journal_close(&j);
        replay_ids(fsfd, (const char *const[]){ J1, J2, J3 }, 3);
        close(rofd);
}

/* ------------------------------------------------------------ results */

static void job_id(unsigned n, char id[static 24]) {
        snprintf(id, 24, "j%020x", n);
}

static json_t *record(unsigned n, const char *key) {
        char id[24], created[64], ended[64];
        job_id(n, id);
        uint64_t t = 1795000000000ull + n * 1000ull;
        json_t *r = json_pack("{s:i, s:s, s:s, s:s, s:i, s:s, s:s}", "v", 1, "job", id, "tenant", "alice", "state", "succeeded",
                              "exit_code", 0, "created", format_rfc3339(t, created, sizeof(created)), "ended",
                              format_rfc3339(t + 10, ended, sizeof(ended)));
        assert_non_null(r);
        json_object_set_new(r, "idempotency_key", key ? json_string(key) : json_null());
        return r;
}

static json_t *store(unsigned n, const char *key) {
        char id[24];
        job_id(n, id);
        json_t *r = record(n, key);
        assert_int_equal(result_store(fsfd, id, r, true), 0);
        return r;
}

static void add(struct result_index *ix, json_t *r) {
        assert_int_equal(result_index_add(ix, r), 0);
        json_decref(r);
}

static struct done_entry *find_n(struct result_index *ix, unsigned n) {
        char id[24];
        job_id(n, id);
        return result_index_find(ix, id);
}

/* A record that cannot be written leaves nothing behind. */
static void test_record_enospc(void **state) {
        fill();
        json_t *r = record(1, NULL);
        assert_int_equal(result_store(fsfd, "j00000000000000000001", r, true), -ENOSPC);
        json_decref(r);
        assert_false(result_exists(fsfd, "j00000000000000000001"));
        assert_int_equal(faccessat(fsfd, ".j00000000000000000001.json.tmp", F_OK, 0), -1);
}

/* The cache's append is cut short by ENOSPC: it is cut back to whole lines,
 * the job stays indexed, and the next load reads its record. */
static off_t cache_size(void) {
        struct stat st;
        assert_int_equal(fstatat(fsfd, "index", &st, 0), 0);
        return st.st_size;
}

static void test_cache_append_enospc(void **state) {
        struct result_index ix = { 0 };
        assert_int_equal(result_index_load(&ix, fsfd), 0);
        /* learn a line's length without its key, then bring the cache to
         * 20 bytes short of a page boundary with a long key */
        add(&ix, store(1, "k"));
        off_t line = cache_size() - (off_t) strlen("sbx-results-index 1\n") - 1;
        size_t need = (size_t) (4096 - 20 - cache_size() % 4096 + 4096) % 4096;
        if (need < (size_t) line + 1)
                need += 4096;
        char *key = malloc(need - (size_t) line + 1);
        assert_non_null(key);
        memset(key, 'k', need - (size_t) line);
        key[need - (size_t) line] = '\0';
        add(&ix, store(2, key));
        free(key);
        assert_int_equal(cache_size() % 4096, 4096 - 20);
        json_t *r3 = store(3, NULL); /* durable before the disk fills */
        off_t before = cache_size();
        fill();
        int fd = openat(fsfd, "index", O_WRONLY | O_APPEND | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_write_cut_short(fd, before, 200);
        close(fd);

        add(&ix, r3);
        assert_non_null(find_n(&ix, 3)); /* indexed all the same */
        assert_int_equal(cache_size(), before);
        assert_int_equal(assert_whole_lines("index", false), 3);

        unfill();
        add(&ix, store(4, NULL));
        assert_int_equal(assert_whole_lines("index", false), 4);
        result_index_free(&ix);
        assert_int_equal(result_index_load(&ix, fsfd), 0);
        assert_int_equal(ix.n, 4);
        for (unsigned i = 1; i <= 4; i++)
                assert_non_null(find_n(&ix, i));
        result_index_free(&ix);
        assert_int_equal(assert_whole_lines("index", false), 5); /* rewritten with job 3 */
}

/* A rewrite of the cache that fails keeps the old one, still appended to. */
static void test_cache_save_enospc(void **state) {
        struct result_index ix = { 0 };
        assert_int_equal(result_index_load(&ix, fsfd), 0);
        for (unsigned i = 1; i <= 5; i++)
                add(&ix, store(i, NULL));
        json_t *r6 = store(6, NULL);
        size_t old_len;
        char *old = slurp(fsfd, "index", &old_len);
        fill();
        assert_int_equal(result_index_save(&ix), -ENOSPC);
        size_t len;
        char *now = slurp(fsfd, "index", &len);
        assert_int_equal(len, old_len);
        assert_memory_equal(now, old, len);
        free(now);
        free(old);
        assert_int_equal(faccessat(fsfd, ".index.tmp", F_OK, 0), -1);
        unfill();
        add(&ix, r6);
        assert_int_equal(assert_whole_lines("index", false), 7);
        result_index_free(&ix);
}

/* A results directory that turned read-only: the index loads from the
 * records and lives in memory. */
static void test_results_read_only(void **state) {
        for (unsigned i = 1; i <= 3; i++)
                json_decref(store(i, NULL));
        int rofd = read_only_view();
        struct result_index ix = { 0 };
        assert_int_equal(result_index_load(&ix, rofd), 0);
        assert_int_equal(ix.n, 3);
        add(&ix, record(4, "k"));
        assert_non_null(result_index_find_key(&ix, "alice", "k"));
        /* retention cannot delete: the entries stay for the next sweep */
        assert_int_equal(result_sweep(&ix, rofd, 0, UINT64_MAX / 2), 0);
        assert_int_equal(ix.n, 4);
        result_index_free(&ix);
        assert_int_equal(faccessat(fsfd, "index", F_OK, 0), -1);
        close(rofd);
}

/* The index holds no file open for writing: the results file system can
 * turn read-only under it (as after an I/O error), and back. */
static void test_cache_not_held_open(void **state) {
        char fs[128];
        sub(fs, "fs");
        struct result_index ix = { 0 };
        assert_int_equal(result_index_load(&ix, fsfd), 0);
        add(&ix, store(1, NULL));
        json_t *r2 = store(2, NULL);
        assert_int_equal(mount(NULL, fs, NULL, MS_REMOUNT | MS_RDONLY, NULL), 0);
        add(&ix, r2); /* indexed; its cache line cannot be written */
        assert_non_null(find_n(&ix, 2));
        assert_int_equal(mount(NULL, fs, NULL, MS_REMOUNT, NULL), 0);
        add(&ix, store(3, NULL));
        result_index_free(&ix);
        assert_int_equal(assert_whole_lines("index", false), 3);
        assert_int_equal(result_index_load(&ix, fsfd), 0);
        assert_int_equal(ix.n, 3);
        result_index_free(&ix);
        assert_int_equal(assert_whole_lines("index", false), 4);
}

/* The mounts happen in a mount namespace of our own whose mounts do not
 * propagate to the host's; NULL, or why they cannot. */
static const char *private_mounts(void) {
        if (geteuid() != 0)
                return "not root: cannot mount a tiny tmpfs to fill up";
        /* the raw call: -I supervisor makes <sched.h> the scheduler's
         * header there */
        if (syscall(SYS_unshare, CLONE_NEWNS) < 0)
                return "cannot make a mount namespace";
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return "cannot make the mounts private";
        return NULL;
}

#define T64(f) cmocka_unit_test_setup_teardown(f, setup_64k, teardown)
#define T256(f) cmocka_unit_test_setup_teardown(f, setup_256k, teardown)

int main(void) {
        /* cmocka's skip() says "not ok ... # SKIP", which the TAP driver
         * counts as a failure: skip the whole file the TAP way instead. */
        const char *why = private_mounts();
        if (why) {
                printf("1..0 # SKIP %s\n", why);
                return 0;
        }
        const struct CMUnitTest tests[] = {
                T64(test_journal_append_enospc),
                T64(test_journal_rewrite_enospc),
                T256(test_journal_read_only),
                T64(test_record_enospc),
                T256(test_cache_append_enospc),
                T64(test_cache_save_enospc),
                T64(test_cache_not_held_open),
                T256(test_results_read_only),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
