#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Callbacks shared fairly between tenants (sbx-protocol(7) CALLBACKS): a
# tenant whose receiver accepts and never answers holds its posts until
# callback_timeout, but never another tenant's share of the slots, for
# result posts and for progress posts alike. The receivers are
# t/helpers/callback-receiver.py on 127.0.0.1: admin's "hangs", bravo's
# answers at once.

load sup-unit/daemon
load sup-unit/receiver
bats_require_minimum_version 1.5.0

UID_B=41051

# A second receiver, for admin, in $SUP_DIR/recv-a.
recv_a_start() {
        mkdir -p "$SUP_DIR/recv-a"
        echo hang > "$SUP_DIR/recv-a/mode"
        python3 "$SBX_SRCDIR/t/helpers/callback-receiver.py" "$SUP_DIR/recv-a" "$SUP_DIR/secret" 3>&- &
        echo $! > "$SUP_DIR/recv-a.pid"
        for i in $(seq 200); do
                [ -s "$SUP_DIR/recv-a/port" ] && return 0
                sleep 0.05
        done
        echo "admin's receiver did not start" >&2
        return 1
}

recv_a_stop() {
        local pid
        [ -f "$SUP_DIR/recv-a.pid" ] || return 0
        pid=$(cat "$SUP_DIR/recv-a.pid")
        if tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF callback-receiver.py; then
                kill "$pid" 2>/dev/null || true
                wait "$pid" 2>/dev/null || true
        fi
        rm -f "$SUP_DIR/recv-a.pid"
}

setup_file() {
        sup_init
        recv_start
        recv_a_start
        sup_config "socket_mode = 0666
max_jobs = 40
callback_timeout = 30s
callback_concurrency = 8"
        cat >> "$SUP_DIR/sup.conf" <<EOC
callback_url = http://127.0.0.1:$(cat "$SUP_DIR/recv-a/port")/hook
callback_secret_file = $SUP_DIR/secret

[tenant.bravo]
uids = $UID_B
job_user = nobody
job_group = nogroup
profiles = default
callback_url = http://127.0.0.1:$(cat "$SUP_DIR/recv/port")/bravo
callback_secret_file = $SUP_DIR/secret
EOC
        sed -i 's/^max_jobs = 32$/max_jobs = 36/' "$SUP_DIR/sup.conf"
        sup_start
}

teardown_file() {
        recv_a_stop
        recv_fini
}

setup() {
        require_userns
        mode ok
}

ctl_b() {
        setpriv --reuid=$UID_B --regid=$UID_B --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" "$@"
}

# wait_hung N: until admin's receiver holds N posts or more.
wait_hung() {
        local i
        for i in $(seq 600); do
                [ "$(grep -c . "$SUP_DIR/recv-a/log" 2>/dev/null || echo 0)" -ge "$1" ] && return 0
                sleep 0.1
        done
        echo "admin's receiver got $(grep -c . "$SUP_DIR/recv-a/log") posts, never $1" >&2
        return 1
}

# delay JOB: seconds from the job's end (its record's) to its result's
# arrival at bravo's receiver.
delay() {
        posts "$1" | grep '"event": "result"' | grep '"status": 200' | head -n 1 | python3 -c '
import datetime, json, sys
line = sys.stdin.readline()
if not line:
    sys.exit("not delivered yet")
l = json.loads(line)
ended = datetime.datetime.fromisoformat(l["ended"].replace("Z", "+00:00")).timestamp()
print("%.3f" % (l["t"] - ended))'
}

@test "30 result posts held by a receiver that never answers: another tenant's result still arrives at once" {
        : > "$BATS_TEST_TMPDIR/jobs"
        for i in $(seq 30); do
                ctl submit -- true >> "$BATS_TEST_TMPDIR/jobs"
        done
        while read -r j; do ctl wait "$j" >/dev/null; done < "$BATS_TEST_TMPDIR/jobs"
        # every slot of callback_concurrency held by admin's posts
        wait_hung 8
        job=$(ctl_b submit -- true)
        ctl_b wait "$job" >/dev/null
        # before the held posts time out (30 s): well within that
        for i in $(seq 150); do
                posts "$job" | grep -q '"status": 200' && break
                sleep 0.1
        done
        d=$(delay "$job")
        echo "bravo's result arrived $d s after its job ended"
        python3 -c "import sys; sys.exit(0 if $d < 5 else 1)"
        # admin's posts were all still held
        [ "$(grep -c '"status": 200' "$SUP_DIR/recv-a/log" || true)" = 0 ]
}

@test "progress posts of 32 jobs held by a receiver that never answers: another tenant's still go out" {
        : > "$BATS_TEST_TMPDIR/jobs"
        for i in $(seq 32); do
                ctl submit --progress 1 --timeout 3m -- sleep 120 >> "$BATS_TEST_TMPDIR/jobs"
        done
        # every one running, and admin's receiver holding the 16 progress
        # posts all tenants may have in flight
        while read -r j; do
                for i in $(seq 600); do
                        [ "$(ctl --json status "$j" | json_get job.state)" = running ] && break
                        sleep 0.1
                done
                ctl --json status "$j" | grep -q '"state": *"running"' || {
                        ctl --json status "$j" >&2
                        tail -n 20 "$SUP_DIR/daemon.log" >&2
                        return 1
                }
        done < "$BATS_TEST_TMPDIR/jobs"
        for i in $(seq 600); do
                [ "$(grep -c '"event": "started"' "$SUP_DIR/recv-a/log" || true)" -ge 16 ] && break
                sleep 0.1
        done
        [ "$(grep -c '"event": "started"' "$SUP_DIR/recv-a/log" || true)" -ge 16 ]
        job=$(ctl_b submit --progress 1 -- sleep 4)
        ctl_b wait "$job" >/dev/null
        wait_posts "$job" 1 200
        posts "$job" > "$BATS_TEST_TMPDIR/p"
        cat "$BATS_TEST_TMPDIR/p"
        grep -q '"event": "started"' "$BATS_TEST_TMPDIR/p"
        # a heartbeat a second for 4 s: a loaded machine may be late with one
        [ "$(grep -c '"event": "heartbeat"' "$BATS_TEST_TMPDIR/p")" -ge 2 ]
        while read -r j; do ctl cancel "$j" >/dev/null 2>&1 || true; done < "$BATS_TEST_TMPDIR/jobs"
}
