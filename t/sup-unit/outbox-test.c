/* SPDX-License-Identifier: Apache-2.0 */
/* Callback deliveries, the pure part: an outbox entry survives its file
 * form whole (and a damaged one is refused), the signature is the
 * documented HMAC, answers are classified as documented, and the retry
 * delays grow, jitter within their upper half, and yield to Retry-After. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sodium.h>

#include "outbox.h"

#define JOB "j0123456789abcdef0123"

static void test_entry_roundtrip(void **state) {
        struct outbox_entry e, back;
        char id[OUTBOX_DELIVERY_LEN + 1];
        outbox_delivery_id(id);
        json_t *rec = json_pack("{s:s, s:s}", "job", JOB, "state", "succeeded");
        assert_int_equal(outbox_entry_new(JOB, "alpha", "http://127.0.0.1:1/h", NULL, id, rec, 1234, &e), 0);
        json_decref(rec);
        assert_string_equal(e.delivery, id);
        json_t *body = json_loads(e.body, 0, NULL);
        assert_string_equal(json_string_value(json_object_get(body, "delivery")), id);
        assert_string_equal(json_string_value(json_object_get(json_object_get(body, "result"), "state")), "succeeded");
        json_decref(body);
        size_t len;
        char *text = outbox_entry_text(&e, &len);
        assert_non_null(text);
        assert_int_equal(outbox_entry_parse(text, len, &back), 0);
        assert_string_equal(back.delivery, e.delivery);
        assert_string_equal(back.url, e.url);
        assert_int_equal(back.created_ms, 1234);
        assert_int_equal(back.body_len, e.body_len);
        assert_memory_equal(back.body, e.body, e.body_len);
        assert_null(back.traceparent);
        outbox_entry_free(&back);
        /* with a traceparent: kept, and the body names its trace */
        struct outbox_entry t;
        const char *tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        rec = json_object();
        assert_int_equal(outbox_entry_new(JOB, "alpha", "http://h/", tp, id, rec, 5, &t), 0);
        json_decref(rec);
        assert_non_null(strstr(t.body, "\"trace_id\":\"4bf92f3577b34da6a3ce929d0e0e4736\""));
        size_t tlen;
        char *ttext = outbox_entry_text(&t, &tlen);
        assert_int_equal(outbox_entry_parse(ttext, tlen, &back), 0);
        assert_string_equal(back.traceparent, tp);
        outbox_entry_free(&back);
        outbox_entry_free(&t);
        free(ttext);
        /* a torn file is no entry */
        assert_int_equal(outbox_entry_parse(text, len / 2, &back), -EINVAL);
        free(text);
        outbox_entry_free(&e);
        const char *bad = "{\"v\":1,\"delivery\":\"x\",\"job\":\"" JOB "\",\"tenant\":\"a\",\"url\":\"u\",\"traceparent\":null,"
                          "\"created_ms\":1,\"body\":\"{}\"}";
        assert_int_equal(outbox_entry_parse(bad, strlen(bad), &back), -EINVAL);
}

static void test_signature(void **state) {
        const unsigned char key[] = "0123456789abcdef";
        char sig[OUTBOX_SIG_MAX];
        outbox_sign(key, 16, 1700000000, "{}", 2, sig);
        unsigned char mac[crypto_auth_hmacsha256_BYTES];
        crypto_auth_hmacsha256_state st;
        crypto_auth_hmacsha256_init(&st, key, 16);
        crypto_auth_hmacsha256_update(&st, (const unsigned char *) "1700000000.{}", 13);
        crypto_auth_hmacsha256_final(&st, mac);
        char hex[65], want[OUTBOX_SIG_MAX];
        sodium_bin2hex(hex, sizeof(hex), mac, sizeof(mac));
        snprintf(want, sizeof(want), "t=1700000000,v1=%s", hex);
        assert_string_equal(sig, want);
}

static void test_verdicts_and_delays(void **state) {
        assert_int_equal(outbox_verdict(200), OUTBOX_DELIVERED);
        assert_int_equal(outbox_verdict(204), OUTBOX_DELIVERED);
        assert_int_equal(outbox_verdict(0), OUTBOX_RETRY);
        assert_int_equal(outbox_verdict(408), OUTBOX_RETRY);
        assert_int_equal(outbox_verdict(429), OUTBOX_RETRY);
        assert_int_equal(outbox_verdict(503), OUTBOX_RETRY);
        assert_int_equal(outbox_verdict(404), OUTBOX_FINAL);
        assert_int_equal(outbox_verdict(301), OUTBOX_FINAL);
        assert_int_equal(outbox_verdict(400), OUTBOX_FINAL);
        /* 1 s doubled: [0.5,1], [1,2], [2,4], then capped at 5 s: [2.5,5] */
        assert_int_equal(outbox_delay_ms(1, 1000, 5000, -1, 0.0), 500);
        assert_int_equal(outbox_delay_ms(1, 1000, 5000, -1, 0.999999), 999);
        assert_int_equal(outbox_delay_ms(2, 1000, 5000, -1, 0.0), 1000);
        assert_int_equal(outbox_delay_ms(3, 1000, 5000, -1, 0.0), 2000);
        assert_int_equal(outbox_delay_ms(10, 1000, 5000, -1, 0.0), 2500);
        assert_int_equal(outbox_delay_ms(1, 1000, 5000, 7, 0.5), 7000);
        assert_int_equal(outbox_delay_ms(3, 1000, 5000, 0, 0.0), 2000);
        assert_int_equal(outbox_parse_retry_after("120", 0), 120);
        assert_int_equal(outbox_parse_retry_after(" 3", 0), 3);
        assert_int_equal(outbox_parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", 40), 60);
        assert_int_equal(outbox_parse_retry_after("Thu, 01 Jan 1970 00:01:40 GMT", 400), 0);
        assert_int_equal(outbox_parse_retry_after("soon", 0), -1);
        assert_int_equal(outbox_parse_retry_after("-5", 0), -1);
}

/* The slots of callback_concurrency between tenants. */
static void test_fair_share(void **state) {
        /* free slots go to whoever is due, one tenant alone takes them all */
        assert_true(outbox_fair_may_start(0, 8, 0, 1));
        assert_true(outbox_fair_may_start(7, 8, 7, 1));
        assert_false(outbox_fair_may_start(8, 8, 8, 1));
        /* another holds every slot: a tenant below its share (8 / 2) starts */
        assert_true(outbox_fair_may_start(8, 8, 0, 2));
        assert_true(outbox_fair_may_start(11, 8, 3, 2));
        assert_false(outbox_fair_may_start(12, 8, 4, 2));
        /* the one above its share waits for a free slot */
        assert_false(outbox_fair_may_start(9, 8, 8, 2));
        assert_true(outbox_fair_may_start(7, 8, 7, 2));
        /* more tenants than slots: one each, never past twice the slots */
        assert_true(outbox_fair_may_start(8, 8, 0, 20));
        assert_false(outbox_fair_may_start(8, 8, 1, 20));
        assert_false(outbox_fair_may_start(16, 8, 0, 20));
        (void) state;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_entry_roundtrip),
                cmocka_unit_test(test_signature),
                cmocka_unit_test(test_verdicts_and_delays),
                cmocka_unit_test(test_fair_share),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
