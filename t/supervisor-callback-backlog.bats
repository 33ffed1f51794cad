#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# A callback backlog larger than callback_memory_max (sbx-supervisord.conf(5)):
# a tenant's pending deliveries beyond the bound stay in the outbox only and
# are read back oldest first as the ones in memory drain; callbacks ls,
# retry and drop and a job's result still see them; nothing is lost or
# delivered twice, across a SIGKILL too; one tenant's dead receiver does not
# hold up another tenant's deliveries. The receiver is
# t/helpers/callback-receiver.py on 127.0.0.1.

load sup-unit/daemon
load sup-unit/receiver
bats_require_minimum_version 1.5.0

UID_B=41047

write_config() {
        local url="http://127.0.0.1:$(cat "$SUP_DIR/recv/port")"
        sup_config "socket_mode = 0666
callback_backoff = 300ms
callback_backoff_max = 1s
callback_timeout = 5s
callback_concurrency = 1
callback_memory_max = 5"
        cat >> "$SUP_DIR/sup.conf" <<EOC
callback_url = $url/hook
callback_secret_file = $SUP_DIR/secret
callback_allow = $url http://127.0.0.1:1/down

[tenant.bravo]
uids = $UID_B
job_user = nobody
job_group = nogroup
profiles = default
callback_url = $url/bravo
callback_secret_file = $SUP_DIR/secret
EOC
}

setup_file() {
        sup_init
        recv_start
        write_config
        sup_start
}

teardown_file() {
        recv_fini
}

setup() {
        require_userns
        mode ok
}

metric() {
        ctl metrics | awk -v n="$1" '$1 == n { print $2 }'
}

# wait_metric NAME VALUE
wait_metric() {
        local i
        for i in $(seq 600); do
                [ "$(metric "$1")" = "$2" ] && return 0
                sleep 0.1
        done
        echo "$1 is $(metric "$1"), never $2" >&2
        return 1
}

# submit N FILE: N jobs one after the other, each ended before the next
# starts; their ids appended to FILE in that order.
submit() {
        local i job
        for i in $(seq "$1"); do
                job=$(ctl submit -- true)
                ctl wait "$job" >/dev/null
                echo "$job" >> "$2"
        done
}

# The jobs of FILE in the order of their first 200 at the receiver.
delivered_order() {
        grep '"status": 200' "$SUP_DIR/recv/log" | json_get job | awk 'NR == FNR { want[$1] = 1; next } ($1 in want) && !seen[$1]++' "$1" -
}

@test "50 deliveries with the receiver down: 5 in memory, 45 on disk only, all listed; back up, each is delivered once, oldest first" {
        mode refuse
        : > "$BATS_TEST_TMPDIR/jobs"
        submit 50 "$BATS_TEST_TMPDIR/jobs"
        wait_metric sbx_callback_backlog 50
        [ "$(metric sbx_callback_in_memory)" = 5 ]
        [ "$(ls "$SUP_DIR/state/callbacks/outbox" | wc -l)" = 50 ]
        # the queue names the 45 youngest, in the order their jobs ended
        [ "$(json_get job < "$SUP_DIR/state/callbacks/queue/admin" | tr '\n' ' ')" = "$(tail -n 45 "$BATS_TEST_TMPDIR/jobs" | tr '\n' ' ')" ]
        # callbacks ls lists every one, the held first, oldest first
        ctl --json callbacks ls > "$BATS_TEST_TMPDIR/ls"
        [ "$(python3 -c 'import json, sys; print(" ".join(c["job"] for c in json.load(sys.stdin)["callbacks"]))' < "$BATS_TEST_TMPDIR/ls")" = \
          "$(tr '\n' ' ' < "$BATS_TEST_TMPDIR/jobs" | sed 's/ $//')" ]
        [ "$(ctl --json callbacks ls --state pending | grep -o '"state": *"pending"' | wc -l)" = 50 ]
        # --limit: the first N, the held ones, then the queued ones
        ctl --json callbacks ls --limit 7 > "$BATS_TEST_TMPDIR/ls7"
        [ "$(python3 -c 'import json, sys; print(" ".join(c["job"] for c in json.load(sys.stdin)["callbacks"]))' < "$BATS_TEST_TMPDIR/ls7")" = \
          "$(head -n 7 "$BATS_TEST_TMPDIR/jobs" | tr '\n' ' ' | sed 's/ $//')" ]
        run -2 ctl callbacks ls --limit 0
        [[ "$output" == *"callbacks ls: --limit: expected a number from 1 to 10000, got '0'"* ]]
        [ "$(ctl --json callbacks ls --state dead | grep -c '"job"' || true)" = 0 ]
        # a queued job's result says pending
        [ "$(ctl --json result "$(tail -n 1 "$BATS_TEST_TMPDIR/jobs")" | json_get callback.state)" = pending ]
        mode ok
        while read -r job; do wait_posts "$job" 1 200; done < "$BATS_TEST_TMPDIR/jobs"
        wait_metric sbx_callback_backlog 0
        [ "$(metric sbx_callback_in_memory)" = 0 ]
        [ -z "$(ls "$SUP_DIR/state/callbacks/outbox")" ]
        # once each: a refused connection is never logged, so every line is a delivery
        [ "$(grep -c . "$SUP_DIR/recv/log")" = 50 ]
        [ "$(json_get delivery < "$SUP_DIR/recv/log" | sort -u | wc -l)" = 50 ]
        [ "$(grep -c '"sig_ok": true' "$SUP_DIR/recv/log")" = 50 ]
        # the 45 read back from disk came oldest first
        tail -n 45 "$BATS_TEST_TMPDIR/jobs" > "$BATS_TEST_TMPDIR/queued"
        [ "$(delivered_order "$BATS_TEST_TMPDIR/queued" | tr '\n' ' ')" = "$(tr '\n' ' ' < "$BATS_TEST_TMPDIR/queued")" ]
        [ ! -s "$SUP_DIR/state/callbacks/queue/admin" ]
}

@test "retry and drop act on deliveries that are on disk only" {
        mode refuse
        : > "$BATS_TEST_TMPDIR/jobs"
        submit 9 "$BATS_TEST_TMPDIR/jobs"
        wait_metric sbx_callback_backlog 9
        retried=$(sed -n 7p "$BATS_TEST_TMPDIR/jobs")
        dropped=$(sed -n 9p "$BATS_TEST_TMPDIR/jobs")
        run -0 ctl callbacks drop "$dropped"
        wait_cb "$dropped" dropped
        [ -f "$SUP_DIR/state/callbacks/dead/$dropped.dropped" ]
        [ "$(ctl --json result "$dropped" | json_get callback.state)" = dropped ]
        # a retry tries it at once, ahead of its turn (and is refused)
        run -0 ctl callbacks retry "$retried"
        for i in $(seq 300); do
                ctl --json callbacks ls | python3 -c '
import json, sys
c = {x["job"]: x for x in json.load(sys.stdin)["callbacks"]}
sys.exit(0 if c[sys.argv[1]]["attempts"] >= 1 else 1)' "$retried" && break
                sleep 0.1
        done
        [ "$(ctl --json callbacks ls | grep -c "\"job\": *\"$retried\"")" = 1 ]
        [ "$(metric sbx_callback_backlog)" = 8 ]
        # another tenant cannot act on them
        run -125 setpriv --reuid=$UID_B --regid=$UID_B --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" \
                callbacks drop "$(sed -n 8p "$BATS_TEST_TMPDIR/jobs")"
        [[ "$output" == *E_NOT_FOUND* ]]
        : > "$SUP_DIR/recv/log"
        mode ok
        head -n 8 "$BATS_TEST_TMPDIR/jobs" | while read -r job; do wait_posts "$job" 1 200; done
        wait_metric sbx_callback_backlog 0
        [ "$(grep -c . "$SUP_DIR/recv/log")" = 8 ]
        [ -z "$(posts "$dropped")" ]
        [ "$(ctl --json result "$dropped" | json_get callback.state)" = dropped ]
}

@test "SIGKILL while a backlog on disk drains: after the restart every delivery is made, none lost" {
        mode refuse
        : > "$BATS_TEST_TMPDIR/jobs"
        submit 30 "$BATS_TEST_TMPDIR/jobs"
        wait_metric sbx_callback_backlog 30
        : > "$SUP_DIR/recv/log"
        mode stall 0.2
        for i in $(seq 600); do
                [ "$(grep -c . "$SUP_DIR/recv/log")" -ge 10 ] && break
                sleep 0.1
        done
        mode refuse
        kill -KILL "$(cat "$SUP_DIR/daemon.pid")"
        sup_start
        # what is left: again at most 5 in memory, the rest read from disk
        # (10 or more were logged; the answer to the last may not have
        # been heard before the kill)
        left=$(ls "$SUP_DIR/state/callbacks/outbox" | wc -l)
        echo "left in the outbox: $left"
        [ "$left" -gt 5 ]
        [ "$left" -le 21 ]
        wait_metric sbx_callback_backlog "$left"
        [ "$(metric sbx_callback_in_memory)" = 5 ]
        mode ok
        while read -r job; do wait_posts "$job" 1 200; done < "$BATS_TEST_TMPDIR/jobs"
        wait_metric sbx_callback_backlog 0
        # at most the one in flight at the kill came twice (at least once)
        n=$(grep -c '"status": 200' "$SUP_DIR/recv/log")
        [ "$n" -ge 30 ]
        [ "$n" -le 31 ]
        [ -z "$(ls "$SUP_DIR/state/callbacks/outbox")" ]
}

@test "one tenant's backlog does not hold up another tenant's deliveries" {
        # admin's receiver is down for good: a port nothing listens on
        : > "$BATS_TEST_TMPDIR/jobs"
        for i in $(seq 12); do
                job=$(ctl submit --callback http://127.0.0.1:1/down -- true)
                ctl wait "$job" >/dev/null
                echo "$job" >> "$BATS_TEST_TMPDIR/jobs"
        done
        wait_metric sbx_callback_backlog 12
        job=$(setpriv --reuid=$UID_B --regid=$UID_B --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" submit -- true)
        wait_posts "$job" 1 200
        # dropped (an attempt in flight makes drop say "ask again")
        while read -r j; do
                for i in $(seq 300); do
                        ctl callbacks drop "$j" >/dev/null 2>&1 && break
                        sleep 0.1
                done
        done < "$BATS_TEST_TMPDIR/jobs"
        wait_metric sbx_callback_backlog 0
}

@test "dead letters beyond the bound leave memory but stay listed, and can be retried or dropped" {
        mode 404
        : > "$BATS_TEST_TMPDIR/jobs"
        dead_before=$(metric sbx_callback_dead_letters)
        submit 8 "$BATS_TEST_TMPDIR/jobs"
        wait_metric sbx_callback_dead_letters $((dead_before + 8))
        [ "$(ls "$SUP_DIR/state/callbacks/dead" | grep -c '\.json$')" -ge 8 ]
        # every one listed, once, dead
        ctl --json callbacks ls --state dead > "$BATS_TEST_TMPDIR/ls"
        while read -r job; do
                [ "$(grep -o "\"job\": *\"$job\"" "$BATS_TEST_TMPDIR/ls" | wc -l)" = 1 ]
        done < "$BATS_TEST_TMPDIR/jobs"
        first=$(head -n 1 "$BATS_TEST_TMPDIR/jobs")
        second=$(sed -n 2p "$BATS_TEST_TMPDIR/jobs")
        # the oldest left memory: its result still says dead
        [ -s "$SUP_DIR/state/callbacks/queue/.kept.admin" ]
        grep -q "$first" "$SUP_DIR/state/callbacks/queue/.kept.admin"
        [ "$(ctl --json result "$first" | json_get callback.state)" = dead ]
        # dropped and retried from the dead letters only
        run -0 ctl callbacks drop "$second"
        wait_cb "$second" dropped
        [ "$(ctl --json result "$second" | json_get callback.state)" = dropped ]
        mode ok
        run -0 ctl callbacks retry "$first"
        wait_posts "$first" 1 200
        [ "$(posts "$first" | tail -n 1 | json_get state)" = succeeded ]
        wait_metric sbx_callback_dead_letters $((dead_before + 6))
        # after a restart: the same counts, the same answers
        sup_stop
        sup_start
        wait_metric sbx_callback_dead_letters $((dead_before + 6))
        [ "$(ctl --json result "$second" | json_get callback.state)" = dropped ]
        [ "$(ctl --json callbacks ls --state dead | grep -o "\"job\": *\"$(sed -n 3p "$BATS_TEST_TMPDIR/jobs")\"" | wc -l)" = 1 ]
}

@test "callback_memory_max must be a number from 1 to 1000000" {
        for v in 0 1000001 x -1; do
                sed "s/^callback_memory_max = .*/callback_memory_max = $v/" "$SUP_DIR/sup.conf" > "$BATS_TEST_TMPDIR/bad.conf"
                run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$BATS_TEST_TMPDIR/bad.conf" --check-config
                [[ "$output" == *"daemon.callback_memory_max: expected a number from 1 to 1000000 (value '$v')"* ]]
        done
}
