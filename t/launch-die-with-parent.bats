#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) die-with-parent: kill -9 the launcher and every process of
# the job goes with it, including setsid'd and double-forked ones.

load helpers/common

setup() {
        require_userns
}

leftovers() {
        pgrep -u "$(as_user id -u)" -f "sleep $1" || true
}

# The launcher itself (not the shell function that started it): the oldest
# sbx-launch process whose command line has the marker.
launcher_of() {
        pgrep -o -u "$(as_user id -u)" -f "sbx-launch.*$1"
}

launcher_has_kids() {
        local l
        l=$(launcher_of "$1") && pgrep -P "$l" >/dev/null
}

wait_for() {
        for _ in $(seq 100); do [ -n "$(leftovers "$1")" ] && return 0; sleep 0.05; done
        return 1
}

@test "SIGKILL of the launcher kills the whole job" {
        marker=9821
        sbx -- sh -c "(setsid sleep $marker &); (sleep $marker &); sleep $marker" &
        wait_for $marker
        launcher=$(launcher_of $marker)
        [ "$(leftovers $marker | wc -l)" -ge 3 ]
        kill -9 "$launcher"
        wait || true
        for _ in $(seq 40); do [ -z "$(leftovers $marker)" ] && break; sleep 0.05; done
        [ -z "$(leftovers $marker)" ]
}

@test "SIGKILL of the launcher during setup (blocked on --block-fd) leaves nothing" {
        fifo="$BATS_TEST_TMPDIR/fifo"
        mkfifo "$fifo"
        sbx --block-fd 6 -- sleep 9822 6<"$fifo" &
        exec 7>"$fifo"
        # the launcher has forked the job, which waits on the fifo
        wait_until 10 launcher_has_kids 9822
        launcher=$(launcher_of 9822)
        kids=$(pgrep -P "$launcher")
        [ -n "$kids" ]
        kill -9 "$launcher"
        wait || true
        exec 7>&-
        for k in $kids; do wait_until 10 pid_gone "$k"; done
        [ -z "$(leftovers 9822)" ]
}

@test "with die-with-parent = no the job outlives a killed launcher" {
        marker=9823
        d=$(user_dir)
        # The job proves it lives on by doing something after the kill.
        sbx --set sandbox.die-with-parent=no --bind "$d" /out -- sh -c \
                "touch /out/up; until [ -e /out/go ]; do sleep 0.05; done; touch /out/outlived; sleep $marker" &
        wait_until 10 test -e "$d/up"
        kill -9 "$(launcher_of $marker)"
        wait || true
        touch "$d/go"
        wait_until 10 test -e "$d/outlived"
        wait_for $marker
        pkill -9 -u "$(as_user id -u)" -f "sleep $marker" || true
}
