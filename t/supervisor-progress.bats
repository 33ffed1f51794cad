#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Progress callbacks (sbx-protocol(7) PROGRESS CALLBACKS): a job asking for
# them gets a "started" post once its command has started and a
# "heartbeat" every N seconds while it runs, signed like its result, at
# its callback URL; they are best effort (lost ones are counted) and never
# come after the result. The receiver is t/helpers/callback-receiver.py on
# 127.0.0.1.

load sup-unit/daemon
load sup-unit/receiver
bats_require_minimum_version 1.5.0

UID_B=41049
TP=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01

write_config() {
        URL="http://127.0.0.1:$(cat "$SUP_DIR/recv/port")"
        sup_config "socket_mode = 0666
callback_backoff = 1s
callback_backoff_max = 2s
callback_timeout = 5s"
        # admin names its callbacks itself: a job without one has none
        cat >> "$SUP_DIR/sup.conf" <<EOC
callback_secret_file = $SUP_DIR/secret
callback_allow = $URL/

[tenant.bravo]
uids = $UID_B
job_user = nobody
job_group = nogroup
profiles = default shell
callback_url = $URL/bravo
callback_secret_file = $SUP_DIR/secret
callback_progress = 2s
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
        URL="http://127.0.0.1:$(cat "$SUP_DIR/recv/port")"
}

metric() {
        ctl metrics | awk -v n="$1" '$1 == n { print $2 }'
}

ctl_b() {
        setpriv --reuid=$UID_B --regid=$UID_B --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" "$@"
}

# check_progress FILE: the receiver's lines of one job, in order: started
# first, heartbeats numbered from 1 with their elapsed time past N seconds
# each, the result last, every one signed, each with its own delivery id.
check_progress() {
        python3 - "$1" "${2:-1}" <<'EOP'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
every = int(sys.argv[2])
ev = [l["event"] for l in lines]
print(ev)
assert ev[0] == "started" and lines[0]["body_event"] == "job.started", ev
assert ev[-1] == "result" and ev.count("result") == 1, ev
beats = lines[1:-1]
assert all(l["event"] == "heartbeat" and l["body_event"] == "job.heartbeat" for l in beats), ev
n = [l["heartbeat"] for l in beats]
assert n == sorted(set(n)) and all(k >= 1 for k in n), n
for l in beats:
    assert l["elapsed_ms"] >= l["heartbeat"] * every * 1000 - 50, l
assert lines[0]["started"] is not None and all(l["started"] == lines[0]["started"] for l in beats)
assert all(l["sig_ok"] for l in lines), lines
assert len({l["delivery"] for l in lines}) == len(lines)
assert all(l["status"] == 200 for l in lines)
EOP
}

@test "started, heartbeats every second while the job runs, then the result: signed, in order, none after it" {
        job=$(ctl submit --callback "$URL/hook" --progress 1 --traceparent "$TP" -- sh -c 'echo out; sleep 5')
        ctl wait "$job" >/dev/null
        wait_posts "$job" 1 200
        for i in $(seq 300); do
                posts "$job" | grep -q '"event": "result"' && break
                sleep 0.1
        done
        # nothing more comes after the result
        sleep 2
        posts "$job" > "$BATS_TEST_TMPDIR/p"
        run check_progress "$BATS_TEST_TMPDIR/p" 1
        echo "$output"
        [ "$status" -eq 0 ]
        # a 5 s job, a heartbeat a second: a loaded machine may skip some
        n=$(grep -c '"event": "heartbeat"' "$BATS_TEST_TMPDIR/p")
        [ "$n" -ge 2 ]
        [ "$n" -le 6 ]
        [ "$(head -n 1 "$BATS_TEST_TMPDIR/p" | json_get trace_id)" = 4bf92f3577b34da6a3ce929d0e0e4736 ]
        [[ "$(head -n 1 "$BATS_TEST_TMPDIR/p" | json_get traceparent)" == 00-4bf92f3577b34da6a3ce929d0e0e4736-* ]]
        # the output written so far
        [ "$(grep '"event": "heartbeat"' "$BATS_TEST_TMPDIR/p" | tail -n 1 | json_get stdout_bytes)" = 4 ]
        [ "$(tail -n 1 "$BATS_TEST_TMPDIR/p" | json_get state)" = succeeded ]
}

@test "receiver down: progress posts are dropped and counted; the result is delivered when it is back" {
        before=$(ctl metrics | awk '$1 == "sbx_callback_progress_dropped_total{reason=\"failed\"}" { print $2 }')
        mode refuse
        job=$(ctl submit --callback "$URL/hook" --progress 1 -- sleep 3)
        ctl wait "$job" >/dev/null
        after=$(ctl metrics | awk '$1 == "sbx_callback_progress_dropped_total{reason=\"failed\"}" { print $2 }')
        # started and at least one heartbeat
        [ "$after" -ge $((before + 2)) ]
        mode ok
        wait_posts "$job" 1 200
        sleep 1
        # refused ones are not logged: the result is the only post
        [ "$(posts "$job" | wc -l)" = 1 ]
        [ "$(posts "$job" | json_get event)" = result ]
}

@test "a slow receiver: heartbeats due while one is in flight are skipped, not queued, and the result still comes last" {
        before=$(ctl metrics | awk '$1 == "sbx_callback_progress_dropped_total{reason=\"behind\"}" { print $2 }')
        mode stall 1.5
        job=$(ctl submit --callback "$URL/hook" --progress 1 -- sleep 4)
        ctl wait "$job" >/dev/null
        mode ok
        wait_posts "$job" 1 200
        for i in $(seq 300); do
                posts "$job" | grep -q '"event": "result"' && break
                sleep 0.1
        done
        sleep 2
        after=$(ctl metrics | awk '$1 == "sbx_callback_progress_dropped_total{reason=\"behind\"}" { print $2 }')
        [ "$after" -gt "$before" ]
        [ "$(posts "$job" | tail -n 1 | json_get event)" = result ]
        [ "$(posts "$job" | grep -c '"event": "result"')" = 1 ]
}

@test "a tenant's callback_progress is its jobs' default; progress 0 turns it off" {
        job=$(ctl_b submit -- sleep 3)
        ctl_b wait "$job" >/dev/null
        wait_posts "$job" 1 200
        for i in $(seq 300); do
                posts "$job" | grep -q '"event": "result"' && break
                sleep 0.1
        done
        posts "$job" > "$BATS_TEST_TMPDIR/p"
        run check_progress "$BATS_TEST_TMPDIR/p" 2
        echo "$output"
        [ "$status" -eq 0 ]
        job=$(ctl_b submit --progress 0 -- sleep 2)
        ctl_b wait "$job" >/dev/null
        wait_posts "$job" 1 200
        sleep 1
        [ "$(posts "$job" | wc -l)" = 1 ]
        [ "$(posts "$job" | json_get event)" = result ]
}

@test "a job a restart interrupts and runs again gets its progress callbacks again (the journal keeps progress)" {
        job=$(ctl submit --retries 1 --callback "$URL/hook" --progress 1 -- sleep 3)
        for i in $(seq 300); do
                [ "$(posts "$job" | grep -c '"event": "started"')" -ge 1 ] && break
                sleep 0.1
        done
        [ "$(posts "$job" | grep -c '"event": "started"')" = 1 ]
        kill -KILL "$(cat "$SUP_DIR/daemon.pid")"
        sup_start
        run -0 ctl wait "$job"
        [ "$(ctl --json result "$job" | json_get result.attempt)" = 2 ]
        wait_posts "$job" 1 200
        for i in $(seq 300); do
                posts "$job" | grep -q '"event": "result"' && break
                sleep 0.1
        done
        # started again for the second run, heartbeats, the result last
        [ "$(posts "$job" | grep -c '"event": "started"')" = 2 ]
        [ "$(posts "$job" | grep -c '"event": "heartbeat"')" -ge 1 ]
        [ "$(posts "$job" | tail -n 1 | json_get event)" = result ]
}

@test "bad intervals, and progress without a callback, are refused naming the field" {
        run -0 raw '{"v":1,"op":"run","command":["true"],"callback":"'"$URL"'/hook","progress":3601}'
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
        [[ "$(json_get error.message <<<"$output")" == "field 'progress': expected the seconds between heartbeats, 1 to 3600, or 0 for no progress callbacks" ]]
        for v in -1 1.5 '"5"' true; do
                run -0 raw '{"v":1,"op":"run","command":["true"],"callback":"'"$URL"'/hook","progress":'"$v"'}'
                [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
                [[ "$(json_get error.message <<<"$output")" == *"'progress'"* ]]
        done
        run -0 raw '{"v":1,"op":"run","command":["true"],"progress":5}'
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
        [[ "$(json_get error.message <<<"$output")" == "field 'progress': the job has no callback"* ]]
        run -2 ctl run --callback "$URL/hook" --progress 3601 -- true
        [[ "$output" == *"--progress: expected the seconds between heartbeats, 1 to 3600, or 0 for none, got '3601'"* ]]
        run -2 ctl run --callback "$URL/hook" --progress x -- true
        [[ "$output" == *"--progress: expected"*"got 'x'"* ]]
        for v in 1500ms 2h x; do
                sed "s/^callback_progress = .*/callback_progress = $v/" "$SUP_DIR/sup.conf" > "$BATS_TEST_TMPDIR/bad.conf"
                run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$BATS_TEST_TMPDIR/bad.conf" --check-config
                [[ "$output" == *"callback_progress: expected whole seconds from 0s to 3600s between heartbeats"*"got '$v'"* ]]
        done
}
