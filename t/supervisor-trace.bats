#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-protocol(7) traceparent: the daemon keeps the caller's W3C trace (or
# starts one) and gives each job a span of its own in it; the trace id is
# in the job's environment (TRACEPARENT), its result record, the audit
# log's lines about it and the daemon's log lines about it, also after a
# restart.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

TP=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
TRACE=4bf92f3577b34da6a3ce929d0e0e4736

setup_file() {
        sup_init
        sup_config
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
}

@test "a caller's traceparent: the job joins its trace with a span of its own, in its environment and record" {
        run -0 ctl run --traceparent "$TP" -- sh -c 'echo "$TRACEPARENT"'
        env_tp=$output
        [[ "$env_tp" =~ ^00-${TRACE}-[0-9a-f]{16}-01$ ]]
        [ "$env_tp" != "$TP" ] # the job's span, not the caller's
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        rec=$(ctl --json result "$job")
        [ "$(json_get result.trace_id <<<"$rec")" = "$TRACE" ]
        [ "$(json_get result.traceparent <<<"$rec")" = "$env_tp" ]
        run -0 ctl result "$job"
        [[ "$output" == *"trace id:  $TRACE"* ]]
        # the flags are the caller's: not sampled stays not sampled
        run -0 ctl run --traceparent "${TP%-01}-00" -- sh -c 'echo "$TRACEPARENT"'
        [[ "$output" =~ ^00-${TRACE}-[0-9a-f]{16}-00$ ]]
}

@test "without a traceparent the daemon starts a trace for the job" {
        run -0 ctl run -- sh -c 'echo "$TRACEPARENT"'
        [[ "$output" =~ ^00-([0-9a-f]{32})-[0-9a-f]{16}-01$ ]]
        trace=${BASH_REMATCH[1]}
        [ "$trace" != 00000000000000000000000000000000 ]
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        [ "$(ctl --json result "$job" | json_get result.trace_id)" = "$trace" ]
        # two jobs, two traces
        run -0 ctl run -- sh -c 'echo "$TRACEPARENT"'
        [[ "$output" != *"$trace"* ]]
}

@test "the request's own TRACEPARENT variable does not replace the daemon's" {
        run -0 ctl run --traceparent "$TP" --env TRACEPARENT=forged -- sh -c 'echo "$TRACEPARENT"'
        [[ "$output" =~ ^00-${TRACE}- ]]
}

@test "the audit log and the daemon's log lines about the job carry its trace id" {
        job=$(ctl submit --traceparent "$TP" -- true)
        ctl wait "$job" >/dev/null
        grep "\"job\":\"$job\"" "$SUP_DIR/audit.log" > "$BATS_TEST_TMPDIR/lines"
        [ "$(grep -c '"event":"request"' "$BATS_TEST_TMPDIR/lines")" -ge 1 ]
        [ "$(grep -c '"event":"job_end"' "$BATS_TEST_TMPDIR/lines")" = 1 ]
        # every audit line about the job names the trace
        ! grep -v "\"trace_id\":\"$TRACE\"" "$BATS_TEST_TMPDIR/lines" || false
        # every log line naming the job names the trace too
        for i in $(seq 300); do grep -q "job $job" "$SUP_DIR/daemon.log" && break; sleep 0.1; done
        grep "$job" "$SUP_DIR/daemon.log" > "$BATS_TEST_TMPDIR/log"
        [ -s "$BATS_TEST_TMPDIR/log" ]
        ! grep -v "job $job (trace $TRACE)" "$BATS_TEST_TMPDIR/log" || false
}

@test "an invalid traceparent is refused, naming the field" {
        for bad in 00-00000000000000000000000000000000-00f067aa0ba902b7-01 \
                00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01 \
                00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01 \
                ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 \
                00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra \
                00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7 nonsense; do
                run -0 raw "{\"v\":1,\"op\":\"run\",\"command\":[\"true\"],\"traceparent\":\"$bad\"}"
                [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
                [[ "$(json_get error.message <<<"$output")" == *"field 'traceparent'"* ]]
        done
        # a later version may carry more fields: its first four are kept
        run -0 ctl run --traceparent "01-${TRACE}-00f067aa0ba902b7-01-more" -- sh -c 'echo "$TRACEPARENT"'
        [[ "$output" =~ ^00-${TRACE}-[0-9a-f]{16}-01$ ]]
        run ctl run --traceparent nonsense -- true
        [ "$status" -eq 125 ]
}

@test "a job a restart interrupts and runs again keeps its trace" {
        job=$(ctl submit --retries 1 --traceparent "$TP" -- sh -c 'echo "$TRACEPARENT" > /dev/null; sleep 3; echo "$TRACEPARENT"')
        for i in $(seq 300); do
                [ "$(ctl --json status "$job" | json_get job.state)" = running ] && break
                sleep 0.1
        done
        before=$(ctl --json status "$job" | json_get job.state)
        [ "$before" = running ]
        kill -KILL "$(cat "$SUP_DIR/daemon.pid")"
        sup_start
        run -0 ctl wait "$job"
        run -0 ctl download --stream stdout "$job"
        [[ "$output" =~ ^00-${TRACE}-[0-9a-f]{16}-01$ ]]
        [ "$(ctl --json result "$job" | json_get result.trace_id)" = "$TRACE" ]
        [ "$(ctl --json result "$job" | json_get result.traceparent)" = "$output" ]
}
