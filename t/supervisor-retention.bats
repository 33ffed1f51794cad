#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord.conf(5) retention: result records, captured output and
# artifacts are deleted once they are older than the setting, and only then.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config "retention = 3s"
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
}

@test "a result is kept for the retention time, then deleted with its files" {
        job=$(ctl submit -- sh -c 'echo kept')
        ctl wait "$job"
        [ -f "$SUP_DIR/state/results/$job.json" ]
        [ -f "$SUP_DIR/state/results/$job/stdout" ]
        run -0 ctl logs "$job"
        [ "$output" = kept ]
        for i in $(seq 80); do
                [ -e "$SUP_DIR/state/results/$job.json" ] || break
                sleep 0.1
        done
        [ ! -e "$SUP_DIR/state/results/$job.json" ]
        [ ! -e "$SUP_DIR/state/results/$job" ]
        run -0 raw "{\"v\":1,\"op\":\"result\",\"job\":\"$job\"}"
        [ "$(json_get error.code <<<"$output")" = E_NOT_FOUND ]
        grep -q "retention: removed" "$SUP_DIR/daemon.log"
}
