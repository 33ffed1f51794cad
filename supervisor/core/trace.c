/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "trace.h"
#include "util.h"

static bool lower_hex(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

static bool all_zero(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (s[i] != '0')
                        return false;
        return true;
}

bool trace_valid(const char *s) {
        size_t len = strlen(s);
        if (len < TRACEPARENT_LEN)
                return false;
        /* version-traceid-parentid-flags, each of fixed width */
        if (!lower_hex(s, 2) || s[2] != '-' || !lower_hex(s + 3, 32) || s[35] != '-' || !lower_hex(s + 36, 16) ||
            s[52] != '-' || !lower_hex(s + 53, 2))
                return false;
        if (memcmp(s, "ff", 2) == 0)
                return false;
        /* Version 00 has exactly these fields; a later one may add more
         * after a '-'. */
        if (memcmp(s, "00", 2) == 0 ? len != TRACEPARENT_LEN : (len > TRACEPARENT_LEN && s[TRACEPARENT_LEN] != '-'))
                return false;
        return !all_zero(s + 3, 32) && !all_zero(s + 36, 16);
}

static void random_hex(char *out, size_t bytes) {
        unsigned char b[16];
        do
                randombytes_buf(b, bytes);
        while (sodium_is_zero(b, bytes));
        hex_encode(b, bytes, out);
}

int trace_child(const char *parent, char out[static TRACEPARENT_LEN + 1]) {
        char trace[TRACE_ID_LEN + 1], span[17], flags[3] = "01";
        if (parent) {
                if (!trace_valid(parent))
                        return -EINVAL;
                memcpy(trace, parent + 3, TRACE_ID_LEN);
                trace[TRACE_ID_LEN] = '\0';
                memcpy(flags, parent + 53, 2);
        } else {
                random_hex(trace, 16);
        }
        random_hex(span, 8);
        snprintf(out, TRACEPARENT_LEN + 1, "00-%s-%s-%s", trace, span, flags);
        return 0;
}

void trace_id_of(const char *traceparent, char out[static TRACE_ID_LEN + 1]) {
        memcpy(out, traceparent + 3, TRACE_ID_LEN);
        out[TRACE_ID_LEN] = '\0';
}
