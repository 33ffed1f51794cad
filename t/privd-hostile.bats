#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-privd(8) under a compromised front: t/helpers/privd-client starts the
# helper as root, drops to nobody (the front's credentials, no capability)
# and sends what a hostile front would. Each request is refused and logged,
# the helper stays up, and job A, opened and running before the attacks,
# keeps its process, cgroup and workspace; when the front hangs up the
# helper kills and removes A on its own.

load helpers/common
bats_require_minimum_version 1.5.0

setup_file() {
        sbx_stage
        PRIVD=$SBX_BUILDDIR/supervisor/privd/sbx-privd
        CLIENT=$SBX_BUILDDIR/t/helpers/privd-client
        PRIVD_CG=none
        local mnt
        mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
        if [ -n "$mnt" ] && [ "$(id -u)" = 0 ] && [ -w "$mnt/cgroup.procs" ]; then
                PRIVD_CG="$mnt/sbx-privd-test-$$-$RANDOM"
        fi
        # A uid range of its own, away from the daemon tests' ranges.
        local slot=$(( ($$ + RANDOM) % 1024 ))
        PRIVD_UIDS="$((1880162304 + slot * 16))-$((1880162304 + slot * 16 + 15))"
        PRIVD_WS=$SBX_STAGE/privd-ws
        export PRIVD CLIENT PRIVD_CG PRIVD_UIDS PRIVD_WS
}

teardown_file() {
        # A test that failed half-way may leave a helper's workspace mounted.
        local m
        for m in "$PRIVD_WS"/job-*; do
                [ -d "$m" ] && umount -l "$m" 2>/dev/null
        done
        if [ "${PRIVD_CG:-none}" != none ] && [ -d "$PRIVD_CG" ]; then
                for d in "$PRIVD_CG"/job-*; do
                        [ -d "$d" ] && echo 1 > "$d/cgroup.kill" 2>/dev/null && rmdir "$d" 2>/dev/null
                done
                rmdir "$PRIVD_CG" 2>/dev/null || true
        fi
        sbx_unstage
}

setup() {
        [ "$(id -u)" = 0 ] || skip "sbx-privd runs as root"
        [ "$PRIVD_CG" != none ] || skip "no writable cgroup2 hierarchy here"
        require_userns
        CPID=
}

teardown() {
        [ -z "$CPID" ] || kill -USR1 "$CPID" 2>/dev/null || true
        [ -z "$CPID" ] || wait "$CPID" 2>/dev/null || true
        [ -z "${HELPER:-}" ] || wait_until 30 gone "$HELPER" || true
}

# exec: $! of a background `client` is the client itself, which --hold
# keeps waiting for SIGUSR1.
client() {
        exec "$CLIENT" --as "$(id -u nobody):$(id -g nobody)" --profile "$SBX_STAGE/profiles/default.ini" "$@" -- \
                "$PRIVD" --fd 3 --front "$(id -u nobody):$(id -g nobody)" --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" \
                --workspace "$PRIVD_WS" --launcher "$SBX_LAUNCH"
}

field() {
        awk -v k="$1" '$0 ~ "^" k " " { sub("^" k " ", ""); print; exit }' "$BATS_TEST_TMPDIR/out"
}

alive() {
        kill -0 "$1" 2>/dev/null
}

gone() {
        ! kill -0 "$1" 2>/dev/null
}

done_or_exited() {
        grep -q '^attacks done' "$BATS_TEST_TMPDIR/out" || gone "$CPID"
}

# attack SCENARIO: start the client with it and wait until its attacks are
# done; A_CG, A_WS, A_PID and HELPER say where job A and the helper are.
attack() {
        client --hold "$1" > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/log" &
        CPID=$!
        # Until the attacks are done, or the client gave up (a helper that
        # accepted what it should refuse answers out of step).
        wait_until 60 done_or_exited
        cat "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/log"
        grep -q '^attacks done' "$BATS_TEST_TMPDIR/out"
        HELPER=$(field helper)
        A_CG=$(field "A cgroup")
        A_WS=$(field "A workspace")
        A_PID=$(field "A pid")
        [ -n "$HELPER" ]
        [ -n "$A_PID" ]
}

# refused WHAT REASON: the client saw WHAT refused and the helper logged
# REASON on a line of its own.
refused() {
        grep -qF "refused $1:" "$BATS_TEST_TMPDIR/out" || { cat "$BATS_TEST_TMPDIR/out"; return 1; }
        grep -q "^sbx-privd: refused .*$2" "$BATS_TEST_TMPDIR/log" || { cat "$BATS_TEST_TMPDIR/log"; return 1; }
}

# After the attacks: nothing accepted, the helper answers, A is whole; then
# the front hangs up and the helper leaves nothing of A behind.
survived() {
        ! grep '^ACCEPTED' "$BATS_TEST_TMPDIR/out" || false
        grep -qx alive "$BATS_TEST_TMPDIR/out"
        grep -qx 'A untouched' "$BATS_TEST_TMPDIR/out"
        alive "$HELPER"
        alive "$A_PID"
        [ -d "$A_CG" ]
        grep -qx "$A_PID" "$A_CG/cgroup.procs"
        mountpoint -q "$A_WS"
        kill -USR1 "$CPID"
        # Not `run wait`: run's subshell cannot wait for this shell's child.
        local st=0
        wait "$CPID" || st=$?
        CPID=
        [ "$st" = 0 ]
        wait_until 30 gone "$HELPER"
        wait_until 10 gone "$A_PID"
        [ ! -e "$A_CG" ]
        [ ! -e "$A_WS" ]
        grep -q 'front gone, every job closed' "$BATS_TEST_TMPDIR/log"
}

@test "sbx-privd links none of the parsers of untrusted input" {
        run ldd "$PRIVD"
        [ "$status" = 0 ]
        for lib in jansson curl archive ldns microhttpd; do
                ! grep -q "lib$lib" <<<"$output" || false
        done
}

@test "sbx-privd refuses uid 0, a uid outside its range and a uid in use" {
        attack uids
        refused "JOB_OPEN uid 0" "uid 0:"
        refused "JOB_OPEN uid outside the range" "outside the range"
        refused "JOB_OPEN uid in use" "JOB_OPEN.*in use by the job in slot"
        refused "UID_RELEASE uid in use" "UID_RELEASE.*in use by the job in slot"
        survived
}

@test "sbx-privd refuses a made-up handle, another job's, a stale generation, and signals or waits out of a job's state" {
        attack handles
        refused "JOB_KILL made-up handle" "made-up handle"
        refused "JOB_CLOSE slot of A, generation of B" "JOB_CLOSE.*is not that of slot"
        refused "JOB_KILL stale generation" "JOB_KILL.*is not that of slot"
        refused "SPAWN stale generation" "SPAWN.*is not that of slot"
        refused "JOB_TERM stale generation" "JOB_TERM.*is not that of slot"
        refused "JOB_TERM of a job not spawned" "JOB_TERM needs a spawned job"
        refused "JOB_WAIT of a job not spawned" "JOB_WAIT needs a spawned job"
        # D, which took the stale handle's slot, is untouched too.
        [ -d "$(field "D cgroup")" ]
        mountpoint -q "$(field "D workspace")"
        survived
}

@test "sbx-privd refuses truncated, oversized, duplicated and out-of-order messages" {
        attack frames
        refused "truncated (10 bytes)" "truncated: 10 bytes"
        refused "truncated (header only, header says so)" "JOB_KILL is 24"
        refused "oversized (256 bytes)" "larger than 128 bytes"
        refused "unknown type" "unknown type 77"
        refused "duplicated message" "sequence .* out of order"
        refused "sequence number skipped ahead" "sequence .* out of order"
        refused "second HELLO" "HELLO repeated"
        refused "SPAWN on a job already spawned" "is spawned: SPAWN needs a job handed over"
        refused "JOB_OPEN with a reserved field set" "reserved field set"
        survived
}

@test "sbx-privd refuses a descriptor of the wrong kind and too many descriptors" {
        attack fds
        refused "SPAWN with a directory as the status pipe" "descriptor 3: expected a pipe"
        refused "SPAWN with 12 descriptors" "more than 9 descriptors"
        refused "SPAWN with fewer descriptors than announced" "3 descriptors sent, 9 announced"
        refused "JOB_KILL carrying a descriptor" "with a message that takes none"
        # B was never spawned: nothing of its uid runs.
        run pgrep -u "$(field "B uid")"
        [ "$status" = 1 ]
        survived
}

@test "sbx-privd answers 10,000 bad requests, logs at most a burst, and stays up" {
        attack flood
        grep -q '^refused flood$' "$BATS_TEST_TMPDIR/out"
        grep '^flood:' "$BATS_TEST_TMPDIR/out" >&3
        run grep -c '^sbx-privd: refused' "$BATS_TEST_TMPDIR/log"
        [ "$status" = 0 ]
        [ "$output" -ge 100 ]
        [ "$output" -lt 10000 ]
        survived
        grep -q 'refusals .*not logged' "$BATS_TEST_TMPDIR/log"
}

@test "sbx-privd spawns sbx-launch as the job uid, its exit is read through the pidfd, and close leaves nothing" {
        run client run
        echo "$output"
        [ "$status" = 0 ]
        [[ "$output" == *"R exited (pidfd)"* ]]
        [[ "$output" == *"R exit-code 0"* ]]
        [[ "$output" == *"R close: ok"* ]]
        local cg ws pid
        cg=$(grep '^R cgroup ' <<<"$output" | cut -d' ' -f3)
        ws=$(grep '^R workspace ' <<<"$output" | cut -d' ' -f3)
        pid=$(grep '^R pid ' <<<"$output" | cut -d' ' -f3)
        [ -n "$cg" ]
        [ ! -e "$cg" ]
        [ ! -e "$ws" ]
        gone "$pid"
}

@test "a helper that died leaves no job behind once the next one starts" {
        attack none
        kill -KILL "$HELPER"
        # The client is the helper's parent: it reaps it when it exits.
        kill -USR1 "$CPID"
        wait "$CPID" || true
        CPID=
        wait_until 10 gone "$HELPER"
        # Nothing cleaned up after the helper: its job's cgroup and mount stay.
        [ -d "$A_CG" ]
        mountpoint -q "$A_WS"
        # The next helper removes them at start, and its first job may take
        # the same name.
        run client run
        echo "$output"
        [ "$status" = 0 ]
        [[ "$output" == *"removed 2 cgroups and workspaces an earlier helper left"* ]]
        [[ "$output" == *"R close: ok"* ]]
        [ ! -e "$A_CG" ]
        [ ! -e "$A_WS" ]
        wait_until 10 gone "$A_PID"
}

@test "sbx-privd rejects a bad command line with a clear error" {
        run "$PRIVD" --fd 0 --front 65534:65534 --uids 0-10 --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" --launcher "$SBX_LAUNCH"
        [ "$status" = 2 ]
        [[ "$output" == *"--uids 0-10: at most"*"without 0 and 65534"* ]]
        run "$PRIVD" --fd 0 --front 65534:65534 --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" --launcher "$SBX_LAUNCH"
        [ "$status" = 2 ]
        [[ "$output" == *"--fd 0: not a SOCK_SEQPACKET socket"* ]]
}
