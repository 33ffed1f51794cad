#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-protocol(7) THE RESULT RECORD, limit_hit: when a memory limit stops a
# job, the record says which limit, with its evidence, and the error code
# says so: E_MEMORY for a limit kept by RLIMIT_AS (the program fails its
# own way), E_OOM with the cgroup's memory.events where memory.max kept
# it. A job that fails for another reason, or succeeds, has no limit_hit.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config
        sed -i 's/^profiles = default shell$/profiles = default shell python/' "$SUP_DIR/sup.conf"
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
        command -v python3 >/dev/null || skip "no python3 for the memory hog"
}

HOG='a = []
while True:
    a.append(bytearray(1 << 20))'

@test "a Python memory hog under a 256 MiB limit: the record names the memory limit and the error code" {
        if ldd "$SBX_LAUNCH" 2>/dev/null | grep -q libasan; then
                skip "sbx-launch is an AddressSanitizer build, which does not set memory and data limits"
        fi
        run ctl --json run --profile python --memory 256M -- python3 -c "$HOG"
        hog_status=$status
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        run ctl --json result "$job"
        [ "$status" -eq 0 ]
        rec=$output
        [ "$(json_get result.limit_hit.limit <<<"$rec")" = memory ]
        [ "$(json_get result.limit_hit.value <<<"$rec")" = 268435456 ]
        case "$(json_get result.limits.memory.by <<<"$rec")" in
        rlimit)
                [ "$(json_get result.state <<<"$rec")" = failed ]
                [ "$(json_get result.exit_code <<<"$rec")" = 1 ]
                [ "$hog_status" -eq 1 ]
                [ "$(json_get result.error.code <<<"$rec")" = E_MEMORY ]
                [[ "$(json_get result.error.message <<<"$rec")" == *"of its 256.0 MiB memory limit (RLIMIT_AS, per process)"* ]]
                [ "$(json_get result.limit_hit.by <<<"$rec")" = rlimit ]
                peak=$(json_get result.limit_hit.peak_address_space <<<"$rec")
                [ "$peak" -ge $((256 * 1048576 * 7 / 8)) ]
                [ "$peak" -le $((256 * 1048576)) ]
                ;;
        cgroup)
                [ "$(json_get result.state <<<"$rec")" = oom ]
                [ "$hog_status" -eq 137 ]   # killed by SIGKILL (sbxctl(1) EXIT STATUS)
                [ "$(json_get result.error.code <<<"$rec")" = E_OOM ]
                [ "$(json_get result.limit_hit.by <<<"$rec")" = cgroup ]
                [ "$(json_get result.limit_hit.memory_events.oom_kill <<<"$rec")" -ge 1 ]
                ;;
        *)
                echo "memory limit enforced by $(json_get result.limits.memory.by <<<"$rec")" >&2
                false
                ;;
        esac
}

@test "a job that fails far below its memory limit, or succeeds, has no limit_hit" {
        run -3 ctl --json run --profile python --memory 256M -- python3 -c 'raise SystemExit(3)'
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        run ctl --json result "$job"
        [ "$status" -eq 0 ]
        [ "$(json_get result.state <<<"$output")" = failed ]
        [ "$(json_get result.limit_hit <<<"$output")" = null ]
        [ "$(json_get result.error <<<"$output")" = null ]
        run -0 ctl --json run --memory 256M -- true
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        run ctl --json result "$job"
        [ "$status" -eq 0 ]
        [ "$(json_get result.state <<<"$output")" = succeeded ]
        [ "$(json_get result.limit_hit <<<"$output")" = null ]
}
