#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Structured results (sbx-protocol(7) THE RESULT RECORD "value",
# sbx-supervisord.conf(5) max_result_value): a job writes JSON to
# $SBX_RESULT and its record carries it; a file that is not JSON, too
# big, a link, a FIFO or a directory is refused with the reason and the
# job's exit is still recorded.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config "socket_mode = 0666
max_result_value = 4K"
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
}

# run_job SCRIPT: runs it to its end; prints its record
run_job() {
        local j
        j=$(ctl submit -- sh -c "$1")
        ctl wait --json "$j" | jq -c . || true
}

# record JOB: its record on one line
record() {
        ctl result --json "$1" | jq -c .
}

@test "the job's \$SBX_RESULT is in its record as value; sbxctl result --value prints it" {
        run -0 ctl run -- sh -c 'echo "$SBX_RESULT"'
        [ "$output" = /workspace/.sbx-result.json ]
        j=$(ctl submit -- sh -c 'printf "{\"answer\": 42, \"list\": [1, \"two\", null]}" > "$SBX_RESULT"')
        ctl wait "$j" >/dev/null
        run -0 record "$j"
        [ "$(json_get value.answer <<< "$output")" = 42 ]
        [ "$(json_get value.list <<< "$output")" = '[1,"two",null]' ]
        [[ "$output" != *value_error* ]]
        run -0 ctl result --value "$j"
        [ "$(jq .answer <<< "$output")" = 42 ]
        # any JSON value, a bare string too
        j=$(ctl submit -- sh -c 'echo "\"done\"" > "$SBX_RESULT"')
        run -0 ctl wait --value "$j"
        [ "$output" = '"done"' ]
}

@test "no file: value is null, and result --value says there is none" {
        j=$(ctl submit -- true)
        ctl wait "$j" >/dev/null
        run -0 record "$j"
        [ "$(json_get value <<< "$output")" = null ]
        run -1 ctl result --value "$j"
        [[ "$output" == *"$j: the job wrote no value (\$SBX_RESULT)"* ]]
}

@test "not JSON, too big, a link, a FIFO, a directory: refused with the reason, the exit still recorded" {
        run -0 run_job 'echo "{oops" > "$SBX_RESULT"; exit 3'
        [ "$(json_get exit_code <<< "$output")" = 3 ]
        [ "$(json_get value <<< "$output")" = null ]
        [[ "$(json_get value_error <<< "$output")" == ".sbx-result.json: not valid JSON: line 1 column "* ]]
        run -0 run_job 'head -c 5000 /dev/zero | tr "\0" 1 > "$SBX_RESULT"'
        [ "$(json_get value_error <<< "$output")" = ".sbx-result.json: 5000 bytes, more than max_result_value (4096)" ]
        run -0 run_job 'ln -s /etc/passwd "$SBX_RESULT"'
        [ "$(json_get value_error <<< "$output")" = ".sbx-result.json: a symbolic link (not followed)" ]
        # a FIFO nobody writes: the daemon does not wait on it
        run -0 timeout 20 bash -c "$(declare -f run_job ctl); SUP_SOCK='$SUP_SOCK' SBX_STAGE='$SBX_STAGE'; run_job 'mkfifo \"\$SBX_RESULT\"'"
        [ "$(json_get value_error <<< "$output")" = ".sbx-result.json: not a regular file" ]
        run -0 run_job 'mkdir "$SBX_RESULT"'
        [ "$(json_get value_error <<< "$output")" = ".sbx-result.json: not a regular file" ]
        # a duplicated key is not a value
        run -0 run_job 'echo "{\"a\":1,\"a\":2}" > "$SBX_RESULT"'
        [[ "$(json_get value_error <<< "$output")" == *"duplicate"* ]]
        j=$(ctl submit -- sh -c 'echo "[" > "$SBX_RESULT"')
        ctl wait "$j" || true
        run -1 ctl result --value "$j"
        [[ "$output" == *"$j: its value was refused: .sbx-result.json: not valid JSON"* ]]
}

@test "max_result_value is bounded" {
        printf '[daemon]\nmax_result_value = 100\n' > "$SUP_DIR/bad.conf"
        run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/bad.conf" --check-config
        [[ "$output" == *"bad.conf:2: max_result_value"* ]]
}

@test "the audit log's job_end line alone says what the job made: output sizes, artifacts and digests, the value's digest, memory, network" {
        j=$(ctl submit --artifact 'a.txt' -- sh -c 'printf hello; printf oops >&2; printf abc > a.txt; echo "{\"k\": [1, 2]}" > "$SBX_RESULT"')
        ctl wait "$j" >/dev/null
        end=$(grep -F "\"job\":\"$j\"" "$SUP_DIR/audit.log" | grep -F '"event":"job_end"')
        [ "$(jq -c .stdout <<< "$end")" = '{"size":5,"produced":5,"truncated":false}' ]
        [ "$(jq -c .stderr <<< "$end")" = '{"size":4,"produced":4,"truncated":false}' ]
        [ "$(jq -r '.artifacts[0].path' <<< "$end")" = a.txt ]
        [ "$(jq -r '.artifacts[0].sha256' <<< "$end")" = "$(printf abc | sha256sum | cut -c1-64)" ]
        # the value's digest is of its compact form with sorted keys
        [ "$(jq -r .value_sha256 <<< "$end")" = "$(printf '{"k":[1,2]}' | sha256sum | cut -c1-64)" ]
        [ "$(jq -r .peak_rss_kb <<< "$end")" -gt 0 ]
        [ "$(jq -c .network_events <<< "$end")" = '{"allow":0,"deny":0,"dropped":0,"lost":0}' ]
        [ "$(jq -r .cpu_ms <<< "$end")" != null ]
}
