/* SPDX-License-Identifier: Apache-2.0 */
/* Result records: a durable write replaces a record whole, the index reads
 * it back, and retention deletes it with its files. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "result.h"
#include "util.h"

#define J1 "j00000000000000000001"
#define J2 "j00000000000000000002"

static char dir[64];
static int dfd = -1;

static int setup(void **state) {
        strcpy(dir, "/tmp/sbx-result-test.XXXXXX");
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_result_store),
                cmocka_unit_test(test_rfc3339),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
