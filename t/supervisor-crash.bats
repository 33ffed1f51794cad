#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) CRASH RECOVERY: SIGKILL the daemon with jobs running
# and queued, start it again: every job that was running has a record
# (state error, "supervisor restarted"), every job that never started runs,
# no job process survives, and every result written before the crash is
# intact.

load sup-unit/daemon
# hundreds of clients: no leak scan at their exit (ctl in sup-unit/daemon.bash)
SUP_CTL_LEAK_CHECK=0
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
}

# A test that fails half-way must not leave its daemon for the next one.
teardown() {
        sup_stop
}

crash_and_recover() {
        local secs=$1
        # results from before the crash
        ctl run -- echo before >/dev/null
        done_job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        done_rec=$(ctl --json result "$done_job")

        jobs=()
        for i in 1 2 3; do
                jobs+=("$(ctl submit -- sh -c "echo started; sleep $secs")")
        done
        # three run (max_jobs = 3), two wait
        queued=()
        for i in 1 2; do
                queued+=("$(ctl submit -- sh -c "echo queued $i ran")")
        done
        for i in $(seq 50); do
                [ "$(pgrep -f "sleep $secs" | wc -l)" -ge 3 ] && break
                sleep 0.1
        done
        [ "$(pgrep -f "sleep $secs" | wc -l)" -ge 3 ]
        [ "$(ctl --json status "${queued[0]}" | json_get job.state)" = queued ]

        kill -KILL "$SUP_PID"
        wait "$SUP_PID" 2>/dev/null || true
        SUP_PID=
        sup_start

        # the running ones were interrupted: a record each (written by the
        # group commit once the daemon is up: wait for it)
        for j in "${jobs[@]}"; do
                ctl wait "$j" >/dev/null || true
                run ctl --json result "$j"
                [ "$status" -eq 0 ]
                [ "$(json_get result.state <<<"$output")" = error ]
                [ "$(json_get result.error.code <<<"$output")" = E_RESTARTED ]
                [ "$(json_get result.error.message <<<"$output")" = "supervisor restarted" ]
                # the record has what a normal one has, and when it started
                [ "$(json_get result.started <<<"$output")" != null ]
                [ "$(json_get result.limits.timeout_ms.by <<<"$output")" = supervisor ]
                # (what it printed may or may not have been read before the kill)
                [ "$(json_get result.stdout.produced <<<"$output")" = "$(json_get result.stdout.size <<<"$output")" ]
        done
        grep -q "recovery: 3 jobs interrupted by a restart" "$SUP_DIR/daemon.log"
        # the queued ones never started: they run now
        grep -q "recovery: 2 jobs accepted before a restart are queued to run" "$SUP_DIR/daemon.log"
        for i in 1 2; do
                ctl wait "${queued[$((i - 1))]}" >/dev/null
                run ctl --json result "${queued[$((i - 1))]}"
                [ "$(json_get result.state <<<"$output")" = succeeded ]
                [ "$(json_get result.attempt <<<"$output")" = 1 ]
                [ "$(ctl logs "${queued[$((i - 1))]}")" = "queued $i ran" ]
        done
        # nothing the jobs started is still alive
        wait_until 10 no_process "sleep $secs"
        run pgrep -f "sleep $secs"
        [ "$status" -eq 1 ]
        # older results are whole, byte for byte
        [ "$(ctl --json result "$done_job")" = "$done_rec" ]
        # no half-written record is visible anywhere
        run find "$SUP_DIR/state/results" -name '.*.tmp'
        [ -z "$output" ]
        # and the daemon works
        run ctl run -- echo after
        [ "$output" = after ]
}

@test "SIGKILL with jobs running and queued: the running get records, the queued run, none survives (job cgroups)" {
        [ "$SUP_CGROUP" != none ] || skip "no writable cgroup2 hierarchy here"
        sup_config "max_jobs = 3"
        sup_start
        crash_and_recover $((7000 + RANDOM))
        # the leftover job cgroups were reaped
        [ -z "$(ls -d "$SUP_CGROUP"/job-* 2>/dev/null)" ]
        sup_stop
}

@test "SIGKILL without cgroups: the parent-death signal and the journal's pids end the jobs" {
        rm -f "$SUP_DIR/sup.conf"
        sup_config "max_jobs = 3"
        sed -i 's|^cgroup = .*|cgroup = none|' "$SUP_DIR/sup.conf"
        sup_start
        crash_and_recover $((7000 + RANDOM))
        sup_stop
}

@test "a crash during a burst of submissions loses no acknowledged job" {
        sup_start
        acked="$SUP_DIR/acked"
        : > "$acked"
        ( for i in $(seq 40); do ctl submit -- sleep 0.2 >> "$acked" 2>/dev/null || true; done ) &
        burst=$!
        # in the middle of the burst: after a few acknowledgements (a
        # loaded machine may take seconds to give the first)
        for i in $(seq 200); do [ "$(wc -l < "$acked")" -ge 3 ] && break; sleep 0.05; done
        kill -KILL "$SUP_PID"
        SUP_PID=
        wait "$burst" || true
        sup_start
        n=0
        while read -r job; do
                [ -n "$job" ] || continue
                # one that never started runs now: wait for its end
                ctl wait "$job" >/dev/null || true
                run ctl --json result "$job"
                [ "$status" -eq 0 ]
                state=$(json_get result.state <<<"$output")
                [ "$state" = succeeded ] || [ "$state" = error ]
                n=$((n + 1))
        done < "$acked"
        [ "$n" -gt 0 ]
        sup_stop
}

@test "SIGTERM ends running jobs and records queued ones before exiting" {
        sup_start
        a=$(ctl submit -- sleep 30)
        wait_until 30 job_state "$a" running
        kill -TERM "$SUP_PID"
        for i in $(seq 60); do kill -0 "$SUP_PID" 2>/dev/null || break; sleep 0.1; done
        ! kill -0 "$SUP_PID" 2>/dev/null || false
        SUP_PID=
        sup_start
        run -0 ctl --json result "$a"
        [ "$(json_get result.state <<<"$output")" = killed ]
        [ "$(json_get result.error.code <<<"$output")" = E_SHUTTING_DOWN ]
        sup_stop
}
