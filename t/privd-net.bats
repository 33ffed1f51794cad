#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-privd(8) sets up a job's network (NET_OPEN, NET_CLOSE): real veths in
# the real network namespaces of jobs spawned through it as restricted jobs
# are (held at --block-fd). t/helpers/privd-client speaks as the front,
# as nobody: it prints what the helper answered, and each hostile request
# must be refused and logged, with the helper up and the other job's veth
# where it was.

load helpers/privd
bats_require_minimum_version 1.5.0

setup_file() {
        privd_init privd-net 1880178688
        PRIVD_NET=$SBX_STAGE/privd-net
        # Blocks of a pool of our own (10.214.N.0), and a /64 of a ULA /48.
        POOL_X=$((RANDOM % 250))
        POOL6="fd5c:$(printf %x $((RANDOM + 1))):$(printf %x $((RANDOM + 1)))::/64"
        export PRIVD_NET POOL_X POOL6
}

teardown_file() {
        privd_fini
}

setup() {
        privd_setup
        command -v nsenter >/dev/null || skip "no nsenter here"
}

teardown() {
        privd_teardown
}

# net_client POOL [CLIENT ARGS...]: exec the client; the helper gets the
# IPv4 pool POOL, the IPv6 one and a state directory of its own.
net_client() {
        local pool=$1
        shift
        privd_client "$@" -- --net-pool "$pool" --net-pool6 "$POOL6" --net-state "$PRIVD_NET"
}

job_runs() {
        pgrep -x sleep -u "$1" >/dev/null
}

# scenario NAME POOL [ARGS...]: run the client's NAME until its work is
# done, holding the helper and its jobs; HELPER, A_CHILD say where they are.
scenario() {
        local name=$1 pool=$2
        shift 2
        net_client "$pool" --hold "$@" "$name" > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/log" &
        CPID=$!
        wait_until 60 done_or_exited
        cat "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/log"
        grep -q '^attacks done' "$BATS_TEST_TMPDIR/out"
        HELPER=$(field helper)
        A_CHILD=$(field "A child")
        [ -n "$HELPER" ]
        [ -n "$A_CHILD" ]
}

# in_job PID COMMAND...: run COMMAND in the job's network namespace.
in_job() {
        local pid=$1
        shift
        nsenter -t "$pid" -n "$@"
}

# has_addr PID ADDR: eth0 in PID's network namespace carries ADDR.
has_addr() {
        run in_job "$1" ip -o addr show dev eth0
        [ "$status" = 0 ]
        [[ "$output" == *" $2/"* ]] || { echo "$output"; return 1; }
}

# The front hangs up: every job goes, and with the helper its tables,
# veths and forwarding record.
hang_up() {
        kill -USR1 "$CPID"
        local st=0
        wait "$CPID" || st=$?
        CPID=
        wait_until 30 gone "$HELPER"
        [ "$st" = 0 ]
        grep -q 'front gone, every job closed' "$BATS_TEST_TMPDIR/log"
        # Under --enable-sanitizers: no report from the helper on its way out.
        ! grep -E "Sanitizer|runtime error" "$BATS_TEST_TMPDIR/log" || false
        run ip -o link show
        ! grep -q " $IFPREFIX" <<<"$output" || false
        run nft list table ip "$TABLE"
        [ "$status" != 0 ]
        [ ! -e "$PRIVD_NET/net-forwarding" ]
}

# The names the helper logged at start.
names() {
        IFPREFIX=$(sed -n 's/^sbx-privd: network: .*veths \([^*]*\)\*, nft table \(.*\)$/\1/p' "$BATS_TEST_TMPDIR/log")
        TABLE=$(sed -n 's/^sbx-privd: network: .*veths \([^*]*\)\*, nft table \(.*\)$/\2/p' "$BATS_TEST_TMPDIR/log")
        [ -n "$IFPREFIX" ]
        [ -n "$TABLE" ]
}

@test "sbx-privd gives a held job a veth, its addresses, DNS and secrets proxy sockets inside its namespace, then removes it all" {
        scenario net "10.214.$POOL_X.0/29" --v6
        names
        ! grep '^ACCEPTED' "$BATS_TEST_TMPDIR/out" || false
        grep -qx "A slot 0" "$BATS_TEST_TMPDIR/out"
        grep -qx "A addr 10.214.$POOL_X.2" "$BATS_TEST_TMPDIR/out"
        grep -qx "A host 10.214.$POOL_X.1" "$BATS_TEST_TMPDIR/out"
        grep -qx "A dns udp 127.0.0.1:53" "$BATS_TEST_TMPDIR/out"
        grep -qx "A dns tcp 127.0.0.1:53" "$BATS_TEST_TMPDIR/out"
        grep -qx "A proxy tcp 127.0.0.1:443" "$BATS_TEST_TMPDIR/out"
        has_addr "$A_CHILD" "10.214.$POOL_X.2"
        has_addr "$A_CHILD" "$(field "A addr6")"
        run in_job "$A_CHILD" ip route show default
        [ "$status" = 0 ]
        [[ "$output" == "default via 10.214.$POOL_X.1 dev eth0"* ]]
        # The host end, named by the helper, with the block's first address.
        run ip -o addr show dev "${IFPREFIX}0"
        [ "$status" = 0 ]
        [[ "$output" == *" 10.214.$POOL_X.1/30"* ]]
        # The DNS proxy's UDP socket, held by the front, bound in the job.
        run in_job "$A_CHILD" ss -lnup
        [ "$status" = 0 ]
        [[ "$output" == *"127.0.0.1:53 "*"pid=$CPID,"* ]]
        run nft list table ip "$TABLE"
        [ "$status" = 0 ]
        [[ "$output" == *"masquerade"* ]]
        # The sandbox was let go at --block-fd: its command runs.
        wait_until 30 job_runs "$(field "A uid")"
        hang_up
}

@test "sbx-privd refuses NET_OPEN for another job's process, pid 1, its own front, a wrong inode, twice, before SPAWN, stale, past the pool" {
        scenario net-attacks "10.214.$POOL_X.0/29"
        names
        refused "NET_OPEN made-up handle" "NET_OPEN.*made-up handle"
        refused "NET_OPEN B with E's process" "NET_OPEN.*job-p[0-9]*-[0-9]*: pid $(field "E child") is not the job's"
        refused "NET_OPEN B with A's process" "NET_OPEN.*: pid $A_CHILD is not the job's"
        refused "NET_OPEN B with pid 1" "NET_OPEN.*: pid 1 is not the job's"
        refused "NET_OPEN B with the front's own pid" "NET_OPEN.*: pid $CPID is not the job's"
        refused "NET_OPEN B with a wrong inode" "network namespace is inode [0-9]*, not [0-9]* as reported"
        refused "NET_OPEN A twice" "had its network opened already"
        refused "NET_OPEN before SPAWN" "is handed over: NET_OPEN needs a spawned job"
        refused "NET_OPEN stale generation" "NET_OPEN.*is not that of slot"
        refused "NET_CLOSE of a job without a network" "has no network open"
        refused "NET_OPEN with the pool exhausted" "every block of the pool is taken"
        ! grep '^ACCEPTED' "$BATS_TEST_TMPDIR/out" || false
        grep -qx alive "$BATS_TEST_TMPDIR/out"
        kill -0 "$HELPER"
        # A's veth and address are where they were; B got the other block;
        # E, whose pid B's handle named, got nothing.
        has_addr "$A_CHILD" "10.214.$POOL_X.2"
        has_addr "$(field "B child")" "10.214.$POOL_X.6"
        run in_job "$(field "E child")" ip -o link show
        [ "$status" = 0 ]
        ! grep -q eth0 <<<"$output" || false
        hang_up
}

@test "NET_CLOSE removes a job's veth and gives its block to the next job; the job cannot open another" {
        scenario net-reuse "10.214.$POOL_X.0/30"
        names
        refused "NET_OPEN B while A holds the block" "every block of the pool is taken"
        grep -qx "A NET_CLOSE: ok" "$BATS_TEST_TMPDIR/out"
        refused "NET_OPEN A after its NET_CLOSE" "had its network opened already"
        refused "NET_CLOSE A twice" "has no network open"
        grep -qx "B slot 0" "$BATS_TEST_TMPDIR/out"
        has_addr "$(field "B child")" "10.214.$POOL_X.2"
        run in_job "$A_CHILD" ip -o link show
        [ "$status" = 0 ]
        ! grep -q eth0 <<<"$output" || false
        hang_up
}

@test "JOB_CLOSE gives a job's block back: the next job gets it once the pair has gone with the namespace" {
        scenario net-job-close "10.214.$POOL_X.0/30"
        names
        refused "NET_OPEN B while A holds the block" "every block of the pool is taken"
        grep -qx "A JOB_CLOSE: ok" "$BATS_TEST_TMPDIR/out"
        grep -qx "B slot 0" "$BATS_TEST_TMPDIR/out"
        has_addr "$(field "B child")" "10.214.$POOL_X.2"
        wait_until 10 gone "$A_CHILD"
        hang_up
}

@test "without --net-audit the network audit's messages are answered EOPNOTSUPP, and change nothing" {
        scenario net-audit "10.214.$POOL_X.0/30"
        names
        local m
        for m in NET_RING NET_AUDIT NET_ALLOW NET_DENY NET_UNAUDIT; do
                refused "$m" "$m (seq [0-9]*): no network audit in this helper (see --net-audit): Operation not supported"
        done
        ! grep '^ACCEPTED' "$BATS_TEST_TMPDIR/out" || false
        grep -qx alive "$BATS_TEST_TMPDIR/out"
        has_addr "$A_CHILD" "10.214.$POOL_X.2"
        hang_up
}

@test "without --net-pool the helper has no network: NET_OPEN is refused" {
        "$CLIENT" --as "$(id -u nobody):$(id -g nobody)" --profile "$SBX_STAGE/profiles/default.ini" net -- \
                "$PRIVD" --fd 3 --front "$(id -u nobody):$(id -g nobody)" --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" --launcher "$SBX_LAUNCH" \
                > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/log" || true
        cat "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/log"
        grep -q "^A NET_OPEN failed: Operation not supported" "$BATS_TEST_TMPDIR/out"
        grep -q "refused NET_OPEN .*started without --net-pool" "$BATS_TEST_TMPDIR/log"
}

@test "sbx-privd rejects a bad network command line with a clear error" {
        local base=(--fd 0 --front 65534:65534 --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" --launcher "$SBX_LAUNCH")
        run "$PRIVD" "${base[@]}" --net-pool 10.214.0.0/30
        [ "$status" = 2 ]
        [[ "$output" == *"--net-pool needs --net-state"* ]]
        run "$PRIVD" "${base[@]}" --net-pool 10.214.0.1/24 --net-state "$PRIVD_NET"
        [ "$status" = 2 ]
        [[ "$output" == *"--net-pool 10.214.0.1/24: bits set past the /24"* ]]
        run "$PRIVD" "${base[@]}" --net-pool 10.0.0.0/30 --net-pool 10.0.0.0/4 --net-state "$PRIVD_NET"
        [ "$status" = 2 ]
        [[ "$output" == *"--net-pool: expected an IPv4 network from /8 to /30, got '10.0.0.0/4'"* ]]
        run "$PRIVD" "${base[@]}" --net-pool6 fd00::/64
        [ "$status" = 2 ]
        [[ "$output" == *"--net-pool6 and --net-state go with --net-pool"* ]]
        run "$PRIVD" "${base[@]}" --net-pool 10.0.0.0/24 --net-state "$PRIVD_NET" --net-pool6 fd00::/120
        [ "$status" = 2 ]
        [[ "$output" == *"--net-pool6: expected an IPv6 network from /48 to /110, got 'fd00::/120'"* ]]
}
