#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-protocol(7) logs: captures of any size come back whole, in bounded
# pieces (offset and max_bytes, or follow events), never as one message
# larger than the client's buffer; reading them never holds up other
# clients. And artifact collection, however many files, runs off the
# event loop.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config "client_buffer = 8M"
        echo "max_output = 64M" >> "$SUP_DIR/sup.conf"
        sup_start
        # 20 MiB of output, more than a client's buffer: every byte differs
        # from its neighbours (a counter), so a lost or repeated piece shows.
        BIG=$(ctl submit --output 32M -- sh -c 'seq 1 2500000')
        ctl wait "$BIG" >/dev/null
        export BIG
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
}

@test "sbxctl logs returns a capture larger than the client buffer, byte for byte" {
        [ "$(ctl --json result "$BIG" | json_get result.stdout.size)" -gt $((16 << 20)) ]
        run -0 sh -c "'$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' logs '$BIG' | sha256sum"
        [ "$output" = "$(seq 1 2500000 | sha256sum)" ]
}

@test "logs -f of a finished job: the whole capture as events, then the end" {
        run -0 sh -c "'$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' logs -f '$BIG' | sha256sum"
        [ "$output" = "$(seq 1 2500000 | sha256sum)" ]
}

@test "logs without follow answers one bounded piece with the sizes to ask for the rest" {
        run -0 raw "{\"v\":1,\"op\":\"logs\",\"job\":\"$BIG\",\"stream\":\"stdout\",\"offset\":10,\"max_bytes\":20}"
        [ "$(json_get stdout <<<"$output")" = "$(seq 1 2500000 | head -c 30 | tail -c 20)" ]
        [ "$(json_get stdout_end <<<"$output")" = 30 ]
        [ "$(json_get stdout_size <<<"$output")" = "$(seq 1 2500000 | wc -c)" ]
        # the default piece is at most 1 MiB per stream, and less when the
        # client's buffer is small (a twelfth of it: six bytes of JSON a
        # byte at worst, two streams)
        run -0 raw "{\"v\":1,\"op\":\"logs\",\"job\":\"$BIG\",\"stream\":\"stdout\"}"
        [ "$(json_get stdout_end <<<"$output")" = $(((8 << 20) / 12)) ]
        [ "${#output}" -lt $((1 << 20)) ]
        run -0 raw "{\"v\":1,\"op\":\"logs\",\"job\":\"$BIG\",\"follow\":true,\"offset\":5}"
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
        run -0 raw "{\"v\":1,\"op\":\"logs\",\"job\":\"$BIG\",\"max_bytes\":0}"
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
}

first_half_captured() {
        [ "$(ctl logs "$1" | tail -n 1)" = 300000 ]
}

@test "logs -f of a running job: the capture so far, then live output, nothing lost or repeated" {
        job=$(ctl submit --output 32M -- sh -c 'seq 1 300000; until [ -e /workspace/go ]; do sleep 0.05; done; seq 300001 600000')
        # the first half is captured; the job waits
        wait_until 60 first_half_captured "$job"
        ctl logs -f "$job" > "$BATS_TEST_TMPDIR/f" &
        follower=$!
        # the follower has what was there, then the job goes on
        wait_until 60 grep -qx 300000 "$BATS_TEST_TMPDIR/f"
        touch "$SUP_DIR/state/work/$job/go"
        wait "$follower"
        [ "$(sha256sum < "$BATS_TEST_TMPDIR/f")" = "$(seq 1 600000 | sha256sum)" ]
}

@test "requests pipelined behind a logs request are answered after it, in order" {
        run -0 raw "{\"v\":1,\"op\":\"logs\",\"job\":\"$BIG\",\"id\":1}" '{"v":1,"op":"ping","id":2}'
        [ "$(json_get id <<<"${lines[0]}")" = 1 ]
        [ "$(json_get id <<<"${lines[1]}")" = 2 ]
}

@test "collecting 50,000 artifacts runs off the event loop: other clients are served meanwhile" {
        job=$(ctl submit --artifact 'd/*' -- sh -c 'mkdir d && cd d && seq 1 50000 | xargs touch')
        # the job's process ends first; then its artifacts are copied
        for i in $(seq 600); do
                [ "$(ctl --json status "$job" | json_get job.state)" = done ] && break
                sleep 0.05
        done
        seen_recording=0
        for i in $(seq 200); do
                run ctl --json result "$job"
                [ "$status" -eq 0 ] && break
                [[ "$output" == *"being recorded"* ]] && seen_recording=1
                # and meanwhile another client is answered
                run ctl ping
                [ "$status" -eq 0 ]
                sleep 0.05
        done
        [ "$seen_recording" = 1 ] || skip "the copy finished before it could be watched (too fast a machine to show it)"
        ctl wait "$job" >/dev/null
        [ "$(ctl --json result "$job" | json_get result.artifacts_truncated)" = true ] # 10,000 files at most
        [ "$(ctl --json result "$job" | json_get result.artifacts.9999.path)" != null ]
}
