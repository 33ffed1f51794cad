# SPDX-License-Identifier: Apache-2.0
# The test host of the restricted-network tests: a network namespace of
# its own behind a veth, on a /24 of 198.18.0.0/15 (set aside for tests)
# picked at random, so that files run at the same time never take each
# other's packets. The host side of the veth is ${TH}.254 (and ${TH6}::fe);
# the test host answers on the addresses testhost_up is given.

# testhost_up PREFIX "N..." ["M..."]: the namespace, with ${TH}.N for each
# N (and ${TH6}::M for each M where the host has IPv6). Sets TNS, TIF, TH,
# TH6, and NET_OK / NET6_OK to 1 for what could be made (0 otherwise: the
# tests that need it skip).
testhost_up() {
        local prefix=$1 v4=$2 v6=${3:-} n
        export TNS="$prefix-$$-$RANDOM" TIF="$prefix$((RANDOM % 100000))"
        export TH="198.18.$((RANDOM % 256))"
        export TH6="2001:db8:$(printf %x $((RANDOM % 65535 + 1)))"
        export NET_OK=0 NET6_OK=0
        if ! { [ "$(id -u)" = 0 ] && command -v ip >/dev/null && ip netns add "$TNS" 2>/dev/null; }; then
                return 0
        fi
        # a /24 no other file's test host has: picked and taken under a
        # lock (two files on one /24 would answer each other's packets)
        local lock i ok=0
        exec {lock}>/tmp/sbx-testhost.lock
        flock "$lock"
        for i in $(seq 64); do
                [ -z "$(ip -4 addr show to "${TH}.0/24" 2>/dev/null)" ] && break
                TH="198.18.$((RANDOM % 256))"
        done
        ip link add "$TIF" type veth peer name eth0 netns "$TNS" && ip addr add "${TH}.254/24" dev "$TIF" && ok=1
        exec {lock}>&-
        [ "$ok" = 1 ] && ip link set "$TIF" up && ip -n "$TNS" link set lo up && ip -n "$TNS" link set eth0 up || return 0
        for n in $v4; do
                ip -n "$TNS" addr add "${TH}.$n/24" dev eth0 || return 0
        done
        test_link_forwards "$TIF" || return 0
        NET_OK=1
        # IPv6 too where the host has it (nodad: usable at once)
        [ -n "$v6" ] && ip addr add "${TH6}::fe/64" dev "$TIF" nodad 2>/dev/null || return 0
        for n in $v6; do
                ip -n "$TNS" addr add "${TH6}::$n/64" dev eth0 nodad || return 0
        done
        NET6_OK=1
}

# testhost_serve NAME HELPER ARG...: t/helpers/HELPER (a Python server
# that prints "ready") on the test host, its output in $SUP_DIR/NAME.out.
testhost_serve() {
        local name=$1 helper=$2
        shift 2
        ip netns exec "$TNS" /usr/bin/python3 "$SBX_SRCDIR/t/helpers/$helper" "$@" > "$SUP_DIR/$name.out" 2>&1 3>&- &
        echo $! > "$SUP_DIR/$name.pid"
        echo "$name" >> "$SUP_DIR/testhost.served"
}

# testhost_ready NAME...: each has said it is ready (for wait_until).
testhost_ready() {
        local name
        for name in "$@"; do
                grep -q ready "$SUP_DIR/$name.out" 2>/dev/null || return 1
        done
}

# testhost_down: the servers, the daemon (sup_fini) and the namespace.
testhost_down() {
        local name
        if [ -f "$SUP_DIR/testhost.served" ]; then
                while read -r name; do
                        kill "$(cat "$SUP_DIR/$name.pid")" 2>/dev/null || true
                done < "$SUP_DIR/testhost.served"
        fi
        sup_fini
        ip netns del "$TNS" 2>/dev/null || true
        ip link del "$TIF" 2>/dev/null || true
}

# In setup(): skip, saying why, unless the daemon of the file runs
# restricted jobs and the test host's servers (and with "dns" its DNS
# server) came up.
restricted_skip_unless_ready() {
        [ "$(id -u)" = 0 ] || skip "restricted jobs need a root daemon (eBPF, veth, nftables)"
        [ "$SUP_CGROUP" != none ] || skip "no writable cgroup2 here: jobs have no cgroup to attach the programs to"
        grep -q "restricted jobs: veths" "$SUP_DIR/daemon.log" ||
                skip "the daemon cannot run restricted jobs here: $(grep -o 'restricted jobs unavailable.*\|network audit unavailable.*' "$SUP_DIR/daemon.log" | head -1)"
        [ "$NET_OK" = 1 ] && grep -q ready "$SUP_DIR/servers.out" || skip "cannot make the test host's network namespace here"
        [ "${1:-}" != dns ] || grep -q ready "$SUP_DIR/dns.out" || skip "cannot make the test host's network namespace here"
}

# probe [sbxctl submit options]... -- PROBE...: net-probe.py in a
# restricted job, waited for: its record in $res, its output in $output
# (and $lines), its id in $id.
probe() {
        local opts=()
        while [ "$1" != -- ]; do opts+=("$1"); shift; done
        shift
        run ctl --json submit --network restricted "${opts[@]}" -- python3 -c "$(cat "$SBX_SRCDIR/t/helpers/net-probe.py")" "$@"
        [ "$status" -eq 0 ] || { echo "$output"; return 1; }
        id=$(json_get job <<<"$output")
        res=$(ctl --json wait "$id")
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; return 1; }
        run ctl logs "$id"
}
