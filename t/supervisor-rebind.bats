#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# DNS rebinding and the addresses no restricted job reaches (netdeny.h):
# an allowed name whose answer names the job's gateway or the rest of the
# network pools, loopback, link-local (169.254.169.254), multicast,
# broadcast, unspecified, the host's own addresses, or a network_deny
# network — as IPv4, IPv6 or IPv4-mapped IPv6, over UDP or TCP DNS — is
# withheld (REFUSED), shown in the job's network events with its reason,
# counted by reason and logged once; a direct connect to any of them by
# address is denied by the eBPF programs whatever the allow entries say,
# and an allow entry naming only them is refused. The upstream resolver
# is t/helpers/dns-server.py on a test host in a network namespace this
# file makes (as t/supervisor-restricted.bats does), answering
# ip-A-B-C-D.test and ip6-X.test with any address we name. (A negation
# "! cmd" is followed by "|| false": bash's errexit ignores a negated
# command.)

load sup-unit/daemon
load helpers/testhost
bats_require_minimum_version 1.5.0

# The test host: TH.1 in a namespace of our own behind a veth whose host
# end is TH.254 (TH: a /24 of 198.18.0.0/15 picked at random), and TH6::1
# behind TH6::fe (TH6: a /64 of 2001:db8::/32) where the host has IPv6.
setup_file() {
        sup_init
        testhost_up sbxr 1 1
        if [ "$NET_OK" = 1 ]; then
                testhost_serve servers net-servers.py tcp:${TH}.1:8080
                testhost_serve dns dns-server.py ${TH}.1 ${TH}.1 ${TH6}::1
                wait_until 30 testhost_ready servers dns || true
        fi
        # a pool of our own, and an IPv6 one
        export POOL_X=$((RANDOM % 256))
        export POOL="10.215.$POOL_X.0/24" GW_OTHER="10.215.$POOL_X.1"
        export POOL6P="fd5c:$(printf %x $((RANDOM + 1))):$(printf %x $((RANDOM + 1)))"
        # the metrics listener on every IPv4 address of the host: the
        # service a rebound name would reach through the job's gateway
        export MPORT=$((20000 + RANDOM % 20000))
        sup_config "network_pool = $POOL
network_pool6 = ${POOL6P}::/64
dns_upstream = ${TH}.1
network_deny = 192.0.2.0/24 fd00:dead::/32
metrics_listen = 0.0.0.0:$MPORT"
        sed -i "s/^profiles = default shell\$/&\\nnetwork = none host restricted\\nnetwork_allow = 0.0.0.0\\/0:*\\/any [::\\/0]:*\\/any *.test:*\\/any/" "$SUP_DIR/sup.conf"
        sup_start
}

teardown_file() {
        testhost_down
}

setup() {
        require_userns
        restricted_skip_unless_ready dns
}


# withheld_events: one line per dns event with a reason in $res:
# protocol, address, reason, verdict.
withheld_events() {
        python3 -c '
import json, sys
for e in json.load(sys.stdin)["result"]["network_events"]:
    if e["kind"] == "dns" and "reason" in e:
        print(e["protocol"], e["address"], e["reason"], e["verdict"])
' <<<"$res"
}

delta() {
        echo $(( $(metric "$1" <<<"$after") - $(metric "$1" <<<"$before") ))
}

# The names of each class, as A (ip-...) and AAAA (ip6-...) names of the
# test server, and the reason each is withheld for.
v4_cases() {
        cat <<EOC
10.215.$POOL_X.1 pool
127.0.0.1 loopback
169.254.169.254 link-local
224.0.0.1 multicast
255.255.255.255 broadcast
0.0.0.0 unspecified
${TH}.254 host
192.0.2.7 configured
EOC
}

v6_cases() {
        cat <<EOC
${POOL6P}::1 pool
::1 loopback
fe80::1 link-local
::ffff:169.254.169.254 link-local
::ffff:${TH}.254 host
ff02::1 multicast
:: unspecified
fd00:dead::1 configured
EOC
        [ "$NET6_OK" = 0 ] || echo "${TH6}::fe host"
}

@test "an allowed name answering an address no restricted job reaches is withheld over UDP and TCP, IPv4 and IPv6, with its reason in the events" {
        local probes=() addr why
        while read -r addr why; do
                probes+=("dnsq:udp:A:ip-${addr//./-}.test" "dnsq:tcp:A:ip-${addr//./-}.test")
        done < <(v4_cases)
        while read -r addr why; do
                # every group spelled out: no dots or empty labels in the name
                addr=$(python3 -c 'import ipaddress, sys; print(ipaddress.ip_address(sys.argv[1]).exploded.replace(":", "-"))' "$addr")
                probes+=("dnsq:udp:AAAA:ip6-$addr.test" "dnsq:tcp:AAAA:ip6-$addr.test")
        done < <(v6_cases)
        ctl metrics > "$BATS_TEST_TMPDIR/before"
        # the control first: an address the job may reach is answered
        probe --allow '*.test:*/any' -- "dnsq:udp:A:ip-${TH//./-}-1.test" "dnsq:tcp:AAAA:ip6-2001-db8--7.test" "${probes[@]}"
        ctl metrics > "$BATS_TEST_TMPDIR/after"
        before=$(cat "$BATS_TEST_TMPDIR/before")
        after=$(cat "$BATS_TEST_TMPDIR/after")
        [ "${lines[0]}" = "dnsq:udp:A:ip-${TH//./-}-1.test rcode 0 ${TH}.1" ]
        [ "${lines[1]}" = "dnsq:tcp:AAAA:ip6-2001-db8--7.test rcode 0 2001:db8::7" ]
        local i=2
        for p in "${probes[@]}"; do
                [ "${lines[$i]}" = "$p rcode 5 " ] || { echo "line $i: ${lines[$i]}"; false; }
                i=$((i + 1))
        done
        [ "${#lines[@]}" = "$i" ]
        # each withheld address is a dns event with its reason, over each
        # protocol
        evs=$(withheld_events)
        echo "$evs"
        while read -r addr why; do
                grep -qx "udp $addr $why deny" <<<"$evs"
                grep -qx "tcp $addr $why deny" <<<"$evs"
        done < <(v4_cases)
        while read -r addr why; do
                # the mapped forms are shown as Python and inet_ntop spell them
                addr=$(python3 -c 'import socket,sys; print(socket.inet_ntop(socket.AF_INET6, socket.inet_pton(socket.AF_INET6, sys.argv[1])))' "$addr")
                grep -qx "udp $addr $why deny" <<<"$evs"
                grep -qx "tcp $addr $why deny" <<<"$evs"
        done < <(v6_cases)
        [ "$(wc -l <<<"$evs")" = $(( (${#lines[@]} - 2) )) ]
        # counted by reason, and the queries as withheld
        [ "$(delta 'sbx_network_dns_withheld_total{reason="link-local"}')" = 6 ]
        [ "$(delta 'sbx_network_dns_withheld_total{reason="pool"}')" = 4 ]
        [ "$(delta 'sbx_network_dns_withheld_total{reason="configured"}')" = 4 ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="withheld"}')" = $(( ${#lines[@]} - 2 )) ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="answered"}')" = 2 ]
        # the events and query counters agree with the record (withheld
        # addresses are dns events with a reason, not queries)
        net_metrics_check "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after" DNS <<<"$res"
        # logged once for the job
        [ "$(grep -c "job $id .*never reach" "$SUP_DIR/daemon.log")" = 1 ]
}

@test "a direct connect to each address no restricted job reaches is denied whatever the allow entries say" {
        local probes=(connect:${TH}.1:8080 "gwconnect:$MPORT" "connect:$GW_OTHER:$MPORT" "connect:${TH}.254:$MPORT"
                connect:169.254.169.254:80 udp:224.0.0.1:9 udp:255.255.255.255:9 "connect:0.0.0.0:$MPORT" connect:192.0.2.7:80
                "connect:[${POOL6P}::1]:80" "connect:[fe80::1]:80" "udp:[ff02::1]:9" "connect:[::]:80"
                "connect:[::ffff:169.254.169.254]:80" "connect:[::ffff:${TH}.254]:$MPORT" "connect:[fd00:dead::1]:80")
        [ "$NET6_OK" = 0 ] || probes+=("connect:[${TH6}::fe]:80")
        probe --allow '0.0.0.0/0:*/any' --allow '[::/0]:*/any' -- "${probes[@]}"
        # the control: the test host is reached
        [ "${lines[0]}" = "connect:${TH}.1:8080 connected" ]
        local i=1
        for p in "${probes[@]:1}"; do
                [ "${lines[$i]}" = "$p EPERM" ] || { echo "line $i: ${lines[$i]}"; false; }
                i=$((i + 1))
        done
        # each denial in the record with its reason
        evs=$(python3 -c '
import json, sys
for e in json.load(sys.stdin)["result"]["network_events"]:
    if e["kind"] != "dns" and e["verdict"] == "deny":
        print(e["address"], e.get("reason"))
' <<<"$res")
        echo "$evs"
        grep -qx "169.254.169.254 link-local" <<<"$evs"
        grep -qx "${TH}.254 host" <<<"$evs"
        grep -qx "192.0.2.7 configured" <<<"$evs"
        grep -qx "::ffff:169.254.169.254 link-local" <<<"$evs"
}

@test "the metrics listener on the job's gateway is unreachable from a restricted job, though the host reaches it" {
        run curl -s -o /dev/null -w '%{http_code}' "http://${TH}.254:$MPORT/metrics"
        [ "$status" -eq 0 ]
        [ "$output" = 200 ]
        probe --allow '0.0.0.0/0:*/any' -- "gwconnect:$MPORT" "connect:${TH}.254:$MPORT"
        [ "${lines[0]}" = "gwconnect:$MPORT EPERM" ]
        [ "${lines[1]}" = "connect:${TH}.254:$MPORT EPERM" ]
}

@test "an allow entry that reaches only addresses no restricted job reaches is refused, naming the entry and why" {
        local entry why
        while read -r entry why; do
                run ctl submit --network restricted --allow "$entry" -- true
                [ "$status" -ne 0 ]
                [[ "$output" == *"network.allow[0]"*"($why)"* ]] || { echo "$entry: $output"; false; }
        done <<EOC
169.254.169.254:80 link-local
$GW_OTHER:$MPORT pool
10.215.$POOL_X.0/26 pool
${TH}.254:$MPORT host
[::ffff:169.254.169.254]:80 link-local
224.0.0.0/4:*/udp multicast
192.0.2.0/25 configured
EOC
        # a broad entry is taken: the programs deny what it holds of these
        run ctl submit --network restricted --allow '0.0.0.0/0:*/any' -- true
        [ "$status" -eq 0 ]
}

@test "a tenant's network_allow entry that reaches only addresses no restricted job reaches is a configuration error" {
        for bad in 169.254.169.254:80 10.215.0.0/24:* '[fe80::/64]:*' 192.0.2.0/25:443; do
                printf '[daemon]\nsocket = %s\nstate_dir = %s\nnetwork_pool = 10.215.0.0/16\nnetwork_deny = 192.0.2.0/24\n[tenant.x]\nuids = root\nnetwork = restricted\nnetwork_allow = 10.0.0.0/8:443 %s\n' \
                        "$SUP_DIR/x.sock" "$SUP_DIR/x" "$bad" > "$SUP_DIR/bad.conf"
                run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/bad.conf" --check-config
                [ "$status" -ne 0 ]
                [[ "$output" == *"[tenant.x] network_allow: "*"never reach"* ]] || { echo "$bad: $output"; false; }
        done
        # a wide cap is taken: the programs deny what it holds of them
        printf '[daemon]\nsocket = %s\nstate_dir = %s\nnetwork_pool = 10.215.0.0/16\n[tenant.x]\nuids = root\nnetwork = restricted\nnetwork_allow = 0.0.0.0/0:* 127.0.0.1:*\n' \
                "$SUP_DIR/x.sock" "$SUP_DIR/x" > "$SUP_DIR/ok.conf"
        run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/ok.conf" --check-config
        [ "$status" -eq 0 ]
}

@test "a bad network_deny is a configuration error naming the key and the value" {
        for bad in 10.0.0.1/8 300.1.2.3 fd00::/129 example.com 10.0.0.0/8:80; do
                printf '[daemon]\nsocket = %s\nstate_dir = %s\nnetwork_deny = %s\n' "$SUP_DIR/x.sock" "$SUP_DIR/x" "$bad" > "$SUP_DIR/bad.conf"
                run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/bad.conf" --check-config
                [ "$status" -ne 0 ]
                [[ "$output" == *"network_deny: '$bad'"* ]] || { echo "$output"; false; }
        done
}
