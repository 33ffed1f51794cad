#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) TIMEOUTS AND CANCELLATION: a job whose timeout cannot
# be armed does not start (E_SPAWN, saying so), and a grace period that
# cannot be armed is no grace: the job is killed at once. The kernel's
# timers are made to fail by t/helpers/fail-timerfd.so, preloaded into the
# daemon, while $FAULT says "create" or "settime".

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config "kill_grace = 60s"
        export FAULT="$SUP_DIR/timerfd-fault"
        rm -f "$FAULT"
        [ -f "$SBX_BUILDDIR/t/helpers/fail-timerfd.so" ] || return 0
        # (an ASan build wants its runtime first in the library list: the
        # preloaded helper is let in ahead of it)
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
                LD_PRELOAD="$SBX_BUILDDIR/t/helpers/fail-timerfd.so" SBX_TEST_TIMERFD_FAULT="$FAULT" sup_start
}

teardown_file() {
        rm -f "$FAULT"
        sup_fini
}

setup() {
        require_userns
        [ -f "$SBX_BUILDDIR/t/helpers/fail-timerfd.so" ] || skip "t/helpers/fail-timerfd.so was not built"
        rm -f "$FAULT"
}

teardown() {
        rm -f "$FAULT"
}

@test "no timer for its timeout (timerfd_create fails): the job does not start, and its record says why" {
        echo create > "$FAULT"
        run ctl --json run --timeout 2s -- sh -c 'echo ran'
        [ "$status" -ne 0 ]
        [[ "$output" != *'"data":"ran'* ]]
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        run ctl --json result "$job"
        [ "$status" -eq 0 ]
        [ "$(json_get result.state <<<"$output")" = error ]
        [ "$(json_get result.error.code <<<"$output")" = E_SPAWN ]
        [ "$(json_get result.error.message <<<"$output")" = "cannot arm the job's timeout: timerfd_create: Too many open files" ]
        [ "$(json_get result.started <<<"$output")" = null ]
        # the timers work again: so do jobs
        rm -f "$FAULT"
        run ctl run --timeout 2s -- echo ran
        [ "$status" -eq 0 ]
        [ "$output" = ran ]
}

@test "a timeout that cannot be armed (timerfd_settime fails): the job does not start" {
        echo settime > "$FAULT"
        run ctl --json run --timeout 2s -- sh -c 'echo ran'
        [ "$status" -ne 0 ]
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        run ctl --json result "$job"
        [ "$status" -eq 0 ]
        [ "$(json_get result.error.code <<<"$output")" = E_SPAWN ]
        [ "$(json_get result.error.message <<<"$output")" = "cannot arm the job's timeout: timerfd_settime: Invalid argument" ]
}

@test "a grace period that cannot be armed: the job is killed at once, not left running" {
        job=$(ctl submit --timeout 1m -- sh -c 'trap "" TERM; echo armed; while :; do sleep 0.1; done')
        for i in $(seq 100); do
                [ "$(ctl --json status "$job" | json_get job.state)" = running ] && break
                sleep 0.1
        done
        [ "$(ctl --json status "$job" | json_get job.state)" = running ]
        echo settime > "$FAULT"
        ctl cancel "$job"
        # kill_grace is 60 s: only the immediate kill ends it this soon
        run timeout 20 "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" wait "$job"
        [ "$status" -ne 124 ]
        rm -f "$FAULT"
        [ "$(ctl --json result "$job" | json_get result.state)" = killed ]
        grep -q "cannot arm the grace period" "$SUP_DIR/daemon.log"
}
