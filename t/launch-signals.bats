#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) SIGNALS: the launcher forwards SIGTERM, SIGINT, SIGHUP,
# SIGQUIT, SIGUSR1 and SIGUSR2 through pid 1 to the command; pid 1 reaps
# orphans and works whatever the caller ignored or blocked.

load helpers/common

setup() {
        require_userns
}

# The launcher itself (not the shell function that started it): the oldest
# sbx-launch process whose command line has the marker.
launcher_of() {
        pgrep -o -u "$(as_user id -u)" -f "sbx-launch.*$1"
}

@test "each forwarded signal reaches the command's handler" {
        for sig in TERM INT HUP QUIT USR1 USR2; do
                out="$BATS_TEST_TMPDIR/out-$sig"
                sbx -- sh -c "trap 'echo got-$sig; exit 42' $sig; echo ready-$sig; while :; do sleep 0.05; done" >"$out" &
                job=$!
                for _ in $(seq 100); do grep -q ready "$out" && break; sleep 0.05; done
                kill -s "$sig" "$(launcher_of "ready-$sig")"
                rc=0
                wait "$job" || rc=$?
                [ "$rc" -eq 42 ]
                grep -q "got-$sig" "$out"
        done
}

@test "a forwarded SIGTERM without a handler ends the command with 143" {
        sbx -- sleep 30.5 &
        job=$!
        # the command runs: the launcher forwards from now on
        wait_until 10 pgrep -u "$(as_user id -u)" -xf "sleep 30.5"
        kill -TERM "$(launcher_of "sleep 30.5")"
        rc=0
        wait "$job" || rc=$?
        [ "$rc" -eq 143 ]
}

@test "pid 1 reaps orphans: no zombies pile up" {
        run sbx -- sh -c 'for i in 1 2 3 4 5; do sh -c "sleep 0.1 & exit 0"; done; sleep 0.5; grep -l "^State:.*Z" /proc/[0-9]*/status | wc -l'
        [ "$status" -eq 0 ]
        [ "$output" = 0 ]
}

@test "started with SIGCHLD ignored and signals blocked, it still works and the job starts clean" {
        run as_user env SBX_PROFILE_PATH="$SBX_PROFILE_PATH" /usr/bin/python3 -c '
import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
signal.signal(signal.SIGPIPE, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGCHLD, signal.SIGUSR1})
os.execv(sys.argv[1], sys.argv[1:])' "$SBX_LAUNCH" -- sh -c 'grep -E "^Sig(Blk|Ign)" /proc/self/status; exit 9'
        echo "$output" >&2
        [ "$status" -eq 9 ]
        [ "${lines[0]}" = "SigBlk:	0000000000000000" ]
        [ "${lines[1]}" = "SigIgn:	0000000000000000" ]
}

@test "with signals blocked by the caller, a forwarded SIGTERM still reaches the job" {
        out="$BATS_TEST_TMPDIR/out"
        as_user /usr/bin/python3 -c '
import os, signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
os.execv(sys.argv[1], sys.argv[1:])' "$SBX_LAUNCH" -- sh -c 'trap "echo got; exit 5" TERM; echo ready-blocked; while :; do sleep 0.05; done' >"$out" &
        job=$!
        for _ in $(seq 100); do grep -q ready "$out" && break; sleep 0.05; done
        kill -TERM "$(launcher_of ready-blocked)"
        rc=0
        wait "$job" || rc=$?
        [ "$rc" -eq 5 ]
}
