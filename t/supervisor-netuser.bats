#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Restricted networking and the network audit with "user" set
# (sbx-supervisord(8), PRIVILEGE SEPARATION): the front runs without
# privilege and sbx-privd does each privileged step — the job's veth
# (NET_OPEN, after the launcher's info line), the audit attached before
# SPAWN (NET_AUDIT), the job's allow entries and its DNS proxy's answers
# (NET_ALLOW), the host's own addresses (NET_DENY), the counters at the
# end (NET_UNAUDIT) — while the front reads the events from the ring
# buffer NET_RING handed over. The same checks as the root mode's
# t/supervisor-restricted.bats and t/supervisor-rebind.bats, on a test
# host in a network namespace this file makes. (A negation "! cmd" is
# followed by "|| false": bash's errexit ignores a negated command.)

load sup-unit/daemon
load helpers/testhost
bats_require_minimum_version 1.5.0

# The test host: TH.1 and .2 behind a veth whose host end is TH.254 (an
# address of the host's own, which no restricted job reaches).
setup_file() {
        sup_init
        testhost_up sbxu "1 2" 1
        if [ "$NET_OK" = 1 ]; then
                testhost_serve servers net-servers.py tcp:${TH}.1:8080 tcp:${TH}.2:8080
                testhost_serve dns dns-server.py ${TH}.1 ${TH}.2 ${TH6}::1
                wait_until 30 testhost_ready servers dns || true
        fi
        export POOL_X=$((RANDOM % 256))
        export POOL="10.216.$POOL_X.0/24"
        export POOL6="fd5d:$(printf %x $((RANDOM + 1))):$(printf %x $((RANDOM + 1)))::/64"
}

teardown_file() {
        testhost_down
        sup_fini
}

setup() {
        require_userns
        sup_user_mode
        export SUP_SOCK SBX_SOCKET
        [ "$NET_OK" = 1 ] && grep -q ready "$SUP_DIR/servers.out" && grep -q ready "$SUP_DIR/dns.out" ||
                skip "cannot make the test host's network namespace here"
        if [ ! -f "$SUP_DIR/daemon.pid" ] || ! kill -0 "$(cat "$SUP_DIR/daemon.pid")" 2>/dev/null; then
                sup_config "$SUP_USER_LINES
network_pool = $POOL
network_pool6 = $POOL6
dns_upstream = ${TH}.1
network_deny = 192.0.2.0/24"
                sed -i "s/^profiles = default shell\$/&\\nnetwork = none host restricted\\nnetwork_allow = 0.0.0.0\\/0:*\\/any [::\\/0]:*\\/any *.test:*\\/any/" "$SUP_DIR/sup.conf"
                sup_start
        fi
        # Only a kernel without BPF is a reason to skip: a front that
        # cannot run restricted jobs otherwise fails here.
        ! grep -q "sbx-privd: network audit: cannot load it" "$SUP_DIR/daemon.log" ||
                skip "no BPF network audit here: $(grep -o 'network audit: cannot load it.*' "$SUP_DIR/daemon.log" | head -1)"
        grep -q "restricted jobs: veths made by sbx-privd" "$SUP_DIR/daemon.log" ||
                { grep -i 'restricted\|network' "$SUP_DIR/daemon.log"; false; }
}


# events: one line per network event: kind, hostname, address, port,
# verdict, reason ("-" for none).
events() {
        python3 -c '
import json, sys
for e in json.load(sys.stdin)["result"]["network_events"]:
    print(" ".join("-" if e.get(k) is None else str(e[k]) for k in ("kind", "hostname", "address", "port", "verdict", "reason")))
' <<<"$res"
}

status_of() { # FIELD of the front's /proc status
        sed -n "s/^$1:[[:space:]]*//p" "/proc/$SUP_PID/status"
}

@test "user mode: a restricted job reaches its allowed host through a veth of sbx-privd's, is refused another, and its events and counters are in its record" {
        SUP_PID=$(cat "$SUP_DIR/daemon.pid")
        [ "$(status_of CapEff)" = 0000000000000000 ]
        [ "$(status_of NoNewPrivs)" = 1 ]
        probe --allow ${TH}.1:8080 -- tcp:${TH}.1:8080 tcp:${TH}.2:8080 udp:${TH}.1:5353 tcp:${TH}.1:8080
        [ "${lines[0]}" = "tcp:${TH}.1:8080 ok ${TH}.1:8080" ]
        [ "${lines[1]}" = "tcp:${TH}.2:8080 EPERM" ]
        [ "${lines[2]}" = "udp:${TH}.1:5353 EPERM" ]
        [ "${lines[3]}" = "tcp:${TH}.1:8080 ok ${TH}.1:8080" ]
        [ "$(json_get result.network.mode <<<"$res")" = restricted ]
        [ "$(json_get result.network.audit <<<"$res")" = true ]
        [ "$(json_get result.network.events_lost <<<"$res")" = 0 ]
        [ "$(json_get result.network.events_dropped <<<"$res")" = 0 ]
        evs=$(events)
        echo "$evs"
        [ "$(grep -c . <<<"$evs")" = "$(json_get result.network.events_kept <<<"$res")" ]
        grep -qx "connect - ${TH}.1 8080 allow -" <<<"$evs"
        grep -qx "connect - ${TH}.2 8080 deny -" <<<"$evs"
        grep -qx "sendmsg - ${TH}.1 5353 deny -" <<<"$evs"
        # the helper made the veth, attached and detached the audit
        grep -q "^sbx-privd: job .*: veth sx.* up" "$SUP_DIR/daemon.log"
        ! grep -q "sbx-privd: refused" "$SUP_DIR/daemon.log" || false
}

@test "user mode: the host's own address and network_deny are denied whatever the allow entries say (NET_DENY), with their reasons" {
        probe --allow '0.0.0.0/0:*/any' -- tcp:${TH}.254:8080 tcp:192.0.2.7:80 tcp:${TH}.2:8080
        [ "${lines[0]}" = "tcp:${TH}.254:8080 EPERM" ]
        [ "${lines[1]}" = "tcp:192.0.2.7:80 EPERM" ]
        [ "${lines[2]}" = "tcp:${TH}.2:8080 ok ${TH}.2:8080" ]
        evs=$(events)
        echo "$evs"
        grep -qx "connect - ${TH}.254 8080 deny host" <<<"$evs"
        grep -qx "connect - 192.0.2.7 80 deny configured" <<<"$evs"
        grep -qx "connect - ${TH}.2 8080 allow -" <<<"$evs"
}

@test "user mode: an allowed name resolves through the job's DNS proxy and its answer is admitted (NET_ALLOW); a rebinding answer is withheld" {
        probe --allow '*.test:8080' -- name:db.test:8080 tcp:${TH}.2:8080 "dnsq:udp:A:ip-${TH//./-}-254.test" \
                "dnsq:tcp:A:ip-127-0-0-1.test" "dnsq:udp:A:ip-${TH//./-}-2.test" tcp:${TH}.2:8080
        [ "${lines[0]}" = "name:db.test:8080 ok ${TH}.1:8080" ]
        [ "${lines[1]}" = "tcp:${TH}.2:8080 EPERM" ]
        [ "${lines[2]}" = "dnsq:udp:A:ip-${TH//./-}-254.test rcode 5 " ]
        [ "${lines[3]}" = "dnsq:tcp:A:ip-127-0-0-1.test rcode 5 " ]
        [ "${lines[4]}" = "dnsq:udp:A:ip-${TH//./-}-2.test rcode 0 ${TH}.2" ]
        # admitted once the proxy answered it
        [ "${lines[5]}" = "tcp:${TH}.2:8080 ok ${TH}.2:8080" ]
        evs=$(events)
        echo "$evs"
        grep -qx "connect db.test ${TH}.1 8080 allow -" <<<"$evs"
        grep -qx "dns ip-${TH//./-}-254.test ${TH}.254 - deny host" <<<"$evs"
        grep -qx "dns ip-127-0-0-1.test 127.0.0.1 - deny loopback" <<<"$evs"
}

@test "user mode: a job asking for the audit without restricted networking is audited by sbx-privd" {
        run ctl --json submit --network host --audit -- python3 -c "$(cat "$SBX_SRCDIR/t/helpers/net-probe.py")" tcp:${TH}.1:8080
        [ "$status" -eq 0 ]
        id=$(json_get job <<<"$output")
        res=$(ctl --json wait "$id")
        [ "$(json_get result.state <<<"$res")" = succeeded ]
        [ "$(json_get result.network.audit <<<"$res")" = true ]
        evs=$(events)
        echo "$evs"
        grep -qx "connect - ${TH}.1 8080 allow -" <<<"$evs"
}

@test "user mode: past sbx-privd's blocks restricted jobs wait in the queue, and each gets a block once the one before it is back" {
        # a /28, the smallest network_pool: four blocks for ten jobs
        sed -i "s|^network_pool = .*|network_pool = 10.216.$POOL_X.0/28|" "$SUP_DIR/sup.conf"
        sup_stop
        sup_start
        local ids=() id i
        for i in $(seq 10); do
                run ctl --json submit --network restricted --allow ${TH}.1:8080 -- \
                        python3 -c "$(cat "$SBX_SRCDIR/t/helpers/net-probe.py")" tcp:${TH}.1:8080
                [ "$status" -eq 0 ] || { echo "$output"; false; }
                ids+=("$(json_get job <<<"$output")")
        done
        for id in "${ids[@]}"; do
                res=$(ctl --json wait "$id" || true)
                [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$id: $res"; false; }
                run -0 ctl logs "$id"
                [ "$output" = "tcp:${TH}.1:8080 ok ${TH}.1:8080" ]
        done
        # the next test gets the file's own daemon again
        sup_stop
        ! grep -q "sbx-privd: NET_OPEN" "$SUP_DIR/daemon.log" || false
}
