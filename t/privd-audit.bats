#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-privd(8) does the network audit for a front without privilege
# (--net-audit: NET_RING, NET_AUDIT, NET_ALLOW, NET_DENY, NET_UNAUDIT).
# t/helpers/privd-client speaks as the front, as nobody: it reads the ring
# buffer as such a front must, by mmap of the descriptor NET_RING gave it
# (supervisor/net/auditring.c), with no bpf() call. Job A runs in a network
# namespace of its own (no route out): an attempt the programs admit fails
# with ENETUNREACH, one they refuse with EPERM, and both are in the ring.

load helpers/privd
bats_require_minimum_version 1.5.0

setup_file() {
        privd_init privd-audit 1880440832
}

teardown_file() {
        privd_fini
}

setup() {
        privd_setup
}

# audit_client SCENARIO [HELPER ARGS...]: the client's SCENARIO against a
# helper with a ring of 64K (or what the arguments say).
audit_client() {
        local scenario=$1
        shift
        run privd_client "$scenario" -- "${@:---net-audit=64K}"
        echo "$output"
        ! grep -q '^sbx-privd: network audit: cannot load it' <<<"$output" || skip "no BPF network audit here"
}

# A's three connects, as the ring held them: 192.0.2.1 admitted by its
# NET_ALLOW entry, 192.0.2.2 by none, 192.0.2.3 admitted but in the deny
# set (reason 7, host).
a_events_right() {
        grep -qx 'A event connect 192.0.2.1:80 allow reason 0 comm python3' <<<"$output"
        grep -qx 'A event connect 192.0.2.2:80 deny reason 0 comm python3' <<<"$output"
        grep -qx 'A event connect 192.0.2.3:80 deny reason 7 comm python3' <<<"$output"
        grep -q '^A NET_UNAUDIT: ok, lost 0, dropped 0, events 3' <<<"$output"
}

# refused WHAT REASON, as in helpers/privd.bash but in $output: here the
# client runs to its end under `run`.
refused() {
        grep -qF "refused $1:" <<<"$output" || { echo "not refused: $1"; return 1; }
        grep -q "^sbx-privd: refused .*$2" <<<"$output" || { echo "not logged: $2"; return 1; }
}

@test "a front without bpf() reads a job's connects from the ring NET_RING gave it; NET_ALLOW lets one through, NET_DENY wins" {
        audit_client audit
        [ "$status" = 0 ]
        grep -qx 'bpf(): Operation not permitted' <<<"$output"
        grep -q '^ring 65536 bytes: mapped' <<<"$output"
        a_events_right
        grep -qx alive <<<"$output"
        ! grep -q '^ACCEPTED' <<<"$output" || false
        ! grep -E "Sanitizer|runtime error" <<<"$output" || false
}

@test "with --config, NET_ALLOW lies within the tenants' network_allow or is refused and logged" {
        cat > "$BATS_TEST_TMPDIR/sup.conf" <<EOC
[daemon]
socket = /run/sbx-test-none.sock

[tenant.a]
uids = root
network_allow = 192.0.2.0/24:80

[tenant.b]
uids = nobody
network_allow = api.example:443
EOC
        chmod a+r "$BATS_TEST_TMPDIR/sup.conf"
        audit_client audit-caps --net-audit=64K --config "$BATS_TEST_TMPDIR/sup.conf"
        [ "$status" = 0 ]
        grep -q '^sbx-privd: network caps: 2 network_allow entries' <<<"$output"
        grep -qx 'within the caps: admitted' <<<"$output"
        refused "an address within no cap" "lies within no tenant's network_allow"
        refused "a port of no cap" "lies within no tenant's network_allow"
        refused "the port of a cap, UDP only in none" "lies within no tenant's network_allow"
        refused "a /24 on a hostname cap's port" "lies within no tenant's network_allow"
        refused "a prefix wider than the cap's" "lies within no tenant's network_allow"
        a_events_right
        ! grep -q '^ACCEPTED' <<<"$output" || false
}

@test "sbx-privd --config that does not parse is refused at start, naming the file and line" {
        printf '[tenant.a]\nnetwork_allow = 10.0.0.0/99:80\n' > "$BATS_TEST_TMPDIR/bad.conf"
        run "$PRIVD" --fd 3 --front 65534:65534 --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" \
                --launcher "$SBX_LAUNCH" --config "$BATS_TEST_TMPDIR/bad.conf" 3<&-
        [ "$status" = 2 ]
        [[ "$output" == *"--config $BATS_TEST_TMPDIR/bad.conf"*"bad.conf:2"*network_allow* ]]
}

@test "--net-audit with a ring that is no power of two is refused at start, naming the option" {
        run "$PRIVD" --fd 3 --front 65534:65534 --uids 1880100000-1880100015 --cgroup "$PRIVD_CG" --workspace "$PRIVD_WS" \
                --launcher "$SBX_LAUNCH" --net-audit 100000 3<&-
        [ "$status" = 2 ]
        [[ "$output" == *"--net-audit: expected a power of two from a page to 1G"* ]]
}

@test "sbx-privd refuses every hostile audit request, logs it, stays up, and job A's attachment works as before" {
        audit_client audit-attacks
        [ "$status" = 0 ]
        ! grep -q '^ACCEPTED' <<<"$output" || false
        refused "NET_RING twice" "NET_RING .*handed over already"
        grep -q '^host addresses: [1-9][0-9]*, loopback among them$' <<<"$output"
        grep -qF "refused HOST_ADDR past the end: No such file or directory" <<<"$output"
        refused "HOST_ADDR reserved set" "HOST_ADDR .*reserved field set"
        refused "NET_AUDIT made-up handle" "NET_AUDIT .*no slot 999999"
        refused "NET_AUDIT A twice" "NET_AUDIT .*audited once already"
        refused "NET_UNAUDIT A's slot, another generation" "NET_UNAUDIT .*generation"
        refused "NET_ALLOW A's slot, another generation" "NET_ALLOW .*generation"
        refused "NET_AUDIT stale handle" "NET_AUDIT .*holds no job"
        refused "NET_ALLOW stale handle" "NET_ALLOW .*holds no job"
        refused "NET_AUDIT after SPAWN" "NET_AUDIT .*is spawned: NET_AUDIT comes before SPAWN"
        refused "NET_ALLOW before NET_AUDIT" "NET_ALLOW .*is not audited"
        refused "NET_UNAUDIT of a job never audited" "NET_UNAUDIT .*is not audited"
        refused "NET_AUDIT unknown flags" "NET_AUDIT .*unknown flags 0x80"
        refused "NET_AUDIT 17 deny ranges" "NET_AUDIT .*17 deny ranges"
        refused "NET_AUDIT reversed deny range" "NET_AUDIT .*deny range 1: 100-99"
        refused "NET_AUDIT deny range past n_deny" "NET_AUDIT .*deny range 1 set past n_deny 1"
        refused "NET_ALLOW prefix 129" "NET_ALLOW .*prefix /129"
        refused "NET_ALLOW bits past the prefix" "NET_ALLOW .*prefix /112"
        refused "NET_ALLOW protocol 1" "NET_ALLOW .*protocol 1"
        refused "NET_ALLOW reversed ports" "NET_ALLOW .*ports 443-80"
        refused "NET_ALLOW reserved set" "NET_ALLOW .*reserved field set"
        grep -qx 'D rules for one prefix: 32 accepted' <<<"$output"
        refused "NET_ALLOW a 33rd rule for one prefix" "NET_ALLOW .*more than 32 rules for one prefix"
        grep -qx 'D prefixes: 512 accepted' <<<"$output"
        refused "NET_ALLOW a 513th prefix" "NET_ALLOW .*more than 512 prefixes"
        refused "NET_UNAUDIT twice" "NET_UNAUDIT .*is not audited"
        refused "NET_ALLOW after NET_UNAUDIT" "NET_ALLOW .*is not audited"
        refused "NET_AUDIT after NET_UNAUDIT" "NET_AUDIT .*audited once already"
        refused "NET_DENY DEL of the helper's own prefix" "NET_DENY .*the helper's own prefix"
        refused "NET_DENY DEL of a prefix not in the set" "NET_DENY .*no such prefix"
        refused "NET_DENY unknown op" "NET_DENY .*op 9"
        refused "NET_DENY ADD reason 0" "NET_DENY .*reason 0"
        refused "NET_DENY ADD reason 200" "NET_DENY .*reason 200"
        refused "NET_DENY prefix 129" "NET_DENY .*prefix /129"
        refused "NET_DENY reserved set" "NET_DENY .*reserved field set"
        refused "NET_DENY past 1024 prefixes" "NET_DENY .*more than 1024 prefixes"
        refused "NET_UNAUDIT of a closed job" "NET_UNAUDIT .*holds no job"
        # the helper's own set and A's deny entry, then the flood: 1024 in all
        local own
        own=$(sed -n 's/^sbx-privd: network audit: loaded, .*, \([0-9]*\) prefixes denied to every job$/\1/p' <<<"$output")
        [ -n "$own" ]
        grep -qx "deny prefixes added: $((1024 - own - 1))" <<<"$output"
        a_events_right
        grep -qx alive <<<"$output"
        ! grep -E "Sanitizer|runtime error" <<<"$output" || false
}
