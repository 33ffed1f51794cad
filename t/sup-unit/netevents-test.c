/* SPDX-License-Identifier: Apache-2.0 */
/* A job's network events as its result shows them: each field of an
 * attempt from the programs' raw event, the bound on what a job keeps
 * (the rest counted), and the counts of a job whose daemon restarted
 * (unknown, not zero). */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "netevents.h"
#include "profile.h"

/* 2026-11-26T10:00:00.123Z */
#define T_MS 1795687200123ull

static struct netaudit_event tcp4(uint16_t port) {
        struct netaudit_event e = { .cgroup_id = 7, .pid = 4242, .family = AF_INET, .port = port, .protocol = 6,
                                    .kind = NETAUDIT_CONNECT, .verdict = NETAUDIT_ALLOW, .sock_type = SOCK_STREAM };
        inet_pton(AF_INET, "203.0.113.9", e.addr);
        memcpy(e.comm, "curl", 4);
        return e;
}

static const char *str(json_t *o, const char *k) {
        const char *s = json_string_value(json_object_get(o, k));
        assert_non_null(s);
        return s;
}

static void test_fields(void **state) {
        struct netaudit_event e = tcp4(443);
        json_t *j = netevent_json(&e, T_MS, NULL, NULL);
        assert_non_null(j);
        assert_string_equal(str(j, "time"), "2026-11-26T10:00:00.123Z");
        assert_int_equal(json_integer_value(json_object_get(j, "pid")), 4242);
        assert_string_equal(str(j, "comm"), "curl");
        assert_string_equal(str(j, "kind"), "connect");
        assert_string_equal(str(j, "protocol"), "tcp");
        assert_string_equal(str(j, "family"), "ipv4");
        assert_string_equal(str(j, "address"), "203.0.113.9");
        assert_int_equal(json_integer_value(json_object_get(j, "port")), 443);
        assert_true(json_is_null(json_object_get(j, "hostname")));
        assert_string_equal(str(j, "verdict"), "allow");
        json_decref(j);

        /* IPv6 datagram, denied */
        struct netaudit_event u = { .family = AF_INET6, .port = 53, .protocol = 17, .kind = NETAUDIT_SENDMSG,
                                    .verdict = NETAUDIT_DENY, .sock_type = SOCK_DGRAM };
        inet_pton(AF_INET6, "2001:db8::1", u.addr);
        j = netevent_json(&u, T_MS, NULL, NULL);
        assert_string_equal(str(j, "kind"), "sendmsg");
        assert_string_equal(str(j, "protocol"), "udp");
        assert_string_equal(str(j, "family"), "ipv6");
        assert_string_equal(str(j, "address"), "2001:db8::1");
        assert_string_equal(str(j, "verdict"), "deny");
        json_decref(j);

        /* a socket refused at creation has no destination; MPTCP's number
         * does not fit a byte and must not read as TCP */
        struct netaudit_event s = { .family = AF_INET, .protocol = 262, .kind = NETAUDIT_SOCKET, .verdict = NETAUDIT_DENY,
                                    .sock_type = SOCK_STREAM };
        j = netevent_json(&s, T_MS, NULL, NULL);
        assert_string_equal(str(j, "kind"), "socket");
        assert_string_equal(str(j, "protocol"), "mptcp");
        assert_true(json_is_null(json_object_get(j, "address")));
        assert_true(json_is_null(json_object_get(j, "port")));
        json_decref(j);
        s.protocol = 200;
        s.sock_type = SOCK_RAW;
        j = netevent_json(&s, T_MS, NULL, NULL);
        assert_string_equal(str(j, "protocol"), "raw");
        json_decref(j);
        s.sock_type = SOCK_DGRAM;
        j = netevent_json(&s, T_MS, NULL, NULL);
        assert_string_equal(str(j, "protocol"), "ip-200");
        json_decref(j);
}

/* The job names its processes: control bytes and non-ASCII never reach
 * the JSON as they are, and a full 16-byte comm is not overrun. */
/* A connect to an address the job resolved through the proxy names the
 * host; a query event has no process or destination, only the name. */
static void test_hostnames(void **state) {
        struct netaudit_event e = tcp4(5432);
        json_t *j = netevent_json(&e, T_MS, "db.internal", NULL);
        assert_string_equal(str(j, "hostname"), "db.internal");
        assert_null(json_object_get(j, "qtype"));
        json_decref(j);
        struct netaudit_event q = { .family = AF_INET, .port = 53, .protocol = 17, .kind = NETAUDIT_DNS, .verdict = NETAUDIT_DENY };
        j = netevent_json(&q, T_MS, "evil.example", "TXT");
        assert_string_equal(str(j, "kind"), "dns");
        assert_string_equal(str(j, "hostname"), "evil.example");
        assert_string_equal(str(j, "qtype"), "TXT");
        assert_string_equal(str(j, "verdict"), "deny");
        assert_true(json_is_null(json_object_get(j, "pid")));
        assert_true(json_is_null(json_object_get(j, "address")));
        json_decref(j);
}

static void test_comm_is_sanitised(void **state) {
        struct netaudit_event e = tcp4(80);
        memcpy(e.comm, "a\x1b[31mb\xff\n0123456", 16);
        json_t *j = netevent_json(&e, T_MS, NULL, NULL);
        assert_string_equal(str(j, "comm"), "a?[31mb??0123456");
        json_decref(j);
}

static void test_bound_and_counts(void **state) {
        struct netevents ne;
        struct netaudit_event e = tcp4(1);
        netevents_init(&ne, 2);
        for (uint16_t p = 1; p <= 5; p++) {
                e.port = p;
                json_t *kept = netevents_add(&ne, &e, T_MS, NULL, NULL);
                if (p <= 2) {
                        assert_non_null(kept);
                        assert_int_equal(json_integer_value(json_object_get(kept, "port")), p);
                } else
                        assert_null(kept);
                json_decref(kept);
        }
        ne.lost = 9;
        assert_int_equal(json_array_size(ne.list), 2);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(ne.list, 1), "port")), 2);
        json_t *s = netevents_summary(&ne, NET_HOST, true);
        assert_string_equal(str(s, "mode"), "host");
        assert_true(json_is_true(json_object_get(s, "audit")));
        assert_int_equal(json_integer_value(json_object_get(s, "events_kept")), 2);
        assert_int_equal(json_integer_value(json_object_get(s, "events_dropped")), 3);
        assert_int_equal(json_integer_value(json_object_get(s, "events_lost")), 9);
        json_decref(s);
        netevents_release(&ne);

        /* no events known: 0 for a job that was not audited, null (unknown)
         * for an audited one whose daemon died with them */
        s = netevents_summary(NULL, NET_NONE, false);
        assert_string_equal(str(s, "mode"), "none");
        assert_int_equal(json_integer_value(json_object_get(s, "events_lost")), 0);
        json_decref(s);
        s = netevents_summary(NULL, NET_HOST, true);
        assert_true(json_is_null(json_object_get(s, "events_kept")));
        assert_true(json_is_null(json_object_get(s, "events_lost")));
        json_decref(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fields),
                cmocka_unit_test(test_comm_is_sanitised),
                cmocka_unit_test(test_hostnames),
                cmocka_unit_test(test_bound_and_counts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
