/* SPDX-License-Identifier: Apache-2.0 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "util.h"

static bool log_json;
static bool log_prefix;
static bool log_verbose;

void log_setup(bool json) {
        log_json = json;
        /* systemd sets JOURNAL_STREAM when stderr is connected to the
         * journal; then "<N>" prefixes carry the priority. */
        log_prefix = getenv("JOURNAL_STREAM") != NULL;
        log_verbose = getenv("SBX_DEBUG") != NULL;
}

void log_msg(int prio, const char *fmt, ...) {
        static const char *const names[] = { "emerg", "alert", "crit", "error", "warning", "notice", "info", "debug" };
        char msg[2048];
        va_list ap;

        if (prio == LOG_DEBUG && !log_verbose)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        for (char *p = msg; *p; p++)
                if (*p == '\n')
                        *p = ' ';

        if (log_json) {
                char ts[64];
                json_t *o = json_pack("{s:s, s:s, s:s}", "time", format_rfc3339(now_real_ms(), ts, sizeof(ts)),
                                      "level", names[prio & 7], "message", msg);
                char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
                if (s)
                        fprintf(stderr, "%s\n", s);
                free(s);
                json_decref(o);
        } else if (log_prefix)
                fprintf(stderr, "<%d>%s\n", prio, msg);
        else
                fprintf(stderr, "sbx-supervisord: %s%s%s\n", prio <= LOG_WARNING ? names[prio & 7] : "",
                        prio <= LOG_WARNING ? ": " : "", msg);
        fflush(stderr);
}
