#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) --pass-fd and --file: the command gets 0, 1, 2 and the
# descriptors passed on purpose, nothing else the caller had open.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
        d=$(user_dir)
}

@test "--pass-fd passes that descriptor, readable in the command" {
        echo passed-data > "$d/in"
        run sbx --pass-fd 7 -- sh -c 'cat <&7' 7<"$d/in"
        [ "$status" -eq 0 ]
        [ "$output" = passed-data ]
}

@test "--pass-fd of a write end: the command writes to the caller's file" {
        run sbx --pass-fd 8 -- sh -c 'echo out-data >&8' 8>"$d/out"
        [ "$status" -eq 0 ]
        [ "$(cat "$d/out")" = out-data ]
}

@test "descriptors the caller did not pass are closed in the command" {
        run sbx --pass-fd 7 -- sh -c 'ls /proc/self/fd | sort -n | tr "\n" " "' 7</dev/null 8</dev/null 9>/dev/null
        [ "$status" -eq 0 ]
        # ls itself holds one more (its directory), the highest number
        set -- $output
        [ "$1 $2 $3 $4" = "0 1 2 3" ] || [ "$1 $2 $3 $4" = "0 1 2 7" ]
        [[ " $output " == *" 7 "* ]]
        [[ " $output " != *" 8 "* ]]
        [[ " $output " != *" 9 "* ]]
}

@test "--pass-fd of a closed descriptor, or 0-2, is a usage error" {
        run sbx --pass-fd 42 -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"--pass-fd 42: Bad file descriptor"* ]]
        run sbx --pass-fd 1 -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"always passed"* ]]
}

@test "--file copies a descriptor's contents to a new file; the descriptor itself is not passed" {
        printf 'line1\nline2\n' > "$d/src"
        run sbx --perms 0600 --file 7 /etc/job.conf -- sh -c 'cat /etc/job.conf; stat -c %a /etc/job.conf; test -e /proc/self/fd/7 && echo leaked || echo closed' 7<"$d/src"
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = line1 ]
        [ "${lines[1]}" = line2 ]
        [ "${lines[2]}" = 600 ]
        [ "${lines[3]}" = closed ]
}

@test "--file onto an existing file is refused (never writes into a bound file)" {
        echo keep > "$d/f"
        run sbx --bind "$d/f" /etc/f --file 0 /etc/f -- true </dev/null
        [ "$status" -eq 125 ]
        [[ "$output" == *"file: /etc/f: File exists"* ]]
        [ "$(cat "$d/f")" = keep ]
}

# Issue 9: what the caller hands over as fds 0-2 must not reach further
# than itself.
@test "a directory as stdin, stdout or stderr is refused, naming the descriptor" {
        d=$(user_dir)
        run sbx -- true < "$d"
        [ "$status" -eq 125 ]
        [[ "$output" == *"stdin (fd 0) is a directory: a job is never handed a directory of the host"* ]]
        # the escape it stops: reading the host's tree through the descriptor
        run sbx --set security.landlock=off -- sh -c 'ls /proc/self/fd/0/' 2>&1 < /
        [ "$status" -eq 125 ]
        [[ "$output" != *"etc"* ]]
        run -0 as_user /usr/bin/python3 -c '
import os, subprocess, sys
fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
r = subprocess.run([sys.argv[1], "--", "true"], stderr=fd, stdout=subprocess.DEVNULL)
print(r.returncode)' "$SBX_LAUNCH"
        [ "$output" = 125 ]
}

@test "a read-only host file as stdin cannot be reopened for writing through /proc/self/fd/0" {
        d=$(user_dir)
        echo original > "$d/in"
        [ "$(id -u)" = 0 ] && chown nobody:nogroup "$d/in"
        chmod 0644 "$d/in"
        reopen='try:
    open("/proc/self/fd/0", "w").write("rewritten\n"); print("rewrote")
except OSError as e:
    print("refused", e.errno)'
        # Landlock (the default where the kernel has it) refuses the reopen
        run sbx --json-status-fd 5 -- python3 -c "$reopen" < "$d/in" 5>"$BATS_TEST_TMPDIR/st"
        if [ "$(jq -s '.[-1].protections."landlock-fs"' "$BATS_TEST_TMPDIR/st")" = true ]; then
                [ "$status" -eq 0 ]
                [ "$output" = "refused 13" ]
        fi
        [ "$(cat "$d/in")" = original ]
        # without Landlock the file is refused, and the job never runs
        run sbx --set security.landlock=off -- python3 -c "$reopen" < "$d/in"
        [ "$status" -eq 125 ]
        [[ "$output" == *"stdin (fd 0) is a read-only file of the host and Landlock is not applied"* ]]
        [ "$(cat "$d/in")" = original ]
        # a pipe carries the same data, with nothing to reopen
        run sbx --set security.landlock=off -- sh -c 'cat; python3 -c "$1"' sh "$reopen" < <(cat "$d/in")
        [ "$status" -eq 0 ]
        [[ "$output" == "original"* ]]
        [ "$(cat "$d/in")" = original ]
        # a file opened for writing as well was handed over writable anyway
        run sbx --set security.landlock=off -- sh -c 'echo appended >&0' 0<>"$d/in"
        [ "$status" -eq 0 ]
}
