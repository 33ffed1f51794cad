#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-privd(8): uploads, artifacts and bundle trees across the uid line.
# t/helpers/privd-client starts the helper as root with --front nobody,
# drops to nobody and, as the front would, writes uploads through the
# workspace descriptor, hands the workspace over, runs a real sbx-launch,
# reclaims the artifacts and passes bundle directories; then tries what a
# hostile front or job would. Each attack is refused and logged, nothing
# outside the workspace changes owner, the helper stays up, and job A,
# running since before the attacks, is untouched.

load helpers/privd
bats_require_minimum_version 1.5.0

setup_file() {
        privd_init privd-fs 1880424448
        # A bundle tree in the front's cache: the front's own directory.
        BUNDLE=$SBX_STAGE/bundle
        mkdir -p "$BUNDLE/bin"
        echo 'a bundle' > "$BUNDLE/README"
        if [ "$(id -u)" = 0 ]; then
                chown -R nobody:nogroup "$BUNDLE"
        fi
        export BUNDLE
}

teardown_file() {
        privd_fini
}

setup() {
        privd_setup
        SHADOW_BEFORE=$(stat -c %u:%g /etc/shadow)
        PASSWD_BEFORE=$(stat -c %u:%g /etc/passwd)
}

teardown() {
        privd_teardown
}

client() {
        privd_client --bundle "$BUNDLE" "$@" --
}

# The line "LABEL: VALUE" of the client's output, or of $output.
value() {
        local src=${2:-$BATS_TEST_TMPDIR/out}
        awk -v k="$1: " 'index($0, k) == 1 { print substr($0, length(k) + 1); exit }' "$src"
}

# Nothing outside the workspaces changed owner.
host_files_untouched() {
        [ "$(stat -c %u:%g /etc/shadow)" = "$SHADOW_BEFORE" ]
        [ "$(stat -c %u:%g /etc/passwd)" = "$PASSWD_BEFORE" ]
        [ "$(stat -c %u /)" = 0 ]
        [ "$(stat -c %u /etc)" = 0 ]
}

# Nothing accepted, the helper answers, A is whole; then the front hangs
# up and the helper leaves nothing of A behind.
survived() {
        ! grep '^ACCEPTED' "$BATS_TEST_TMPDIR/out" || false
        ! grep '^CHANGED' "$BATS_TEST_TMPDIR/out" || false
        grep -qx alive "$BATS_TEST_TMPDIR/out"
        grep -qx 'A untouched' "$BATS_TEST_TMPDIR/out"
        alive "$HELPER"
        alive "$A_PID"
        grep -qx "$A_PID" "$A_CG/cgroup.procs"
        mountpoint -q "$A_WS"
        host_files_untouched
        kill -USR1 "$CPID"
        local st=0
        wait "$CPID" || st=$?
        CPID=
        [ "$st" = 0 ]
        wait_until 30 gone "$HELPER"
        [ ! -e "$A_CG" ]
        [ ! -e "$A_WS" ]
        host_files_untouched
}

@test "uploads go in as the front, the job reads them and writes artifacts, the front reads those back" {
        run client artifacts
        echo "$output"
        [ "$status" = 0 ]
        value "J workspace owner before handover" <(echo "$output") | grep -qx front
        value "J WS_HANDOVER" <(echo "$output") | grep -qx ok
        value "J workspace owner after handover" <(echo "$output") | grep -qx job
        value "J upload owner after handover" <(echo "$output") | grep -qx job
        value "J workspace mode after handover" <(echo "$output") | grep -qx 700
        value "J front adds to a handed-over directory" <(echo "$output") | grep -qx "Permission denied"
        value "J SPAWN" <(echo "$output") | grep -qx ok
        grep -qx "J exit-code 0" <<<"$output"
        # The launcher exited, but JOB_KILL was not asked: its processes
        # could still be there as far as the helper knows.
        value "J WS_RECLAIM before JOB_KILL" <(echo "$output") | grep -qx "Protocol error"
        value "J WS_RECLAIM" <(echo "$output") | grep -qx ok
        value "J artifact" <(echo "$output") | grep -qx "upload-one upload-two"
        value "J deep artifact" <(echo "$output") | grep -qx deep
        value "J artifact owner" <(echo "$output") | grep -qx front
        value "J WS_RECLAIM again" <(echo "$output") | grep -qx "Protocol error"
        value "J JOB_CLOSE" <(echo "$output") | grep -qx ok
        host_files_untouched
}

@test "a bundle directory of the front's reaches the job read-only, the tree only" {
        run client artifacts
        echo "$output"
        [ "$status" = 0 ]
        value "J bundle listing" <(echo "$output") | grep -qx "README bin"
        value "J bundle mount" <(echo "$output") | grep -qx read-only
        # The helper's mount went to the launcher alone: nothing is left
        # mounted on the host, and the front's tree is as it was.
        ! grep -q "$BUNDLE" /proc/self/mountinfo || false
        [ ! -e "$BUNDLE/new" ]
        [ "$(stat -c %U "$BUNDLE")" = nobody ]
}

@test "WS_HANDOVER refuses a fifo, a socket, a second link, a root file, a device, a mount, a deep tree, and changes nothing" {
        attack uploads
        refused "WS_HANDOVER with a fifo" "WS_HANDOVER.*'fifo' at depth 1: a fifo"
        refused "WS_HANDOVER with a socket" "WS_HANDOVER.*'sock' at depth 1: a socket"
        refused "WS_HANDOVER with a file of two links" "WS_HANDOVER.*at depth 1: a regular file with 2 links"
        refused "WS_HANDOVER with a root-owned file" "WS_HANDOVER.*'rootfile' at depth 2: owned by uid 0, not the front"
        refused "WS_HANDOVER with a device node" "WS_HANDOVER.*'null' at depth 1: a character device"
        refused "WS_HANDOVER with another mount" "WS_HANDOVER.*'mnt' at depth 1: another mount"
        refused "WS_HANDOVER with 70 nested directories" "WS_HANDOVER.*deeper than the walk goes"
        refused "SPAWN after a refused WS_HANDOVER" "SPAWN.*is open: SPAWN needs a job handed over"
        [ "$(grep -c '^unchanged ' "$BATS_TEST_TMPDIR/out")" = 7 ]
        survived
}

@test "WS_HANDOVER of a symlink to /etc/shadow changes the link, never its target; hard links to root's files never get in" {
        attack uploads
        value "S WS_HANDOVER with a symlink to /etc/shadow" | grep -qx ok
        # The kernel refuses both links (another file system, and
        # protected_hardlinks); had one been made, the helper would refuse
        # a file of two links, and the target would still not change.
        value "link /etc/shadow" | grep -Eqx "Invalid cross-device link|Operation not permitted"
        value "link /etc/passwd" | grep -Eqx "Invalid cross-device link|Operation not permitted"
        local ws
        ws=$(field "S workspace")
        [ "$(stat -c %u "$ws/shadow")" = "$(field "S uid")" ]
        [ "$(readlink "$ws/shadow")" = /etc/shadow ]
        survived
}

@test "requests out of the job's state are refused: handover twice or after spawn, spawn before handover, reclaim of a running job" {
        attack states
        refused "WS_HANDOVER twice" "WS_HANDOVER.*is handed over: WS_HANDOVER needs an open job"
        refused "WS_HANDOVER after SPAWN" "WS_HANDOVER.*is spawned: WS_HANDOVER needs an open job"
        refused "WS_HANDOVER slot of A, generation of B" "WS_HANDOVER.*is not that of slot"
        refused "WS_HANDOVER made-up handle" "WS_HANDOVER.*made-up handle"
        refused "WS_HANDOVER stale handle" "WS_HANDOVER.*slot .* holds no job"
        refused "WS_RECLAIM stale handle" "WS_RECLAIM.*slot .* holds no job"
        refused "SPAWN before WS_HANDOVER" "SPAWN.*is open: SPAWN needs a job handed over"
        refused "WS_RECLAIM of an open job" "WS_RECLAIM.*is open: WS_RECLAIM needs a killed job"
        refused "WS_RECLAIM while the job runs" "WS_RECLAIM.*is spawned: WS_RECLAIM needs a killed job"
        refused "WS_RECLAIM of a job handed over, not run" "WS_RECLAIM.*is handed over: WS_RECLAIM needs a killed job"
        value "D workspace owner" | grep -qx front
        # D never ran: nothing of its uid.
        run pgrep -u "$(field "D uid")"
        [ "$status" = 1 ]
        survived
}

@test "WS_RECLAIM gives the front the job's files, never a symlink's target, and leaves other owners' files" {
        attack reclaim
        refused "WS_RECLAIM before JOB_KILL" "WS_RECLAIM.*is spawned: WS_RECLAIM needs a killed job"
        value "K WS_RECLAIM" | grep -qx ok
        refused "JOB_KILL after WS_RECLAIM" "JOB_KILL.*is reclaimed: only JOB_CLOSE is left"
        value "K deep file" | grep -qx f
        value "K symlink owner" | grep -qx front
        value "K root-owned file owner" | grep -qx 0
        value "K hard link to /etc/passwd" | grep -q "Invalid cross-device link"
        grep -Eq "^sbx-privd: job job-p[0-9]+-[0-9]+: reclaimed [0-9]+ entries; left [1-9][0-9]* of other owners" "$BATS_TEST_TMPDIR/log"
        local ws nobody
        ws=$(field "K workspace")
        nobody=$(id -u nobody)
        [ "$(stat -c %u "$ws/shadow")" = "$nobody" ]
        [ "$(stat -c %u "$ws/d/root")" = "$nobody" ]
        [ "$(stat -c %u "$ws/a")" = 0 ]
        [ "$(stat -c %u "$ws/d/e/f")" = "$nobody" ]
        survived
}

@test "a bundle descriptor of /, /etc, a root directory, a file, /proc/self or a job's workspace is refused" {
        attack bundle
        refused "SPAWN with / as the bundle" "SPAWN.*bundle descriptor: a directory owned by uid 0, not the front's"
        refused "SPAWN with /etc as the bundle" "SPAWN.*bundle descriptor: a directory owned by uid 0"
        refused "SPAWN with a root-owned directory as the bundle" "SPAWN.*bundle descriptor: a directory owned by uid 0"
        refused "SPAWN with a regular file as the bundle" "SPAWN.*descriptor 7: expected a directory"
        refused "SPAWN with the front's /proc/self as the bundle" "SPAWN.*bundle descriptor: a directory of a kernel filesystem"
        refused "SPAWN with job A's workspace as the bundle" "SPAWN.*bundle descriptor: a directory owned by uid $(field "A uid"), not the front's"
        value "B SPAWN with the front's directory as the bundle" | grep -qx ok
        survived
}

@test "sbx-privd refuses a --front of root, of the job range, or neither UID:GID nor a user" {
        run "$PRIVD" --fd 0 --front 0:0 --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" --launcher "$SBX_LAUNCH"
        [ "$status" = 2 ]
        [[ "$output" == *"--front 0:0: the front does not run as root"* ]]
        local first=${PRIVD_UIDS%-*}
        run "$PRIVD" --fd 0 --front "$first:$first" --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" --launcher "$SBX_LAUNCH"
        [ "$status" = 2 ]
        [[ "$output" == *"--front $first: a uid of the job range"* ]]
        run "$PRIVD" --fd 0 --front no-such-user-sbx --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" --launcher "$SBX_LAUNCH"
        [ "$status" = 2 ]
        [[ "$output" == *"--front no-such-user-sbx: no such user"* ]]
        run "$PRIVD" --fd 0 --front root --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" --launcher "$SBX_LAUNCH"
        [ "$status" = 2 ]
        [[ "$output" == *"--front root: the front does not run as root"* ]]
        run "$PRIVD" --fd 0 --front 12:x --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" --launcher "$SBX_LAUNCH"
        [ "$status" = 2 ]
        [[ "$output" == *"--front: expected a number"* ]]
        run "$PRIVD" --fd 0 --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" --launcher "$SBX_LAUNCH"
        [ "$status" = 1 ]
        [[ "$output" == *"--front {UID:GID | USER}"* ]]
}

@test "20,000 uploads change hands both ways, each walk timed" {
        run client many
        echo "$output"
        [ "$status" = 0 ]
        value "M WS_HANDOVER" <(echo "$output") | grep -qx ok
        value "M WS_RECLAIM" <(echo "$output") | grep -qx ok
        value "M files of the front after reclaim" <(echo "$output") | grep -qx 20000
        value "M JOB_CLOSE" <(echo "$output") | grep -qx ok
        echo "# $(grep -E '^M (entries|handover|reclaim):' <<<"$output" | tr '\n' ' ')(load: $(cut -d' ' -f1-3 /proc/loadavg))" >&3
}

@test "a front racing its own WS_HANDOVER gets it refused, whole or undone, never a job with its fifo" {
        attack race
        grep -E '^race: ' "$BATS_TEST_TMPDIR/out" >&3
        # Each refusal that changed owners is logged as such.
        local partial
        partial=$(sed -n 's/^race: .* \([0-9]*\) refused after changes$/\1/p' "$BATS_TEST_TMPDIR/out")
        [ -n "$partial" ]
        [ "$(grep -c "^sbx-privd: refused WS_HANDOVER .*entries changed hands; the job will not run" "$BATS_TEST_TMPDIR/log")" = "$partial" ]
        survived
}
