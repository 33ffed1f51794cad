#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Restricted egress (network = restricted): a job reaches exactly what its
# allow entries admit — address or CIDR, port or range, TCP or UDP —
# minus its deny-ports and its tenant's, within its tenant's network_allow;
# every other attempt fails with EPERM and is recorded with verdict deny.
# (A negation "! cmd" is followed by "|| false": bash's errexit ignores a
# negated command, so alone it would fail the test only as its last line.)
# The job's traffic goes through a veth of its own in its network
# namespace to "test hosts": addresses in a network namespace this file
# makes, with servers on chosen ports. Nothing is left behind after a
# daemon is killed and restarted, or stopped.

load sup-unit/daemon
load helpers/testhost
bats_require_minimum_version 1.5.0

# The test host: TH.1, .2 and .5 in a namespace of our own, behind a veth
# whose host end is TH.254 (TH: a /24 of 198.18.0.0/15 picked at random);
# and TH6::1 and ::2 behind TH6::fe (TH6: a /64 of 2001:db8::/32, the
# documentation prefix, picked at random).
setup_file() {
        sup_init
        # The test host's network (t/helpers/testhost.bash).
        testhost_up sbxt "1 2 5" "1 2"
        if [ "$NET_OK" = 1 ]; then
                testhost_serve servers net-servers.py tcp:${TH}.1:8080 tcp:${TH}.1:8081 tcp:${TH}.1:25 tcp:${TH}.2:8080 \
                        tcp:${TH}.2:8081 tcp:${TH}.5:8080 udp:${TH}.1:5353
                testhost_serve dns dns-server.py ${TH}.1 ${TH}.2 ${TH6}::1
                if [ "$NET6_OK" = 1 ]; then
                        testhost_serve servers6 net-servers.py "tcp:[${TH6}::1]:8080" "tcp:[${TH6}::1]:8081" \
                                "tcp:[${TH6}::2]:8080" "udp:[${TH6}::1]:5353"
                        wait_until 30 testhost_ready servers6 || true
                fi
                wait_until 30 testhost_ready servers dns || true
        fi
        # A pool of our own (10.213.2N.0/23: 128 jobs at once) for this file's daemon.
        export POOL_X=$((RANDOM % 125 * 2))
        export POOL="10.213.$POOL_X.0/23"
        # and an IPv6 one: a /64 of a ULA /48 picked at random
        export POOL6="fd5b:$(printf %x $((RANDOM + 1))):$(printf %x $((RANDOM + 1)))::/64"
        sup_config "network_pool = $POOL
network_pool6 = $POOL6
dns_upstream = ${TH}.1
max_jobs = 128"
        sed -i 's/^max_jobs = 32$/max_jobs = 128/' "$SUP_DIR/sup.conf"
        sed -i "s/^profiles = default shell\$/&\\nnetwork = none host restricted\\nnetwork_allow = ${TH}.0\\/24:*\\/any [2001:db8::\\/32]:*\\/any *.test:*\\/any\\nnetwork_deny_ports = 25/" "$SUP_DIR/sup.conf"
        # a profile that keeps CAP_NET_ADMIN in the job's user namespace
        sed -i 's/^profiles = default shell$/profiles = default shell netadmin/' "$SUP_DIR/sup.conf"
        { cat "$SBX_STAGE/profiles/default.ini"; printf '[security]\ncapabilities = CAP_NET_ADMIN\n'; } > "$SBX_STAGE/profiles/netadmin.ini"
        sup_start
}

teardown_file() {
        testhost_down
}

setup() {
        require_userns
        restricted_skip_unless_ready
}


# events: one line per network event of the job: kind, hostname, qtype,
# address, port, verdict ("-" for null).
events() {
        python3 -c '
import json, sys
for e in json.load(sys.stdin)["result"]["network_events"]:
    print(" ".join("-" if e.get(k) is None else str(e[k]) for k in ("kind", "hostname", "qtype", "address", "port", "verdict")))
' <<<"$res"
}

# event N FIELD: the field of the job's Nth network event.
event() {
        json_get "result.network_events.$1.$2" <<<"$res"
}

@test "an allowed destination is reached through the job's own veth, and the connect is recorded as allowed" {
        probe --allow ${TH}.1:8080 -- tcp:${TH}.1:8080
        [ "$output" = "tcp:${TH}.1:8080 ok ${TH}.1:8080" ]
        [ "$(json_get result.network.mode <<<"$res")" = restricted ]
        [ "$(json_get result.network.audit <<<"$res")" = true ]
        [ "$(event 0 kind)" = connect ]
        [ "$(event 0 protocol)" = tcp ]
        [ "$(event 0 address)" = ${TH}.1 ]
        [ "$(event 0 port)" = 8080 ]
        [ "$(event 0 verdict)" = allow ]
}

@test "another port, another host, UDP, the host's side of the veth, raw and ping sockets: each refused and recorded as denied" {
        host_side=$(python3 -c "import ipaddress,sys; print(ipaddress.ip_network(sys.argv[1])[1])" "$POOL")
        probe --allow ${TH}.1:8080 -- tcp:${TH}.1:8081 tcp:${TH}.2:8080 udp:${TH}.1:5353 \
                "tcp:$host_side:22" raw ping tcp:${TH}.1:8080
        [ "${lines[0]}" = "tcp:${TH}.1:8081 EPERM" ]
        [ "${lines[1]}" = "tcp:${TH}.2:8080 EPERM" ]
        [ "${lines[2]}" = "udp:${TH}.1:5353 EPERM" ]
        [ "${lines[3]}" = "tcp:$host_side:22 EPERM" ]
        # raw: no CAP_NET_RAW in the job; ping: the job's namespace has no
        # ping_group_range, and the audit refuses ICMP sockets anyway
        [[ "${lines[4]}" = "raw EPERM" ]]
        [[ "${lines[5]}" = "ping EACCES" || "${lines[5]}" = "ping EPERM" ]]
        [ "${lines[6]}" = "tcp:${TH}.1:8080 ok ${TH}.1:8080" ]
        [ "$(event 0 port)" = 8081 ]
        [ "$(event 0 verdict)" = deny ]
        [ "$(event 1 address)" = ${TH}.2 ]
        [ "$(event 1 verdict)" = deny ]
        [ "$(event 2 kind)" = sendmsg ]
        [ "$(event 2 protocol)" = udp ]
        [ "$(event 2 verdict)" = deny ]
        [ "$(event 3 address)" = "$host_side" ]
        [ "$(event 3 verdict)" = deny ]
        # the last event is the allowed connect; nothing was recorded in between
        n=$(json_get result.network.events_kept <<<"$res")
        [ "$(event $((n - 1)) verdict)" = allow ]
        [ "$(event $((n - 1)) port)" = 8080 ]
}

@test "deny-ports win over allow entries, the tenant's too" {
        probe --allow ${TH}.0/24:*/any --deny-port 8081 -- tcp:${TH}.1:8080 tcp:${TH}.1:8081 tcp:${TH}.1:25 \
                udp:${TH}.1:5353
        [ "${lines[0]}" = "tcp:${TH}.1:8080 ok ${TH}.1:8080" ]
        [ "${lines[1]}" = "tcp:${TH}.1:8081 EPERM" ]
        [ "${lines[2]}" = "tcp:${TH}.1:25 EPERM" ]
        [ "${lines[3]}" = "udp:${TH}.1:5353 ok ${TH}.1:5353" ]
}

@test "CIDR entries and port ranges admit exactly their addresses and ports; UDP only where allowed" {
        probe --allow ${TH}.0/30:8080-8081 --allow ${TH}.1:5353/udp -- tcp:${TH}.1:8081 tcp:${TH}.2:8080 \
                tcp:${TH}.5:8080 udp:${TH}.1:5353 tcp:${TH}.1:25
        [ "${lines[0]}" = "tcp:${TH}.1:8081 ok ${TH}.1:8081" ]
        [ "${lines[1]}" = "tcp:${TH}.2:8080 ok ${TH}.2:8080" ]
        [ "${lines[2]}" = "tcp:${TH}.5:8080 EPERM" ]
        [ "${lines[3]}" = "udp:${TH}.1:5353 ok ${TH}.1:5353" ]
        [ "${lines[4]}" = "tcp:${TH}.1:25 EPERM" ]
}

# Does the daemon last started give restricted jobs IPv6 (its log says)?
daemon_v6() {
        grep "restricted jobs: veths" "$SUP_DIR/daemon.log" | tail -1 | grep -q "and /126s of the network_pool6"
}

need_ipv6() {
        [ "$NET6_OK" = 1 ] && grep -q ready "$SUP_DIR/servers6.out" || skip "the test host has no IPv6 here"
        daemon_v6 || skip "the daemon has no IPv6 for restricted jobs here"
}

@test "IPv6: an allowed [address]:port is reached through the job's veth; other ports, hosts and UDP are EPERM; all recorded" {
        need_ipv6
        probe --allow "[${TH6}::1]:8080" --allow "[${TH6}::/120]:5353/udp" -- "tcp:[${TH6}::1]:8080" \
                "tcp:[${TH6}::1]:8081" "tcp:[${TH6}::2]:8080" "udp:[${TH6}::1]:5353" "tcp:[2001:db8:1::5]:443"
        [ "${lines[0]}" = "tcp:[${TH6}::1]:8080 ok [${TH6}::1]:8080" ]
        [ "${lines[1]}" = "tcp:[${TH6}::1]:8081 EPERM" ]
        [ "${lines[2]}" = "tcp:[${TH6}::2]:8080 EPERM" ]
        [ "${lines[3]}" = "udp:[${TH6}::1]:5353 ok [${TH6}::1]:5353" ]
        [ "${lines[4]}" = "tcp:[2001:db8:1::5]:443 EPERM" ]
        [ "$(event 0 family)" = ipv6 ]
        [ "$(event 0 address)" = "${TH6}::1" ]
        [ "$(event 0 port)" = 8080 ]
        [ "$(event 0 verdict)" = allow ]
        [ "$(event 1 port)" = 8081 ]
        [ "$(event 1 verdict)" = deny ]
        [ "$(event 2 address)" = "${TH6}::2" ]
        [ "$(event 2 verdict)" = deny ]
        evs=$(events)
        grep -qx "connect - - 2001:db8:1::5 443 deny" <<<"$evs"
        grep -qx "sendmsg - - ${TH6}::1 5353 allow" <<<"$evs"
}

@test "IPv6: an allowed hostname's AAAA answer is admitted, and the job reaches that address" {
        need_ipv6
        probe --allow v6.test:8080 -- name6:v6.test:8080 "tcp:[${TH6}::1]:8081" "tcp:[${TH6}::2]:8080"
        [ "${lines[0]}" = "name6:v6.test:8080 ok [${TH6}::1]:8080" ]
        [ "${lines[1]}" = "tcp:[${TH6}::1]:8081 EPERM" ]
        [ "${lines[2]}" = "tcp:[${TH6}::2]:8080 EPERM" ]
        evs=$(events)
        grep -qx "dns v6.test AAAA - - allow" <<<"$evs"
        grep -qx "connect v6.test - ${TH6}::1 8080 allow" <<<"$evs"
        grep -qx "connect - - ${TH6}::2 8080 deny" <<<"$evs"
}

@test "an allowed hostname resolves through the job's DNS proxy and its address is reached; other names are refused; both audited" {
        ctl metrics > "$BATS_TEST_TMPDIR/before"
        probe --allow db.test:8080 -- name:db.test:8080 name:other.test:8080 tcp:${TH}.2:8080 tcp:${TH}.1:8080
        ctl metrics > "$BATS_TEST_TMPDIR/after"
        [ "${lines[0]}" = "name:db.test:8080 ok ${TH}.1:8080" ]
        [ "${lines[1]}" = "name:other.test:8080 unresolved" ]
        [ "${lines[2]}" = "tcp:${TH}.2:8080 EPERM" ]
        # the name's address is admitted with the name's ports only... and
        # reached by address too, as the name was resolved
        [ "${lines[3]}" = "tcp:${TH}.1:8080 ok ${TH}.1:8080" ]
        # in the order each was made (the proxy's and the programs' events
        # interleave: glibc's own connect to 127.0.0.1:53 is recorded too)
        evs=$(events)
        grep -qx "dns db.test A - - allow" <<<"$evs"
        grep -qx "dns other.test A - - deny" <<<"$evs"
        grep -qx "connect db.test - ${TH}.1 8080 allow" <<<"$evs"
        grep -qx "connect - - ${TH}.2 8080 deny" <<<"$evs"
        grep -qx "connect - - 127.0.0.1 53 allow" <<<"$evs"
        run -0 ctl result "$id"
        [[ "$output" == *"net:       dns A db.test allow "* ]]
        [[ "$output" == *"net:       connect tcp ${TH}.1:8080 (db.test) allow pid "* ]]
        # glibc may ask again after a REFUSED: every answer is the same
        ! grep -q "^dns db.test .* deny$" <<<"$evs" || false
        ! grep -q "^dns other.test .* allow$" <<<"$evs" || false
        # the metrics: each event by kind and verdict, as in the record; the
        # proxy answered each allowed query and refused each other one
        net_metrics_check "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after" DNS <<<"$res"
        b=$(cat "$BATS_TEST_TMPDIR/before") a=$(cat "$BATS_TEST_TMPDIR/after")
        delta() { echo $(( $(metric "$1" <<<"$a") - $(metric "$1" <<<"$b") )); }
        [ "$(delta 'sbx_network_dns_queries_total{outcome="answered"}')" = "$(grep -c "^dns db.test .* allow$" <<<"$evs")" ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="refused"}')" = "$(grep -c "^dns other.test .* deny$" <<<"$evs")" ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="refused"}')" -ge 1 ]
        [ "$(delta 'sbx_network_events_total{kind="connect",verdict="deny"}')" = 1 ]
        [ "$(delta 'sbx_jobs_started_total{network="restricted",audit="true"}')" = 1 ]
        command -v promtool >/dev/null || skip "promtool (Debian package prometheus) is not installed"
        promtool check metrics < "$BATS_TEST_TMPDIR/after"
}

@test "a burst of queries for an allowed name: at most 16 forwarded at once, the rest refused at once" {
        before=$(ctl metrics)
        probe --allow slow.test:80 -- dnsburst:slow.test:40
        after=$(ctl metrics)
        read -r _ _ answered _ refused <<<"${lines[0]}"
        [ "$answered" -le 16 ]
        [ "$answered" -ge 1 ]
        [ $((answered + refused)) -eq 40 ]
        evs=$(events)
        [ "$(grep -c "^dns slow.test A - - allow" <<<"$evs")" -eq "$answered" ]
        [ "$(grep -c "^dns slow.test A - - deny" <<<"$evs")" -eq "$refused" ]
        # the metrics tell the refused-as-busy from the answered
        delta() { echo $(( $(metric "$1" <<<"$after") - $(metric "$1" <<<"$before") )); }
        [ "$(delta 'sbx_network_dns_queries_total{outcome="busy"}')" -eq "$refused" ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="answered"}')" -eq "$answered" ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="refused"}')" -eq 0 ]
}

@test "a flood of queries: the proxy reads at most 100 a second of a job, the rest waits or is dropped by the kernel" {
        before=$(ctl metrics)
        probe --allow db.test:80 -- dnsflood:other.test:1000:1.5
        after=$(ctl metrics)
        read -r _ _ answered _ secs _ <<<"${lines[0]}"
        # the first second's 100, the next second's, and one more for the
        # tick's phase: never the thousand
        [ "$answered" -ge 1 ]
        [ "$answered" -le $(( (${secs%.*} + 2) * 100 )) ]
        [ "$answered" -lt 1000 ]
        # the metrics: the proxy paused, refused every query it read (each
        # answer the job counted was one of them), and the rest were never
        # read: every one of the thousand is counted, once
        delta() { echo $(( $(metric "$1" <<<"$after") - $(metric "$1" <<<"$before") )); }
        refused=$(delta 'sbx_network_dns_queries_total{outcome="refused"}')
        limited=$(delta 'sbx_network_dns_queries_total{outcome="rate_limited"}')
        [ "$(delta sbx_network_dns_pauses_total)" -ge 1 ]
        [ "$refused" -ge "$answered" ]
        [ "$limited" -ge 1 ]
        [ $((refused + limited)) -eq 1000 ] || { echo "refused $refused, rate-limited $limited"; false; }
        [ "$(delta 'sbx_network_dns_queries_total{outcome="answered"}')" -eq 0 ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="malformed"}')" -eq 0 ]
}

@test "a job resolving name after name admits at most 512 addresses: later answers are withheld, said once, counted; other jobs resolve" {
        before=$(ctl metrics)
        # spread.test: 8 addresses no answer gave before, each time
        probe --allow spread.test:80 -- dnsseq:spread.test:70
        after=$(ctl metrics)
        [ "${lines[0]}" = "dnsseq:spread.test:70 answered 64 refused 6 first_refused 64" ]
        delta() { echo $(( $(metric "$1" <<<"$after") - $(metric "$1" <<<"$before") )); }
        [ "$(delta 'sbx_network_dns_queries_total{outcome="answered"}')" -eq 64 ]
        [ "$(delta 'sbx_network_dns_queries_total{outcome="withheld"}')" -eq 6 ]
        [ "$(grep -c "$id.*the job has 512 addresses admitted, the most a job may have" "$SUP_DIR/daemon.log")" -eq 1 ]
        # the next job starts from nothing and resolves as before
        probe --allow db.test:8080 -- name:db.test:8080
        [ "${lines[0]}" = "name:db.test:8080 ok ${TH}.1:8080" ]
}

@test "entries beyond the tenant's network_allow are refused (E_FORBIDDEN naming the entry); hostnames too" {
        run ctl submit --network restricted --allow ${TH}.1:80 --allow 192.0.2.1:80 -- true
        [ "$status" -ne 0 ]
        [[ "$output" == *"E_FORBIDDEN"* ]]
        [[ "$output" == *"field 'network.allow[1]': 192.0.2.1:80/tcp is beyond tenant 'admin''s network_allow"* ]]
        run -125 ctl submit --network restricted --allow db.internal:5432 -- true
        [[ "$output" == *"E_FORBIDDEN"* ]]
        [[ "$output" == *"db.internal:5432/tcp is beyond tenant 'admin''s network_allow"* ]]
        run ctl submit --allow ${TH}.1:80 -- true
        [ "$status" -eq 2 ]
        [[ "$output" == *"--allow and --deny-port go with --network restricted"* ]]
}

@test "a profile keeping CAP_NET_ADMIN (or NET_RAW, SYS_ADMIN) cannot run restricted: it could send around the programs" {
        run ctl submit --profile netadmin --network restricted --allow ${TH}.1:8080 -- true
        [ "$status" -ne 0 ]
        [[ "$output" == *"E_FORBIDDEN"* ]]
        [[ "$output" == *"profile 'netadmin' keeps CAP_NET_ADMIN, with which a restricted job could send around its allowlist"* ]]
        # elsewhere it runs as its profile says
        run ctl run --profile netadmin -- true
        [ "$status" -eq 0 ]
}

@test "one job's allowlist never admits another's traffic (jobs at once, each its own port)" {
        ids=()
        for p in 8080 8081; do
                run -0 ctl --json submit --network restricted --allow "${TH}.2:$p" -- \
                        python3 -c "$(cat "$SBX_SRCDIR/t/helpers/net-probe.py")" tcp:${TH}.2:8080 tcp:${TH}.2:8081
                ids+=("$(json_get job <<<"$output")")
        done
        ctl wait "${ids[0]}" >/dev/null
        ctl wait "${ids[1]}" >/dev/null
        run -0 ctl logs "${ids[0]}"
        [ "${lines[0]}" = "tcp:${TH}.2:8080 ok ${TH}.2:8080" ]
        [ "${lines[1]}" = "tcp:${TH}.2:8081 EPERM" ]
        run -0 ctl logs "${ids[1]}"
        [ "${lines[0]}" = "tcp:${TH}.2:8080 EPERM" ]
        [ "${lines[1]}" = "tcp:${TH}.2:8081 ok ${TH}.2:8081" ]
}

@test "100 restricted jobs at once: each reaches its own allowed host and never the other's" {
        # Under a sanitizer build (the CI's second run) its point is memory
        # errors, not scale: 30 jobs.
        local n=100
        if grep -q -- '--enable-sanitizers' "$SBX_BUILDDIR/config.log" 2>/dev/null; then
                n=30
        fi
        ctl metrics > "$BATS_TEST_TMPDIR/before"
        ids=()
        for i in $(seq $n); do
                h=$((i % 2 ? 1 : 2))
                run ctl --json submit --network restricted --allow "${TH}.$h:8080" -- bash -c '
                        for h in "$@"; do
                                if exec 3<>"/dev/tcp/$h/8080"; then read -r l <&3; echo "$h $l"; exec 3<&-
                                else echo "$h refused"; fi
                        done 2>&1
                        sleep 3' job ${TH}.1 ${TH}.2
                [ "$status" -eq 0 ]
                ids+=("$(json_get job <<<"$output")")
        done
        for i in $(seq $n); do
                id=${ids[$((i - 1))]}
                h=$((i % 2 ? 1 : 2)) o=$((i % 2 ? 2 : 1))
                res=$(ctl --json wait "$id")
                echo "$res" >> "$BATS_TEST_TMPDIR/records"
                [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "job $i: $res"; false; }
                run -0 ctl logs "$id"
                # its own host answers; the other's is refused by the programs
                [[ "$output" == *"${TH}.$h ok ${TH}.$h:8080"* ]] || { echo "job $i: $output"; echo "$res"; false; }
                [[ "$output" == *"connect: Operation not permitted"*"${TH}.$o refused"* ]] || { echo "job $i: $output"; echo "$res"; false; }
        done
        # the metrics agree with the records, event for event; every
        # block of the pool is free again
        ctl metrics > "$BATS_TEST_TMPDIR/after"
        net_metrics_check "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after" DNS < "$BATS_TEST_TMPDIR/records"
        b=$(cat "$BATS_TEST_TMPDIR/before") a=$(cat "$BATS_TEST_TMPDIR/after")
        started='sbx_jobs_started_total{network="restricted",audit="true"}'
        [ $(( $(metric "$started" <<<"$a") - $(metric "$started" <<<"$b") )) -eq $n ]
        denied='sbx_network_events_total{kind="connect",verdict="deny"}'
        [ $(( $(metric "$denied" <<<"$a") - $(metric "$denied" <<<"$b") )) -ge $n ]
        [ "$(metric sbx_network_pool_used <<<"$a")" = 0 ]
        [ "$(metric sbx_network_pool_size <<<"$a")" = 128 ]
        # every veth went with its job
        names
        for i in $(seq 600); do ip -o link show | grep -q " $prefix" || break; sleep 0.05; done
        ! ip -o link show | grep -q " $prefix" || false
}

@test "past the pool's /30s restricted jobs wait in the queue for a block: 12 on a pool of 4 all succeed, never more than 4 at once" {
        sed -i "s|^network_pool = .*|network_pool = 10.213.$POOL_X.0/28|" "$SUP_DIR/sup.conf"
        sup_stop
        sup_start
        # each job: its allowed destination reached through its own veth,
        # then on until 8 s from now (0.3 s past its start if later), and
        # when it ran (the clock is the host's): the first 4 hold the pool
        # while all 12 are submitted
        until=$(( $(date +%s) + 8 ))
        job='import socket, time
t0 = time.time()
s = socket.create_connection(("'${TH}'.1", 8080), 10)
print(s.recv(64).decode().strip())
time.sleep(max('$until' - time.time(), 0) + 0.3)
print("ran", t0, time.time())'
        ids=()
        for i in $(seq 12); do
                run ctl --json submit --network restricted --allow ${TH}.1:8080 -- python3 -c "$job"
                [ "$status" -eq 0 ] || { echo "$output"; false; }
                ids+=("$(json_get job <<<"$output")")
        done
        : > "$BATS_TEST_TMPDIR/ran"
        for id in "${ids[@]}"; do
                res=$(ctl --json wait "$id" || true)
                [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$id: $res"; false; }
                run -0 ctl logs "$id"
                [ "${lines[0]}" = "ok ${TH}.1:8080" ] || { echo "$id: $output"; false; }
                grep '^ran ' <<<"$output" >> "$BATS_TEST_TMPDIR/ran"
        done
        # at most 4 of the 12 ran at any moment; 8 started only once the
        # first 4 let their blocks go
        read -r most later < <(python3 -c '
import sys
ev, later = [], 0
for l in open(sys.argv[1]):
    _, a, b = l.split()
    ev += [(float(a), 1), (float(b), -1)]
    later += float(a) >= float(sys.argv[2])
n = most = 0
for _, k in sorted(ev, key=lambda e: (e[0], e[1])):
    n += k
    most = max(most, n)
print(most, later)' "$BATS_TEST_TMPDIR/ran" "$until")
        [ "$(wc -l < "$BATS_TEST_TMPDIR/ran")" -eq 12 ]
        [ "$most" -ge 1 ]
        [ "$most" -le 4 ] || { echo "$most jobs at once"; false; }
        [ "$later" -ge 8 ] || { echo "$later jobs started after the first 4"; false; }
        after=$(ctl metrics)
        sed -i "s|^network_pool = .*|network_pool = $POOL|" "$SUP_DIR/sup.conf"
        sup_stop
        sup_start
        # no job failed for want of an address; every block is free again
        [ "$(metric sbx_network_pool_size <<<"$after")" = 4 ]
        [ "$(metric 'sbx_network_setup_failures_total{step="address"}' <<<"$after")" = 0 ]
        [ "$(metric sbx_network_pool_used <<<"$after")" = 0 ]
}

@test "without a network_pool6 jobs are IPv4 only (an allowed IPv6 destination has no route), and the ip6 table a killed daemon left goes" {
        need_ipv6
        names
        SUP_PID=$(cat "$SUP_DIR/daemon.pid")
        kill -KILL "$SUP_PID"
        sup_wait_gone "$SUP_PID"
        # the killed daemon's tables are still there
        nft list table ip6 "$table" >/dev/null
        sed -i '/^network_pool6 = /d' "$SUP_DIR/sup.conf"
        sup_start
        grep "restricted jobs: veths" "$SUP_DIR/daemon.log" | tail -1 | grep -q "(IPv4 only: no network_pool6)"
        nft list table ip "$table" >/dev/null
        ! nft list table ip6 "$table" >/dev/null 2>&1 || false
        probe --allow "[${TH6}::1]:8080" --allow "${TH}.1:8080" -- "tcp:[${TH6}::1]:8080" "tcp:${TH}.1:8080"
        [ "${lines[0]}" = "tcp:[${TH6}::1]:8080 ENETUNREACH" ]
        [ "${lines[1]}" = "tcp:${TH}.1:8080 ok ${TH}.1:8080" ]
        [ "$(event 0 family)" = ipv6 ]
        [ "$(event 0 verdict)" = allow ]
        sed -i "s|^network_pool = .*|&\nnetwork_pool6 = $POOL6|" "$SUP_DIR/sup.conf"
        sup_stop
        sup_start
        daemon_v6
}

# The daemon's veth prefix and table, from its log.
names() {
        prefix=$(grep -o 'restricted jobs: veths [^*]*' "$SUP_DIR/daemon.log" | tail -1 | awk '{print $4}')
        table=$(grep -o 'nft table ip [a-z0-9_]*' "$SUP_DIR/daemon.log" | tail -1 | awk '{print $4}')
        [ -n "$prefix" ] && [ -n "$table" ]
}

@test "a daemon SIGKILLed with a restricted job running leaves nothing behind once restarted; a stopped one leaves nothing at all" {
        names
        run -0 ctl --json submit --network restricted --allow ${TH}.1:8080 -- sh -c 'touch /workspace/up; sleep 600'
        id=$(json_get job <<<"$output")
        ws="$SUP_DIR/state/work/$id"
        for i in $(seq 600); do [ -e "$ws/up" ] && break; sleep 0.05; done
        [ -e "$ws/up" ]
        ip -o link show | grep -q " $prefix"
        ip -o addr show | grep -q "inet 10\.213\.\($POOL_X\|$((POOL_X + 1))\)\."
        # with IPv6 (the daemon says so), the /126's address and route too
        p6=${POOL6%/64} v6=0
        if daemon_v6; then v6=1; fi
        [ "$v6" = 0 ] || ip -o -6 addr show | grep -q "inet6 $p6"
        [ "$v6" = 0 ] || ip -6 route show | grep -q "^$p6"
        cg=$(stat -c %i "$SUP_CGROUP/job-$id")
        bpftool -j link show | python3 -c 'import json,sys; cg=int(sys.argv[1]); sys.exit(0 if any(l.get("cgroup_id")==cg for l in json.load(sys.stdin)) else 1)' "$cg"
        SUP_PID=$(cat "$SUP_DIR/daemon.pid") # a test before may have restarted it
        kill -KILL "$SUP_PID"
        # started by setup_file, it is not ours to wait for: until it is
        # gone, or a zombie whose every thread has exited (the threads share
        # its descriptors: the leader is a zombie while the syncer threads
        # still hold the state lock), another daemon cannot take its state
        for i in $(seq 600); do
                st=$(awk '/^State:/ { print $2 }' "/proc/$SUP_PID/status" 2>/dev/null || true)
                [ -z "$st" ] && break
                [ "$st" = Z ] && [ "$(ls "/proc/$SUP_PID/task" 2>/dev/null | wc -l)" -le 1 ] && break
                sleep 0.05
        done
        sup_start
        run ! ctl --json wait "$id"
        [ "$(json_get result.error.code <<<"$output")" = E_RESTARTED ]
        ! ip -o link show | grep -q " $prefix" || false
        ! ip -o addr show | grep -q "inet 10\.213\.\($POOL_X\|$((POOL_X + 1))\)\." || false
        ! ip -o -6 addr show | grep -q "inet6 $p6" || false
        ! ip -6 route show | grep -q "^$p6" || false
        ! bpftool -j link show | python3 -c 'import json,sys; cg=int(sys.argv[1]); sys.exit(0 if any(l.get("cgroup_id")==cg for l in json.load(sys.stdin)) else 1)' "$cg" || false
        grep -q "removed 1 veths a previous run left\|restricted jobs: veths" "$SUP_DIR/daemon.log"
        # and a daemon that stops takes its table and every veth with it
        probe --allow ${TH}.1:8080 -- tcp:${TH}.1:8080
        [ "${lines[0]}" = "tcp:${TH}.1:8080 ok ${TH}.1:8080" ]
        nft list table ip "$table" >/dev/null
        [ "$v6" = 0 ] || nft list table ip6 "$table" >/dev/null
        sup_stop
        ! nft list table ip "$table" >/dev/null 2>&1 || false
        ! nft list table ip6 "$table" >/dev/null 2>&1 || false
        ! ip -o link show | grep -q " $prefix" || false
        sup_start
}
