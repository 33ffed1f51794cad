/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-unpack: unpacks one bundle archive for the daemon, confined
 * (unpack.h). Started only by the daemon, in new namespaces, with the
 * archive on fd 3, the empty staging tree on fd 4 and the reply pipe on
 * fd 5; writes one struct unpack_reply and exits. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "parse.h"
#include "unpack.h"

static int number(const char *s, uint64_t max, uint64_t *ret) {
        return parse_uint64(s, max, ret);
}

static int args_parse(char **argv, struct unpack_args *a) {
        uint64_t path;
        if (number(argv[1], UINT64_MAX, &a->lim.x.max_bytes) < 0 || number(argv[2], UINT64_MAX, &a->lim.x.max_entries) < 0 ||
            number(argv[3], EXTRACT_MAX_PATH, &path) < 0 || number(argv[4], 1u << 20, &a->cpu_seconds) < 0)
                return -EINVAL;
        a->lim.x.max_path = (size_t) path;
        return 0;
}

int main(int argc, char **argv) {
        struct unpack_reply rp;
        struct unpack_args a;
        struct sbx_error err;
        struct extract_stats st = { 0 };
        atomic_bool stop = false; /* the daemon stops this process by killing it */
        int r;
        memset(&rp, 0, sizeof(rp));
        sbx_error_clear(&err);
        if (argc != UNPACK_ARGC || args_parse(argv, &a) < 0) {
                fprintf(stderr, UNPACK_PROGRAM ": started only by sbx-supervisord(8)\n");
                return 2;
        }
        r = unpack_confine(&a, &err);
        rp.sandbox = r < 0;
        if (r == 0)
                r = extract_archive(UNPACK_FD_ARCHIVE, UNPACK_FD_TREE, &a.lim.x, &stop, &st, &err);
        rp.rc = r;
        rp.bytes = st.bytes;
        rp.entries = st.entries;
        if (r < 0)
                snprintf(rp.msg, sizeof(rp.msg), "%s", err.msg);
        /* _exit: nothing else to run, and no exit handler may make a
         * call the filter forbids. */
        _exit(fd_write_all(UNPACK_FD_REPLY, &rp, sizeof(rp)) < 0 ? 1 : 0);
}
