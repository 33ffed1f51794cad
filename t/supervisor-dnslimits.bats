#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The bounds of a restricted job's DNS proxy on what names carry out and
# how long a lookup may hang: an upstream that drops queries gets the job
# a SERVFAIL after dns_upstream_timeout, over UDP and TCP, so that
# getaddrinfo fails in seconds; a job has at most its tenant's
# network_max_names distinct names forwarded (the rest REFUSED, counted in
# its record and the metrics); and a wildcard allow entry only within the
# tenant's own wildcards. The upstream resolver is t/helpers/dns-server.py
# on a test host in a network namespace this file makes (as
# t/supervisor-restricted.bats does), which never answers names starting
# with "drop". (A negation "! cmd" is followed by "|| false".)

load sup-unit/daemon
load helpers/testhost
bats_require_minimum_version 1.5.0

# The test host: TH.1 in a namespace of our own behind a veth whose host
# end is TH.254 (TH: a /24 of 198.18.0.0/15 picked at random), and TH6::1
# behind TH6::fe (TH6: a /64 of 2001:db8::/32) where the host has IPv6.
setup_file() {
        sup_init
        testhost_up sbxl 1 1
        if [ "$NET_OK" = 1 ]; then
                testhost_serve servers net-servers.py tcp:${TH}.1:8080
                testhost_serve dns dns-server.py ${TH}.1 ${TH}.1 ${TH6}::1
                wait_until 30 testhost_ready servers dns || true
        fi
        # a pool of our own
        export POOL="10.216.$((RANDOM % 256)).0/24"
        sup_config "network_pool = $POOL
dns_upstream = ${TH}.1
dns_upstream_timeout = 2s"
        sed -i "s/^profiles = default shell\$/&\\nnetwork = none host restricted\\nnetwork_allow = ${TH}.0\\/24:*\\/any *.test:*\\/any db.example:*\\/any\\nnetwork_max_names = 5/" "$SUP_DIR/sup.conf"
        sup_start
}

teardown_file() {
        testhost_down
}

setup() {
        require_userns
        restricted_skip_unless_ready dns
}


delta() {
        echo $(( $(metric "$1" <<<"$after") - $(metric "$1" <<<"$before") ))
}

# secs LINE: the seconds at the end of a probe's "... in S s" line, in
# tenths.
tenths() {
        local s=${1% s}
        s=${s##* }
        echo $(( ${s%.*} * 10 + ${s#*.} ))
}

@test "an upstream that drops queries: SERVFAIL after dns_upstream_timeout over UDP and TCP, and getaddrinfo fails well under 5 s" {
        before=$(ctl metrics)
        probe --allow '*.test:*/any' -- dnst:udp:A:drop1.test dnst:udp:A:drop1.test dnst:tcp:A:drop2.test gai:drop3.test dnsq:udp:A:db.test
        after=$(ctl metrics)
        echo "$output"
        [[ "${lines[0]}" == "dnst:udp:A:drop1.test rcode 2  in "* ]]
        # asked again at once (as glibc does on SERVFAIL): answered at once
        [[ "${lines[1]}" == "dnst:udp:A:drop1.test rcode 2  in "* ]]
        [[ "${lines[2]}" == "dnst:tcp:A:drop2.test rcode 2  in "* ]]
        [[ "${lines[3]}" == "gai:drop3.test failed in "* ]]
        [ "${lines[4]}" = "dnsq:udp:A:db.test rcode 0 ${TH}.1" ]
        # the timeout (2 s) it is, not the job's resolver's: measured on a
        # loaded machine, so with room
        [ "$(tenths "${lines[0]}")" -ge 15 ]
        [ "$(tenths "${lines[0]}")" -le 35 ]
        [ "$(tenths "${lines[1]}")" -le 5 ]
        [ "$(tenths "${lines[2]}")" -ge 15 ]
        [ "$(tenths "${lines[2]}")" -le 35 ]
        [ "$(tenths "${lines[3]}")" -le 40 ]
        # counted: drop1 and drop2 upstream, drop1 again, and glibc's A and
        # AAAA of drop3 (each at least once)
        [ "$(delta 'sbx_network_dns_queries_total{outcome="upstream_timeout"}')" -ge 5 ]
}

@test "a job has at most network_max_names distinct names forwarded: new ones past it are refused, counted in its record and the metrics" {
        before=$(ctl metrics)
        probe --allow '*.test:*/any' -- names:n:8 dnsq:udp:A:n0.test dnsq:tcp:A:n4.test dnsq:tcp:A:n9.test
        after=$(ctl metrics)
        [ "${lines[0]}" = "names:n:8 refused 3 first_refused 5" ]
        # a name it had is still answered (NXDOMAIN here), over TCP too
        [ "${lines[1]}" = "dnsq:udp:A:n0.test rcode 3 " ]
        [ "${lines[2]}" = "dnsq:tcp:A:n4.test rcode 3 " ]
        [ "${lines[3]}" = "dnsq:tcp:A:n9.test rcode 5 " ]
        [ "$(json_get result.network.dns_names <<<"$res")" = 5 ]
        [ "$(json_get result.network.dns_names_refused <<<"$res")" = 4 ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="names_cap"}')" = 4 ]
        [ "$(grep -c "job $id .*network_max_names" "$SUP_DIR/daemon.log")" = 1 ]
        # each refused name a dns event with verdict deny
        evs=$(python3 -c '
import json, sys
for e in json.load(sys.stdin)["result"]["network_events"]:
    if e["kind"] == "dns":
        print(e["hostname"], e["verdict"])
' <<<"$res")
        grep -qx "n7.test deny" <<<"$evs"
        grep -qx "n4.test allow" <<<"$evs"
}

@test "a wildcard allow entry only within the tenant's own wildcards" {
        # the tenant allows *.test and db.example
        run ctl submit --network restricted --allow '*.test:80' -- true
        [ "$status" -eq 0 ]
        run ctl submit --network restricted --allow '*.sub.test:80' -- true
        [ "$status" -eq 0 ]
        run ctl submit --network restricted --allow '*.example:80' -- true
        [ "$status" -ne 0 ]
        [[ "$output" == *"network.allow[0]"*"*.example"*"network_allow"* ]]
        run ctl submit --network restricted --allow 'db.example:80' -- true
        [ "$status" -eq 0 ]
        run ctl submit --network restricted --allow '*.db.example:80' -- true
        [ "$status" -ne 0 ]
        [[ "$output" == *"beyond tenant"* ]]
}

@test "a bad dns_upstream_timeout, dns_tcp_idle_timeout or network_max_names is a configuration error naming the key" {
        for bad in 0 50ms 31s soon; do
                printf '[daemon]\nsocket = %s\nstate_dir = %s\ndns_upstream_timeout = %s\n' "$SUP_DIR/x.sock" "$SUP_DIR/x" "$bad" > "$SUP_DIR/bad.conf"
                run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/bad.conf" --check-config
                [ "$status" -ne 0 ]
                [[ "$output" == *"dns_upstream_timeout"*"'$bad'"* ]] || { echo "$output"; false; }
        done
        for bad in 0 999ms 301s -1s idle; do
                printf '[daemon]\nsocket = %s\nstate_dir = %s\ndns_tcp_idle_timeout = %s\n' "$SUP_DIR/x.sock" "$SUP_DIR/x" "$bad" > "$SUP_DIR/bad.conf"
                run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/bad.conf" --check-config
                [ "$status" -ne 0 ]
                [[ "$output" == *"bad.conf:4: dns_tcp_idle_timeout"*"'$bad'"* ]] || { echo "$output"; false; }
        done
        printf '[daemon]\nsocket = %s\nstate_dir = %s\ndns_tcp_idle_timeout = 300s\n' "$SUP_DIR/x.sock" "$SUP_DIR/x" > "$SUP_DIR/good.conf"
        run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/good.conf" --check-config
        [ "$status" -eq 0 ] || { echo "$output"; false; }
        for bad in 0 65537 many; do
                printf '[daemon]\nsocket = %s\nstate_dir = %s\n[tenant.x]\nuids = root\nnetwork_max_names = %s\n' "$SUP_DIR/x.sock" "$SUP_DIR/x" "$bad" > "$SUP_DIR/bad.conf"
                run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/bad.conf" --check-config
                [ "$status" -ne 0 ]
                [[ "$output" == *"network_max_names"*"'$bad'"* ]] || { echo "$output"; false; }
        done
}
