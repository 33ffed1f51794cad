#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# DNS over TCP through a restricted job's DNS proxy (127.0.0.1:53 in the
# job): the same policy, audit and metrics as over UDP; glibc's retry over
# TCP of a truncated answer; and the bounds a hostile job meets. The
# upstream resolver is t/helpers/dns-server.py on a test host in a network
# namespace this file makes (as t/supervisor-restricted.bats does); the job
# side is t/helpers/dns-tcp-probe.py. (A negation "! cmd" is followed by
# "|| false": bash's errexit ignores a negated command.)

load sup-unit/daemon
load helpers/testhost
bats_require_minimum_version 1.5.0

# The test host: TH.1 and .2 in a namespace of our own, behind a veth whose
# host end is TH.254 (TH: a /24 of 198.18.0.0/15 picked at random).
setup_file() {
        sup_init
        testhost_up sbxd "1 2"
        if [ "$NET_OK" = 1 ]; then
                testhost_serve servers net-servers.py tcp:${TH}.1:8080 tcp:${TH}.2:8080
                testhost_serve dns dns-server.py ${TH}.1 ${TH}.2
                wait_until 30 testhost_ready servers dns || true
        fi
        # a pool of our own: 10.214.N.0/24 (64 jobs at once)
        export POOL="10.214.$((RANDOM % 256)).0/24"
        # idle connections closed after 2 s, not 10: the stall tests wait for it
        sup_config "network_pool = $POOL
dns_upstream = ${TH}.1
dns_tcp_idle_timeout = 2s"
        sed -i "s/^profiles = default shell\$/&\\nnetwork = none host restricted\\nnetwork_allow = ${TH}.0\\/24:*\\/any *.test:*\\/any/" "$SUP_DIR/sup.conf"
        sup_start
}

teardown_file() {
        testhost_down
}

setup() {
        require_userns
        restricted_skip_unless_ready dns
}

# submit_probe [sbxctl submit options]... -- PROBE...: starts
# dns-tcp-probe.py in a restricted job; leaves its id in $id.
submit_probe() {
        local opts=()
        while [ "$1" != -- ]; do opts+=("$1"); shift; done
        shift
        run ctl --json submit --network restricted "${opts[@]}" -- python3 -c "$(cat "$SBX_SRCDIR/t/helpers/dns-tcp-probe.py")" "$@"
        [ "$status" -eq 0 ] || { echo "$output"; return 1; }
        id=$(json_get job <<<"$output")
}

# probe [options]... -- PROBE...: the same, waited for: its record in $res,
# its output in $output and $lines.
probe() {
        submit_probe "$@"
        res=$(ctl --json wait "$id")
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; return 1; }
        run ctl logs "$id"
}

# dns_events: one line per dns event of the job's record: hostname,
# protocol, verdict.
dns_events() {
        python3 -c '
import json, sys
for e in json.load(sys.stdin)["result"]["network_events"]:
    if e["kind"] == "dns":
        print(e["hostname"], e["protocol"], e["verdict"])
' <<<"$res"
}

# delta NAME: how much the metric grew from $before to $after.
delta() {
        echo $(( $(metric "$1" <<<"$after") - $(metric "$1" <<<"$before") ))
}

@test "over TCP an allowed name resolves and its address is reached; another name is refused; both audited as tcp" {
        before=$(ctl metrics)
        probe --allow db.test:8080 -- query:db.test query:other.test tcp:${TH}.1:8080 tcp:${TH}.2:8080
        after=$(ctl metrics)
        [ "${lines[0]}" = "query:db.test rcode 0 ${TH}.1" ]
        [ "${lines[1]}" = "query:other.test rcode 5 " ]
        [ "${lines[2]}" = "tcp:${TH}.1:8080 ok ${TH}.1:8080" ]
        [ "${lines[3]}" = "tcp:${TH}.2:8080 error [Errno 1] Operation not permitted" ]
        evs=$(dns_events)
        [ "$(grep -cx "db.test tcp allow" <<<"$evs")" = 1 ]
        [ "$(grep -cx "other.test tcp deny" <<<"$evs")" = 1 ]
        [ "$(wc -l <<<"$evs")" = 2 ]
        run -0 ctl result "$id"
        [[ "$output" == *"net:       dns A db.test allow "* ]]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="answered"}')" = 1 ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="refused"}')" = 1 ]
        [ "$(delta 'sbx_network_events_total{kind="dns",verdict="allow"}')" = 1 ]
        [ "$(delta 'sbx_network_events_total{kind="dns",verdict="deny"}')" = 1 ]
        # each connection closed by the job after its answer (the last one's
        # end of file could reach the daemon after the job's end: "ended")
        closed=$(delta 'sbx_network_dns_tcp_connections_total{outcome="closed"}')
        [ "$closed" -ge 1 ]
        [ $((closed + $(delta 'sbx_network_dns_tcp_connections_total{outcome="ended"}'))) = 2 ]
        [ "$(delta 'sbx_network_dns_tcp_connections_total{outcome="refused"}')" = 0 ]
        [ "$(delta 'sbx_network_dns_tcp_connections_total{outcome="timed_out"}')" = 0 ]
}

@test "a large answer: truncated over UDP, glibc's getaddrinfo asks again over TCP and gets all 32 addresses, the first reached" {
        probe --allow many.test:8080 -- name:many.test:8080
        [ "${lines[0]}" = "name:many.test:8080 count 32 ok ${TH}.1:8080" ]
        evs=$(dns_events)
        # the truncated answer over UDP first, then the whole over TCP
        grep -qx "many.test udp allow" <<<"$evs"
        grep -qx "many.test tcp allow" <<<"$evs"
        ! grep -q " deny$" <<<"$evs" || false
}

@test "glibc asking A and AAAA at once: once the A answer comes truncated over UDP, both are asked again over TCP and answered" {
        probe --allow many.test:8080 -- nameany:many.test:8080
        [ "${lines[0]}" = "nameany:many.test:8080 count 32 ok ${TH}.1:8080" ]
        evs=$(python3 -c '
import json, sys
for e in json.load(sys.stdin)["result"]["network_events"]:
    if e["kind"] == "dns":
        print(e["qtype"], e["protocol"], e["verdict"])
' <<<"$res")
        # over UDP first; the A answer truncated, glibc asks both again over TCP
        grep -qx "A udp allow" <<<"$evs"
        grep -qx "A tcp allow" <<<"$evs"
        grep -qx "AAAA tcp allow" <<<"$evs"
        ! grep -q " deny$" <<<"$evs" || false
}

@test "pipelined queries on one connection are each answered, in order" {
        probe --allow db.test:8080 -- pipeline:db.test:50 pipeline:other.test:20
        [ "${lines[0]}" = "pipeline:db.test:50 answers 50 rcode 0 in-order yes" ]
        [ "${lines[1]}" = "pipeline:other.test:20 answers 20 rcode 5 in-order yes" ]
        evs=$(dns_events)
        [ "$(grep -cx "db.test tcp allow" <<<"$evs")" = 50 ]
        [ "$(grep -cx "other.test tcp deny" <<<"$evs")" = 20 ]
}

@test "past 100 queries a second (the job's rate, shared with UDP) a connection waits for the next second, then goes on in order" {
        before=$(ctl metrics)
        probe --allow db.test:8080 -- pipeline:other.test:250
        after=$(ctl metrics)
        [ "${lines[0]}" = "pipeline:other.test:250 answers 250 rcode 5 in-order yes" ]
        [ "$(delta sbx_network_dns_pauses_total)" -ge 1 ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="refused"}')" = 250 ]
}

@test "at most 8 TCP connections of a job at once: more are closed at once, and counted" {
        before=$(ctl metrics)
        probe --allow db.test:8080 -- conns:db.test:12 query:db.test
        after=$(ctl metrics)
        [ "${lines[0]}" = "conns:db.test:12 answered 8 closed 4" ]
        # the slots are free again once those are closed
        [ "${lines[1]}" = "query:db.test rcode 0 ${TH}.1" ] || { printf 'probe: %s\n' "${lines[@]}"; false; }
        [ "$(delta 'sbx_network_dns_tcp_connections_total{outcome="refused"}')" = 4 ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="answered"}')" = 9 ]
}

@test "a length of 0 or past 4096 bytes, or a message that is no query, closes the connection" {
        before=$(ctl metrics)
        probe --allow db.test:8080 -- badlen:0 badlen:5000 garbage query:db.test
        after=$(ctl metrics)
        [ "${lines[0]}" = "badlen:0 closed" ]
        [ "${lines[1]}" = "badlen:5000 closed" ]
        [ "${lines[2]}" = "garbage closed" ]
        [ "${lines[3]}" = "query:db.test rcode 0 ${TH}.1" ] || { printf 'probe: %s\n' "${lines[@]}"; false; }
        [ "$(delta 'sbx_network_dns_tcp_connections_total{outcome="malformed"}')" = 3 ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="malformed"}')" = 3 ]
        # nothing of it is a dns event
        [ "$(dns_events)" = "db.test tcp allow" ]
}

@test "connections stalled halfway through a length or a query are closed after dns_tcp_idle_timeout and free their slots" {
        before=$(ctl metrics)
        probe --allow db.test:8080 -- stall:prefix:4 stall:message:8 query:db.test
        after=$(ctl metrics)
        [ "${lines[0]}" = "stall:prefix:4 closed 4" ]
        [ "${lines[1]}" = "stall:message:8 closed 8" ]
        [ "${lines[2]}" = "query:db.test rcode 0 ${TH}.1" ]
        [ "$(delta 'sbx_network_dns_tcp_connections_total{outcome="timed_out"}')" = 12 ]
}

@test "a job that never reads its answers: the proxy stops reading its queries, and closes the connection" {
        before=$(ctl metrics)
        probe --allow many.test:8080 -- noread:many.test:3000
        after=$(ctl metrics)
        [[ "${lines[0]}" == "noread:many.test:3000 sent "*" closed yes" ]]
        [ "$(delta 'sbx_network_dns_tcp_connections_total{outcome="timed_out"}')" = 1 ]
        # read on, at 100 a second, it would have answered every one before
        # the connection was idle (2 s, closed at a tick: under 4 s)
        answered=$(delta 'sbx_network_dns_queries_total{outcome="answered"}')
        [ "$answered" -ge 1 ]
        [ "$answered" -lt 400 ]
}

@test "an upstream that stalls or closes mid-answer: SERVFAIL; meanwhile the daemon and other jobs are served" {
        before=$(ctl metrics)
        # a job holding all its connections, stalled
        submit_probe --allow db.test:8080 -- stall:message:8
        hog=$id
        probe --allow stall.test:8080 --allow cut.test:8080 -- query:stall.test query:cut.test
        [ "${lines[0]}" = "query:stall.test rcode 2 " ]
        [ "${lines[1]}" = "query:cut.test rcode 2 " ]
        ctl ping
        probe --allow db.test:8080 -- query:db.test
        [ "${lines[0]}" = "query:db.test rcode 0 ${TH}.1" ]
        res=$(ctl --json wait "$hog")
        run -0 ctl logs "$hog"
        [ "${lines[0]}" = "stall:message:8 closed 8" ]
        after=$(ctl metrics)
        [ "$(delta 'sbx_network_dns_queries_total{outcome="upstream_timeout"}')" = 1 ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="upstream_failed"}')" = 1 ]
}
