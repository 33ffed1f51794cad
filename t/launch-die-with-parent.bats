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
        sleep 0.3
        launcher=$(launcher_of 9822)
        kids=$(pgrep -P "$launcher" || true)
        [ -n "$kids" ]
        kill -9 "$launcher"
        wait || true
        exec 7>&-
        sleep 0.3
        for k in $kids; do ! kill -0 "$k" 2>/dev/null; done
        [ -z "$(leftovers 9822)" ]
}

@test "with die-with-parent = no the job outlives a killed launcher" {
        marker=9823
        sbx --set sandbox.die-with-parent=no -- sleep $marker &
        wait_for $marker
        kill -9 "$(launcher_of $marker)"
        wait || true
        sleep 0.3
        [ -n "$(leftovers $marker)" ]
        pkill -9 -u "$(as_user id -u)" -f "sleep $marker" || true
}
