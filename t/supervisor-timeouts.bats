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
        run -0 ctl --json result "$job"
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
        # (a timeout long enough for a loaded machine to show the escaped
        # process before it)
        job=$(ctl submit --timeout 10s -- sh -c "setsid sh -c 'trap \"\" TERM HUP; sleep $secs' & sleep 60")
        # the escaped process exists while the job runs...
        wait_until 10 pgrep -f "sleep $secs" >/dev/null
        run ctl wait "$job"
        [ "$status" -eq 124 ]
        # ...and is gone once the job has ended
        wait_until 10 no_process "sleep $secs"
        run pgrep -f "sleep $secs"
        [ "$status" -eq 1 ]
}

# logs_are JOB TEXT: the job's output so far is TEXT.
logs_are() {
        [ "$(ctl logs "$1")" = "$2" ]
}

@test "cancel stops a running job: SIGTERM, then kill" {
        job=$(ctl submit -- sh -c 'trap "echo bye; exit 0" TERM; echo armed; sleep 30 & wait')
        # the trap is set
        wait_until 30 logs_are "$job" armed
        run ctl cancel "$job"
        [ "$status" -eq 0 ]
        [[ "$output" == *stopping* ]]
        run -0 ctl wait "$job"
        [[ "$output" == *"state:     killed"* ]]
        [[ "$output" == *E_CANCELLED* ]]
        run -0 ctl logs "$job"
        [ "$output" = "$(printf 'armed\nbye')" ]
        # cancelling a finished job is not an error
        run -0 ctl --json cancel "$job"
        [ "$(json_get already_done <<<"$output")" = true ]
}

@test "cancel of a queued job records it without running it" {
        jobs=()
        for i in 1 2 3 4; do jobs+=("$(ctl submit -- sleep 30)"); done
        queued=$(ctl submit -- sh -c 'echo should not run')
        [ "$(ctl --json status "$queued" | json_get job.state)" = queued ]
        run -0 ctl cancel "$queued"
        [[ "$output" == *killed* ]]
        run -0 ctl --json result "$queued"
        [ "$(json_get result.state <<<"$output")" = killed ]
        [ "$(json_get result.started <<<"$output")" = null ]
        for j in "${jobs[@]}"; do ctl cancel "$j"; done
        for j in "${jobs[@]}"; do ctl wait "$j" || true; done
}

@test "follow streams output while the job runs" {
        out="$SUP_DIR/follow.out"
        ctl run -- sh -c 'echo first; until [ -e /workspace/go ]; do sleep 0.05; done; echo second' > "$out" &
        pid=$!
        # the first line arrives while the job still waits
        wait_until 30 grep -qx first "$out"
        [ "$(cat "$out")" = first ]
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        touch "$SUP_DIR/state/work/$job/go"
        wait "$pid"
        [ "$(cat "$out")" = "$(printf 'first\nsecond')" ]
}

@test "logs -f attaches to a running job: what was written, then live output, then the end" {
        job=$(ctl submit -- sh -c 'echo early; until [ -e /workspace/go ]; do sleep 0.05; done; echo late; exit 4')
        wait_until 30 logs_are "$job" early
        ctl logs -f "$job" > "$BATS_TEST_TMPDIR/f" &
        follower=$!
        wait_until 30 grep -qx early "$BATS_TEST_TMPDIR/f"
        touch "$SUP_DIR/state/work/$job/go"
        rc=0
        wait "$follower" || rc=$?
        [ "$rc" -eq 4 ]
        [ "$(cat "$BATS_TEST_TMPDIR/f")" = "$(printf 'early\nlate')" ]
        run -4 ctl --json logs -f "$job"
        [ "$(json_get event <<<"$output" | tail -1)" = end ]
}

@test "a client that disconnects mid-job does not lose the job or its result" {
        run -0 ctl --json submit -- sh -c 'sleep 1; echo done'
        job=$(json_get job <<<"$output")
        timeout 0.3 "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" logs -f "$job" || true
        run ctl wait "$job"
        [ "$status" -eq 0 ]
        run -0 ctl logs "$job"
        [ "$output" = done ]
}
