#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Sessions across a daemon crash (sbx-supervisord(8), SESSIONS): a
# SIGKILLed daemon's sessions go on. Their sandboxes outlive it, the next
# daemon finds each again through the journal (pid and start time) and its
# agent's socket, their files, processes and TTLs are kept, an exec the
# crash interrupted is recorded as such and stopped, and a sandbox that died
# while no daemon ran is recorded with why.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        # a session's sandbox holds one of max_jobs for its life
        SVC_PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        export SVC_PORT
        sup_config "socket_mode = 0666
max_jobs = 64
service_listen = 127.0.0.1:$SVC_PORT
service_domain = sbx.test"
        cat >> "$SUP_DIR/sup.conf" <<EOC
session_services = yes
max_sessions = 24
session_ttl_max = 10m
session_idle_max = 5m
EOC
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        session_setup
}

teardown() {
        sessions_close_all
}

# crash_and_restart: SIGKILL the daemon, start a new one.
crash_and_restart() {
        daemon_crash
        sup_start
}

# daemon_crash: SIGKILL the daemon (started by this test or an earlier one).
daemon_crash() {
        SUP_PID=$(cat "$SUP_DIR/daemon.pid")
        kill -KILL "$SUP_PID"
        sup_wait_gone "$SUP_PID"
}

# all_ready N: N live sessions, every one ready.
all_ready() {
        [ "$(ctl --json session list | jq '[.sessions[] | select(.state == "ready")] | length')" = "$1" ]
}

# launcher_pid JOB: the box's launcher, as the journal's start line has it.
launcher_pid() {
        jq -r --arg j "$1" 'select(.ev == "start" and .job == $j) | .pid' "$SUP_DIR/state/journal" | tail -1
}

@test "20 sessions outlive a SIGKILLed daemon: all found again, files and background processes kept" {
        local i k sids=()
        for i in $(seq 20); do
                run ctl session create --ttl 5m
                echo "$output"
                [ "$status" = 0 ]
                sids+=("$output")
        done
        for k in $(seq 0 19); do
                run -0 ctl session exec "${sids[$k]}" -- sh -c "echo $k > mark; sleep 1100 & echo ok"
        done
        crash_and_restart
        # found again within a second of the daemon's start on a quiet
        # machine (10 s allowed for a loaded one; the time is printed)
        local t0 t1
        t0=$(date +%s%N)
        wait_until 10 all_ready 20
        t1=$(date +%s%N)
        echo "# all 20 sessions ready $(( (t1 - t0) / 1000000 )) ms after the new daemon answered" >&3
        grep -q "20 sessions go on" "$SUP_DIR/daemon.log"
        # (not $i: bats' run sets i)
        for k in $(seq 0 19); do
                run -0 ctl session exec "${sids[$k]}" -- sh -c 'cat mark; pgrep -x sleep >/dev/null && echo still-running'
                [ "${lines[0]}" = "$k" ]
                [ "${lines[1]}" = still-running ]
        done
        # and they still end: closing one kills what runs in it
        run -0 ctl --json session show "${sids[0]}"
        box=$(json_get job <<<"$output")
        run -0 ctl session close "${sids[0]}"
        run ! ctl --json wait "$box"
        [ "$(json_get result.session.ended <<<"$output")" = closed ]
}

@test "an exec the crash interrupted is recorded E_RESTARTED and its process stopped; the session goes on" {
        run -0 ctl session create
        sid=$output
        "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" session exec "$sid" -- sleep 1101 >/dev/null 2>&1 &
        wait_until 10 sh -c "'$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' --json session show $sid | jq -e '.running | length == 1'"
        run -0 ctl --json session show "$sid"
        job=$(jq -r '.running[0]' <<<"$output")
        pgrep -f 'sleep 1101'
        crash_and_restart
        run ! ctl --json wait "$job"
        [ "$(json_get result.state <<<"$output")" = error ]
        [ "$(json_get result.error.code <<<"$output")" = E_RESTARTED ]
        wait_until 10 sh -c "! pgrep -f 'sleep 110[1]'"
        wait_until 10 all_ready 1
        run -0 ctl session exec "$sid" -- echo still-here
        [ "$output" = still-here ]
}

@test "the TTL counts from the start across a restart, an extension included" {
        run -0 ctl session create --ttl 30
        sid=$output
        run -0 ctl --json session extend "$sid" 4
        expires=$(json_get expires <<<"$output")
        crash_and_restart
        wait_until 10 all_ready 1
        run -0 ctl --json session show "$sid"
        [ "$(json_get expires <<<"$output")" = "$expires" ]
        box=$(json_get job <<<"$output")
        run ! ctl --json wait "$box"
        echo "$output"
        [ "$(json_get result.session.ended <<<"$output")" = ttl ]
        # it ended at the expiry the extension gave, not 30 s after the start
        local want got
        want=$(date -d "$expires" +%s%3N)
        got=$(date -d "$(json_get result.ended <<<"$output")" +%s%3N)
        echo "expires $expires, ended $(json_get result.ended <<<"$output")"
        [ "$got" -ge "$want" ] && [ "$got" -le $((want + 1500)) ] || false
}

@test "a session whose sandbox died while no daemon ran is recorded as ended, and why" {
        run -0 ctl session create
        sid=$output
        run -0 ctl --json session show "$sid"
        box=$(json_get job <<<"$output")
        pid=$(launcher_pid "$box")
        [ -n "$pid" ] && [ "$pid" -gt 1 ] || false
        daemon_crash
        kill -KILL "$pid"
        sup_start
        run ! ctl --json wait "$box"
        [ "$(json_get result.session.ended <<<"$output")" = crashed ]
        [[ "$(json_get result.error.message <<<"$output")" == *"ended while the supervisor was not running"* ]]
        run ! ctl session exec "$sid" -- true
        echo "$output"
        [[ "$output" == *E_SESSION_ENDED* ]]
}

@test "exposed ports and their token outlive the restart; an unexposed one stays unexposed" {
        run -0 ctl session create --ttl 5m
        sid=$output
        run -0 ctl session exec "$sid" -- sh -c 'python3 -m http.server 8020 --bind 127.0.0.1 >srv.log 2>&1 & echo started'
        run -0 session_wait_port "$sid" 8020
        run -0 ctl --json session expose "$sid" 8020
        token=$(json_get token <<<"$output")
        run -0 ctl session expose "$sid" 8021
        run -0 ctl session unexpose "$sid" 8021
        code() { curl -s -o /dev/null -w '%{http_code}' -H "Host: $1-$sid.sbx.test" -H "X-Sbx-Token: $token" "http://127.0.0.1:$SVC_PORT/"; }
        [ "$(code 8020)" = 200 ]
        crash_and_restart
        wait_until 10 all_ready 1
        [ "$(code 8020)" = 200 ]
        [ "$(code 8021)" = 404 ]
        # the same token: exposing again answers it
        run -0 ctl --json session expose "$sid" 8020
        [ "$(json_get token <<<"$output")" = "$token" ]
}
