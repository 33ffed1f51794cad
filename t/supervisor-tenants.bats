#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord.conf(5) TENANTS: peer credentials decide the tenant, an
# unknown caller is refused and audited, a tenant sees only its own jobs,
# and its policy caps every request (reject, or clamp where it says so).

load sup-unit/daemon
bats_require_minimum_version 1.5.0

UID_B=41001
UID_C=41002
UID_X=41009

as_uid() {
        local u=$1
        shift
        setpriv --reuid="$u" --regid="$u" --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" "$@"
}

raw_as() {
        local u=$1
        shift
        printf '%s\n' "$@" | setpriv --reuid="$u" --regid="$u" --clear-groups -- "$SBX_STAGE/bin/sup-client" "$SUP_SOCK"
}

write_config() {
        sup_config "socket_mode = 0666
$1"
        cat >> "$SUP_DIR/sup.conf" <<EOC

[tenant.bravo]
uids = $UID_B
job_user = nobody
job_group = nogroup
profiles = default
max_timeout = 5s
max_memory = 256M
max_output = 1K
max_jobs = 1
max_queue = 4
max_cpus = 0.5
network = none

[tenant.charlie]
uids = $UID_C
profiles = *
over_limit = clamp
max_timeout = 2s
default_timeout = 1s
EOC
}

setup_file() {
        sup_init
        write_config ""
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
}

@test "a caller in no tenant is refused with E_UNAUTHORIZED and audited" {
        run -0 raw_as $UID_X '{"v":1,"op":"ping"}'
        [ "$(json_get error.code <<<"$output")" = E_UNAUTHORIZED ]
        [[ "$(json_get error.message <<<"$output")" == *"uid $UID_X"* ]]
        run as_uid $UID_X run -- true
        [ "$status" -eq 125 ]
        grep -q "\"decision\":\"refused\".*\"uid\":$UID_X\|\"uid\":$UID_X.*\"decision\":\"refused\"" "$SUP_DIR/audit.log"
        grep -q "refused connection from uid $UID_X" "$SUP_DIR/daemon.log"
}

@test "nobody is refused too when it is not a tenant" {
        run ctl_nobody ping
        [ "$status" -eq 125 ]
        [[ "$output" == *E_UNAUTHORIZED* ]]
}

@test "the tenant comes from the peer's uid" {
        run -0 as_uid $UID_B ping
        [[ "$output" == *"uid $UID_B, tenant bravo"* ]]
        run as_uid $UID_B run -- sh -c 'echo $SBX_TENANT; id -u'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = bravo ]
        [ "${lines[1]}" = "$(id -u nobody)" ]
}

@test "a tenant sees and controls only its own jobs" {
        job=$(as_uid $UID_B submit -- sleep 3)
        [[ "$job" =~ ^j ]]
        for op in status result logs cancel wait; do
                run -0 raw "{\"v\":1,\"op\":\"$op\",\"job\":\"$job\"}"
                [ "$(json_get error.code <<<"$output")" = E_NOT_FOUND ]
        done
        run -0 ctl --json ls
        [[ "$output" != *"$job"* ]]
        run -0 as_uid $UID_B --json ls
        [[ "$output" == *"$job"* ]]
        run -0 raw_as $UID_C "{\"v\":1,\"op\":\"cancel\",\"job\":\"$job\"}"
        [ "$(json_get error.code <<<"$output")" = E_NOT_FOUND ]
        run as_uid $UID_B wait "$job"
        [ "$status" -eq 0 ]
        # after the end too
        run -0 raw "{\"v\":1,\"op\":\"result\",\"job\":\"$job\"}"
        [ "$(json_get error.code <<<"$output")" = E_NOT_FOUND ]
}

@test "requests above the tenant's caps are rejected with E_LIMIT and audited" {
        run -0 raw_as $UID_B '{"v":1,"op":"run","command":["true"],"timeout_ms":6000}'
        [ "$(json_get error.code <<<"$output")" = E_LIMIT ]
        [[ "$(json_get error.message <<<"$output")" == *"timeout_ms"*"5000"* ]]
        run -0 raw_as $UID_B '{"v":1,"op":"run","command":["true"],"limits":{"memory":1073741824}}'
        [ "$(json_get error.code <<<"$output")" = E_LIMIT ]
        [[ "$(json_get error.message <<<"$output")" == *"limits.memory"* ]]
        run -0 raw_as $UID_B '{"v":1,"op":"run","command":["true"],"limits":{"output":4096}}'
        [ "$(json_get error.code <<<"$output")" = E_LIMIT ]
        grep -q '"decision":"rejected".*"code":"E_LIMIT"' "$SUP_DIR/audit.log"
}

@test "profiles and network modes outside the policy are E_FORBIDDEN" {
        run -0 raw_as $UID_B '{"v":1,"op":"run","command":["true"],"profile":"shell"}'
        [ "$(json_get error.code <<<"$output")" = E_FORBIDDEN ]
        [[ "$(json_get error.message <<<"$output")" == *"'shell'"* ]]
        run -0 raw_as $UID_B '{"v":1,"op":"run","command":["true"],"network":"host"}'
        [ "$(json_get error.code <<<"$output")" = E_FORBIDDEN ]
}

@test "the tenant's output cap applies by default" {
        run -0 as_uid $UID_B --json run -- sh -c 'head -c 5000 /dev/zero'
        job=$(json_get job <<<"$output" | head -1)
        run -0 as_uid $UID_B --json result "$job"
        [ "$(json_get result.stdout.size <<<"$output")" = 1024 ]
        [ "$(json_get result.stdout.truncated <<<"$output")" = true ]
}

@test "over_limit = clamp lowers the request to the cap and says so" {
        run -0 raw_as $UID_C '{"v":1,"op":"run","command":["sleep","30"],"timeout_ms":60000}'
        [ "$(json_get ok <<<"$output")" = true ]
        [[ "$(json_get clamped <<<"$output")" == *"timeout_ms 60000 -> 2000"* ]]
        job=$(json_get job <<<"$output")
        run as_uid $UID_C wait "$job"
        [ "$status" -eq 124 ]
        run -0 as_uid $UID_C --json result "$job"
        [ "$(json_get result.limits.timeout_ms.value <<<"$output")" = 2000 ]
        grep -q '"decision":"accepted (clamped)"' "$SUP_DIR/audit.log"
}

cpu_controller() {
        [ "$SUP_CGROUP" != none ] && grep -qw cpu "$SUP_CGROUP/cgroup.subtree_control" 2>/dev/null
}

@test "limits.cpus above the tenant's max_cpus is E_LIMIT, said in CPUs" {
        run as_uid $UID_B run --cpus 1 -- true
        [ "$status" -ne 0 ]
        [[ "$output" == *"field 'limits.cpus': 1 is above tenant 'bravo''s cap of 0.5"* ]]
        run as_uid $UID_B run --cpus 0.0001 -- true
        [ "$status" -ne 0 ]
        [[ "$output" == *"--cpus: invalid number of CPUs '0.0001'"* ]]
}

@test "CPU bandwidth without the cgroup cpu controller: asked for, refused; the tenant's cap, recorded as not enforced" {
        ! cpu_controller || skip "the cgroup cpu controller is enabled here: the next test covers it"
        grep -q "\[tenant.bravo\] max_cpus is not enforced: CPU bandwidth needs the cgroup cpu controller" "$SUP_DIR/daemon.log"
        run as_uid $UID_B run --cpus 0.25 -- true
        [ "$status" -ne 0 ]
        [[ "$output" == *"field 'limits.cpus': this daemon cannot enforce CPU bandwidth"* ]]
        grep -q '"decision":"rejected".*"code":"E_LIMIT","message":"field '"'"'limits.cpus'"'"': this daemon cannot enforce CPU bandwidth' "$SUP_DIR/audit.log"
        job=$(as_uid $UID_B submit -- true)
        as_uid $UID_B wait "$job"
        run -0 as_uid $UID_B --json result "$job"
        [ "$(json_get result.limits.cpus.value <<<"$output")" = 0.5 ]
        [ "$(json_get result.limits.cpus.by <<<"$output")" = none ]
        run -0 as_uid $UID_B result "$job"
        [[ "$output" == *"limit:     cpus 0.5 (none)"* ]]
}

@test "CPU bandwidth with the cgroup cpu controller: cpu.max of the job's cgroup" {
        cpu_controller || skip "no cgroup cpu controller for job cgroups here (cgroup2 without controllers on this host)"
        job=$(as_uid $UID_B submit --cpus 0.25 -- sleep 1)
        for i in $(seq 40); do [ -e "$SUP_CGROUP/job-$job/cpu.max" ] && break; sleep 0.05; done
        [ "$(cat "$SUP_CGROUP/job-$job/cpu.max")" = "25000 100000" ]
        as_uid $UID_B wait "$job"
        run -0 as_uid $UID_B --json result "$job"
        [ "$(json_get result.limits.cpus.value <<<"$output")" = 0.25 ]
        [ "$(json_get result.limits.cpus.by <<<"$output")" = cgroup ]
}

@test "a tenant's max_jobs holds its other jobs in the queue" {
        # a holds bravo's one slot from its submission on, queued or
        # running: b is queued at once, no time to wait for
        a=$(as_uid $UID_B submit -- sleep 2)
        b=$(as_uid $UID_B submit -- true)
        [ "$(as_uid $UID_B --json status "$b" | json_get job.state)" = queued ]
        # another tenant is not held up by bravo's limit
        run -0 ctl run -- echo admin runs
        [ "$output" = "admin runs" ]
        run as_uid $UID_B wait "$b"
        [ "$status" -eq 0 ]
        run -0 as_uid $UID_B --json result "$a"
        [ "$(json_get result.state <<<"$output")" = succeeded ]
}

@test "allow_unauthenticated lets unknown callers in as 'anonymous', loudly" {
        sup_stop
        write_config "allow_unauthenticated = yes"
        sup_start
        grep -q "allow_unauthenticated is ON" "$SUP_DIR/daemon.log"
        run -0 as_uid $UID_X ping
        [[ "$output" == *"tenant anonymous (unauthenticated)"* ]]
        run -0 as_uid $UID_X run -- echo hi
        [ "$output" = hi ]
        grep -q "allow_unauthenticated: uid $UID_X .*'run' let through" "$SUP_DIR/daemon.log"
        sup_stop
        write_config ""
        sup_start
}
