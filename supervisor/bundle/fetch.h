/* SPDX-License-Identifier: Apache-2.0 */
/* Getting a registry's files with libcurl, on a pool thread (never on the
 * event loop): http(s) and file:// only, at most 5 redirects and each
 * only within the origin first asked (scheme, host and port: never to
 * file://, to another host or port), TLS certificates verified, a connect timeout, a whole-transfer
 * timeout and a stall timeout, a byte bound checked as the bytes come, and
 * a stop flag the daemon raises when it stops. Failures are sorted into
 * what the caller reports: the registry could not be reached or failed to
 * answer, the file is not there, it is too big, it came short. */
#pragma once

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum fetch_status {
        FETCH_OK,
        FETCH_UNAVAILABLE, /* no connection, a timeout, a TLS failure, HTTP 5xx */
        FETCH_NOT_FOUND,   /* HTTP 404 or 410, or no such file */
        FETCH_REFUSED,     /* another HTTP error, or a redirect to another origin */
        FETCH_TOO_BIG,     /* more bytes than the bound */
        FETCH_TRUNCATED,   /* the transfer ended before the announced length */
        FETCH_STOPPED,     /* the daemon is stopping */
        FETCH_LOCAL,       /* our side failed (memory, disk) */
};

struct fetch_opts {
        uint64_t timeout_ms;
        uint64_t connect_timeout_ms;
        uint64_t stall_timeout_ms;
        const atomic_bool *stop;
        const char *accept;   /* the Accept header sent, or NULL for curl's */
};

struct fetch_result {
        enum fetch_status status;
        char msg[512];        /* "GET URL: why" when status is not FETCH_OK */
        uint64_t bytes;       /* received */
        int local_err;        /* with FETCH_LOCAL: the errno of keeping the bytes, if one */
};

/* Once, before any thread uses libcurl. */
int fetch_global_init(void);
void fetch_global_done(void);

/* url into a new buffer of at most max bytes (NUL-terminated, *ret_len
 * without it). 0, or -1 with res saying why. */
int fetch_memory(const char *url, const struct fetch_opts *o, size_t max, char **ret, size_t *ret_len,
                 struct fetch_result *res);
/* url appended to fd, at most max bytes, its SHA-256 computed on the way. */
int fetch_file(const char *url, const struct fetch_opts *o, int fd, uint64_t max, unsigned char sha256[32],
               struct fetch_result *res);
