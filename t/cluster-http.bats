#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) RUNNING MANY NODES, a job's files and sessions: logs
# and downloads of a job that another node ran, and requests for a session
# that lives on another node, are answered with E_OTHER_NODE naming that
# node and, when it advertises its HTTP API ([cluster] advertise), where
# it is; the HTTP API answers 307 to the same path and query there, and
# 421 when the node says nothing. Two nodes on one real PostgreSQL,
# each with its HTTP API on the loopback; node2 advertises, node1 not.

load sup-unit/daemon
load helpers/cluster
bats_require_minimum_version 1.5.0

free_port() {
        /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

setup_file() {
        sup_init
        pg_find
        pg_start
        TOKEN=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
        P1=$(free_port)
        P2=$(free_port)
        export TOKEN P1 P2
        export NODE_DAEMON_LINES="socket_mode = 0666"
        node_config 1
        node_config 2 "advertise = http://127.0.0.1:$P2"
        local n p
        for n in 1 2; do
                p=P$n
                cat >>"$SUP_DIR/n$n/sup.conf" <<EOC

[http]
listen = 127.0.0.1:${!p}

[token.alice]
tenant = admin
sha256 = $(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)
EOC
                node_start "$n"
        done
}

teardown_file() {
        cluster_fini
        sup_fini
}

setup() {
        cluster_setup
}

# log_has N TEXT COUNT: until node N's log has more than COUNT lines with TEXT
log_has() {
        local i
        for i in $(seq 100); do
                [ "$(grep -c "$2" "$SUP_DIR/n$1/daemon.log")" -gt "$3" ] && return 0
                sleep 0.1
        done
        echo "node $1 never logged: $2" >&2
        return 1
}

# on_node N CMD...: a job that node N runs (the other drains meanwhile);
# its id
on_node() {
        local n=$1 other=$((3 - $1)) j drains undos
        shift
        drains=$(grep -c "cluster: node node$other drains" "$SUP_DIR/n$other/daemon.log" || true)
        undos=$(grep -c "cluster: node node$other claims jobs again" "$SUP_DIR/n$other/daemon.log" || true)
        nctl 1 drain "node$other" >/dev/null
        log_has "$other" "cluster: node node$other drains" "$drains"
        j=$(nctl "$n" submit -- "$@")
        nctl "$n" wait "$j" >/dev/null
        nctl 1 drain "node$other" --undo >/dev/null
        log_has "$other" "cluster: node node$other claims jobs again" "$undos"
        echo "$j"
}

# get PORT PATH [CURL ARGS...]: status and Location of an API GET
get() {
        local port=$1 path=$2
        shift 2
        curl -s -o "$SUP_DIR/body" -w '%{http_code} %{redirect_url}' -H "Authorization: Bearer $TOKEN" "$@" \
                "http://127.0.0.1:$port$path"
}

@test "logs of a job another node ran: E_OTHER_NODE names the node and where its API is; over HTTP, 307 there, and the output follows" {
        j=$(on_node 2 sh -c 'echo out; echo err >&2')
        [ "$(pg_sql "SELECT node FROM sbx_jobs WHERE id = '$j'")" = node2 ]
        # its own node serves them
        run -0 nctl 2 logs "$j"
        [[ "$output" == *out*err* ]]
        # the other names it, and where it is
        run -125 nctl 1 logs "$j"
        [[ "$output" == *"E_OTHER_NODE: job $j ran on node node2, which keeps its output and artifacts: ask that node, at http://127.0.0.1:$P2"* ]]
        run -125 nctl 1 download "$j" stdout
        [[ "$output" == *E_OTHER_NODE*node2* ]]
        # over HTTP: a redirect to the same path and query on node2
        [ "$(get "$P1" "/v1/jobs/$j/logs?stream=stdout")" = "307 http://127.0.0.1:$P2/v1/jobs/$j/logs?stream=stdout" ]
        [ "$(jq -r .error.code "$SUP_DIR/body")" = E_OTHER_NODE ]
        [ "$(jq -r .error.node "$SUP_DIR/body")" = node2 ]
        [ "$(get "$P1" "/v1/jobs/$j/stdout")" = "307 http://127.0.0.1:$P2/v1/jobs/$j/stdout" ]
        # a client that follows it (with its token: same host, another
        # port) gets the bytes
        [ "$(get "$P1" "/v1/jobs/$j/stdout" --location-trusted)" = "200 " ]
        [ "$(cat "$SUP_DIR/body")" = out ]
        [ "$(get "$P1" "/v1/jobs/$j/stderr" --location-trusted)" = "200 " ]
        [ "$(cat "$SUP_DIR/body")" = err ]
}

@test "a node that advertises no API is named, and over HTTP the answer is 421 with its name" {
        j=$(on_node 1 echo hi)
        [ "$(pg_sql "SELECT node FROM sbx_jobs WHERE id = '$j'")" = node1 ]
        run -125 nctl 2 logs "$j"
        [[ "$output" == *"E_OTHER_NODE: job $j ran on node node1, which keeps its output and artifacts: ask that node (the start"* ]]
        [ "$(get "$P2" "/v1/jobs/$j/stdout")" = "421 " ]
        [ "$(jq -r .error.node "$SUP_DIR/body")" = node1 ]
        [ "$(jq -r '.error | has("api")' "$SUP_DIR/body")" = false ]
        # what the database keeps answers through any node
        run -0 nctl 2 wait "$j"
        [[ "$output" == *"state:     succeeded"* ]]
}

@test "a session lives on the node that made it: through another node E_OTHER_NODE names it and its API, over HTTP 307 there; its end is known everywhere" {
        session_setup
        local sid s1
        run -0 nctl 2 session create --ttl 2m
        sid=$output
        [ "$(pg_sql "SELECT node FROM sbx_sessions WHERE id = '$sid'")" = node2 ]
        run -0 nctl 2 session exec "$sid" -- sh -c 'echo 41 > n'
        run -0 nctl 2 session exec "$sid" -- cat n
        [ "$output" = 41 ]
        # through node1: sent to node2, by name and address
        run -125 nctl 1 session exec "$sid" -- cat n
        [[ "$output" == *"E_OTHER_NODE: session $sid lives on node node2: ask that node, at http://127.0.0.1:$P2"* ]]
        run -125 nctl 1 session show "$sid"
        [[ "$output" == *E_OTHER_NODE*node2* ]]
        [ "$(get "$P1" "/v1/sessions/$sid")" = "307 http://127.0.0.1:$P2/v1/sessions/$sid" ]
        [ "$(jq -r .error.node "$SUP_DIR/body")" = node2 ]
        [ "$(get "$P1" "/v1/sessions/$sid/get?path=n" --location-trusted)" = "200 " ]
        [[ "$(cat "$SUP_DIR/body")" == *41* ]]
        # another tenant knows of no such session, through either node
        run -125 nctl_nobody 1 session show "$sid"
        [[ "$output" == *E_NOT_FOUND* ]]
        run -125 nctl_nobody 2 session show "$sid"
        [[ "$output" == *E_NOT_FOUND* ]]
        # closed on node2: every node says when and why
        run -0 nctl 2 session close "$sid"
        wait_until 20 eval '[ -n "$(pg_sql "SELECT ended FROM sbx_sessions WHERE id = '"'$sid'"' AND why = '"'closed'"'")" ]'
        run -125 nctl 1 session exec "$sid" -- true
        [[ "$output" == *"E_SESSION_ENDED: session $sid ended at "*" on node node2: closed"* ]]
        # one on node1, which advertises nothing: named, and 421 over HTTP
        run -0 nctl 1 session create --ttl 2m
        s1=$output
        run -125 nctl 2 session show "$s1"
        [[ "$output" == *"E_OTHER_NODE: session $s1 lives on node node1: ask that node"* ]]
        [ "$(get "$P2" "/v1/sessions/$s1")" = "421 " ]
        run -0 nctl 1 session close "$s1"
        # an unknown session is unknown everywhere
        run -125 nctl 1 session show 0123456789abcdef0123456789abcdef
        [[ "$output" == *"E_NOT_FOUND: no session"* ]]
}

@test "hostile: an address changed by hand in the database sends no client elsewhere, nor anything into a header" {
        j=$(on_node 2 echo hi)
        # node2 stopped: its heartbeat does not write its address back
        node_signal 2 STOP
        pg_sql "UPDATE sbx_nodes SET api_url = E'http://evil.example/x\r\nSet-Cookie: a=b' WHERE name = 'node2'"
        code=$(get "$P1" "/v1/jobs/$j/stdout")
        pg_sql "UPDATE sbx_nodes SET api_url = 'http://127.0.0.1:$P2' WHERE name = 'node2'"
        node_signal 2 CONT
        [ "$code" = "421 " ]
        [ "$(jq -r '.error | has("api")' "$SUP_DIR/body")" = false ]
}

@test "hostile: advertise is a scheme, a host and a port, nothing else, and only in cluster mode" {
        for bad in "ftp://h:1" "http://" "http://h/path" "http://user@h" "http://h?x=1" "http://h#f" "http://h h"; do
                printf '[cluster]\ndatabase = host=/nonexistent\nadvertise = %s\n' "$bad" >"$SUP_DIR/bad.conf"
                run "$SBX_STAGE/bin/sbx-supervisord" --check-config --config "$SUP_DIR/bad.conf"
                [ "$status" -ne 0 ]
                [[ "$output" == *"bad.conf:3"*"advertise: "* ]]
        done
        printf '[cluster]\nadvertise = http://h:1\n' >"$SUP_DIR/bad.conf"
        run "$SBX_STAGE/bin/sbx-supervisord" --check-config --config "$SUP_DIR/bad.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"[cluster] has no database"*"advertise mean nothing"* ]]
}
