#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) --timeout: the whole job dies at the deadline, including
# processes that double-forked or started their own session; exit 124.

load helpers/common

setup() {
        require_userns
        st="$BATS_TEST_TMPDIR/status"
}

# Each test uses its own sleep duration as a marker to find leftovers.
leftovers() {
        pgrep -u "$(as_user id -u)" -f "sleep $1" || true
}

@test "a double-forking, setsid job is killed whole at the timeout" {
        marker=9713
        run sbx --json-status-fd 5 --timeout 500ms -- sh -c "
                (sleep $marker &) ;
                setsid sleep $marker &
                (setsid sh -c 'sleep $marker & sleep $marker') &
                sleep $marker" 5>"$st"
        [ "$status" -eq 124 ]
        wait_until 10 no_process "^sleep $marker"
        [ -z "$(leftovers $marker)" ]
        [ "$(jq -s '.[1]."timed-out"' "$st")" = true ]
        [ "$(jq -s '.[1]."exit-code"' "$st")" = 124 ]
        wall=$(jq -s '.[1]."wall-ms"' "$st")
        [ "$wall" -ge 500 ] && [ "$wall" -lt 3000 ]
}

@test "a job that ignores SIGTERM and SIGKILL-proofs itself still dies" {
        marker=9714
        run sbx --timeout 300ms -- sh -c "trap '' TERM HUP INT; sleep $marker"
        [ "$status" -eq 124 ]
        [ -z "$(leftovers $marker)" ]
}

@test "a job that finishes in time is not marked timed out" {
        run sbx --json-status-fd 5 --timeout 5s -- sh -c 'exit 7' 5>"$st"
        [ "$status" -eq 7 ]
        [ "$(jq -s '.[1]."timed-out"' "$st")" = false ]
}

@test "a timeout from the profile works like --timeout" {
        run sbx --set limits.timeout=200ms -- sleep 5
        [ "$status" -eq 124 ]
}

@test "the timeout also covers setup waiting on --block-fd" {
        run sbx --timeout 300ms --block-fd 6 -- true 6< <(sleep 3)
        [ "$status" -eq 124 ]
}

@test "background processes are killed when the command exits normally" {
        marker=9715
        run sbx -- sh -c "setsid sleep $marker & (sleep $marker &); exit 0"
        [ "$status" -eq 0 ]
        wait_until 10 no_process "^sleep $marker"
        [ -z "$(leftovers $marker)" ]
}
