#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-privd(8) in listening mode (--socket): the helper a service of its
# own, the front another process that connects as its user. Only the
# front's uid is served, one front at a time; when the front goes, its jobs
# go, and the helper waits for the next front.

load helpers/privd
bats_require_minimum_version 1.5.0

setup_file() {
        privd_init privd-listen 1881210880
        # A bundle cache as the front keeps it: CACHE/<sha256>/tree, the
        # front's; and a directory of the front's outside it.
        HEX=$(printf 'x%.0s' $(seq 64) | tr x a)
        export CACHE=$SBX_STAGE/cache TREE=$SBX_STAGE/cache/$HEX/tree ELSEWHERE=$SBX_STAGE/elsewhere
        mkdir -p "$TREE/bin" "$ELSEWHERE/bin"
        touch "$TREE/README" "$ELSEWHERE/README"
        chown -R nobody: "$CACHE" "$ELSEWHERE"
}

teardown_file() {
        privd_fini
}

setup() {
        privd_setup
        # A directory the front can reach (the test's own is root's alone).
        SOCK=$SBX_STAGE/privd-$BATS_TEST_NUMBER.sock
        NOBODY="$(id -u nobody):$(id -g nobody)"
        LPID=
        "$PRIVD" --socket "$SOCK" --front "$NOBODY" --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" \
                --launcher "$SBX_LAUNCH" --bundle-cache "$CACHE" 2> "$BATS_TEST_TMPDIR/helper.log" &
        LPID=$!
        wait_until 30 test -S "$SOCK"
}

teardown() {
        privd_teardown
        [ -z "$LPID" ] || kill "$LPID" 2>/dev/null || true
        [ -z "$LPID" ] || wait "$LPID" 2>/dev/null || true
        cat "$BATS_TEST_TMPDIR/helper.log" 2>/dev/null || true
}

# front AS [CLIENT ARGS...]: exec a client connecting to the helper as AS
# (exec: $! of a background call is the client).
front() {
        local as=$1
        shift
        exec "$CLIENT" --as "$as" --profile "$SBX_STAGE/profiles/default.ini" --connect "$SOCK" "$@"
}

logged() {
        grep -q "$1" "$BATS_TEST_TMPDIR/helper.log"
}

# hold: a front that holds job A (sleep 600) until SIGUSR1.
hold() {
        front "$NOBODY" --hold none > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/log" &
        CPID=$!
        wait_until 60 done_or_exited
        cat "$BATS_TEST_TMPDIR/out"
        grep -q '^attacks done' "$BATS_TEST_TMPDIR/out"
        A_CG=$(field "A cgroup")
        A_WS=$(field "A workspace")
        A_PID=$(field "A pid")
        [ -n "$A_PID" ]
}

@test "sbx-privd --socket: the socket is root's and the front's group's only" {
        run stat -c '%U %g %a' "$SOCK"
        [ "$status" = 0 ]
        [ "$output" = "root $(id -g nobody) 660" ]
}

@test "sbx-privd --socket: a front of the configured uid connects and runs a job" {
        run front "$NOBODY" run
        echo "$output"
        [ "$status" = 0 ]
        grep -qx connected <<<"$output"
        grep -qx 'R exit-code 0' <<<"$output"
        logged "front connected: pid [0-9]* uid $(id -u nobody)"
}

@test "sbx-privd --socket: a connection from another uid is refused and logged, and the front still gets in" {
        # uid 1 in the front's group: it can reach the socket, and the
        # helper, not the file mode, turns it away.
        run front "1:$(id -g nobody)" run
        [ "$status" != 0 ]
        ! grep -qx connected <<<"$output" || false
        wait_until 10 logged "refused a connection from pid [0-9]* uid 1 gid $(id -g nobody): only the front's uid $(id -u nobody) is served"
        run front "$NOBODY" run
        [ "$status" = 0 ]
        grep -qx 'R exit-code 0' <<<"$output"
}

@test "sbx-privd --socket: a second front while one is connected is refused; the first keeps its job" {
        hold
        run front "$NOBODY" run
        [ "$status" != 0 ]
        ! grep -qx connected <<<"$output" || false
        wait_until 10 logged "refused a connection from pid [0-9]* uid $(id -u nobody) .*: a front is connected (one at a time)"
        alive "$A_PID"
        [ -d "$A_CG" ]
        mountpoint -q "$A_WS"
        alive "$LPID"
}

@test "sbx-privd --socket: the front killed, its jobs are killed and removed and the next front is served" {
        hold
        kill -KILL "$CPID"
        wait "$CPID" || true
        CPID=
        wait_until 30 logged "waiting for the next front"
        wait_until 10 gone "$A_PID"
        [ ! -e "$A_CG" ]
        [ ! -e "$A_WS" ]
        alive "$LPID"
        run front "$NOBODY" run
        echo "$output"
        [ "$status" = 0 ]
        grep -qx 'R exit-code 0' <<<"$output"
}

# park_job: a front that spawns job P to outlive it and hangs up; P_UID,
# P_PID, P_SLOT and P_GEN say which.
park_job() {
        (front "$NOBODY" park) > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/log" || true
        cat "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/log"
        grep -q '^attacks done' "$BATS_TEST_TMPDIR/out"
        ! grep '^ACCEPTED' "$BATS_TEST_TMPDIR/out" || false
        P_UID=$(field "P uid")
        P_PID=$(field "P pid")
        read -r P_SLOT P_GEN <<<"$(field "P handle")"
        wait_until 10 logged "parked (the front went away)"
}

@test "sbx-privd --socket: a job spawned to outlive its front is parked when the front goes, and only JOB_ADOPT takes it back" {
        park_job
        alive "$P_PID"
        P_CG=$(ls -d "$PRIVD_CG"/job-p"$P_SLOT"-"$P_GEN")
        [ -d "$P_CG" ]
        run -0 env PARK_UID="$P_UID" PARK_PID="$P_PID" PARK_SLOT="$P_SLOT" PARK_GEN="$P_GEN" \
                "$CLIENT" --as "$NOBODY" --profile "$SBX_STAGE/profiles/default.ini" --connect "$SOCK" adopt
        echo "$output"
        ! grep '^ACCEPTED' <<<"$output" || false
        grep -qx adopted <<<"$output"
        grep -q "^refused JOB_KILL of a parked job's handle" <<<"$output"
        grep -q "^refused a second JOB_ADOPT" <<<"$output"
        logged "taken back by the front"
        wait_until 10 gone "$P_PID"
        [ ! -e "$P_CG" ]
}

@test "sbx-privd --socket: a parked job is closed when its launcher exits, and when no front takes it back in time" {
        park_job
        P_CG=$PRIVD_CG/job-p$P_SLOT-$P_GEN
        kill -KILL "$P_PID"
        wait_until 10 logged "job job-p$P_SLOT-$P_GEN: closed (parked, and its launcher exited)"
        [ ! -e "$P_CG" ]
        # a helper that waits 1 s only
        kill "$LPID"
        wait "$LPID" || true
        "$PRIVD" --socket "$SOCK" --front "$NOBODY" --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" \
                --launcher "$SBX_LAUNCH" --park-timeout 1 2> "$BATS_TEST_TMPDIR/helper.log" &
        LPID=$!
        wait_until 30 test -S "$SOCK"
        park_job
        wait_until 10 logged "job job-p$P_SLOT-$P_GEN: closed (parked, and no front took it back in time)"
        wait_until 10 gone "$P_PID"
        [ ! -e "$PRIVD_CG/job-p$P_SLOT-$P_GEN" ]
}

@test "sbx-privd --socket: a hostile front's broken frames leave nothing for the next front (sequence and HELLO start over)" {
        front "$NOBODY" --hold frames > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/log" &
        CPID=$!
        wait_until 90 done_or_exited
        cat "$BATS_TEST_TMPDIR/out"
        grep -q '^attacks done' "$BATS_TEST_TMPDIR/out"
        ! grep '^ACCEPTED' "$BATS_TEST_TMPDIR/out" || false
        grep -qx alive "$BATS_TEST_TMPDIR/out"
        logged "^sbx-privd: refused .*HELLO repeated"
        A_PID=$(field "A pid")
        kill -USR1 "$CPID"
        wait "$CPID" || true
        CPID=
        wait_until 10 gone "$A_PID"
        run front "$NOBODY" run
        [ "$status" = 0 ]
        grep -qx 'R exit-code 0' <<<"$output"
}

@test "sbx-privd --socket: SIGTERM closes every job, removes the socket and exits 0" {
        hold
        kill -TERM "$LPID"
        local st=0
        wait "$LPID" || st=$?
        LPID=
        [ "$st" = 0 ]
        wait_until 10 gone "$A_PID"
        [ ! -e "$A_CG" ]
        [ ! -e "$A_WS" ]
        [ ! -e "$SOCK" ]
        logged "stopped, every job closed"
}

@test "sbx-privd refuses --socket with --fd, and --listen on a socket that does not listen" {
        run "$PRIVD" --socket "$SOCK.2" --fd 0 --front "$NOBODY" --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" \
                --launcher "$SBX_LAUNCH"
        [ "$status" = 2 ]
        grep -q 'one of --fd, --socket and --listen' <<<"$output"
        run "$PRIVD" --listen 0 --front "$NOBODY" --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" \
                --launcher "$SBX_LAUNCH" < /dev/null
        [ "$status" = 2 ]
        grep -q -- '--listen : not a SOCK_SEQPACKET socket' <<<"$output"
}

# The front in a mount namespace of its own, as its systemd unit puts it
# (ProtectSystem= and the like): open_tree(2) cannot clone a mount of
# another namespace, so the helper finds the same directory in its cache.
@test "sbx-privd --socket: a bundle tree from a front in another mount namespace reaches the job read-only, through --bundle-cache" {
        run unshare -m --propagation private -- "$CLIENT" --as "$NOBODY" --profile "$SBX_STAGE/profiles/default.ini" \
                --connect "$SOCK" --bundle "$TREE" artifacts
        echo "$output"
        [ "$status" = 0 ]
        grep -qx "J bundle listing: README bin" <<<"$output"
        grep -qx "J bundle mount: read-only" <<<"$output"
}

@test "sbx-privd --socket: a directory of the front's outside the cache, from another mount namespace, is refused and logged" {
        run unshare -m --propagation private -- "$CLIENT" --as "$NOBODY" --profile "$SBX_STAGE/profiles/default.ini" \
                --connect "$SOCK" --bundle "$ELSEWHERE" artifacts
        echo "$output"
        [ "$status" = 1 ]
        grep -qx "J SPAWN: No such file or directory" <<<"$output"
        ! grep -qx "J bundle listing: README bin" <<<"$output" || false
        wait_until 10 logged "^sbx-privd: refused SPAWN .*bundle descriptor: in another mount namespace, and no tree of $CACHE is that directory"
}
