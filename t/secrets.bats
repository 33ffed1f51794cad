#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Secrets (sbx-supervisord(8) SECRETS): values kept by the daemon, set by
# admins from standard input, given to the jobs and sessions that ask for
# them and whose tenant is granted them (a read-only file at
# /run/secrets/NAME, or a variable), redacted from everything the daemon
# keeps of a job (output, value, artifacts, error) in their raw, base64,
# hex and URL-encoded forms, and never written to the state directory's
# records, journal, logs, audit or metrics. Hostile: a value that tries to
# add profile lines, a name with a path in it, a tenant asking for
# another's secret, a secret printed across two writes.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

free_port() {
        /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

setup_file() {
        sup_init
        PORT=$(free_port)
        TOK_ADMIN=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
        TOK_T1=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
        export PORT TOK_ADMIN TOK_T1
        # printable, and with what a profile or a shell would read as syntax
        export VAL='s3cr3t-Value;#$HOME "q" \x'
        export VAL2='another-secret-0123456789'
        export TVAL='tenant-one-secret-value'
        sup_config "socket_mode = 0666"
        cat >> "$SUP_DIR/sup.conf" <<'EOC'
secrets = API_KEY DB_PASS:env SHOWN
secrets_in_output = SHOWN

[tenant.t1]
uids = nobody
secrets = T1_TOKEN
EOC
        printf '\n[http]\nlisten = 127.0.0.1:%s\n\n[token.boss]\ntenant = admin\nscope = admin\nsha256 = %s\n\n[token.one]\ntenant = t1\nsha256 = %s\n' \
                "$PORT" "$(printf %s "$TOK_ADMIN" | sha256sum | cut -d' ' -f1)" "$(printf %s "$TOK_T1" | sha256sum | cut -d' ' -f1)" >> "$SUP_DIR/sup.conf"
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
        [ "$(id -u)" = 0 ] || skip "the daemon must run as root to give nobody's jobs uids of their own"
}

sha() {
        printf %s "$1" | sha256sum | cut -d' ' -f1
}

@test "secret set reads the value from standard input (one final newline off); ls names, never shows values" {
        run -0 ctl secret set admin API_KEY <<< "$VAL"
        [[ "$output" == "secret API_KEY of tenant admin set (${#VAL} bytes)" ]]
        printf %s "$VAL2" | ctl secret set admin DB_PASS
        printf %s 'shown-value-1234' | ctl secret set admin SHOWN
        printf %s "$TVAL" | ctl secret set t1 T1_TOKEN
        # a name the tenant is not granted may be set; ls says so
        run -0 ctl secret set admin SPARE <<< 'spare-value-123'
        [[ "$output" == *"does not grant it"* ]]
        run -0 ctl secret ls admin
        [[ "$output" == *API_KEY*file*"${#VAL}"* ]]
        [[ "$output" == *DB_PASS*env* ]]
        [[ "$output" == *SPARE*no* ]]
        [[ "$output" != *"$VAL2"* ]]
        run -0 ctl --json secret ls admin
        [ "$(jq -r '.secrets[] | select(.name == "API_KEY") | .bytes' <<< "$output")" = "${#VAL}" ]
        # stored readable by the daemon's user only
        [ "$(stat -c %a "$SUP_DIR/state/secrets")" = 700 ]
        [ "$(stat -c %a "$SUP_DIR/state/secrets/admin/API_KEY")" = 600 ]
}

@test "only an admin sets or removes a secret; a tenant lists its own only; bad names and sizes are refused by name" {
        run -125 ctl_nobody secret set t1 T1_TOKEN <<< 'from-nobody-123'
        [[ "$output" == *E_FORBIDDEN*"only an admin"* ]]
        run -125 ctl_nobody secret rm t1 T1_TOKEN
        [[ "$output" == *E_FORBIDDEN* ]]
        run -0 ctl_nobody secret ls
        [[ "$output" == *T1_TOKEN*file* ]]
        run -125 ctl_nobody secret ls admin
        [[ "$output" == *E_FORBIDDEN*"another tenant's secrets"* ]]
        run -125 ctl secret set admin ../etc <<< 'long-enough-value'
        [[ "$output" == *E_BAD_REQUEST*"field 'name'"*"not a secret's name"* ]]
        run -125 ctl secret set admin SBX_JOB_ID <<< 'long-enough-value'
        [[ "$output" == *E_BAD_REQUEST*"not a secret's name"* ]]
        run -125 ctl secret set admin SHORT <<< 'short'
        [[ "$output" == *"5 bytes; a secret is 8 to 16384 bytes"* ]]
        run -125 ctl secret set admin BIG < <(head -c 20000 /dev/zero | tr '\0' x)
        [[ "$output" == *"longer than 16384 bytes"* ]]
        # nothing of the refused ones was stored
        [ ! -e "$SUP_DIR/state/secrets/admin/SHORT" ]
        [ ! -e "$SUP_DIR/state/secrets/admin/BIG" ]
        [ ! -e "$SUP_DIR/state/etc" ]
}

@test "a job reads its file secret at /run/secrets/NAME, read-only and its own; a variable secret is in its environment" {
        job=$(ctl submit --secret API_KEY --secret DB_PASS -- sh -c '
                printf %s "$(cat /run/secrets/API_KEY)" | sha256sum | cut -c1-64
                printf %s "$DB_PASS" | sha256sum | cut -c1-64
                stat -c "%a %u" /run/secrets/API_KEY
                grep " /run/secrets " /proc/self/mountinfo | grep -c " ro,"
                (echo x > /run/secrets/API_KEY) 2>/dev/null && echo WROTE
                (touch /run/secrets/new) 2>/dev/null && echo MADE
                ls /run/secrets; id -u')
        run -0 ctl --json wait "$job"
        rec=$(jq .result <<< "$output")
        [ "$(jq -r .state <<< "$rec")" = succeeded ]
        run -0 ctl logs "$job"
        out=$output
        [ "$(sed -n 1p <<< "$out")" = "$(sha "$VAL")" ]
        [ "$(sed -n 2p <<< "$out")" = "$(sha "$VAL2")" ]
        uid=$(tail -1 <<< "$out")
        [ "$(sed -n 3p <<< "$out")" = "400 $uid" ]
        [ "$(sed -n 4p <<< "$out")" = 1 ]
        [[ "$out" != *WROTE* && "$out" != *MADE* ]]
        # only what it asked for: DB_PASS is a variable, not a file
        [ "$(sed -n 5p <<< "$out")" = API_KEY ]
        # the record names them, with how many times each was redacted
        [ "$(jq -c '[.secrets[] | [.name, .mode, .redacted]]' <<< "$rec")" = '[["API_KEY","file",0],["DB_PASS","env",0]]' ]
}

@test "a value with profile syntax in it stays one value: no line of it becomes a mount" {
        local evil='x-long-value
[fs]
bind = / /host
[env]
set = PWNED=1'
        printf %s "$evil" | ctl secret set admin SPARE
        run -0 ctl policy set admin 'secrets=API_KEY DB_PASS:env SHOWN SPARE SPARE2:env' --reason test
        printf %s "$evil" | ctl secret set admin SPARE2
        run -0 ctl run --secret SPARE --secret SPARE2 -- sh -c '
                cat /run/secrets/SPARE | sha256sum | cut -c1-64
                printf %s "$SPARE2" | sha256sum | cut -c1-64
                test -e /host && echo HOST; test -n "$PWNED" && echo PWNED; true'
        out=$output
        [ "$(sed -n 1p <<< "$out")" = "$(sha "$evil")" ]
        [ "$(sed -n 2p <<< "$out")" = "$(sha "$evil")" ]
        [[ "$out" != *HOST* && "$out" != *PWNED* ]]
        run -0 ctl policy reset admin secrets
}

@test "printed in any of its forms, split across writes, in the value, an artifact and a session: the secret is redacted" {
        job=$(ctl submit --secret API_KEY --artifact out.txt -- sh -c '
                v=$(cat /run/secrets/API_KEY)
                printf "raw:%s\n" "$v"
                printf "b64:%s\n" "$(printf %s "$v" | base64 -w0)"
                printf "echo-b64:%s\n" "$(echo "$v" | base64 -w0)"
                printf "hex:%s\n" "$(printf %s "$v" | od -An -tx1 | tr -d " \n")"
                printf "url:%s\n" "$(printf %s "$v" | python3 -c "import sys, urllib.parse; print(urllib.parse.quote(sys.stdin.read(), safe=\"\"))")"
                # half now, half later: two reads of the pipe
                printf "split:%s" "$(printf %s "$v" | cut -c1-9)"; sleep 0.3; printf "%s\n" "$(printf %s "$v" | cut -c10-)"
                printf "err:%s\n" "$v" >&2
                printf "{\"k\": \"%s\"}" "$(printf %s "$v" | sed "s/\\\\/\\\\\\\\/g; s/\"/\\\\\"/g")" > "$SBX_RESULT"
                printf "in a file: %s\n" "$v" > out.txt')
        run -0 ctl --json wait "$job"
        rec=$(jq .result <<< "$output")
        [ "$(jq -r .state <<< "$rec")" = succeeded ]
        run -0 ctl logs "$job"
        [[ "$output" != *"$VAL"* ]]
        [[ "$output" != *"$(printf %s "$VAL" | base64 -w0 | tr -d =)"* ]]
        [[ "$output" != *"$(printf %s "$VAL" | od -An -tx1 | tr -d ' \n')"* ]]
        [[ "$output" == *"raw:[secret API_KEY]"* ]]
        [[ "$output" == *"b64:[secret API_KEY]"* ]]
        # the newline echo adds changes the base64's last characters
        [[ "$output" == *"echo-b64:[secret API_KEY]"* ]]
        [[ "$output" == *"hex:[secret API_KEY]"* ]]
        [[ "$output" == *"url:[secret API_KEY]"* ]]
        [[ "$output" == *"split:[secret API_KEY]"* ]]
        [[ "$output" == *"err:[secret API_KEY]"* ]]
        [ "$(jq -r '.secrets[0].redacted' <<< "$rec")" -ge 7 ]
        run -0 ctl result --value "$job"
        [ "$(jq -r .k <<< "$output")" = "[secret API_KEY]" ]
        run -0 ctl download -o "$BATS_TEST_TMPDIR/out.txt" "$job" out.txt
        [ "$(cat "$BATS_TEST_TMPDIR/out.txt")" = "in a file: [secret API_KEY]" ]
        [ "$(jq -r '.artifacts[0].sha256' <<< "$rec")" = "$(sha256sum < "$BATS_TEST_TMPDIR/out.txt" | cut -c1-64)" ]
        # a secret of secrets_in_output is printed as it is
        run -0 ctl run --secret SHOWN -- cat /run/secrets/SHOWN
        [ "$output" = shown-value-1234 ]
        # a session's execs, followed live
        sid=$(ctl session create --secret API_KEY --secret DB_PASS)
        run -0 ctl session exec "$sid" -- sh -c 'echo "$DB_PASS"; cat /run/secrets/API_KEY'
        [ "$output" = "[secret DB_PASS]
[secret API_KEY]" ]
        ctl session close "$sid" >/dev/null
}

@test "asking for a secret not granted, another tenant's or one not set is refused by name; a revoked grant holds for new jobs" {
        run -125 ctl run --secret T1_TOKEN -- true
        [[ "$output" == *E_FORBIDDEN*"tenant 'admin' is not granted secret 'T1_TOKEN'"* ]]
        run -125 ctl_nobody run --secret API_KEY -- true
        [[ "$output" == *E_FORBIDDEN*"tenant 't1' is not granted secret 'API_KEY'"* ]]
        # t1's own, as nobody
        run -0 ctl_nobody run --secret T1_TOKEN -- sh -c 'sha256sum < /run/secrets/T1_TOKEN | cut -c1-64; ls /run/secrets'
        [ "$output" = "$(sha "$TVAL")
T1_TOKEN" ]
        run -0 ctl secret rm admin SPARE
        run -0 ctl policy set admin 'secrets=API_KEY SPARE SHOWN' --reason test
        run -125 ctl run --secret SPARE -- true
        [[ "$output" == *E_NOT_FOUND*"no value for secret 'SPARE'"* ]]
        run -125 ctl run --secret DB_PASS -- true
        [[ "$output" == *E_FORBIDDEN*"not granted secret 'DB_PASS'"* ]]
        run -0 ctl policy reset admin secrets
        run -0 ctl run --secret DB_PASS -- true
}

@test "no value is written to the state directory (but its secrets store), the log, the audit log or the metrics, nor shown in ps" {
        # a job holding a variable secret, alive while we look
        job=$(ctl submit --secret DB_PASS --secret API_KEY -- sleep 30)
        wait_until 10 sh -c "'$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' --json status '$job' | jq -e '.job.state == \"running\"' >/dev/null"
        for v in "$VAL" "$VAL2" "$TVAL"; do
                run -1 grep -rlF --exclude-dir=secrets -- "$v" "$SUP_DIR/state"
                run -1 grep -F -- "$v" "$SUP_DIR/daemon.log" "$SUP_DIR/audit.log"
                run -0 ctl metrics
                [[ "$output" != *"$v"* ]]
                run -0 ps -eo args
                [[ "$output" != *"$v"* ]]
                # the environment of every process another uid than the job's may read
                run -0 env -i setpriv --reuid=nobody --regid=nogroup --clear-groups -- sh -c "cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -cF -- '$v' || true"
                [ "$output" = 0 ]
        done
        # the audit says who set what, without the value
        grep '"event":"secret_set"' "$SUP_DIR/audit.log" | grep -q '"name":"API_KEY"'
        ctl cancel "$job" >/dev/null
}

api() {
        local tok=$1 method=$2 path=$3 body=${4-}
        local args=(-sS -X "$method" -w '\nHTTP %{http_code}\n' -H "Authorization: Bearer $tok")
        [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
        curl "${args[@]}" "http://127.0.0.1:$PORT$path"
}

@test "over HTTP: an admin token sets and removes values, a tenant's token lists its own names and sets nothing" {
        run -0 api "$TOK_ADMIN" PUT /v1/secrets/t1/T1_TOKEN '{"value": "http-set-value-42"}'
        [[ "$output" == *'"granted":"file"'*"HTTP 200"* ]]
        [[ "$output" != *http-set-value-42* ]]
        run -0 ctl_nobody run --secret T1_TOKEN -- cat /run/secrets/T1_TOKEN
        [ "$output" = "[secret T1_TOKEN]" ]
        run -0 api "$TOK_T1" PUT /v1/secrets/t1/T1_TOKEN '{"value": "from-the-tenant-1"}'
        [[ "$output" == *E_FORBIDDEN*"HTTP 403"* ]]
        run -0 api "$TOK_T1" GET /v1/secrets/t1
        [[ "$output" == *'"name":"T1_TOKEN"'*"HTTP 200"* ]]
        [[ "$output" != *http-set-value-42* ]]
        run -0 api "$TOK_T1" GET /v1/secrets/admin
        [[ "$output" == *"HTTP 403"* ]]
        run -0 api "$TOK_ADMIN" PUT /v1/secrets/t1/T1_TOKEN '{"value": "short"}'
        [[ "$output" == *"field 'value'"*"HTTP 400"* ]]
        run -0 api "$TOK_ADMIN" DELETE /v1/secrets/t1/T1_TOKEN
        [[ "$output" == *"HTTP 200"* ]]
        run -0 api "$TOK_ADMIN" DELETE /v1/secrets/t1/T1_TOKEN
        [[ "$output" == *E_NOT_FOUND*"HTTP 404"* ]]
        run -125 ctl_nobody run --secret T1_TOKEN -- true
        [[ "$output" == *E_NOT_FOUND*"no value for secret 'T1_TOKEN'"* ]]
        # back as the other tests left it
        printf %s "$TVAL" | ctl secret set t1 T1_TOKEN
}

@test "across a SIGKILL of the daemon: a session's execs are still redacted, a retried job gets its secret again" {
        printf %s "$VAL" | ctl secret set admin API_KEY
        printf %s "$VAL2" | ctl secret set admin DB_PASS
        sid=$(ctl session create --secret API_KEY)
        run -0 ctl session exec "$sid" -- cat /run/secrets/API_KEY
        [ "$output" = "[secret API_KEY]" ]
        job=$(ctl submit --retries 1 --secret DB_PASS -- sh -c 'echo "$DB_PASS"; sleep 3')
        wait_until 10 sh -c "'$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' --json status '$job' | jq -e '.job.state == \"running\"' >/dev/null"
        # the journal has the names, never the values
        grep -q '"secrets":\["DB_PASS"\]' "$SUP_DIR/state/journal"
        run -1 grep -F -- "$VAL2" "$SUP_DIR/state/journal"
        pid=$(cat "$SUP_DIR/daemon.pid")
        kill -KILL "$pid"
        sup_wait_gone "$pid"
        sup_start
        wait_until 20 sh -c "'$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' --json session show '$sid' | jq -e '.state == \"ready\"' >/dev/null"
        run -0 ctl session exec "$sid" -- sh -c 'cat /run/secrets/API_KEY; echo; printf %s "$(cat /run/secrets/API_KEY)" | base64 -w0'
        # (base64's padding is not part of the form: it stays)
        [ "$output" = "[secret API_KEY]
[secret API_KEY]=" ]
        ctl session close "$sid" >/dev/null
        # run again (attempt 2) with its secret, redacted
        run -0 ctl --json wait "$job"
        [ "$(jq -r '.result.attempt' <<< "$output")" = 2 ]
        [ "$(jq -r '.result.state' <<< "$output")" = succeeded ]
        [ "$(jq -c '.result.secrets' <<< "$output")" = '[{"name":"DB_PASS","mode":"env","redacted":1}]' ]
        run -0 ctl logs "$job"
        [ "$output" = "[secret DB_PASS]" ]
}
