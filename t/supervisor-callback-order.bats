#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# After an outage a receiver gets its backlog in the order the jobs ended
# (sbx-protocol(7) CALLBACKS): the backoff is the receiver's lane's (the
# tenant's deliveries to one URL), not each delivery's, so the oldest
# comes first, the ones held in memory and those read back from the disk
# alike; a delivery the receiver refuses does not hold up the ones after
# it. The receiver is t/helpers/callback-receiver.py on 127.0.0.1.

load sup-unit/daemon
load sup-unit/receiver
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        recv_start
        URL="http://127.0.0.1:$(cat "$SUP_DIR/recv/port")"
        # one at a time: posts in flight side by side may overtake each
        # other on the wire, which no order of starting can prevent
        sup_config "callback_backoff = 300ms
callback_backoff_max = 2s
callback_timeout = 5s
callback_concurrency = 1
callback_memory_max = 10"
        cat >> "$SUP_DIR/sup.conf" <<EOC
callback_secret_file = $SUP_DIR/secret
callback_allow = $URL/
EOC
        sup_start
}

teardown_file() {
        recv_fini
}

setup() {
        require_userns
        mode ok
        URL="http://127.0.0.1:$(cat "$SUP_DIR/recv/port")"
}

metric() {
        ctl metrics | awk -v n="$1" '$1 == n { print $2 }'
}

wait_metric() {
        local i
        for i in $(seq 600); do
                [ "$(metric "$1")" -ge "$2" ] && return 0
                sleep 0.1
        done
        echo "$1 is $(metric "$1"), never $2" >&2
        return 1
}

# The jobs of FILE in the order of their first 200 at the receiver.
delivered_order() {
        grep '"status": 200' "$SUP_DIR/recv/log" | json_get job | awk 'NR == FNR { want[$1] = 1; next } ($1 in want) && !seen[$1]++' "$1" -
}

@test "receiver down, 40 jobs to two URLs, back: each URL gets its deliveries in the order their jobs ended" {
        mode refuse
        : > "$SUP_DIR/recv/log"
        : > "$BATS_TEST_TMPDIR/one"
        : > "$BATS_TEST_TMPDIR/two"
        for i in $(seq 20); do
                for u in one two; do
                        job=$(ctl submit --callback "$URL/$u" -- true)
                        ctl wait "$job" >/dev/null
                        echo "$job" >> "$BATS_TEST_TMPDIR/$u"
                done
        done
        # 10 in memory, 30 in the outbox only; tried and refused a while,
        # long enough for the backoff to reach its longest
        wait_metric sbx_callback_backlog 40
        failures=$(metric sbx_callback_attempt_failures_total)
        wait_metric sbx_callback_attempt_failures_total $((failures + 8))
        mode ok
        cat "$BATS_TEST_TMPDIR/one" "$BATS_TEST_TMPDIR/two" | while read -r job; do wait_posts "$job" 1 200; done
        for u in one two; do
                delivered_order "$BATS_TEST_TMPDIR/$u" > "$BATS_TEST_TMPDIR/$u.got"
                diff "$BATS_TEST_TMPDIR/$u" "$BATS_TEST_TMPDIR/$u.got"
        done
        # each once
        [ "$(grep -c '"status": 200' "$SUP_DIR/recv/log")" = 40 ]
}

@test "a delivery the receiver keeps refusing is set aside: the ones after it are still delivered, in order" {
        : > "$SUP_DIR/recv/log"
        mode refuse
        a=$(ctl submit --callback "$URL/one" -- true)
        ctl wait "$a" >/dev/null
        # 500 to a's posts only, from now on
        mode failjob "$a"
        wait_posts "$a" 1 500
        : > "$BATS_TEST_TMPDIR/later"
        for i in $(seq 5); do
                job=$(ctl submit --callback "$URL/one" -- true)
                ctl wait "$job" >/dev/null
                echo "$job" >> "$BATS_TEST_TMPDIR/later"
        done
        while read -r job; do wait_posts "$job" 1 200; done < "$BATS_TEST_TMPDIR/later"
        delivered_order "$BATS_TEST_TMPDIR/later" > "$BATS_TEST_TMPDIR/later.got"
        diff "$BATS_TEST_TMPDIR/later" "$BATS_TEST_TMPDIR/later.got"
        [ -z "$(posts "$a" | grep '"status": 200')" ]
        mode ok
        wait_posts "$a" 1 200
}
