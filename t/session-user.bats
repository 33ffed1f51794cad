#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Sessions with "user" set: the front without privilege makes the agent's
# socket, sbx-privd starts the sandbox's launcher as a uid of its range and
# passes the socket on as the launcher's descriptor 8 (sbx-privd(8)).

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
        [ "$(id -u)" = 0 ] || skip "user mode starts as root"
        sup_user_mode
        rm -f "$SUP_DIR/sup.conf"
        sup_config "$SUP_USER_LINES"
        sup_start
}

teardown() {
        sup_stop
}

@test "user mode: a session's sandbox runs as a uid of sbx-privd's range and keeps its files across execs; close ends it" {
        run -0 ctl session create
        sid=$output
        run -0 ctl session exec "$sid" -- sh -c 'id -u; echo 41 > n'
        local first=${SUP_JOB_UIDS%-*} last=${SUP_JOB_UIDS#*-}
        [ "${lines[0]}" -ge "$first" ] && [ "${lines[0]}" -le "$last" ] || false
        run -0 ctl session exec "$sid" -- sh -c 'echo $(( $(cat n) + 1 ))'
        [ "$output" = 42 ]
        echo hello > "$BATS_TEST_TMPDIR/f"
        run -0 ctl session put "$sid" "$BATS_TEST_TMPDIR/f" f
        run -0 ctl session get "$sid" f
        [ "$output" = hello ]
        run -0 ctl --json session show "$sid"
        box=$(json_get job <<<"$output")
        run -0 ctl session close "$sid"
        run ! ctl --json wait "$box"
        [ "$(json_get result.session.ended <<<"$output")" = closed ]
}
