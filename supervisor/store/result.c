/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "result.h"
#include "util.h"

#define RESULT_MAX_BYTES (64u << 20)

static void record_name(const char *id, char *buf, size_t len) {
        snprintf(buf, len, "%s.json", id);
}

int result_store(int results_dirfd, const char *id, json_t *rec, bool sync_dir) {
        char name[64];
        record_name(id, name, sizeof(name));
        size_t n;
        _cleanup_free_ char *s = json_line(rec, &n);
        if (!s)
                return -ENOMEM;
        return write_file_durable(results_dirfd, name, s, n, 0600, sync_dir);
}

char *result_text(json_t *rec, size_t *ret_len) {
        return json_line(rec, ret_len);
}

void result_names(const char *id, char name[static RESULT_NAME_MAX], char tmp[static RESULT_NAME_MAX]) {
        record_name(id, name, RESULT_NAME_MAX);
        snprintf(tmp, RESULT_NAME_MAX, ".%s.tmp", name);
}

int result_load(int results_dirfd, const char *id, json_t **ret) {
        char name[64];
        record_name(id, name, sizeof(name));
        _cleanup_free_ char *s = NULL;
        size_t len;
        int r = read_file_at(results_dirfd, name, RESULT_MAX_BYTES, &s, &len);
        if (r < 0)
                return r;
        json_t *j = json_loadb(s, len, 0, NULL);
        if (!j)
                return -EBADMSG;
        *ret = j;
        return 0;
}

int result_exists(int results_dirfd, const char *id) {
        char name[64];
        record_name(id, name, sizeof(name));
        return faccessat(results_dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

uint64_t parse_rfc3339_ms(const char *s) {
        struct tm tm;
        unsigned ms = 0;
        memset(&tm, 0, sizeof(tm));
        if (!s)
                return 0;
        const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return 0;
        if (*p == '.')
                ms = (unsigned) strtoul(p + 1, NULL, 10);
        time_t t = timegm(&tm);
        return t < 0 ? 0 : (uint64_t) t * 1000 + ms;
}
