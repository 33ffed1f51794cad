#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) STORAGE FAULTS and cleanup: a result record that
# cannot be written (read-only results, a full disk, a full disk at
# restart, a journal append cut short) never loses an acknowledged job:
# the job stays in the journal, clients hear the truth, no new work is
# accepted until storage works, and the record appears once it does. Job
# cgroups never outlive their jobs; the daemon's own spawn failures are
# not reported as sandbox failures; jobs that never started run after a
# restart, and running ones run again when they asked for retries.

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
        [ "$(id -u)" = 0 ] || skip "mounting a small file system for the state needs root"
        rm -f "$SUP_DIR/sup.conf"
        sup_config "retention = 1h"
        rm -rf "$SUP_DIR/state"
        mkdir -p "$SUP_DIR/state"
        # A state directory of its own, small, so that it can be filled;
        # its results directory on a file system of its own, which can be
        # made read-only while the daemon runs.
        mount -t tmpfs -o size=24m,mode=0711 sbx-test-state "$SUP_DIR/state"
        mkdir -m 0700 "$SUP_DIR/state/results"
        mount -t tmpfs -o size=8m,mode=0700 sbx-test-results "$SUP_DIR/state/results"
        STATE_MOUNTED=1
}

teardown() {
        sup_stop
        if [ -n "${STATE_MOUNTED:-}" ]; then
                umount -l "$SUP_DIR/state/results" 2>/dev/null || true
                umount -l "$SUP_DIR/state" 2>/dev/null || true
        fi
}

# Fill the state file systems to the last byte.
fill_state() {
        local d
        for d in "$SUP_DIR/state" "$SUP_DIR/state/results"; do
                dd if=/dev/zero of="$d/filler" bs=64k 2>/dev/null || true
                dd if=/dev/zero of="$d/filler2" bs=1 2>/dev/null || true
                run sh -c "echo x > '$d/probe-full'"
                [ "$status" -ne 0 ]
        done
}

unfill_state() {
        rm -f "$SUP_DIR/state/filler" "$SUP_DIR/state/filler2" "$SUP_DIR/state/results/filler" "$SUP_DIR/state/results/filler2"
}

# The results file system turns read-only (what a kernel does after an
# I/O error): every descriptor the daemon holds is refused writes.
results_read_only() {
        mount -o remount,ro "$SUP_DIR/state/results"
}

# result_eventually JOB [SECONDS]: the record appears (retries back off up
# to 30 s between attempts).
result_eventually() {
        local i
        for i in $(seq $((${2:-40} * 4))); do
                ctl --json result "$1" >"$SUP_DIR/res.json" 2>/dev/null && return 0
                sleep 0.25
        done
        echo "no record for $1" >&2
        cat "$SUP_DIR/daemon.log" >&2
        return 1
}

# Every line of the journal is one whole JSON object.
journal_whole() {
        local l
        while IFS= read -r l; do
                json_get ev <<<"$l" >/dev/null || { echo "torn journal line: $l" >&2; return 1; }
        done < "$SUP_DIR/state/journal"
}

# submit_gated N: N jobs that end when open_gate is called; returns once
# they all run (their workspaces are made when they start).
submit_gated() {
        jobs=()
        local i j
        for i in $(seq "$1"); do
                jobs+=("$(ctl submit --timeout 5m -- sh -c "until [ -e /workspace/go ]; do sleep 0.05; done; echo job $i")")
        done
        for j in "${jobs[@]}"; do
                for i in $(seq 400); do
                        [ "$(ctl --json status "$j" | json_get job.state)" = running ] && break
                        sleep 0.05
                done
                [ "$(ctl --json status "$j" | json_get job.state)" = running ] || {
                        ctl --json status "$j" >&2
                        tail -20 "$SUP_DIR/daemon.log" >&2
                        return 1
                }
        done
}

# Let the gated jobs end: an empty file in each workspace (it takes no
# space, so a full disk does not stop it).
open_gate() {
        local j
        for j in "${jobs[@]}"; do
                touch "$SUP_DIR/state/work/$j/go"
        done
}

# submit_sleepers N SECS: N jobs that end SECS from now.
submit_sleepers() {
        jobs=()
        local i
        for i in $(seq "$1"); do
                jobs+=("$(ctl submit -- sh -c "sleep $2; echo job $i")")
        done
}

@test "results directory read-only: 7 of 7 jobs kept, clients told the truth, no new work until it is writable" {
        sup_start
        submit_gated 7
        results_read_only
        open_gate
        # told at once (E_STORAGE) or on asking (E_NOT_DONE): the truth
        run ctl wait "${jobs[0]}"
        [ "$status" -ne 0 ]
        [[ "$output" == *"ended (succeeded) but its "*"record cannot be written"* ]]
        [[ "$output" != *truncated* ]]
        run ctl submit -- true
        [ "$status" -ne 0 ]
        [[ "$output" == *"E_STORAGE"*"no new jobs until it can"* ]]
        for j in "${jobs[@]}"; do
                run -125 ctl wait "$j"
                [[ "$output" == *"$j ended (succeeded) but its "*"record cannot be written"* ]]
        done
        run ctl result "${jobs[3]}"
        [ "$status" -ne 0 ]
        [[ "$output" == *E_NOT_DONE*"cannot be written yet"* ]]
        grep -q "storage is failing" "$SUP_DIR/daemon.log"
        # writable again: every record arrives, the output's loss said
        mount -o remount,rw "$SUP_DIR/state/results"
        for j in "${jobs[@]}"; do
                result_eventually "$j"
                [ "$(json_get result.state <"$SUP_DIR/res.json")" = succeeded ]
                [ "$(json_get result.stdout.size <"$SUP_DIR/res.json")" = 0 ]
                [ "$(json_get result.stdout.error <"$SUP_DIR/res.json")" = "Read-only file system" ]
        done
        grep -q "storage works again" "$SUP_DIR/daemon.log"
        run -0 ctl run -- echo accepted again
        [ "$output" = "accepted again" ]
}

@test "a full disk while jobs end: every record arrives once space is freed" {
        sup_start
        submit_gated 13
        fill_state
        open_gate
        run ctl wait "${jobs[0]}"
        [ "$status" -ne 0 ]
        [[ "$output" == *"record cannot be written"* ]]
        run -125 ctl submit -- true
        [[ "$output" == *E_STORAGE* ]]
        unfill_state
        for j in "${jobs[@]}"; do
                result_eventually "$j"
                [ "$(json_get result.state <"$SUP_DIR/res.json")" = succeeded ]
        done
        journal_whole
}

@test "a journal append cut short by a full disk: the run is refused, the journal stays whole, later jobs survive a crash" {
        sup_start
        fill_state
        run ctl submit -- true
        [ "$status" -ne 0 ]
        [[ "$output" == *E_STORAGE* ]]
        [[ "$output" != *E_INTERNAL* ]]
        journal_whole
        unfill_state
        # storage is probed: new work is accepted again without a restart
        for i in $(seq 40); do ctl submit -- true >/dev/null 2>&1 && break; sleep 0.25; done
        a=$(ctl submit -- sh -c 'echo after')
        kill -KILL "$SUP_PID"
        SUP_PID=
        journal_whole
        sup_start
        ctl wait "$a" >/dev/null || true
        run ctl --json result "$a"
        [ "$status" -eq 0 ]
}

@test "restart with a full state disk: recovery keeps every journal entry until its record is durable (11 of 11)" {
        sup_start
        # a duration of its own: other test files on the machine sleep too
        secs=$((6000 + RANDOM))
        submit_sleepers 11 "$secs"
        for i in $(seq 50); do
                [ "$(pgrep -f "sleep $secs" | wc -l)" -ge 11 ] && break
                sleep 0.1
        done
        kill -KILL "$SUP_PID"
        SUP_PID=
        fill_state
        sup_start
        run ctl result "${jobs[0]}"
        [ "$status" -ne 0 ]
        # a second crash while storage fails loses nothing either
        kill -KILL "$SUP_PID"
        SUP_PID=
        sup_start
        unfill_state
        for j in "${jobs[@]}"; do
                result_eventually "$j"
                [ "$(json_get result.error.code <"$SUP_DIR/res.json")" = E_RESTARTED ]
        done
        run pgrep -f "sleep $secs"
        [ "$status" -eq 1 ]
}

@test "a job's cgroup goes when it is killed after the grace period, or its launcher is killed from outside" {
        [ "$SUP_CGROUP" != none ] || skip "no writable cgroup2 hierarchy here"
        sup_start
        a=$(ctl submit --timeout 1s -- sh -c 'trap "" TERM; sh -c "trap \"\" TERM; sleep 100" & sleep 100')
        b=$(ctl submit -- sleep 100)
        # (cgroup files have no size: read them)
        for i in $(seq 100); do [ -n "$(cat "$SUP_CGROUP/job-$b/cgroup.procs" 2>/dev/null)" ] && break; sleep 0.1; done
        launcher=$(head -n 1 "$SUP_CGROUP/job-$b/cgroup.procs") || { cat "$SUP_DIR/daemon.log" >&2; false; }
        grep -q sbx-launch "/proc/$launcher/cmdline"
        kill -KILL "$launcher"
        ctl wait "$a" >/dev/null || true
        ctl wait "$b" >/dev/null || true
        for i in $(seq 100); do
                [ ! -e "$SUP_CGROUP/job-$a" ] && [ ! -e "$SUP_CGROUP/job-$b" ] && break
                sleep 0.1
        done
        [ ! -e "$SUP_CGROUP/job-$a" ]
        [ ! -e "$SUP_CGROUP/job-$b" ]
        [ "$(ctl --json result "$a" | json_get result.state)" = timed_out ]
        [ "$(ctl --json result "$b" | json_get result.state)" = killed ]
}

@test "the daemon's own failure to start the launcher is E_SPAWN, not a sandbox set-up failure" {
        sup_start
        chmod 0644 "$SBX_STAGE/bin/sbx-launch"
        run -125 ctl --json run -- true
        chmod 0755 "$SBX_STAGE/bin/sbx-launch"
        job=$(json_get job <<<"${lines[0]}")
        run -0 ctl --json result "$job"
        [ "$(json_get result.state <<<"$output")" = error ]
        [ "$(json_get result.error.code <<<"$output")" = E_SPAWN ]
        [ "$(json_get result.error.message <<<"$output")" = "cannot execute the launcher: Permission denied" ]
}

@test "a running job that asked for retries runs again after a crash, as its next attempt" {
        sup_start
        run -0 raw '{"v":1,"op":"run","command":["sh","-c","echo attempt; sleep 600"],"retries":1}'
        again=$(json_get job <<<"$output")
        once=$(ctl submit -- sleep 600)
        # both started (a job that never started would simply run after
        # the restart); asked of the daemon, not of pgrep, which would also
        # count other test files' sleeps
        for i in $(seq 300); do
                [ "$(ctl --json status "$again" | json_get job.state)" = running ] &&
                        [ "$(ctl --json status "$once" | json_get job.state)" = running ] && break
                sleep 0.1
        done
        [ "$(ctl --json status "$once" | json_get job.state)" = running ]
        kill -KILL "$SUP_PID"
        SUP_PID=
        sup_start
        # its record is written by the restarted daemon's first group
        # commit: until then result answers E_NOT_DONE ("being recorded")
        ctl wait "$once" >/dev/null || true
        [ "$(ctl --json result "$once" | json_get result.error.code)" = E_RESTARTED ]
        for i in $(seq 50); do [ "$(ctl --json status "$again" | json_get job.state)" = running ] && break; sleep 0.1; done
        [ "$(ctl --json status "$again" | json_get job.state)" = running ]
        ctl cancel "$again"
        ctl wait "$again" >/dev/null || true
        run -0 ctl --json result "$again"
        [ "$(json_get result.attempt <<<"$output")" = 2 ]
        [ "$(json_get result.state <<<"$output")" = killed ]
}

# submit_said N [PAD]: N jobs that print "job I", then wait for open_gate;
# PAD, an argument they ignore, makes their records that much bigger.
submit_said() {
        jobs=()
        local i j
        for i in $(seq "$1"); do
                jobs+=("$(ctl submit --timeout 5m -- sh -c "echo job $i; until [ -e /workspace/go ]; do sleep 0.05; done" "${2:-sh}")")
        done
        local k=0
        for j in "${jobs[@]}"; do
                k=$((k + 1))
                for i in $(seq 400); do
                        [ "$(ctl --json status "$j" | json_get job.state)" = running ] && break
                        sleep 0.05
                done
                [ "$(ctl --json status "$j" | json_get job.state)" = running ]
                # its line is in its capture before the disk fills (else
                # the full disk may take it, and outcomes_kept would look
                # for what never reached the file)
                for i in $(seq 400); do
                        [ "$(ctl logs "$j")" = "job $k" ] && break
                        sleep 0.05
                done
        done
}

# Every gated job ended and its clients heard that its record cannot be
# written: the daemon holds its outcome.
wait_unwritten() {
        local j
        for j in "${jobs[@]}"; do
                run ctl wait "$j"
                [ "$status" -ne 0 ]
                [[ "$output" == *"$j ended (succeeded) but its "*"record cannot be written"* ]]
        done
}

# Each job's record says what really happened: succeeded, exit 0, its output.
outcomes_kept() {
        local i=0 j
        for j in "${jobs[@]}"; do
                i=$((i + 1))
                result_eventually "$j"
                [ "$(json_get result.state <"$SUP_DIR/res.json")" = succeeded ] || { cat "$SUP_DIR/res.json" >&2; false; }
                [ "$(json_get result.exit_code <"$SUP_DIR/res.json")" = 0 ]
                run ctl logs "$j"
                [ "$status" -eq 0 ]
                [ "$output" = "job $i" ]
        done
}

@test "a full disk, then SIGKILL: jobs that ended keep their real outcome after the restart (12 of 12)" {
        sup_start
        submit_said 12
        fill_state
        open_gate
        wait_unwritten
        kill -KILL "$SUP_PID"
        SUP_PID=
        unfill_state
        sup_start
        outcomes_kept
        ! grep -q E_RESTARTED "$SUP_DIR/state/results/"*.json || false
}

@test "a full disk, then SIGTERM: the stopping daemon keeps the outcomes, the next start writes them (12 of 12)" {
        sup_start
        submit_said 12
        fill_state
        open_gate
        wait_unwritten
        pid=$SUP_PID
        kill -TERM "$pid"
        for i in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        run kill -0 "$pid"
        [ "$status" -ne 0 ]
        SUP_PID=
        rm -f "$SUP_DIR/daemon.pid"
        unfill_state
        sup_start
        outcomes_kept
        ! grep -q E_RESTARTED "$SUP_DIR/state/results/"*.json || false
}

@test "SIGTERM while an outcome is only in memory (the journal is full too): the daemon stays until it is written" {
        sup_start
        # records bigger than the slack in the journal's last page
        submit_said 2 "$(head -c 12000 /dev/zero | tr '\0' p)"
        all=("${jobs[@]}")
        fill_state
        # the first ends: its outcome takes the journal's reserve
        jobs=("${all[0]}")
        open_gate
        wait_unwritten
        grep -q "journal's reserve is given up" "$SUP_DIR/daemon.log"
        # the space the reserve gave back is taken too: the second's
        # outcome has nowhere to go but memory
        dd if=/dev/zero of="$SUP_DIR/state/filler3" bs=4k 2>/dev/null || true
        dd if=/dev/zero of="$SUP_DIR/state/filler4" bs=1 2>/dev/null || true
        jobs=("${all[1]}")
        open_gate
        wait_unwritten
        grep -q "cannot be kept in the journal either" "$SUP_DIR/daemon.log"
        pid=$SUP_PID
        kill -TERM "$pid"
        for i in $(seq 200); do grep -q "outcomes are held only in memory" "$SUP_DIR/daemon.log" && break; sleep 0.05; done
        grep -q "stopping: 1 jobs ended but their outcomes are held only in memory" "$SUP_DIR/daemon.log"
        kill -0 "$pid"
        # storage works again: the stopping daemon writes both records, then exits
        rm -f "$SUP_DIR/state/filler3" "$SUP_DIR/state/filler4"
        unfill_state
        for i in $(seq 1200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        run kill -0 "$pid"
        [ "$status" -ne 0 ]
        SUP_PID=
        rm -f "$SUP_DIR/daemon.pid"
        sup_start
        jobs=("${all[@]}")
        outcomes_kept
}
