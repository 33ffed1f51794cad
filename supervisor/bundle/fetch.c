/* SPDX-License-Identifier: Apache-2.0 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fetch.h"
#include "macro.h"
#include "urlmatch.h"

#define MAX_REDIRECTS 5

struct sink {
        CURL *h;              /* the transfer under way */
        uint64_t skipped;     /* bytes of redirects' bodies, not kept */
        /* to memory */
        char *buf;
        size_t len, cap;
        /* or to a file, hashed */
        int fd;
        crypto_hash_sha256_state hash;
        uint64_t total, max;
        bool too_big;
        int write_err;        /* -errno */
        const atomic_bool *stop;
};

int fetch_global_init(void) {
        return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -EIO;
}

void fetch_global_done(void) {
        curl_global_cleanup();
}

static size_t on_data(char *p, size_t size, size_t n, void *ud) {
        struct sink *s = ud;
        size_t len = size * n;
        long code = 0;
        curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 300 && code <= 399) {
                /* a redirect's own body (run() decides where to go) */
                if (len > s->max - s->skipped) {
                        s->too_big = true;
                        return 0;
                }
                s->skipped += len;
                return len;
        }
        if (len > s->max - s->total) {
                s->too_big = true;
                return 0;
        }
        if (s->fd < 0) {
                if (s->len + len + 1 > s->cap) {
                        size_t cap = s->cap ? s->cap : 16384;
                        while (cap < s->len + len + 1)
                                cap *= 2;
                        char *b = realloc(s->buf, cap);
                        if (!b) {
                                s->write_err = -ENOMEM;
                                return 0;
                        }
                        s->buf = b;
                        s->cap = cap;
                }
                memcpy(s->buf + s->len, p, len);
                s->len += len;
                s->buf[s->len] = '\0';
        } else {
                for (size_t off = 0; off < len;) {
                        ssize_t w = write(s->fd, p + off, len - off);
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0) {
                                s->write_err = -errno;
                                return 0;
                        }
                        off += (size_t) w;
                }
                crypto_hash_sha256_update(&s->hash, (const unsigned char *) p, len);
        }
        s->total += len;
        return len;
}

/* Called at least once a second while a transfer lasts, stalled or not. */
static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
        struct sink *s = ud;
        return s->stop && atomic_load(s->stop) ? 1 : 0;
}

_printf_(3, 4) static void say(struct fetch_result *res, enum fetch_status st, const char *fmt, ...) {
        va_list ap;
        res->status = st;
        va_start(ap, fmt);
        vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
        va_end(ap);
}

static enum fetch_status classify_http(long code) {
        if (code == 404 || code == 410)
                return FETCH_NOT_FOUND;
        if (code >= 500 || code == 408 || code == 429)
                return FETCH_UNAVAILABLE;
        return FETCH_REFUSED;
}

static void classify(CURL *h, CURLcode c, const char *url, const char *errbuf, const struct sink *s,
                     struct fetch_result *res) {
        long code = 0;
        const char *why = errbuf[0] ? errbuf : curl_easy_strerror(c);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        res->bytes = s->total;
        switch (c) {
        case CURLE_OK:
                if (code != 0 && code != 200)
                        say(res, classify_http(code), "GET %s: HTTP %ld", url, code);
                else
                        res->status = FETCH_OK;
                return;
        case CURLE_HTTP_RETURNED_ERROR:
                say(res, classify_http(code), "GET %s: HTTP %ld", url, code);
                return;
        case CURLE_WRITE_ERROR:
                if (s->too_big)
                        say(res, FETCH_TOO_BIG, "GET %s: larger than %" PRIu64 " bytes", url, s->max);
                else {
                        say(res, FETCH_LOCAL, "GET %s: cannot keep it: %s", url, strerror(-s->write_err));
                        res->local_err = -s->write_err;
                }
                return;
        case CURLE_FILESIZE_EXCEEDED:
                say(res, FETCH_TOO_BIG, "GET %s: larger than %" PRIu64 " bytes", url, s->max);
                return;
        case CURLE_PARTIAL_FILE:
                say(res, FETCH_TRUNCATED, "GET %s: the transfer ended early after %" PRIu64 " bytes", url, s->total);
                return;
        case CURLE_ABORTED_BY_CALLBACK:
                say(res, FETCH_STOPPED, "GET %s: stopped (the daemon is stopping)", url);
                return;
        case CURLE_FILE_COULDNT_READ_FILE:
                say(res, FETCH_NOT_FOUND, "GET %s: %s", url, why);
                return;
        case CURLE_UNSUPPORTED_PROTOCOL:
                say(res, FETCH_REFUSED, "GET %s: %s (registries are http, https or file)", url, why);
                return;
        case CURLE_OPERATION_TIMEDOUT:
                say(res, FETCH_UNAVAILABLE, "GET %s: timed out (%s)", url, why);
                return;
        default:
                say(res, FETCH_UNAVAILABLE, "GET %s: %s", url, why);
                return;
        }
}

static uint64_t mono_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/* One request, within what is left of the whole transfer's timeout;
 * redirects are not followed here. */
static CURLcode perform(const char *url, const struct fetch_opts *o, uint64_t left_ms, struct sink *s,
                        char errbuf[static CURL_ERROR_SIZE]) {
        CURL *h = s->h;
        long stall_s = (long) ((o->stall_timeout_ms + 999) / 1000);
        curl_easy_setopt(h, CURLOPT_URL, url);
        /* Threads: no signals (DNS timeouts through SIGALRM would hit the
         * daemon). */
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https,file");
        curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        /* run() follows redirects itself, within the registry's origin */
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long) o->connect_timeout_ms);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long) left_ms);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_s > 0 ? stall_s : 1L);
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) s->max);
        curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
        /* The bytes as the registry has them: a .tar.gz served with
         * Content-Encoding: gzip must not be unpacked on the way. */
        curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);
        curl_easy_setopt(h, CURLOPT_USERAGENT, "sbx-supervisord/" PACKAGE_VERSION);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, s);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
        struct curl_slist *hdr = NULL;
        if (o->accept) {
                char line[160];
                snprintf(line, sizeof(line), "Accept: %s", o->accept);
                if (!(hdr = curl_slist_append(NULL, line)))
                        return CURLE_OUT_OF_MEMORY;
        }
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
        CURLcode c = curl_easy_perform(h);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
        curl_slist_free_all(hdr);
        return c;
}

/* Where a redirect may go: within the origin (scheme, host, port) of the
 * URL first asked for. curl's own following would send the daemon to any
 * host a registry names, its neighbours and a cloud's metadata address
 * among them; an origin that moves its files elsewhere is configured
 * there. NULL, or why not. */
static const char *redirect_refused(const char *from, const char *to) {
        struct urlmatch a, b;
        const char *why = NULL;
        if (urlmatch_parse(from, &a, &why) < 0)
                return "the registry's own URL cannot be compared (no http or https URL, or one with userinfo)";
        if (urlmatch_parse(to, &b, &why) < 0) {
                urlmatch_done(&a);
                return why;
        }
        if (!urlmatch_same_origin(&a, &b))
                why = "another origin: a registry redirects only within its own scheme, host and port";
        urlmatch_done(&a);
        urlmatch_done(&b);
        return why;
}

static int run(const char *url, const struct fetch_opts *o, struct sink *s, struct fetch_result *res) {
        char errbuf[CURL_ERROR_SIZE] = "";
        _cleanup_free_ char *cur = NULL;
        memset(res, 0, sizeof(*res));
        s->h = curl_easy_init();
        if (!s->h) {
                say(res, FETCH_LOCAL, "GET %s: cannot start a transfer", url);
                return -1;
        }
        uint64_t start = mono_ms();
        for (unsigned hops = 0;; hops++) {
                long code = 0;
                char *to = NULL;
                uint64_t spent = mono_ms() - start;
                errbuf[0] = '\0';
                CURLcode c = perform(cur ? cur : url, o, spent < o->timeout_ms ? o->timeout_ms - spent : 1, s, errbuf);
                curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
                if (c != CURLE_OK || code < 300 || code > 399 || curl_easy_getinfo(s->h, CURLINFO_REDIRECT_URL, &to) != CURLE_OK ||
                    !to) {
                        classify(s->h, c, url, errbuf, s, res);
                        break;
                }
                const char *why = redirect_refused(url, to);
                if (why) {
                        say(res, FETCH_REFUSED, "GET %s: HTTP %ld redirects to %.200s, not followed: %s", url, code, to, why);
                        break;
                }
                if (hops == MAX_REDIRECTS) {
                        say(res, FETCH_UNAVAILABLE, "GET %s: more than %d redirects", url, MAX_REDIRECTS);
                        break;
                }
                free(cur);
                if (!(cur = strdup(to))) {
                        say(res, FETCH_LOCAL, "GET %s: out of memory", url);
                        break;
                }
        }
        curl_easy_cleanup(s->h);
        s->h = NULL;
        return res->status == FETCH_OK ? 0 : -1;
}

int fetch_memory(const char *url, const struct fetch_opts *o, size_t max, char **ret, size_t *ret_len,
                 struct fetch_result *res) {
        struct sink s = { .fd = -1, .max = max, .stop = o->stop };
        if (run(url, o, &s, res) < 0) {
                free(s.buf);
                return -1;
        }
        if (!s.buf && !(s.buf = calloc(1, 1))) {
                say(res, FETCH_LOCAL, "GET %s: out of memory", url);
                return -1;
        }
        *ret = s.buf;
        *ret_len = s.len;
        return 0;
}

int fetch_file(const char *url, const struct fetch_opts *o, int fd, uint64_t max, unsigned char sha256[32],
               struct fetch_result *res) {
        struct sink s = { .fd = fd, .max = max, .stop = o->stop };
        crypto_hash_sha256_init(&s.hash);
        int r = run(url, o, &s, res);
        crypto_hash_sha256_final(&s.hash, sha256);
        return r;
}
