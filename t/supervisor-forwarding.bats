#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Restricted jobs and the host's forwarding: the daemon switches forwarding
# on only where the jobs' packets pass (their veths, and the interfaces
# their answers come in by), never the host-wide net.ipv4.ip_forward; what
# else those switches would forward is dropped; at stop, or at the next
# start after a crash, every setting is back as found.
#
# The daemon runs in a network namespace of this file's ("the host"), so
# that its switches are this file's alone. Two more namespaces, A and B,
# are joined to it by veth pairs of their own (fa, fb) with routes through
# it: a router between them would forward A's packets to B.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        export NS_OK=0 FH="sbxfh-$$-$RANDOM" FA="sbxfa-$$-$RANDOM" FB="sbxfb-$$-$RANDOM"
        if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v nsenter >/dev/null &&
                ip netns add "$FH" 2>/dev/null && ip netns add "$FA" && ip netns add "$FB"; then
                ip -n "$FH" link set lo up &&
                        ip -n "$FH" link add fa type veth peer name eth0 netns "$FA" &&
                        ip -n "$FH" link add fb type veth peer name eth0 netns "$FB" &&
                        ip -n "$FH" addr add 192.0.2.1/24 dev fa && ip -n "$FH" addr add 2001:db8:a::1/64 dev fa nodad &&
                        ip -n "$FH" addr add 198.51.100.1/24 dev fb && ip -n "$FH" addr add 2001:db8:b::1/64 dev fb nodad &&
                        ip -n "$FA" addr add 192.0.2.2/24 dev eth0 && ip -n "$FA" addr add 2001:db8:a::2/64 dev eth0 nodad &&
                        ip -n "$FB" addr add 198.51.100.2/24 dev eth0 && ip -n "$FB" addr add 2001:db8:b::2/64 dev eth0 nodad &&
                        ip -n "$FH" link set fa up && ip -n "$FH" link set fb up &&
                        ip -n "$FA" link set lo up && ip -n "$FA" link set eth0 up &&
                        ip -n "$FB" link set lo up && ip -n "$FB" link set eth0 up &&
                        ip -n "$FA" route add default via 192.0.2.1 && ip -n "$FA" -6 route add default via 2001:db8:a::1 &&
                        ip -n "$FB" route add default via 198.51.100.1 && ip -n "$FB" -6 route add default via 2001:db8:b::1 &&
                        NS_OK=1
                # A new namespace takes the IPv4 settings of the host's,
                # which may forward: this one starts with every switch off.
                ip netns exec "$FH" sysctl -q -w net.ipv4.ip_forward=0 net.ipv4.conf.default.forwarding=0 \
                        net.ipv6.conf.all.forwarding=0 || NS_OK=0
        fi
        if [ "$NS_OK" = 1 ]; then
                # servers on A and on B
                ip netns exec "$FA" python3 "$SBX_SRCDIR/t/helpers/net-servers.py" tcp:192.0.2.2:8080 "tcp:[2001:db8:a::2]:8080" \
                        > "$SUP_DIR/servers-a.out" 2>&1 3>&- &
                echo $! > "$SUP_DIR/servers-a.pid"
                ip netns exec "$FB" python3 "$SBX_SRCDIR/t/helpers/net-servers.py" tcp:198.51.100.2:8080 "tcp:[2001:db8:b::2]:8080" \
                        > "$SUP_DIR/servers-b.out" 2>&1 3>&- &
                echo $! > "$SUP_DIR/servers-b.pid"
                for i in $(seq 600); do
                        grep -q ready "$SUP_DIR/servers-a.out" 2>/dev/null && grep -q ready "$SUP_DIR/servers-b.out" && break
                        sleep 0.05
                done
        fi
        sup_config "network_pool = 10.77.0.0/28
network_pool6 = fd77::/64"
        sed -i "s/^profiles = default shell\$/&\\nnetwork = none host restricted\\nnetwork_allow = 198.51.100.0\\/24:*\\/any [2001:db8:b::\\/64]:*\\/any/" "$SUP_DIR/sup.conf"
        export SUP_NETNS="$FH"
}

teardown_file() {
        [ -f "$SUP_DIR/servers-a.pid" ] && kill "$(cat "$SUP_DIR/servers-a.pid")" 2>/dev/null
        [ -f "$SUP_DIR/servers-b.pid" ] && kill "$(cat "$SUP_DIR/servers-b.pid")" 2>/dev/null
        sup_fini
        for ns in "$FH" "$FA" "$FB"; do ip netns del "$ns" 2>/dev/null || true; done
}

setup() {
        require_userns
        [ "$(id -u)" = 0 ] || skip "restricted jobs need a root daemon (eBPF, veth, nftables)"
        [ "$SUP_CGROUP" != none ] || skip "no writable cgroup2 here: jobs have no cgroup to attach the programs to"
        [ "$NS_OK" = 1 ] && grep -q ready "$SUP_DIR/servers-b.out" || skip "cannot make the test's network namespaces here"
        [ -e "/proc/sys/net/ipv6/conf/all/force_forwarding" ] || skip "this kernel has no per-interface IPv6 forwarding (6.17)"
}

teardown() {
        sup_stop
}

# in the daemon's namespace
hsysctl() {
        ip netns exec "$FH" cat "/proc/sys/net/$1"
}

# reach NS ADDR: connect from namespace NS to ADDR:8080; prints
# "forwarded" (the server answered) or "not forwarded" (no answer in 2 s)
reach() {
        ip netns exec "$1" python3 -c '
import socket, sys
a = sys.argv[1]
s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET)
s.settimeout(2)
try:
    s.connect((a, 8080))
    print("forwarded" if s.recv(64).startswith(b"ok") else "no answer")
except OSError as e:
    print("not forwarded" if isinstance(e, (socket.timeout, TimeoutError)) else "error " + str(e))
' "$2"
}

# Every switch this file's host has: as the kernel makes a namespace, off.
all_off() {
        local k
        for k in ipv4/ip_forward ipv4/conf/all/forwarding ipv4/conf/default/forwarding ipv4/conf/fa/forwarding \
                ipv4/conf/fb/forwarding ipv6/conf/all/forwarding ipv6/conf/default/forwarding ipv6/conf/fa/forwarding \
                ipv6/conf/fb/forwarding ipv6/conf/fa/force_forwarding ipv6/conf/fb/force_forwarding; do
                [ "$(hsysctl $k)" = 0 ] || { echo "$k = $(hsysctl $k)"; return 1; }
        done
}

start_job() {
        run ctl --json submit --network restricted --allow 198.51.100.2:8080 --allow "[2001:db8:b::2]:8080" -- python3 -c '
import socket, time
for a in ("198.51.100.2", "2001:db8:b::2"):
    s = socket.create_connection((a, 8080), 10)
    print(s.recv(64).decode().strip(), flush=True)
open("/workspace/up", "w").close()
time.sleep(120)'
        [ "$status" -eq 0 ] || { echo "$output"; return 1; }
        id=$(json_get job <<<"$output")
        for i in $(seq 600); do [ -e "$SUP_DIR/state/work/$id/up" ] && break; sleep 0.05; done
        [ -e "$SUP_DIR/state/work/$id/up" ] || { ctl --json wait "$id"; return 1; }
}

@test "the test can see forwarding: with the host-wide switch on, A reaches B through the host" {
        all_off
        [ "$(reach "$FA" 198.51.100.2)" = "not forwarded" ]
        ip netns exec "$FH" sysctl -q -w net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
        [ "$(reach "$FA" 198.51.100.2)" = forwarded ]
        [ "$(reach "$FA" 2001:db8:b::2)" = forwarded ]
        ip netns exec "$FH" sysctl -q -w net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0
        all_off
}

@test "while a restricted job runs and reaches its destination, the host forwards nothing between two other interfaces, and its host-wide switches stay off" {
        all_off
        sup_start
        grep -q "restricted jobs: veths" "$SUP_DIR/daemon.log" ||
                skip "the daemon cannot run restricted jobs here: $(grep -o 'restricted jobs unavailable.*\|network audit unavailable.*' "$SUP_DIR/daemon.log" | head -1)"
        start_job
        run ctl logs "$id"
        [ "${lines[0]}" = "ok 198.51.100.2:8080" ]
        [ "${lines[1]}" = "ok [2001:db8:b::2]:8080" ]
        # A and B, each way, IPv4 and IPv6: not forwarded
        [ "$(reach "$FA" 198.51.100.2)" = "not forwarded" ]
        [ "$(reach "$FA" 2001:db8:b::2)" = "not forwarded" ]
        [ "$(reach "$FB" 192.0.2.2)" = "not forwarded" ]
        [ "$(reach "$FB" 2001:db8:a::2)" = "not forwarded" ]
        # the host-wide switches are as found; the interfaces the jobs'
        # answers come in by are on, the guard's business
        [ "$(hsysctl ipv4/ip_forward)" = 0 ]
        [ "$(hsysctl ipv4/conf/all/forwarding)" = 0 ]
        [ "$(hsysctl ipv4/conf/default/forwarding)" = 0 ]
        [ "$(hsysctl ipv6/conf/all/forwarding)" = 0 ]
        [ "$(hsysctl ipv6/conf/default/forwarding)" = 0 ]
        [ "$(hsysctl ipv4/conf/fb/forwarding)" = 1 ]
        [ "$(hsysctl ipv6/conf/fb/force_forwarding)" = 1 ]
        # the job's own traffic still flows: a second connection now
        ctl cancel "$id" >/dev/null
        ctl wait "$id" >/dev/null || true
        start_job
        run -0 ctl logs "$id"
        [ "${lines[0]}" = "ok 198.51.100.2:8080" ]
        ctl cancel "$id" >/dev/null
        ctl wait "$id" >/dev/null || true
        sup_stop
        # back as found once the daemon stopped, and no record left
        all_off
        [ ! -e "$SUP_DIR/state/net-forwarding" ]
}

@test "a daemon SIGKILLed with forwarding switched on: the next start puts every setting back, even without a network_pool now" {
        all_off
        sup_start
        grep -q "restricted jobs: veths" "$SUP_DIR/daemon.log" || skip "the daemon cannot run restricted jobs here"
        [ "$(hsysctl ipv4/conf/fa/forwarding)" = 1 ]
        [ -s "$SUP_DIR/state/net-forwarding" ]
        SUP_PID=$(cat "$SUP_DIR/daemon.pid")
        kill -KILL "$SUP_PID"
        sup_wait_gone "$SUP_PID"
        # left on by the dead daemon
        [ "$(hsysctl ipv4/conf/fa/forwarding)" = 1 ]
        [ "$(hsysctl ipv6/conf/fb/force_forwarding)" = 1 ]
        cp "$SUP_DIR/sup.conf" "$BATS_TEST_TMPDIR/sup.conf"
        sed -i '/^network_pool/d' "$SUP_DIR/sup.conf"
        sup_start
        cp "$BATS_TEST_TMPDIR/sup.conf" "$SUP_DIR/sup.conf"
        all_off
        [ ! -e "$SUP_DIR/state/net-forwarding" ]
        grep -q "put back 4 forwarding settings a previous run changed" "$SUP_DIR/daemon.log"
}

@test "a record that is not forwarding settings is refused, written nowhere, and kept" {
        all_off
        mkdir -p "$SUP_DIR/state"
        printf '/proc/sys/kernel/core_pattern 1\n' > "$SUP_DIR/state/net-forwarding"
        before=$(cat /proc/sys/kernel/core_pattern)
        sup_start
        [ "$(cat /proc/sys/kernel/core_pattern)" = "$before" ]
        grep -q "net-forwarding: not a forwarding setting: '/proc/sys/kernel/core_pattern 1'" "$SUP_DIR/daemon.log"
        [ -e "$SUP_DIR/state/net-forwarding" ]
        # and nothing is switched over it: restricted jobs are refused, saying why
        grep -q "restricted jobs unavailable: net-forwarding: what an earlier run switched could not be put back" "$SUP_DIR/daemon.log"
        all_off
        rm "$SUP_DIR/state/net-forwarding"
}
