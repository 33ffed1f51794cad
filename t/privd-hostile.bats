#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-privd(8) under a compromised front: t/helpers/privd-client starts the
# helper as root, drops to nobody (the front's credentials, no capability)
# and sends what a hostile front would. Each request is refused and logged,
# the helper stays up, and job A, opened and running before the attacks,
# keeps its process, cgroup and workspace; when the front hangs up the
# helper kills and removes A on its own.

load helpers/privd
bats_require_minimum_version 1.5.0

setup_file() {
        privd_init privd 1880162304
}

teardown_file() {
        privd_fini
}

setup() {
        privd_setup
}

teardown() {
        privd_teardown
}

client() {
        privd_client "$@" --
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
        refused "SPAWN with 12 descriptors" "more than 10 descriptors"
        refused "SPAWN with fewer descriptors than announced" "3 descriptors sent, 10 announced"
        refused "JOB_KILL carrying a descriptor" "with a message that takes none"
        # B was never spawned: nothing of its uid runs.
        run pgrep -u "$(field "B uid")"
        [ "$status" = 1 ]
        survived
}

@test "sbx-privd takes only a SOCK_SEQPACKET socket as the launcher's descriptor 8, and --pass-fd of nothing else" {
        attack passfd
        refused "SPAWN with a regular file in slot 8" "descriptor 8: expected an AF_UNIX SOCK_SEQPACKET socket"
        refused "SPAWN with a pipe in slot 8" "descriptor 8: expected an AF_UNIX SOCK_SEQPACKET socket"
        refused "SPAWN with a SOCK_STREAM socket in slot 8" "descriptor 8: expected an AF_UNIX SOCK_SEQPACKET socket"
        refused "--pass-fd 8 without slot 8" "launcher option '--pass-fd': --pass-fd without a socket in slot 8"
        refused "--pass-fd 3" "launcher option '--pass-fd': --pass-fd of a descriptor other than 8"
        refused "--pass-fd=9" "launcher option '--pass-fd=9': --pass-fd of a descriptor other than 8"
        refused "--pass-fd 5 behind --hostname --" "launcher option '--pass-fd': --pass-fd of a descriptor other than 8"
        refused "--json-status-fd from the front" "launcher option '--json-status-fd': a descriptor option the helper writes itself"
        refused "--sync-fd from the front" "launcher option '--sync-fd=2': a descriptor option the helper writes itself"
        refused "an option unknown to the launcher" "launcher option '--no-such-option': not an option"
        grep -qx 'passed 8' "$BATS_TEST_TMPDIR/out"
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
