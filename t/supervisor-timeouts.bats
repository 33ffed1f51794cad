#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) TIMEOUTS AND CANCELLATION, and live output (follow):
# SIGTERM first, the grace period (kill_grace = 1s here), then every
# process of the job is killed, even ones that ignore SIGTERM or escape
# with setsid.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config "max_jobs = 4"
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
}

@test "a job over its timeout gets SIGTERM and may clean up in the grace period" {
        start=$(date +%s%N)
        run --separate-stderr ctl run --timeout 1s -- sh -c 'trap "echo cleaned up; exit 9" TERM; sleep 30 & wait'
        [ "$status" -eq 124 ]
        [ "$output" = "cleaned up" ]
        [[ "$stderr" == *E_TIMEOUT* ]]
        elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
        [ "$elapsed" -ge 1000 ]
        [ "$elapsed" -lt 2500 ]
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        run ctl --json result "$job"
        [ "$(json_get result.state <<<"$output")" = timed_out ]
        [ "$(json_get result.timed_out <<<"$output")" = true ]
        [ "$(json_get result.limits.timeout_ms.by <<<"$output")" = supervisor ]
}

@test "a job that ignores SIGTERM is killed when the grace period ends" {
        start=$(date +%s%N)
        run ctl run --timeout 1s -- sh -c 'trap "" TERM; echo armed; while :; do sleep 0.1; done'
        [ "$status" -eq 124 ]
        elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
        # 1 s timeout + 1 s grace, then the kill
        [ "$elapsed" -ge 2000 ]
        [ "$elapsed" -lt 4000 ]
        [ "$(pgrep -u nobody -f 'while :; do sleep 0.1' | wc -l)" -eq 0 ]
}

@test "a job that double-forks and calls setsid still dies at the timeout" {
        secs=$((6000 + RANDOM))
        job=$(ctl submit --timeout 2s -- sh -c "setsid sh -c 'trap \"\" TERM HUP; sleep $secs' & sleep 60")
        # the escaped process exists while the job runs...
        for i in $(seq 30); do
                pgrep -f "sleep $secs" >/dev/null && break
                sleep 0.1
        done
        pgrep -f "sleep $secs" >/dev/null
        run ctl wait "$job"
        [ "$status" -eq 124 ]
        # ...and is gone once the job has ended
        sleep 0.2
        run pgrep -f "sleep $secs"
        [ "$status" -eq 1 ]
}

@test "cancel stops a running job: SIGTERM, then kill" {
        job=$(ctl submit -- sh -c 'trap "echo bye; exit 0" TERM; sleep 30 & wait')
        for i in $(seq 50); do
                [ "$(ctl --json status "$job" | json_get job.state)" = running ] && break
                sleep 0.1
        done
        sleep 0.3
        run ctl cancel "$job"
        [ "$status" -eq 0 ]
        [[ "$output" == *stopping* ]]
        run ctl wait "$job"
        [[ "$output" == *"state:     killed"* ]]
        [[ "$output" == *E_CANCELLED* ]]
        run ctl logs "$job"
        [ "$output" = bye ]
        # cancelling a finished job is not an error
        run ctl --json cancel "$job"
        [ "$(json_get already_done <<<"$output")" = true ]
}

@test "cancel of a queued job records it without running it" {
        jobs=()
        for i in 1 2 3 4; do jobs+=("$(ctl submit -- sleep 30)"); done
        queued=$(ctl submit -- sh -c 'echo should not run')
        [ "$(ctl --json status "$queued" | json_get job.state)" = queued ]
        run ctl cancel "$queued"
        [[ "$output" == *killed* ]]
        run ctl --json result "$queued"
        [ "$(json_get result.state <<<"$output")" = killed ]
        [ "$(json_get result.started <<<"$output")" = null ]
        for j in "${jobs[@]}"; do ctl cancel "$j"; done
        for j in "${jobs[@]}"; do ctl wait "$j" || true; done
}

@test "follow streams output while the job runs" {
        out="$SUP_DIR/follow.out"
        ctl run -- sh -c 'echo first; sleep 2; echo second' > "$out" &
        pid=$!
        sleep 1.2
        # the first line arrived long before the job ended
        [ "$(cat "$out")" = first ]
        wait "$pid"
        [ "$(cat "$out")" = "$(printf 'first\nsecond')" ]
}

@test "logs -f attaches to a running job: what was written, then live output, then the end" {
        job=$(ctl submit -- sh -c 'echo early; sleep 1.5; echo late; exit 4')
        sleep 0.7
        run ctl logs -f "$job"
        [ "$status" -eq 4 ]
        [ "$output" = "$(printf 'early\nlate')" ]
        run ctl --json logs -f "$job"
        [ "$(json_get event <<<"$output" | tail -1)" = end ]
}

@test "a client that disconnects mid-job does not lose the job or its result" {
        run ctl --json submit -- sh -c 'sleep 1; echo done'
        job=$(json_get job <<<"$output")
        timeout 0.3 "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" logs -f "$job" || true
        run ctl wait "$job"
        [ "$status" -eq 0 ]
        run ctl logs "$job"
        [ "$output" = done ]
}
