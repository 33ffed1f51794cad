#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) and sbxctl(1): jobs run through the launcher as the
# tenant's job uid, output captured, results durable and readable later.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
}

@test "ping names the caller's tenant and uid" {
        run ctl ping
        [ "$status" -eq 0 ]
        [[ "$output" == *"uid 0, tenant admin"* ]]
        run -0 raw '{"v":1,"op":"ping","id":7}'
        [ "$(json_get id <<<"$output")" = 7 ]
        [ "$(json_get ok <<<"$output")" = true ]
}

@test "run streams stdout and stderr and exits with the job's status" {
        run --separate-stderr ctl run -- sh -c 'echo out; echo err >&2; exit 3'
        [ "$status" -eq 3 ]
        [ "$output" = out ]
        [[ "$stderr" == *err* ]]
}

@test "jobs run as a uid of their own from job_uids, never root, with the task context in the environment" {
        run ctl run -- sh -c 'id -u; id -g; echo "$SBX_JOB_ID $SBX_TENANT $SBX_WORKSPACE"; pwd'
        [ "$status" -eq 0 ]
        # the file's own range (t/sup-unit/daemon.bash)
        [ "${lines[0]}" -ge "${SUP_JOB_UIDS%-*}" ]
        [ "${lines[0]}" -le "${SUP_JOB_UIDS#*-}" ]
        [ "${lines[1]}" = "${lines[0]}" ]
        [[ "${lines[2]}" =~ ^j[0-9a-f]{20}\ admin\ /workspace$ ]]
        [ "${lines[3]}" = /workspace ]
        # outside: the launcher process ran as that uid
        uid=${lines[0]} job=${lines[2]%% *}
        run -0 ctl result --json "$job"
        [[ "$output" == *"\"job_uid\": $uid"* ]]
}

cgroup_holds_at_least() {
        [ "$(wc -l < "$2/cgroup.procs")" -ge "$1" ]
}

@test "each job runs in a cgroup of its own, removed when it ends" {
        [ "$SUP_CGROUP" != none ] || skip "no writable cgroup2 hierarchy here"
        job=$(ctl submit -- sh -c 'until [ -e /workspace/go ]; do sleep 0.05; done')
        wait_until 30 job_state "$job" running
        # launcher, its init, the command
        wait_until 30 cgroup_holds_at_least 2 "$SUP_CGROUP/job-$job"
        touch "$SUP_DIR/state/work/$job/go"
        ctl wait "$job"
        [ ! -e "$SUP_CGROUP/job-$job" ]
        run -0 ctl --json result "$job"
        [ "$(json_get result.cgroup <<<"$output")" = true ]
        [ "$(json_get result.cpu_ms <<<"$output")" != null ]
}

@test "the request cannot override SBX_* variables" {
        run -0 raw '{"v":1,"op":"run","command":["true"],"env":{"SBX_JOB_ID":"forged"}}'
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
        [[ "$(json_get error.message <<<"$output")" == *"env.SBX_JOB_ID"* ]]
        run -0 ctl run --env FOO=bar -- sh -c 'echo $FOO'
        [ "$output" = bar ]
}

@test "stdin is fed to the job" {
        run ctl run --stdin - -- tr a-z A-Z <<<"hello"
        [ "$status" -eq 0 ]
        [ "$output" = HELLO ]
}

@test "submit, status, wait, result and logs" {
        run ctl submit -- sh -c 'echo one; echo two >&2; exit 5'
        [ "$status" -eq 0 ]
        job=$output
        [[ "$job" =~ ^j[0-9a-f]{20}$ ]]
        run ctl wait "$job"
        [ "$status" -eq 5 ]
        [[ "$output" == *"state:     failed"* ]]
        run ctl status "$job"
        [[ "$output" == *"state     failed"* ]]
        run ctl --json result "$job"
        [ "$(json_get result.exit_code <<<"$output")" = 5 ]
        [ "$(json_get result.stdout.size <<<"$output")" = 4 ]
        [ "$(json_get result.tenant <<<"$output")" = admin ]
        run --separate-stderr ctl logs "$job"
        [ "$output" = one ]
        [ "$stderr" = two ]
        run ctl logs --stream stderr "$job"
        [ "$output" = two ]
}

@test "list shows the caller's jobs, newest first, filtered by state" {
        ctl run -- true
        run ctl --json ls --limit 1
        [ "$(json_get jobs.0.state <<<"$output")" = succeeded ]
        run ctl --json ls --state failed
        [ "$(json_get jobs.0.state <<<"$output")" = failed ]
}

@test "output beyond the cap is discarded and the result says truncated" {
        run ctl --json run --output 1000 -- sh -c 'head -c 100000 /dev/zero | tr "\0" a'
        job=$(json_get job <<<"$output" | head -1)
        run ctl --json result "$job"
        [ "$(json_get result.stdout.size <<<"$output")" = 1000 ]
        [ "$(json_get result.stdout.produced <<<"$output")" = 100000 ]
        [ "$(json_get result.stdout.truncated <<<"$output")" = true ]
        [ "$(json_get result.state <<<"$output")" = succeeded ]
}

@test "uploaded files are in /workspace; artifacts come back with size and sha256" {
        d=$(user_dir)
        printf 'payload\n' > "$d/in.txt"
        run --separate-stderr ctl run --upload "$d/in.txt:sub/in.txt" --artifact 'out/*' -- \
                sh -c 'cat sub/in.txt; mkdir out; printf abc > out/a.txt; ln -s /etc/shadow out/link; mkfifo out/fifo'
        [ "$status" -eq 0 ]
        [ "$output" = payload ]
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        run ctl --json result "$job"
        [ "$(json_get result.artifacts.0.path <<<"$output")" = out/a.txt ]
        [ "$(json_get result.artifacts.0.sha256 <<<"$output")" = "$(printf abc | sha256sum | cut -d' ' -f1)" ]
        # the symlink and the fifo were not collected
        [ "$(json_get result.artifacts.1 <<<"$output")" = "" ] || false
        [ -f "$SUP_DIR/state/results/$job/artifacts/out/a.txt" ]
        [ ! -e "$SUP_DIR/state/results/$job/artifacts/out/link" ]
        # and the workspace is gone
        [ ! -e "$SUP_DIR/state/work/$job" ]
}

@test "uploads and artifacts in interleaved nested directories all land where they were asked" {
        # Written in sorted order with the shared directories opened once:
        # every file must still reach its own directory, whatever the order
        # of the request.
        d=$(user_dir)
        for n in 1 2 3 4 5 6; do printf 'f%s\n' "$n" > "$d/f$n"; done
        run --separate-stderr ctl run --artifact 'o/*' --artifact 'o/*/*' --artifact 'o/*/*/*' \
                --upload "$d/f1:a/b/x" --upload "$d/f2:c/y" --upload "$d/f3:a/b/z" \
                --upload "$d/f4:a/w" --upload "$d/f5:a/b/c/d/e" --upload "$d/f6:a.b/v" -- \
                sh -c 'cat a/b/x c/y a/b/z a/w a/b/c/d/e a.b/v; mkdir -p o/p/q o/r; echo 1 > o/p/q/s; echo 2 > o/r/t; echo 3 > o/u; echo 4 > o/p/v'
        [ "$status" -eq 0 ]
        [ "$output" = "$(printf 'f1\nf2\nf3\nf4\nf5\nf6')" ]
        job=$(ctl --json ls --limit 1 | json_get jobs.0.job)
        a="$SUP_DIR/state/results/$job/artifacts"
        [ "$(cat "$a/o/p/q/s" "$a/o/r/t" "$a/o/u" "$a/o/p/v")" = "$(printf '1\n2\n3\n4')" ]
}

@test "an upload whose directory is another upload's file is refused by name" {
        d=$(user_dir)
        printf 'x\n' > "$d/f"
        run --separate-stderr ctl run --upload "$d/f:a/b" --upload "$d/f:a/b/c" -- true
        [ "$status" -ne 0 ]
        echo "$stderr"
        [[ "$stderr" == *"upload a/b/c"*"Not a directory"* ]]
}

@test "artifacts beyond the tenant's byte cap are left out and the result says so" {
        sed -i 's/^\[daemon\]$/[daemon]\nsocket_mode = 0666/' "$SUP_DIR/sup.conf"
        printf '\n[tenant.small]\nuids = 41100\nmax_artifacts = 1K\n' >> "$SUP_DIR/sup.conf"
        sup_stop
        sup_start
        run setpriv --reuid=41100 --regid=41100 --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" --json run \
                --artifact '*.bin' -- sh -c 'head -c 600 /dev/zero > a.bin; head -c 600 /dev/zero > b.bin'
        [ "$status" -eq 0 ]
        [ "$(json_get result.artifacts_truncated <<<"$output")" = true ]
        [ "$(json_get result.artifacts.0.size <<<"$output")" = 600 ]
        run json_get result.artifacts.1 <<<"$output"
        [ "$status" -eq 1 ]
}

@test "uploads cannot escape the workspace" {
        run raw '{"v":1,"op":"run","command":["true"],"files":[{"path":"../x","data":"a"}]}'
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
        [[ "$(json_get error.message <<<"$output")" == *"files[0].path"* ]]
        run raw '{"v":1,"op":"run","command":["true"],"files":[{"path":"/etc/x","data":"a"}]}'
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
}

@test "a missing command exits 127 and a setup failure is recorded" {
        run -127 ctl run -- /nonexistent/cmd
        [ "$status" -eq 127 ]
        run ctl run --profile nosuch -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *E_NO_PROFILE* ]] || [[ "$output" == *E_FORBIDDEN* ]]
}

@test "results are written durably and survive a restart intact" {
        run ctl submit -- sh -c 'echo persisted'
        job=$output
        ctl wait "$job"
        before=$(ctl --json result "$job")
        sup_stop
        sup_start
        after=$(ctl --json result "$job")
        [ "$before" = "$after" ]
        run ctl logs "$job"
        [ "$output" = persisted ]
        # no temporary files are left next to the records
        run find "$SUP_DIR/state/results" -name '*.tmp'
        [ -z "$output" ]
}

@test "the audit log has a JSON line per request decision and per job end" {
        run grep -c '"event":"job_end"' "$SUP_DIR/audit.log"
        [ "$output" -ge 5 ]
        run grep -c '"decision":"accepted"' "$SUP_DIR/audit.log"
        [ "$output" -ge 5 ]
        grep '"event":"job_end"' "$SUP_DIR/audit.log" | head -1 | grep -q '"inputs_sha256":"[0-9a-f]\{64\}"'
}

@test "idempotency_key returns the same job on retry" {
        run ctl submit --idempotency-key k1 -- true
        a=$output
        run ctl --json submit --idempotency-key k1 -- true
        [ "$(json_get job <<<"$output")" = "$a" ]
        [ "$(json_get duplicate <<<"$output")" = true ]
}

@test "the same idempotency_key with a different request is refused (E_CONFLICT), live or finished" {
        a=$(ctl submit --idempotency-key k2 -- sleep 1)
        run ctl --json submit --idempotency-key k2 -- sleep 2
        [ "$status" -ne 0 ]
        [ "$(json_get error.code <<<"$output")" = E_CONFLICT ]
        [[ "$(json_get error.message <<<"$output")" == *"job $a was submitted with this key and a different request"* ]]
        # a different environment is a different request too
        run ctl --json submit --idempotency-key k2 --env X=1 -- sleep 1
        [ "$(json_get error.code <<<"$output")" = E_CONFLICT ]
        ctl wait "$a" >/dev/null
        run ctl --json submit --idempotency-key k2 -- sleep 2
        [ "$(json_get error.code <<<"$output")" = E_CONFLICT ]
        run ctl --json submit --idempotency-key k2 -- sleep 1
        [ "$(json_get job <<<"$output")" = "$a" ]
        [ "$(json_get duplicate <<<"$output")" = true ]
        [ "$(ctl --json result "$a" | json_get result.request_sha256 | wc -c)" = 65 ]
}
