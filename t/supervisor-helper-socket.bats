#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) PRIVILEGE SEPARATION with helper_socket
# (sbx-supervisord.conf(5)): sbx-privd runs on its own (--socket), as its
# systemd unit runs it, and the front is started as user sbx, not root; it
# connects, takes no_new_privs and its seccomp filter, and runs jobs
# through the helper.

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
        PSOCK=$SUP_DIR/privd.sock
        mkdir -p "$SUP_DIR/state" "$SUP_DIR/run"
        chown sbx:sbx "$SUP_DIR/state" "$SUP_DIR/run"
        touch "$SUP_DIR/audit.log"
        chown sbx:sbx "$SUP_DIR/audit.log"
        rm -f "$SUP_DIR/sup.conf"
        sup_config "user = sbx
helper_socket = $PSOCK
workspace_dir = $SUP_DIR/ws"
        "$SBX_STAGE/bin/sbx-privd" --socket "$PSOCK" --front sbx --uids "$SUP_JOB_UIDS" --cgroup "$SUP_CGROUP" \
                --workspace "$SUP_DIR/ws" --launcher "$SBX_STAGE/bin/sbx-launch" --profile-path "$SBX_STAGE/profiles" \
                2> "$SUP_DIR/privd.log" &
        PRIVD_PID=$!
        wait_until 30 test -S "$PSOCK"
}

teardown() {
        front_stop
        kill "$PRIVD_PID" 2>/dev/null || true
        wait "$PRIVD_PID" 2>/dev/null || true
        cat "$SUP_DIR/privd.log" "$SUP_DIR/daemon.log" 2>/dev/null || true
        rm -f "$SUP_DIR/daemon.log"
}

# The front as user sbx (exec: $! is the daemon).
front_start() {
        setpriv --reuid=sbx --regid=sbx --init-groups -- "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" \
                >>"$SUP_DIR/daemon.log" 2>&1 3>&- &
        SUP_PID=$!
        wait_until 30 ctl ping
}

front_stop() {
        [ -n "${SUP_PID:-}" ] || return 0
        kill -TERM "$SUP_PID" 2>/dev/null || true
        wait "$SUP_PID" 2>/dev/null || true
        SUP_PID=
}

status_of() { # PID FIELD
        sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status"
}

@test "helper_socket: the front, started as sbx, connects to sbx-privd, holds nothing, and runs a job as a uid of the helper's range" {
        front_start
        [ "$(status_of "$SUP_PID" Uid)" = "$SBX_UID	$SBX_UID	$SBX_UID	$SBX_UID" ]
        [ "$(status_of "$SUP_PID" CapEff)" = 0000000000000000 ]
        [ "$(status_of "$SUP_PID" CapPrm)" = 0000000000000000 ]
        [ "$(status_of "$SUP_PID" NoNewPrivs)" = 1 ]
        [ "$(status_of "$SUP_PID" Seccomp)" = 2 ]
        grep -q "sbx-privd at $PSOCK holds uids" "$SUP_DIR/daemon.log"
        run ctl run -- /bin/sh -c 'id -u; echo out; exit 3'
        [ "$status" -eq 3 ]
        local first=${SUP_JOB_UIDS%-*} last=${SUP_JOB_UIDS#*-} uid
        uid=$(echo "$output" | head -n 1)
        [ "$uid" -ge "$first" ] && [ "$uid" -le "$last" ] || false
        [[ "$output" == *out* ]]
}

@test "helper_socket: the front killed, sbx-privd ends its jobs and serves the next front" {
        front_start
        ctl submit -- sleep 600 > "$BATS_TEST_TMPDIR/id"
        wait_until 30 sh -c "cat '$SUP_CGROUP'/job-*/cgroup.procs 2>/dev/null | grep -q ."
        kill -KILL "$SUP_PID"
        wait "$SUP_PID" 2>/dev/null || true
        SUP_PID=
        wait_until 30 grep -q "waiting for the next front" "$SUP_DIR/privd.log"
        [ -z "$(cat "$SUP_CGROUP"/job-p*/cgroup.procs 2>/dev/null)" ]
        kill -0 "$PRIVD_PID"
        front_start
        run ctl run -- /bin/echo again
        [ "$status" -eq 0 ]
        [ "$output" = again ]
}

@test "helper_socket: a session outlives a SIGKILLed front: sbx-privd parks its sandbox and the next front takes it back" {
        front_start
        run -0 ctl session create --ttl 5m
        sid=$output
        run -0 ctl session exec "$sid" -- sh -c 'echo 41 > n; sleep 1200 & echo ok'
        run -0 ctl --json session show "$sid"
        box=$(json_get job <<<"$output")
        kill -KILL "$SUP_PID"
        wait "$SUP_PID" 2>/dev/null || true
        SUP_PID=
        wait_until 30 grep -q "parked (the front went away)" "$SUP_DIR/privd.log"
        pgrep -f 'sleep 1200'
        front_start
        wait_until 10 sh -c "'$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' --json session show $sid | jq -e '.state == \"ready\"'"
        grep -q "taken back by the front" "$SUP_DIR/privd.log"
        run -0 ctl session exec "$sid" -- sh -c 'echo $(( $(cat n) + 1 )); pgrep -x sleep >/dev/null && echo still-running'
        [ "${lines[0]}" = 42 ]
        [ "${lines[1]}" = still-running ]
        run -0 ctl session close "$sid"
        run ! ctl --json wait "$box"
        [ "$(json_get result.session.ended <<<"$output")" = closed ]
        wait_until 10 sh -c "! pgrep -f 'sleep 120[0]'"
}

@test "helper_socket: started as root the daemon refuses, naming the key" {
        run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf"
        [ "$status" -ne 0 ]
        grep -q "helper_socket $PSOCK: the front connects as user sbx" <<<"$output"
}
