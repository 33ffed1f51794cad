#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Callbacks (sbx-protocol(7) CALLBACKS): a job's result is posted to its
# callback URL, signed with the tenant's secret, with a delivery id that
# never changes; retried with growing delays on connection errors, 5xx
# and 429 (Retry-After honoured); other answers and deliveries past
# callback_max_age go to the dead letters (audited), from where an
# operator retries or drops them; the outbox survives SIGKILL. The
# receiver is t/helpers/callback-receiver.py on 127.0.0.1.

load sup-unit/daemon
load sup-unit/receiver
bats_require_minimum_version 1.5.0

UID_B=41041
UID_C=41042
TP=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01

write_config() {
        local url="http://127.0.0.1:$(cat "$SUP_DIR/recv/port")"
        sup_config "socket_mode = 0666
callback_backoff = 1s
callback_backoff_max = 4s
callback_timeout = 2s
$1"
        cat >> "$SUP_DIR/sup.conf" <<EOC
callback_url = $url/hook
callback_secret_file = $SUP_DIR/secret
callback_allow = $url

[tenant.bravo]
uids = $UID_B
job_user = nobody
job_group = nogroup
profiles = default

[tenant.charlie]
uids = $UID_C
job_user = nobody
job_group = nogroup
profiles = default
callback_secret_file = $SUP_DIR/secret
callback_allow = $url/hooks
EOC
}

# ctl_as UID ARGS...: sbxctl as that uid (a tenant of write_config).
ctl_as() {
        local uid=$1
        shift
        setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" "$@"
}

# refused_callback URL CODE REASON: a run naming URL as its callback is
# refused with CODE, the message naming the field and REASON.
refused_callback() {
        run -0 raw '{"v":1,"op":"run","command":["true"],"callback":"'"$1"'"}'
        echo "$output"
        [ "$(json_get error.code <<<"$output")" = "$2" ]
        [[ "$(json_get error.message <<<"$output")" == *"field 'callback': "*"$3"* ]]
}

setup_file() {
        sup_init
        recv_start
        write_config ""
        sup_start
}

teardown_file() {
        recv_fini
}

setup() {
        require_userns
        mode ok
}

@test "a job's result is posted, signed with the tenant's secret, with its delivery id and trace" {
        job=$(ctl submit --traceparent "$TP" -- sh -c 'echo hi')
        ctl wait "$job" >/dev/null
        wait_posts "$job" 1 200
        line=$(posts "$job")
        [ "$(json_get sig_ok <<<"$line")" = true ]
        [ "$(json_get state <<<"$line")" = succeeded ]
        [ "$(json_get body_job <<<"$line")" = "$job" ]
        [ "$(json_get attempt <<<"$line")" = 1 ]
        [ "$(json_get trace_id <<<"$line")" = 4bf92f3577b34da6a3ce929d0e0e4736 ]
        [[ "$(json_get traceparent <<<"$line")" == 00-4bf92f3577b34da6a3ce929d0e0e4736-* ]]
        delivery=$(json_get delivery <<<"$line")
        [[ "$delivery" =~ ^d[0-9a-f]{32}$ ]]
        [ "$(json_get body_delivery <<<"$line")" = "$delivery" ]
        # the record names the delivery; result says it was delivered
        res=$(ctl --json result "$job")
        [ "$(json_get result.callback.delivery <<<"$res")" = "$delivery" ]
        [ "$(json_get callback.state <<<"$res")" = delivered ]
        run -0 ctl result "$job"
        [[ "$output" == *"callback:  delivered http://127.0.0.1:"*"/hook (delivery $delivery"* ]]
        # nothing is left in the outbox
        [ -z "$(ls "$SUP_DIR/state/callbacks/outbox")" ]
}

@test "5xx answers are retried with growing delays, under one delivery id" {
        mode fail 3
        job=$(ctl submit -- true)
        wait_posts "$job" 4
        posts "$job" > "$BATS_TEST_TMPDIR/p"
        [ "$(awk -F'"status": ' '{ split($2, a, ","); printf "%s ", a[1] }' "$BATS_TEST_TMPDIR/p")" = "500 500 500 200 " ]
        [ "$(json_get delivery < "$BATS_TEST_TMPDIR/p" | sort -u | wc -l)" = 1 ]
        [ "$(json_get attempt < "$BATS_TEST_TMPDIR/p" | tr '\n' ' ')" = "1 2 3 4 " ]
        # backoff 1s doubled per attempt, jittered over its upper half:
        # at least 0.5, 1 and 2 s between the attempts
        json_get t < "$BATS_TEST_TMPDIR/p" > "$BATS_TEST_TMPDIR/t"
        run -0 python3 - "$BATS_TEST_TMPDIR/t" <<'EOP'
import sys
t = [float(x) for x in open(sys.argv[1])]
g = [b - a for a, b in zip(t, t[1:])]
print(g)
assert g[0] >= 0.45 and g[1] >= 0.95 and g[2] >= 1.95, g
assert g[2] > g[0], g
EOP
}

@test "429 with Retry-After: the next attempt waits as long as the receiver asks" {
        mode 429 3
        job=$(ctl submit -- true)
        wait_posts "$job" 1 429
        mode ok
        wait_posts "$job" 1 200
        posts "$job" | json_get t > "$BATS_TEST_TMPDIR/t"
        run -0 python3 -c "import sys; t = [float(x) for x in open('$BATS_TEST_TMPDIR/t')]; assert t[1] - t[0] >= 2.9, t"
}

@test "a 404 is final: dead-lettered at once and audited; retried from the dead letters it is delivered" {
        mode 404
        job=$(ctl submit --traceparent "$TP" -- true)
        wait_cb "$job" dead
        [ "$(posts "$job" | wc -l)" = 1 ]
        [ -f "$SUP_DIR/state/callbacks/dead/$job.json" ]
        grep "\"event\":\"callback_dead_letter\"" "$SUP_DIR/audit.log" | grep -F "\"job\":\"$job\"" > "$BATS_TEST_TMPDIR/a"
        grep -q '"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"' "$BATS_TEST_TMPDIR/a"
        grep -q 'HTTP 404' "$BATS_TEST_TMPDIR/a"
        [ "$(ctl --json result "$job" | json_get callback.state)" = dead ]
        first=$(posts "$job" | json_get delivery)
        mode ok
        run -0 ctl callbacks retry "$job"
        wait_posts "$job" 1 200
        [ "$(posts "$job" | tail -n 1 | json_get delivery)" = "$first" ]
        for i in $(seq 100); do
                [ "$(ctl --json result "$job" | json_get callback.state)" = delivered ] && break
                sleep 0.1
        done
        [ "$(ctl --json result "$job" | json_get callback.state)" = delivered ]
        [ ! -e "$SUP_DIR/state/callbacks/dead/$job.json" ]
}

@test "dead and dropped deliveries read back after a restart are retried with their whole body" {
        mode 404
        dead=$(ctl submit -- sh -c 'echo dead')
        wait_cb "$dead" dead
        mode 503
        dropped=$(ctl submit -- sh -c 'echo dropped')
        wait_posts "$dropped" 1
        for i in $(seq 100); do
                ctl callbacks drop "$dropped" >/dev/null 2>&1 && break
                sleep 0.1
        done
        wait_cb "$dropped" dropped
        sup_stop
        sup_start
        mode ok
        for job in "$dead" "$dropped"; do
                run -0 ctl callbacks retry "$job"
                wait_posts "$job" 1 200
                line=$(posts "$job" | tail -n 1)
                [ "$(json_get sig_ok <<<"$line")" = true ]
                [ "$(json_get body_job <<<"$line")" = "$job" ]
                [ "$(json_get state <<<"$line")" = succeeded ]
                [ -n "$(json_get ended <<<"$line")" ]
        done
}

@test "an operator drops a delivery: it is not tried again and says so" {
        mode 503
        job=$(ctl submit -- true)
        wait_posts "$job" 1
        for i in $(seq 100); do
                ctl callbacks drop "$job" >/dev/null 2>&1 && break
                sleep 0.1
        done
        wait_cb "$job" dropped
        [ "$(ctl --json result "$job" | json_get callback.state)" = dropped ]
        n=$(posts "$job" | wc -l)
        run ctl callbacks retry j00000000000000000000
        [ "$status" -eq 125 ]
        [[ "$output" == *E_NOT_FOUND* ]]
        grep -q '"op":"callbacks.drop"' "$SUP_DIR/audit.log"
        # another tenant does not see it
        run -0 setpriv --reuid=$UID_B --regid=$UID_B --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" callbacks ls
        [[ "$output" != *"$job"* ]]
        [ "$(posts "$job" | wc -l)" = "$n" ]
}

@test "receiver down, then back: every result is delivered, each once" {
        mode refuse
        : > "$BATS_TEST_TMPDIR/jobs"
        for i in $(seq 8); do
                job=$(ctl submit -- true)
                ctl wait "$job" >/dev/null
                echo "$job" >> "$BATS_TEST_TMPDIR/jobs"
        done
        # the oldest has been tried and refused at least twice (the others
        # wait behind it: sbx-protocol(7) CALLBACKS)
        first=$(head -n 1 "$BATS_TEST_TMPDIR/jobs")
        for i in $(seq 600); do
                ctl --json callbacks ls --state pending > "$BATS_TEST_TMPDIR/ls"
                python3 - "$BATS_TEST_TMPDIR/ls" "$first" <<'EOP' && break
import json, sys
tried = {c["job"]: c["attempts"] for c in json.load(open(sys.argv[1]))["callbacks"]}
sys.exit(0 if tried.get(sys.argv[2], 0) >= 2 else 1)
EOP
                sleep 0.1
        done
        mode ok
        while read -r job; do
                wait_posts "$job" 1 200
                [ "$(posts "$job" | wc -l)" = 1 ]
        done < "$BATS_TEST_TMPDIR/jobs"
        [ "$(posts "$first" | json_get attempt)" -ge 3 ]
}

@test "SIGKILL with deliveries pending: after the restart all are delivered" {
        mode 503
        : > "$BATS_TEST_TMPDIR/jobs"
        for i in $(seq 5); do ctl submit -- true >> "$BATS_TEST_TMPDIR/jobs"; done
        while read -r job; do ctl wait "$job" >/dev/null; done < "$BATS_TEST_TMPDIR/jobs"
        # (while the receiver fails, the oldest are tried and the others
        # wait behind them)
        wait_posts "$(head -n 1 "$BATS_TEST_TMPDIR/jobs")" 1 503
        [ "$(ls "$SUP_DIR/state/callbacks/outbox" | wc -l)" -ge 5 ]
        kill -KILL "$(cat "$SUP_DIR/daemon.pid")"
        mode ok
        sup_start
        while read -r job; do
                wait_posts "$job" 1 200
                [ "$(posts "$job" | json_get delivery | sort -u | wc -l)" = 1 ]
        done < "$BATS_TEST_TMPDIR/jobs"
        for i in $(seq 100); do
                [ -z "$(ls "$SUP_DIR/state/callbacks/outbox")" ] && break
                sleep 0.1
        done
        [ -z "$(ls "$SUP_DIR/state/callbacks/outbox")" ]
}

@test "a delivery not made within callback_max_age goes to the dead letters" {
        sup_stop
        write_config "callback_max_age = 3s"
        sup_start
        mode 503
        job=$(ctl submit -- true)
        wait_cb "$job" dead
        [ "$(posts "$job" | wc -l)" -ge 2 ]
        grep -F "\"job\":\"$job\"" "$SUP_DIR/audit.log" | grep -q 'callback_max_age'
        sup_stop
        write_config ""
        sup_start
}

@test "a request names only callback URLs its tenant allows, and only a tenant with a secret gets callbacks" {
        run -0 raw '{"v":1,"op":"run","command":["true"],"callback":"http://169.254.169.254/latest"}'
        [ "$(json_get error.code <<<"$output")" = E_FORBIDDEN ]
        [[ "$(json_get error.message <<<"$output")" == *callback_allow* ]]
        run -0 raw '{"v":1,"op":"run","command":["true"],"callback":"ftp://x/y"}'
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
        run setpriv --reuid=$UID_B --regid=$UID_B --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" \
                run --callback "http://127.0.0.1:$(cat "$SUP_DIR/recv/port")/hook" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *E_FORBIDDEN*callback_secret_file* ]]
}

@test "callback URLs are compared by scheme, host, port and path segments, not as string prefixes" {
        local port
        port=$(cat "$SUP_DIR/recv/port")
        # the tenant allows http://127.0.0.1:PORT; each of these starts
        # with that string (issue 18) and would reach another host or port
        refused_callback "http://127.0.0.1:$port@127.0.0.1:7777/ssrf" E_BAD_REQUEST "userinfo"
        refused_callback "http://127.0.0.1:${port}9/x" E_BAD_REQUEST "Port number"
        refused_callback "http://127.0.0.1:$port.nip.io/x" E_BAD_REQUEST "Port number"
        refused_callback "http://127.0.0.1:$port/x#frag" E_BAD_REQUEST "fragment"
        refused_callback "http://127.0.0.1:$port/a/..%2fadmin" E_BAD_REQUEST "percent-encoded"
        refused_callback "https://127.0.0.1:$port/x" E_FORBIDDEN "callback_allow"
        refused_callback "http://127.0.0.2:$port/x" E_FORBIDDEN "callback_allow"
        # charlie allows http://127.0.0.1:PORT/hooks: /hooks and below only
        run -125 ctl_as $UID_C run --callback "http://127.0.0.1:$port/hooksx" -- true
        [[ "$output" == *E_FORBIDDEN*callback_allow* ]]
        run -125 ctl_as $UID_C run --callback "http://127.0.0.1:$port/" -- true
        [[ "$output" == *E_FORBIDDEN*callback_allow* ]]
        run -125 ctl_as $UID_C run --callback "http://127.0.0.1:$port/hooks/../admin" -- true
        [[ "$output" == *E_FORBIDDEN*callback_allow* ]]
        # the same host and port spelt otherwise is allowed, and delivered
        # where curl connects
        run -0 ctl_as $UID_C submit --callback "http://0x7f.1:$port/hooks/a" -- true
        job=$output
        wait_posts "$job" 1 200
        [ "$(posts "$job" | json_get path)" = /hooks/a ]
        run -0 ctl_as $UID_C submit --callback "HTTP://127.0.0.1:$port/hooks" -- true
        wait_posts "$output" 1 200
}

@test "a callback_allow entry that is not a plain URL prefix stops the daemon, naming file, line and why" {
        local n
        n=$(grep -n '^callback_allow = .*/hooks$' "$SUP_DIR/sup.conf" | cut -d: -f1)
        [ -n "$n" ]
        sed "${n}s|.*|callback_allow = http://127.0.0.1:1@127.0.0.1:7777/|" "$SUP_DIR/sup.conf" > "$SUP_DIR/bad.conf"
        run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/bad.conf" --check-config
        [[ "$output" == *"bad.conf:$n: callback_allow: 'http://127.0.0.1:1@127.0.0.1:7777/': userinfo"* ]]
        sed "${n}s|.*|callback_allow = http://127.0.0.1:180809/x|" "$SUP_DIR/sup.conf" > "$SUP_DIR/bad.conf"
        run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/bad.conf" --check-config
        [[ "$output" == *"bad.conf:$n: callback_allow: 'http://127.0.0.1:180809/x': Port number"* ]]
        sed "${n}s|.*|callback_allow = http://127.0.0.1:1/hooks?x=1|" "$SUP_DIR/sup.conf" > "$SUP_DIR/bad.conf"
        run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/bad.conf" --check-config
        [[ "$output" == *"bad.conf:$n: callback_allow: "*"query"* ]]
        run -0 "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" --check-config
}

@test "a pending delivery whose URL its tenant no longer allows is dead-lettered after a restart, not posted" {
        local port
        port=$(cat "$SUP_DIR/recv/port")
        mode refuse
        job=$(ctl submit --callback "http://127.0.0.1:$port/old" -- true)
        ctl wait "$job" >/dev/null
        sup_stop
        # the tenant now allows (and defaults to) another receiver only
        write_config ""
        sed -i "0,/^callback_url = .*/s||callback_url = http://127.0.0.1:1/new|; 0,/^callback_allow = .*/s||callback_allow = http://127.0.0.1:1/new|" \
                "$SUP_DIR/sup.conf"
        sup_start
        mode ok
        wait_cb "$job" dead
        [ -z "$(posts "$job")" ]
        run -0 ctl callbacks ls --state dead
        [[ "$output" == *"$job"*"its tenant does not allow its URL now"* ]]
        sup_stop
        write_config ""
        sup_start
}

@test "a receiver that redirects is not followed: the delivery is dead-lettered, saying why" {
        local port
        port=$(cat "$SUP_DIR/recv/port")
        # 307 keeps the POST: followed, it would reach /elsewhere
        mode redirect 307 "http://127.0.0.1:$port/elsewhere"
        job=$(ctl submit -- true)
        wait_cb "$job" dead
        [ "$(posts "$job" | wc -l)" -eq 1 ]
        [ "$(posts "$job" | json_get status)" -eq 307 ]
        [ "$(posts "$job" | json_get path)" = /hook ]
        run -0 ctl callbacks ls --state dead
        [[ "$output" == *"$job"*"HTTP 307, a redirect: callbacks follow no redirects"* ]]
        grep -F "\"job\":\"$job\"" "$SUP_DIR/audit.log" | grep -q 'callbacks follow no redirects'
}

@test "metrics count deliveries and failures, and pass promtool" {
        command -v promtool >/dev/null || skip "promtool (Debian package prometheus) is not installed"
        before=$(ctl metrics | awk '$1 == "sbx_callback_delivered_total" { print $2 }')
        job=$(ctl submit -- true)
        wait_posts "$job" 1 200
        for i in $(seq 100); do
                after=$(ctl metrics | awk '$1 == "sbx_callback_delivered_total" { print $2 }')
                [ "$after" -gt "$before" ] && break
                sleep 0.1
        done
        [ "$after" -gt "$before" ]
        ctl metrics | grep -q '^sbx_callback_backlog '
        run -0 sh -c "'$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' metrics | promtool check metrics"
}
