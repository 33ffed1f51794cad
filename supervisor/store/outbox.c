/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "outbox.h"
#include "parse.h"
#include "proto.h"
#include "util.h"

void outbox_entry_free(struct outbox_entry *e) {
        free(e->tenant);
        free(e->url);
        free(e->traceparent);
        free(e->body);
        memset(e, 0, sizeof(*e));
}

void outbox_delivery_id(char out[static OUTBOX_DELIVERY_LEN + 1]) {
        unsigned char b[16];
        randombytes_buf(b, sizeof(b));
        out[0] = 'd';
        hex_encode(b, sizeof(b), out + 1);
}

int outbox_entry_new(const char *job, const char *tenant, const char *url, const char *traceparent, const char *delivery,
                     json_t *rec, uint64_t now_ms, struct outbox_entry *ret) {
        memset(ret, 0, sizeof(*ret));
        snprintf(ret->job, sizeof(ret->job), "%s", job);
        snprintf(ret->delivery, sizeof(ret->delivery), "%s", delivery);
        ret->created_ms = now_ms;
        json_t *body = json_pack("{s:i, s:s, s:s, s:s, s:s, s:o, s:O}", "v", PROTO_VERSION, "event", "job.ended", "delivery",
                                 ret->delivery, "job", job, "tenant", tenant, "trace_id",
                                 traceparent ? json_stringn(traceparent + 3, 32) : json_null(), "result", rec);
        ret->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
        json_decref(body);
        ret->tenant = strdup(tenant);
        ret->url = strdup(url);
        ret->traceparent = traceparent ? strdup(traceparent) : NULL;
        if (!ret->body || !ret->tenant || !ret->url || (traceparent && !ret->traceparent)) {
                outbox_entry_free(ret);
                return -ENOMEM;
        }
        ret->body_len = strlen(ret->body);
        return 0;
}

char *outbox_entry_text(const struct outbox_entry *e, size_t *ret_len) {
        json_t *o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:o, s:I, s:s#}", "v", 1, "delivery", e->delivery, "job", e->job, "tenant",
                              e->tenant, "url", e->url, "traceparent", e->traceparent ? json_string(e->traceparent) : json_null(),
                              "created_ms", (json_int_t) e->created_ms, "body", e->body, (int) e->body_len);
        char *s = o ? json_line(o, ret_len) : NULL;
        json_decref(o);
        return s;
}

static bool delivery_valid(const char *s) {
        if (strlen(s) != OUTBOX_DELIVERY_LEN || s[0] != 'd')
                return false;
        for (const char *p = s + 1; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

int outbox_entry_parse(const char *text, size_t len, struct outbox_entry *ret) {
        json_error_t je;
        const char *delivery, *job, *tenant, *url, *body;
        json_t *tp;
        json_int_t created, v;
        size_t body_len;
        memset(ret, 0, sizeof(*ret));
        json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
        if (!o)
                return -EINVAL;
        int r = json_unpack_ex(o, &je, JSON_STRICT, "{s:I, s:s, s:s, s:s, s:s, s:o, s:I, s:s%}", "v", &v, "delivery", &delivery,
                               "job", &job, "tenant", &tenant, "url", &url, "traceparent", &tp, "created_ms", &created, "body",
                               &body, &body_len);
        if (r < 0 || v != 1 || !delivery_valid(delivery) || !proto_valid_job_id(job) || created < 0 ||
            (!json_is_null(tp) && !json_is_string(tp))) {
                json_decref(o);
                return -EINVAL;
        }
        snprintf(ret->job, sizeof(ret->job), "%s", job);
        snprintf(ret->delivery, sizeof(ret->delivery), "%s", delivery);
        ret->created_ms = (uint64_t) created;
        ret->tenant = strdup(tenant);
        ret->url = strdup(url);
        bool has_tp = json_is_string(tp);
        ret->traceparent = has_tp ? strdup(json_string_value(tp)) : NULL;
        ret->body = malloc(body_len + 1);
        if (ret->body) {
                memcpy(ret->body, body, body_len);
                ret->body[body_len] = '\0';
                ret->body_len = body_len;
        }
        json_decref(o); /* tp and the strings were its own */
        if (!ret->tenant || !ret->url || !ret->body || (has_tp && !ret->traceparent)) {
                outbox_entry_free(ret);
                return -ENOMEM;
        }
        return 0;
}

void outbox_sign(const unsigned char *key, size_t key_len, uint64_t unix_s, const char *body, size_t body_len,
                 char out[static OUTBOX_SIG_MAX]) {
        crypto_auth_hmacsha256_state st;
        unsigned char mac[crypto_auth_hmacsha256_BYTES];
        char ts[24], hex[2 * crypto_auth_hmacsha256_BYTES + 1];
        int n = snprintf(ts, sizeof(ts), "%" PRIu64 ".", unix_s);
        crypto_auth_hmacsha256_init(&st, key, key_len);
        crypto_auth_hmacsha256_update(&st, (const unsigned char *) ts, (unsigned long long) n);
        crypto_auth_hmacsha256_update(&st, (const unsigned char *) body, body_len);
        crypto_auth_hmacsha256_final(&st, mac);
        sodium_memzero(&st, sizeof(st));
        hex_encode(mac, sizeof(mac), hex);
        snprintf(out, OUTBOX_SIG_MAX, "t=%" PRIu64 ",v1=%s", unix_s, hex);
}

enum outbox_verdict outbox_verdict(long s) {
        if (s >= 200 && s <= 299)
                return OUTBOX_DELIVERED;
        if (s == 0 || s == 408 || s == 429 || (s >= 500 && s <= 599))
                return OUTBOX_RETRY;
        return OUTBOX_FINAL;
}

uint64_t outbox_delay_ms(unsigned attempts, uint64_t base_ms, uint64_t max_ms, long retry_after_s, double rand) {
        uint64_t d = base_ms;
        for (unsigned i = 1; i < attempts && d < max_ms; i++)
                d *= 2;
        if (d > max_ms)
                d = max_ms;
        /* Jitter over the upper half: receivers coming back are not hit by
         * every delivery at once, and the delay still grows. */
        d = d / 2 + (uint64_t) ((double) (d - d / 2) * rand);
        if (retry_after_s >= 0 && (uint64_t) retry_after_s * 1000 > d)
                d = (uint64_t) retry_after_s * 1000;
        return d;
}

long outbox_parse_retry_after(const char *v, uint64_t now_s) {
        uint64_t n;
        while (*v == ' ')
                v++;
        if (parse_uint64(v, 365ull * 24 * 3600, &n) == 0)
                return (long) n;
        struct tm tm = { 0 };
        const char *end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        if (!end || *end)
                return -1;
        time_t t = timegm(&tm);
        if (t < 0)
                return -1;
        return (uint64_t) t > now_s ? (long) ((uint64_t) t - now_s) : 0;
}

bool outbox_fair_may_start(unsigned total, unsigned limit, unsigned mine, unsigned active) {
        unsigned share = active ? limit / active : limit;
        if (share == 0)
                share = 1;
        if (total < limit)
                return true;
        return mine < share && total < 2 * limit;
}
