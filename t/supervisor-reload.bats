#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Policies changed while the daemon runs (sbx-supervisord(8) RELOADING AND
# POLICIES): SIGHUP and sbxctl reload read the file again whole (a bad one
# changes nothing and says why), admitted jobs keep the policy they were
# admitted under, new requests get the new one, removed tenants lose their
# connections, sessions whose rights were withdrawn end as recorded; and
# sbxctl policy set|reset|show|history: admins only, validated, versioned,
# durable across a restart, audited. Hostile: reloads under load, a
# policy value that tries to add lines, a policy file that was tampered
# with.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

free_port() {
        /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

sha() {
        printf %s "$1" | sha256sum | cut -d' ' -f1
}

setup_file() {
        sup_init
        PORT=$(free_port)
        SVC_PORT=$(free_port)
        TOK_ADMIN=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
        TOK_RUN=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
        export PORT SVC_PORT TOK_ADMIN TOK_RUN
        sup_config "socket_mode = 0666
service_listen = 127.0.0.1:$SVC_PORT
service_domain = sbx.test"
        cp "$SUP_DIR/sup.conf" "$SUP_DIR/base.conf"
        write_conf
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
        [ "$(id -u)" = 0 ] || skip "the daemon must run as root to give nobody's jobs uids of their own"
}

# write_conf [T1 LINES] [EXTRA SECTIONS]: the file as base.conf, tenant t1
# (nobody) with these lines, the HTTP API with an admin and a run token.
write_conf() {
        {
                cat "$SUP_DIR/base.conf"
                printf '\n[tenant.t1]\nuids = nobody\nprofiles = default shell\nnetwork = none host\nsession_services = yes\n%s\n' "${1-}"
                printf '\n[http]\nlisten = 127.0.0.1:%s\n' "$PORT"
                printf '\n[token.boss]\ntenant = admin\nscope = admin\nsha256 = %s\n' "$(sha "$TOK_ADMIN")"
                printf '\n[token.worker]\ntenant = t1\nsha256 = %s\n' "$(sha "$TOK_RUN")"
                printf '%s\n' "${2-}"
        } > "$SUP_DIR/sup.conf"
}

# reload_hup: SIGHUP, then until the daemon's log has one more reload line
reload_hup() {
        local n
        n=$(grep -c 'reload (SIGHUP)' "$SUP_DIR/daemon.log" || true)
        kill -HUP "$(cat "$SUP_DIR/daemon.pid")"
        wait_until 10 sh -c "[ \$(grep -c 'reload (SIGHUP)' '$SUP_DIR/daemon.log') -gt $n ]"
}

api() {
        local tok=$1 method=$2 path=$3 body=${4-}
        local args=(-sS -X "$method" -w '\nHTTP %{http_code}\n' -H "Authorization: Bearer $tok")
        [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
        curl "${args[@]}" "http://127.0.0.1:$PORT$path"
}

# audit_last EVENT: the last audit line of that event
audit_last() {
        grep "\"event\":\"$1\"" "$SUP_DIR/audit.log" | tail -1
}

@test "SIGHUP: a lowered cap refuses new requests; a job admitted before keeps its own; the audit says what changed" {
        write_conf
        reload_hup
        run -0 ctl_nobody submit --timeout 20s -- sleep 3
        j=$output
        wait_until 10 sh -c "setpriv --reuid=nobody --regid=nogroup --clear-groups -- '$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' --json status '$j' | jq -e '.job.state == \"running\"' >/dev/null"
        write_conf "max_timeout = 2s"
        reload_hup
        run -125 ctl_nobody run --timeout 20s -- true
        [[ "$output" == *"E_LIMIT: field 'timeout_ms': 20000 is above tenant 't1''s cap of 2000"* ]]
        run -0 ctl_nobody run --timeout 2s -- true
        # the job admitted under 20 s ran its 3 s to the end
        run -0 ctl_nobody wait --json "$j"
        [ "$(jq -r .state <<< "$output")" = succeeded ]
        [ "$(jq -r .exit_code <<< "$output")" = 0 ]
        [ "$(jq -r .limits.timeout_ms.value <<< "$output")" = 20000 ]
        run -0 audit_last reload
        [ "$(json_get by <<< "$output")" = SIGHUP ]
        [ "$(json_get decision <<< "$output")" = applied ]
        [ "$(json_get changed <<< "$output")" = '["t1"]' ]
        write_conf
        reload_hup
}

@test "a bad file changes nothing and says where; so does a changed daemon key" {
        write_conf "max_jobs = lots"
        run -125 ctl reload
        [[ "$output" == *E_CONFIG*"sup.conf:"*max_jobs* ]]
        run -0 audit_last reload
        [ "$(json_get decision <<< "$output")" = refused ]
        # SIGHUP with it: logged, refused, the daemon serves on
        kill -HUP "$(cat "$SUP_DIR/daemon.pid")"
        wait_until 10 grep -q 'reload (SIGHUP) refused, nothing changed: .*sup.conf:.*max_jobs' "$SUP_DIR/daemon.log"
        run -0 ctl_nobody run -- echo still
        [ "$output" = still ]
        # [daemon] keys take effect at a restart: named, refused
        write_conf
        sed -i 's/^kill_grace = 1s$/kill_grace = 2s/' "$SUP_DIR/sup.conf"
        run -125 ctl reload
        [[ "$output" == *"restart the daemon for: daemon.kill_grace"* ]]
        write_conf
        run -0 ctl reload
        [[ "$output" == *"reloaded: 2 tenants, 2 tokens"* ]]
}

@test "a removed tenant's open connections are closed and its admitted job runs on; added again, it finds its job" {
        write_conf
        run -0 ctl reload
        run -0 ctl_nobody submit -- sh -c 'sleep 2; echo done'
        j=$output
        # a connection of t1 held open, waiting for the job
        ctl_nobody wait "$j" > "$SUP_DIR/wait.out" 2>&1 &
        w=$!
        wait_until 10 sh -c "p=\$(pgrep -f 'sbxctl --socket $SUP_SOCK wait $j') && ss -xp | grep -q \"pid=\$p,\""
        # t1 gone
        sed -i '/^\[tenant.t1\]/,/^$/d; /^\[token.worker\]/,/^$/d' "$SUP_DIR/sup.conf"
        run -0 ctl --json reload
        [ "$(json_get reload.removed <<< "$output")" = '["t1"]' ]
        # (its end read from its output: the shell's wait may be cut short
        # by a signal, without the client's status)
        wait_until 10 grep -q connection "$SUP_DIR/wait.out"
        wait_until 10 pid_gone "$w"
        run -125 ctl_nobody ping
        [[ "$output" == *E_UNAUTHORIZED* ]]
        # its job ran on: its end is in the audit log
        wait_until 20 grep -q "\"event\":\"job_end\".*\"job\":\"$j\"" "$SUP_DIR/audit.log"
        # back: the same tenant by name, its job's result its own
        write_conf
        run -0 ctl reload
        run -0 ctl_nobody result "$j"
        [[ "$output" == *"state:     succeeded"* ]]
        run -0 ctl_nobody logs "$j"
        [ "$output" = done ]
}

@test "only an admin may reload or change a policy; a tenant sees its own policy only" {
        write_conf
        run -0 ctl reload
        run -125 ctl_nobody reload
        [[ "$output" == *E_FORBIDDEN* ]]
        run -125 ctl_nobody policy set t1 max_jobs=64
        [[ "$output" == *E_FORBIDDEN* ]]
        run -0 ctl_nobody policy show
        [[ "$output" == *"tenant t1 ("*"sup.conf:"* ]]
        run -125 ctl_nobody policy show admin
        [[ "$output" == *E_FORBIDDEN* ]]
        # admins = nobody: now it may
        write_conf "" "" 
        sed -i "s/^kill_grace = 1s$/kill_grace = 1s\nadmins = nobody/" "$SUP_DIR/sup.conf"
        run -0 ctl reload
        run -0 ctl_nobody reload
        run -0 ctl_nobody policy show admin
        write_conf
        run -0 ctl reload
        run -125 ctl_nobody reload
        # over HTTP: a run token may not, an admin token may
        run -0 api "$TOK_RUN" POST /v1/reload
        [[ "$output" == *'HTTP 403'* ]]
        run -0 api "$TOK_ADMIN" POST /v1/reload
        [[ "$output" == *'HTTP 200'* ]]
        [[ "$output" == *'"tokens": 2'* || "$output" == *'"tokens":2'* ]]
        run -0 api "$TOK_RUN" GET /v1/policies/t1
        [[ "$output" == *'HTTP 200'* ]]
        run -0 api "$TOK_RUN" GET /v1/policies/admin
        [[ "$output" == *'HTTP 403'* ]]
}

@test "a token withdrawn by a reload is refused at once; one added is taken" {
        write_conf
        run -0 ctl reload
        run -0 api "$TOK_RUN" GET /v1/ping
        [[ "$output" == *'HTTP 200'* ]]
        sed -i '/^\[token.worker\]/,/^$/d' "$SUP_DIR/sup.conf"
        run -0 ctl reload
        run -0 api "$TOK_RUN" GET /v1/ping
        [[ "$output" == *'HTTP 401'* ]]
        write_conf
        run -0 ctl reload
        run -0 api "$TOK_RUN" GET /v1/ping
        [[ "$output" == *'HTTP 200'*  ]]
}

@test "policy set: validated, versioned, in force at once, durable across a restart, audited, in its history" {
        write_conf
        run -0 ctl reload
        rm -f "$SUP_DIR/state/policy.json"
        run -0 ctl policy set t1 max_jobs=1 max_queue=5 --reason "one at a time"
        [[ "$output" == *"policy version 1"* ]]
        [[ "$output" == *"changed: t1"* ]]
        run -0 ctl --json policy show t1
        [ "$(json_get policy.effective.max_jobs <<< "$output")" = 1 ]
        [ "$(jq -r .policy.set.max_jobs <<< "$output")" = 1 ]
        # in force: a second job of t1 waits for the first
        a=$(ctl_nobody submit -- sleep 2)
        b=$(ctl_nobody submit -- true)
        run -0 ctl_nobody status "$b"
        [[ "$output" == *queued* ]]
        ctl_nobody wait "$b" >/dev/null
        # refused, nothing changed: a bad value, an unknown key, an unknown tenant
        run -125 ctl policy set t1 max_jobs=lots
        [[ "$output" == *E_CONFIG*max_jobs* ]]
        run -125 ctl policy set t1 max_jobz=1
        [[ "$output" == *E_CONFIG*max_jobz* ]]
        run -125 ctl policy set nosuch max_jobs=1
        [[ "$output" == *E_NOT_FOUND*nosuch* ]]
        run -0 ctl --json policy show t1
        [ "$(json_get policy.version <<< "$output")" = 1 ]
        # a value that would add a line or a section is not a value
        run -0 raw '{"v":1,"op":"policy.set","tenant":"t1","set":{"max_jobs":"1\n[tenant.admin]\nuids = nobody"}}'
        [[ "$output" == *E_BAD_REQUEST*"control character"* ]]
        run -0 raw '{"v":1,"op":"policy.set","tenant":"t1","set":{"uids = nobody\n[x]":"1"}}'
        [[ "$output" == *E_BAD_REQUEST*"not a key"* ]]
        # durable: a restart keeps it
        sup_stop
        sup_start
        run -0 ctl --json policy show t1
        [ "$(json_get policy.effective.max_jobs <<< "$output")" = 1 ]
        run -0 ctl policy reset t1 max_jobs
        [[ "$output" == *"policy version 2"* ]]
        run -0 ctl --json policy show t1
        [ "$(json_get policy.effective.max_jobs <<< "$output")" = 8 ]
        run -0 ctl policy history t1
        [[ "${lines[0]}" == "version 1  "*"  by uid 0  (one at a time)" ]]
        [[ "$output" == *"max_jobs: (the file's) -> 1"* ]]
        [[ "$output" == *"max_jobs: 1 -> (the file's)"* ]]
        run -0 audit_last policy_set
        [ "$(json_get change.version <<< "$output")" = 2 ]
        [ "$(json_get by <<< "$output")" = "uid 0" ]
        # over HTTP with the admin token
        run -0 api "$TOK_ADMIN" POST /v1/policies/t1 '{"set":{"max_queue":null},"reason":"http"}'
        [[ "$output" == *'HTTP 200'* ]]
        run -0 api "$TOK_ADMIN" GET '/v1/policies/t1/history?limit=1'
        [[ "$output" == *'"by": "token boss"'* || "$output" == *'"by":"token boss"'* ]]
        ctl_nobody wait "$a" >/dev/null
        # keys of a tenant taken out of the file wait for it: the reload is
        # not refused, and they may be reset (not set)
        run -0 ctl policy set t1 max_jobs=3
        sed -i '/^\[tenant.t1\]/,/^$/d; /^\[token.worker\]/,/^$/d' "$SUP_DIR/sup.conf"
        run -0 ctl reload
        [[ "$output" == *"removed: t1"* ]]
        run -125 ctl policy set t1 max_jobs=4
        [[ "$output" == *E_NOT_FOUND* ]]
        run -0 ctl policy reset t1 max_jobs
        write_conf
        run -0 ctl reload
        run -0 ctl --json policy show t1
        [ "$(jq -r .policy.effective.max_jobs <<< "$output")" = 8 ]
}

@test "a policy file tampered with: the daemon refuses to start and names it" {
        sup_stop
        cp "$SUP_DIR/state/policy.json" "$SUP_DIR/policy.good"
        printf '{"version": 3, "tenants": {"t1": {"max_jobs": 1}}, "history": []}' > "$SUP_DIR/state/policy.json"
        run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf"
        [[ "$output" == *"state/policy.json: not a policy file"* ]]
        # a value the configuration refuses: named too
        printf '{"version": 3, "tenants": {"t1": {"max_jobs": "lots"}}, "history": []}' > "$SUP_DIR/state/policy.json"
        run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf"
        [[ "$output" == *"state/policy.json (the keys policy.set gave;"*"state/policy.json:2: max_jobs: invalid number 'lots'"* ]]
        mv "$SUP_DIR/policy.good" "$SUP_DIR/state/policy.json"
        sup_start
        run -0 ctl ping
}

@test "a change that withdraws network ends the sessions that use it, as recorded; one that withdraws services takes their ports" {
        write_conf
        run -0 ctl reload
        run -0 ctl_nobody session create --network host
        host=$output
        run -0 ctl_nobody session create
        plain=$output
        run -0 ctl_nobody session expose "$plain" 8000
        run -0 ctl policy set t1 network=none
        [[ "$output" == *"sessions ended: $host"* ]]
        run -125 ctl_nobody session show "$host"
        [[ "$output" == *E_SESSION_ENDED*policy* ]]
        run -0 ctl_nobody session show "$plain"
        run -0 ctl policy set t1 session_services=no
        [[ "$output" == *"services withdrawn: $plain"* ]]
        # the session lives on, without its port, and may expose none
        run -0 ctl_nobody --json session show "$plain"
        [ "$(jq -r .state <<< "$output")" = ready ]
        run -125 ctl_nobody session unexpose "$plain" 8000
        [[ "$output" == *E_NOT_FOUND*"does not expose port 8000"* ]]
        run -125 ctl_nobody session expose "$plain" 8000
        [[ "$output" == *E_FORBIDDEN*session_services* ]]
        run -0 ctl_nobody session close "$plain"
        # the ended sandbox's record says why
        wait_until 20 sh -c "grep -rl '\"$host\"' '$SUP_DIR/state/results' | grep -q ."
        run -0 grep -rl "\"$host\"" "$SUP_DIR/state/results"
        run -0 grep -h -o '"ended": *"policy"' $output
        run -0 ctl policy reset t1 network session_services
}

@test "hostile: reloads while jobs come and go lose no job and no connection of a tenant that stays" {
        write_conf
        run -0 ctl reload
        cp "$SUP_DIR/sup.conf" "$SUP_DIR/a.conf"
        write_conf "max_jobs = 2"
        cp "$SUP_DIR/sup.conf" "$SUP_DIR/b.conf"
        local jobs=() i
        # a connection of t1 open through all the reloads
        long=$(ctl_nobody submit -- sleep 3)
        ctl_nobody wait "$long" > "$SUP_DIR/long.out" 2>&1 &
        w=$!
        for i in $(seq 30); do
                jobs+=("$(ctl_nobody submit -- sh -c "echo $i")")
                if [ $((i % 2)) = 0 ]; then cp "$SUP_DIR/a.conf" "$SUP_DIR/sup.conf"; else cp "$SUP_DIR/b.conf" "$SUP_DIR/sup.conf"; fi
                kill -HUP "$(cat "$SUP_DIR/daemon.pid")"
        done
        for i in "${!jobs[@]}"; do
                run -0 ctl_nobody wait "${jobs[$i]}"
                run -0 ctl_nobody logs "${jobs[$i]}"
                [ "$output" = "$((i + 1))" ]
        done
        # signals of one kind do not queue: at least some were reloads each
        [ "$(grep -c 'reload (SIGHUP):' "$SUP_DIR/daemon.log")" -ge 10 ]
        wait_until 20 grep -q succeeded "$SUP_DIR/long.out"
        wait_until 10 pid_gone "$w"
        kill -0 "$(cat "$SUP_DIR/daemon.pid")"
        cp "$SUP_DIR/a.conf" "$SUP_DIR/sup.conf"
        run -0 ctl reload
}
