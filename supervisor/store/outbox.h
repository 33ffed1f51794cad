/* SPDX-License-Identifier: Apache-2.0 */
/* Callback deliveries, the pure part: the outbox entry a job's end leaves
 * (STATE/callbacks/outbox/ID.json, written in the group commit with the
 * result record), the body that is posted, its signature, what an
 * attempt's outcome means, and when to try again. The daemon's side is
 * callbacks.c. Unit-tested.
 *
 * One delivery per job: its result. Its id ("d" and 32 hex digits) is
 * chosen when the entry is made and never changes, so a receiver can drop
 * a delivery it has seen: deliveries are at least once (a receiver that
 * accepted one but whose answer was lost, or a daemon killed before it
 * noted the answer, gets it again). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OUTBOX_DELIVERY_LEN 33 /* "d" + 32 hex */
#define OUTBOX_MAX_ENTRY (64u << 20)
#define OUTBOX_SIG_HEADER "X-Sbx-Signature"
#define OUTBOX_DELIVERY_HEADER "X-Sbx-Delivery"
#define OUTBOX_EVENT_HEADER "X-Sbx-Event" /* result, started or heartbeat */

struct outbox_entry {
        char job[24];
        char delivery[OUTBOX_DELIVERY_LEN + 1];
        char *tenant;
        char *url;
        char *traceparent;   /* or NULL */
        uint64_t created_ms; /* CLOCK_REALTIME: when the job's record was made, or a retry asked for */
        char *body;          /* exactly what is posted */
        size_t body_len;
};

void outbox_entry_free(struct outbox_entry *e);

/* A delivery of rec (the result record, borrowed) for the job, with the
 * delivery id chosen for it (outbox_delivery_id()). Returns 0 or
 * -ENOMEM. */
int outbox_entry_new(const char *job, const char *tenant, const char *url, const char *traceparent, const char *delivery,
                     json_t *rec, uint64_t now_ms, struct outbox_entry *ret);
/* A new delivery id. */
void outbox_delivery_id(char out[static OUTBOX_DELIVERY_LEN + 1]);
/* The entry as its file holds it: one JSON line (free() it). */
char *outbox_entry_text(const struct outbox_entry *e, size_t *ret_len);
/* Back from the file; -EINVAL for anything but a whole, valid entry. */
int outbox_entry_parse(const char *text, size_t len, struct outbox_entry *ret);

/* The X-Sbx-Signature value: "t=UNIX,v1=HEX", HEX the HMAC-SHA256 of
 * "UNIX." followed by the body, keyed with the tenant's secret. */
#define OUTBOX_SIG_MAX 96
void outbox_sign(const unsigned char *key, size_t key_len, uint64_t unix_s, const char *body, size_t body_len,
                 char out[static OUTBOX_SIG_MAX]);

enum outbox_verdict {
        OUTBOX_DELIVERED, /* 2xx */
        OUTBOX_RETRY,     /* no answer (connection, timeout), 408, 429 or 5xx */
        OUTBOX_FINAL,     /* any other answer: trying again would not help */
};
/* What an attempt's outcome means: http_status 0 when there was no
 * answer. */
enum outbox_verdict outbox_verdict(long http_status);

/* Milliseconds to wait before attempt n+1 after n failed ones: the
 * backoff doubled per attempt up to its maximum, then "full jitter" over
 * its upper half (rand in [0, 1)). A Retry-After (seconds, >= 0; -1:
 * none) is honoured when it asks for longer. */
uint64_t outbox_delay_ms(unsigned attempts, uint64_t base_ms, uint64_t max_ms, long retry_after_s, double rand);
/* A Retry-After header value: delta-seconds, or an HTTP-date (then the
 * seconds from now_s). -1 when it is neither. */
long outbox_parse_retry_after(const char *v, uint64_t now_s);

/* May a tenant start one more post? total posts are in flight, of which
 * mine are the tenant's, active tenants want slots (the tenant among
 * them), and limit is the slots. A free slot goes to whoever is due; a
 * tenant below its fair share (limit / active, at least one) starts even
 * when others hold every slot, up to twice limit in all. So one tenant
 * whose receiver holds its posts until they time out cannot keep another
 * waiting for a slot, and it still has every slot while it is alone. */
bool outbox_fair_may_start(unsigned total, unsigned limit, unsigned mine, unsigned active);
