#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8), PRIVILEGE SEPARATION; "user" in sbx-supervisord.conf(5):
# started as root with a user, the daemon starts sbx-privd and becomes that
# user for good (no capability in any set, no_new_privs, a seccomp filter
# of its own); jobs get their uid, cgroup, workspace, start and signals
# from the helper, and a front that dies takes every job with it.

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
        sup_user_mode
        SBX_UID=$(id -u sbx)
        rm -f "$SUP_DIR/sup.conf"
        sup_config "$SUP_USER_LINES"
}

teardown() {
        sup_stop
}

status_of() { # PID FIELD: as the kernel writes it (tab-separated)
        sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status"
}

# Whether any job cgroup holds a process.
jobs_running() {
        [ -n "$(cat "$SUP_CGROUP"/job-*/cgroup.procs 2>/dev/null)" ]
}

no_jobs_running() {
        ! jobs_running
}

privd_pid() {
        pgrep -P "$SUP_PID" -x sbx-privd
}

@test "the front runs as the user with no capability, no_new_privs and a seccomp filter; sbx-privd as root" {
        sup_start
        [ "$(status_of "$SUP_PID" Uid)" = "$SBX_UID	$SBX_UID	$SBX_UID	$SBX_UID" ]
        [ "$(status_of "$SUP_PID" CapEff)" = 0000000000000000 ]
        [ "$(status_of "$SUP_PID" CapPrm)" = 0000000000000000 ]
        [ "$(status_of "$SUP_PID" CapInh)" = 0000000000000000 ]
        [ "$(status_of "$SUP_PID" CapBnd)" = 0000000000000000 ]
        [ "$(status_of "$SUP_PID" CapAmb)" = 0000000000000000 ]
        [ "$(status_of "$SUP_PID" NoNewPrivs)" = 1 ]
        [ "$(status_of "$SUP_PID" Seccomp)" = 2 ]
        local p
        p=$(privd_pid)
        [ -n "$p" ]
        [ "$(status_of "$p" Uid | cut -f1)" = 0 ]
        # Its state is the user's; the workspaces' directory root's.
        [ "$(stat -c %u "$SUP_DIR/state")" = "$SBX_UID" ]
        [ "$(stat -c %u "$SUP_DIR/state/results")" = "$SBX_UID" ]
        [ "$(stat -c %u:%a "$SUP_DIR/state/work")" = 0:755 ]
        grep -q "this process is now user sbx" "$SUP_DIR/daemon.log"
}

@test "a job runs as a uid of sbx-privd's range, its output and exit code come back" {
        sup_start
        run ctl run -- /bin/sh -c 'id -u; echo out; echo err >&2; exit 3'
        [ "$status" -eq 3 ]
        local first=${SUP_JOB_UIDS%-*} last=${SUP_JOB_UIDS#*-} uid
        uid=$(echo "$output" | head -n 1)
        [ "$uid" -ge "$first" ] && [ "$uid" -le "$last" ] || false
        [[ "$output" == *out* && "$output" == *err* ]]
}

@test "sbx-privd mounts the workspace noswap where the kernel has it (6.4 on), as the job sees it and the record says" {
        sup_start
        workspace_is_noswap_tmpfs
}

@test "a timeout reaches the command as SIGTERM through sbx-privd; one that ignores it is killed after the grace period" {
        sup_start
        run ctl run --timeout 2s -- /bin/sh -c 'trap "echo got-term; exit 7" TERM; sleep 60 & wait'
        [ "$status" -ne 0 ]
        [[ "$output" == *got-term* ]]
        [[ "$output" == *E_TIMEOUT* ]]
        run ctl run --timeout 1s -- /bin/sh -c 'trap "" TERM; while :; do sleep 1; done'
        [ "$status" -ne 0 ]
        [[ "$output" == *E_TIMEOUT* ]]
        # nothing of either job is left in the cgroups
        wait_until 10 no_jobs_running
}

@test "the front killed: sbx-privd kills every job, removes its cgroups and workspaces, and exits" {
        sup_start
        local p id
        p=$(privd_pid)
        id=$(ctl submit -- sleep 300)
        wait_until 30 jobs_running
        ls "$SUP_DIR/state/work" | grep -q '^job-p'
        kill -KILL "$SUP_PID"
        wait_until 30 pid_gone "$p"
        ! ls -d "$SUP_CGROUP"/job-* 2>/dev/null || false
        [ -z "$(ls "$SUP_DIR/state/work")" ]
        grep -q "front gone, every job closed" "$SUP_DIR/daemon.log"
        rm -f "$SUP_DIR/daemon.pid"
        # The next start reports the job as ended by the restart.
        sup_start
        run ctl wait "$id"
        [ "$status" -ne 0 ]
        [[ "$output" == *E_RESTARTED* || "$output" == *E_LOST* ]]
}

@test "what the user mode refuses, each named: an unknown user, root, a tenant's job_user, no job_uids, a network state directory not root's, not root" {
        sed -i "s|^user = .*|user = no-such-user-sbx|" "$SUP_DIR/sup.conf"
        run "$SBX_STAGE/bin/sbx-supervisord" --check-config -c "$SUP_DIR/sup.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"user: unknown user 'no-such-user-sbx'"* ]]
        sed -i "s|^user = .*|user = root|" "$SUP_DIR/sup.conf"
        run "$SBX_STAGE/bin/sbx-supervisord" --check-config -c "$SUP_DIR/sup.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"user: 'root' is root"* ]]
        sed -i "s|^user = .*|user = sbx|" "$SUP_DIR/sup.conf"
        printf '\n[tenant.other]\nuids = nobody\njob_user = nobody\n' >> "$SUP_DIR/sup.conf"
        run timeout 30 "$SBX_STAGE/bin/sbx-supervisord" -c "$SUP_DIR/sup.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"[tenant.other] job_user: with user = sbx, every job gets a uid of job_uids"* ]]
        sed -i '/^\[tenant.other\]/,$d' "$SUP_DIR/sup.conf"
        sed -i "s|^job_uids = .*|job_uids = none|" "$SUP_DIR/sup.conf"
        run timeout 30 "$SBX_STAGE/bin/sbx-supervisord" -c "$SUP_DIR/sup.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"user sbx: needs job_uids"* ]]
        sed -i "s|^job_uids = .*|job_uids = $SUP_JOB_UIDS|" "$SUP_DIR/sup.conf"
        # sbx-privd's network state (its forwarding record, put back by
        # root) in a directory the front made in the state directory it
        # owns is not taken
        mkdir -p "$SUP_DIR/state/privd-net"
        chown sbx "$SUP_DIR/state/privd-net"
        sed -i "s|^job_uids = .*|&\nnetwork_pool = 10.217.$((RANDOM % 256)).0/24|" "$SUP_DIR/sup.conf"
        run timeout 30 "$SBX_STAGE/bin/sbx-supervisord" -c "$SUP_DIR/sup.conf"
        rm -rf "$SUP_DIR/state/privd-net"
        sed -i '/^network_pool = /d' "$SUP_DIR/sup.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"privd-net is not root's: remove it, root makes it again"* ]]
        run timeout 30 setpriv --reuid=nobody --regid=nogroup --clear-groups "$SBX_STAGE/bin/sbx-supervisord" -c "$SUP_DIR/sup.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"the daemon was not started as root"* ]]
}

@test "uploads reach the job and its artifacts come back across the uid line" {
        sup_start
        printf 'in-data\n' > "$BATS_TEST_TMPDIR/in.txt"
        chmod 0644 "$BATS_TEST_TMPDIR/in.txt"
        run ctl run --upload "$BATS_TEST_TMPDIR/in.txt:sub/in.txt" --artifact 'out*' -- \
                /bin/sh -c 'cat sub/in.txt; stat -c %u sub/in.txt; id -u; echo made > out.txt; ln -s /etc/shadow out-link'
        [ "$status" -eq 0 ]
        local lines
        mapfile -t lines <<< "$output"
        [ "${lines[0]}" = in-data ]
        # the upload was handed over: the job's uid owns it
        [ "${lines[1]}" = "${lines[2]}" ]
        local id
        id=$(ctl ls | awk 'NR == 2 { print $1 }') # newest first
        [ -n "$id" ]
        run ctl download -o "$BATS_TEST_TMPDIR/out.txt" "$id" out.txt
        [ "$status" -eq 0 ]
        [ "$(cat "$BATS_TEST_TMPDIR/out.txt")" = made ]
        # a symlink is never an artifact, and /etc/shadow stayed root's
        run ctl download -o "$BATS_TEST_TMPDIR/x" "$id" out-link
        [ "$status" -ne 0 ]
        [ "$(stat -c %u /etc/shadow)" = 0 ]
}

@test "a job's \$SBX_RESULT comes back across the uid line as its record's value; a link to a root file is refused" {
        sup_start
        j=$(ctl submit -- sh -c 'echo "{\"made_by\": $(id -u)}" > "$SBX_RESULT"')
        ctl wait "$j" >/dev/null
        run -0 ctl result --value "$j"
        [ "$(jq .made_by <<< "$output")" -ne "$SBX_UID" ]
        [ "$(jq .made_by <<< "$output")" -ne 0 ]
        j=$(ctl submit -- sh -c 'ln -s /etc/shadow "$SBX_RESULT"')
        ctl wait "$j" >/dev/null
        run -1 ctl result --value "$j"
        [[ "$output" == *"its value was refused: .sbx-result.json: a symbolic link (not followed)"* ]]
        # a job that wrote none: its value is null
        j=$(ctl submit -- true)
        ctl wait "$j" >/dev/null
        run -0 ctl --json result "$j"
        [ "$(json_get result.value <<< "$output")" = null ]
}

@test "the front without privilege reloads its configuration and keeps a policy change across a restart" {
        sup_start
        printf '\n[tenant.t1]\nuids = nobody\nmax_jobs = 3\n' >> "$SUP_DIR/sup.conf"
        run -0 ctl reload
        [[ "$output" == *"added: t1"* ]]
        run -0 ctl policy set t1 max_jobs=2 --reason privsep
        [[ "$output" == *"policy version 1"* ]]
        # written by the front, its user's
        [ "$(stat -c %U "$SUP_DIR/state/policy.json")" = sbx ]
        sup_stop
        sup_start
        run -0 ctl --json policy show t1
        [ "$(jq -r .policy.effective.max_jobs <<< "$output")" = 2 ]
        [ "$(jq -r .policy.set.max_jobs <<< "$output")" = 2 ]
}

@test "a job's secret across the uid line: the front (user sbx) keeps and reads the value, the job gets its file, its artifact comes back redacted" {
        printf 'secrets = API_KEY\n' >> "$SUP_DIR/sup.conf"
        sup_start
        printf %s 'privsep-secret-value-77' | ctl secret set admin API_KEY
        [ "$(stat -c %U "$SUP_DIR/state/secrets/admin/API_KEY")" = sbx ]
        [ "$(stat -c %a "$SUP_DIR/state/secrets/admin/API_KEY")" = 600 ]
        job=$(ctl submit --secret API_KEY --artifact out.txt -- sh -c '
                stat -c "%a %u" /run/secrets/API_KEY
                cat /run/secrets/API_KEY > out.txt; cat out.txt')
        run -0 ctl --json wait "$job"
        [ "$(jq -r .result.state <<< "$output")" = succeeded ]
        [ "$(jq -r '.result.secrets[0].redacted' <<< "$output")" = 2 ]
        run -0 ctl logs "$job"
        [ "$output" = "400 $(jq -r .result.job_uid <<< "$(ctl --json wait "$job")")
[secret API_KEY]" ]
        run -0 ctl download -o "$BATS_TEST_TMPDIR/out.txt" "$job" out.txt
        [ "$(cat "$BATS_TEST_TMPDIR/out.txt")" = "[secret API_KEY]" ]
}
