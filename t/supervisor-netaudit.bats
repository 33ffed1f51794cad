#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord's network audit (network.audit, sbxctl --audit): the eBPF
# cgroup programs record every connect and every datagram sent with an
# address by an audited job, with its verdict, in the job's result, in the
# audit log and live to its followers; sockets no hook would see are
# refused; what the ring buffer had no room for is counted; and a daemon
# that cannot audit refuses the request instead of running it unrecorded.
# Traffic goes to servers on 127.0.0.1 only.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        # A small ring (56 events) and a small per-job bound, so that the
        # overflow test needs few datagrams.
        sup_config "network_ring = 4K
network_events = 50"
        sed -i 's/^profiles = default shell$/profiles = default shell audited\nnetwork = none host/' "$SUP_DIR/sup.conf"
        # a profile that asks for the audit itself
        sed 's/^mode = none$/&\naudit = yes/' "$SBX_STAGE/profiles/default.ini" > "$SBX_STAGE/profiles/audited.ini"
        sup_start
}

teardown_file() {
        [ -f "$SUP_DIR/server.pid" ] && kill "$(cat "$SUP_DIR/server.pid")" 2>/dev/null
        sup_fini
}

setup() {
        require_userns
        [ "$(id -u)" = 0 ] || skip "the network audit needs a root daemon (eBPF programs, job cgroups)"
        [ "$SUP_CGROUP" != none ] || skip "no writable cgroup2 here: jobs have no cgroup to attach the audit to"
        grep -q "network audit: eBPF programs loaded" "$SUP_DIR/daemon.log" ||
                skip "the daemon could not load its eBPF programs here: $(grep -o 'network audit unavailable.*' "$SUP_DIR/daemon.log")"
}

# A TCP server on 127.0.0.1 that accepts and closes; prints its port.
tcp_server() {
        if [ ! -f "$SUP_DIR/server.port" ]; then
                python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
sys.stdout.close()
while True:
    c, _ = s.accept(); c.close()
' > "$SUP_DIR/server.port" 3>&- &
                echo $! > "$SUP_DIR/server.pid"
                local i
                for i in $(seq 600); do
                        [ -s "$SUP_DIR/server.port" ] && break
                        sleep 0.05
                done
        fi
        cat "$SUP_DIR/server.port"
}

# json_get on a result read with sbxctl --json result JOB
result_of() {
        ctl --json result "$1"
}

@test "an audited host job's TCP connect to 127.0.0.1 is in its result with time, pid, comm, protocol, address, port and verdict" {
        port=$(tcp_server)
        run ctl --json submit --network host --audit -- python3 -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()"
        [ "$status" -eq 0 ]
        id=$(json_get job <<<"$output")
        run ctl --json wait "$id"
        [ "$status" -eq 0 ]
        res=$output
        [ "$(json_get result.state <<<"$res")" = succeeded ]
        [ "$(json_get result.network.audit <<<"$res")" = true ]
        [ "$(json_get result.network.mode <<<"$res")" = host ]
        [ "$(json_get result.network.events_kept <<<"$res")" = 1 ]
        [ "$(json_get result.network.events_dropped <<<"$res")" = 0 ]
        [ "$(json_get result.network.events_lost <<<"$res")" = 0 ]
        [ "$(json_get result.network_events.0.kind <<<"$res")" = connect ]
        [ "$(json_get result.network_events.0.protocol <<<"$res")" = tcp ]
        [ "$(json_get result.network_events.0.family <<<"$res")" = ipv4 ]
        [ "$(json_get result.network_events.0.address <<<"$res")" = 127.0.0.1 ]
        [ "$(json_get result.network_events.0.port <<<"$res")" = "$port" ]
        [ "$(json_get result.network_events.0.verdict <<<"$res")" = allow ]
        [ "$(json_get result.network_events.0.comm <<<"$res")" = python3 ]
        [ "$(json_get result.network_events.0.hostname <<<"$res")" = null ]
        pid=$(json_get result.network_events.0.pid <<<"$res")
        [ "$pid" -gt 1 ]
        [[ "$(json_get result.network_events.0.time <<<"$res")" == 20*T*Z ]]
        # the audit log has the job's events in a line of their own
        grep -F "\"job\":\"$id\"" "$SUP_DIR/audit.log" | grep -F '"event":"network"' | grep -qF "\"port\":$port"
        # and its job_end line counts them by verdict
        end=$(grep -F "\"job\":\"$id\"" "$SUP_DIR/audit.log" | grep -F '"event":"job_end"')
        [ "$(jq -c .network_events <<< "$end")" = '{"allow":1,"deny":0,"dropped":0,"lost":0}' ]
}

@test "a follower sees each network event live, and sbxctl result shows them" {
        port=$(tcp_server)
        run --separate-stderr ctl run --network host --audit -- python3 -c "import socket; socket.create_connection(('127.0.0.1', $port)).close(); print('done')"
        [ "$status" -eq 0 ]
        [ "$output" = done ]
        [[ "$stderr" == *"sbxctl: network: connect tcp 127.0.0.1:$port allow pid "*"(python3)"* ]]
        run -0 ctl --json submit --network host --audit -- python3 -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()"
        id=$(json_get job <<<"$output")
        ctl wait "$id" >/dev/null
        run ctl result "$id"
        [ "$status" -eq 0 ]
        [[ "$output" == *"network:   host, audited: 1 events"* ]]
        [[ "$output" == *"net:       connect tcp 127.0.0.1:$port allow"* ]]
}

@test "a UDP datagram sent with an address is recorded (sendmsg, udp), over IPv6 too" {
        run -0 ctl --json submit --network host --audit -- python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('127.0.0.1', 9))
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
try:
    s.sendto(b'x', ('::1', 9))
except OSError:
    pass
"
        id=$(json_get job <<<"$output")
        run -0 ctl --json wait "$id"
        res=$output
        [ "$(json_get result.state <<<"$res")" = succeeded ]
        [ "$(json_get result.network_events.0.kind <<<"$res")" = sendmsg ]
        [ "$(json_get result.network_events.0.protocol <<<"$res")" = udp ]
        [ "$(json_get result.network_events.0.address <<<"$res")" = 127.0.0.1 ]
        [ "$(json_get result.network_events.0.port <<<"$res")" = 9 ]
        [ "$(json_get result.network_events.0.verdict <<<"$res")" = allow ]
        [ "$(json_get result.network_events.1.kind <<<"$res")" = sendmsg ]
        [ "$(json_get result.network_events.1.family <<<"$res")" = ipv6 ]
        [ "$(json_get result.network_events.1.address <<<"$res")" = ::1 ]
}

@test "sockets that no audit hook would see (UDP-Lite, MPTCP) are refused under audit and recorded as denied" {
        # without the audit, the same job may make them: the refusal is the audit's
        run ctl run --network host -- python3 -c "
import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM, 136).close()
print('made')"
        [ "$status" -eq 0 ]
        [ "$output" = made ]
        run -0 ctl --json submit --network host --audit -- python3 -c "
import errno, socket
for proto, kind in ((136, socket.SOCK_DGRAM), (262, socket.SOCK_STREAM)):
    try:
        socket.socket(socket.AF_INET, kind, proto)
        print(proto, 'made')
    except OSError as e:
        print(proto, errno.errorcode[e.errno])
"
        id=$(json_get job <<<"$output")
        run -0 ctl --json wait "$id"
        res=$output
        run -0 ctl logs "$id"
        [ "${lines[0]}" = "136 EPERM" ]
        [[ "${lines[1]}" = "262 EPERM" || "${lines[1]}" = "262 EPROTONOSUPPORT" ]]
        [ "$(json_get result.network_events.0.kind <<<"$res")" = socket ]
        [ "$(json_get result.network_events.0.protocol <<<"$res")" = udplite ]
        [ "$(json_get result.network_events.0.verdict <<<"$res")" = deny ]
        [ "$(json_get result.network_events.0.address <<<"$res")" = null ]
        [ "$(json_get result.network_events.0.port <<<"$res")" = null ]
        if [ "${lines[1]}" = "262 EPERM" ]; then
                [ "$(json_get result.network_events.1.protocol <<<"$res")" = mptcp ]
                [ "$(json_get result.network_events.1.verdict <<<"$res")" = deny ]
        fi
        end=$(grep -F "\"job\":\"$id\"" "$SUP_DIR/audit.log" | grep -F '"event":"job_end"')
        [ "$(jq .network_events.allow <<< "$end")" = 0 ]
        [ "$(jq .network_events.deny <<< "$end")" = "$(json_get result.network.events_kept <<<"$res")" ]
}

@test "a profile with [net] audit = yes is audited by the daemon; sbx-launch alone refuses it" {
        port=$(tcp_server)
        grep -qx "audit = yes" "$SBX_STAGE/profiles/audited.ini"
        run -0 ctl --json submit --profile audited --network host -- python3 -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()"
        id=$(json_get job <<<"$output")
        run -0 ctl --json wait "$id"
        [ "$(json_get result.state <<<"$output")" = succeeded ]
        [ "$(json_get result.network.audit <<<"$output")" = true ]
        [ "$(json_get result.network_events.0.port <<<"$output")" = "$port" ]
        # the launcher cannot audit: it says so and runs nothing
        run "$SBX_STAGE/bin/sbx-launch" --profile "$SBX_STAGE/profiles/audited.ini" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"[net] audit = yes: the connection audit is attached by sbx-supervisord"* ]]
        run "$SBX_STAGE/bin/sbx-launch" --profile "$SBX_STAGE/profiles/audited.ini" --print-profile
        [ "$status" -eq 0 ]
        [[ "$output" == *"audit = yes"* ]]
}

@test "a job without the audit records nothing and says it was not audited" {
        port=$(tcp_server)
        run -0 ctl --json submit --network host -- python3 -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()"
        id=$(json_get job <<<"$output")
        run -0 ctl --json wait "$id"
        [ "$(json_get result.state <<<"$output")" = succeeded ]
        [ "$(json_get result.network.audit <<<"$output")" = false ]
        [ "$(json_get result.network_events <<<"$output")" = "[]" ]
}

@test "the metrics count jobs by network mode and audit, and each audited event by kind and verdict; promtool passes" {
        port=$(tcp_server)
        ctl metrics > "$BATS_TEST_TMPDIR/before"
        run -0 ctl --json submit --network host --audit -- python3 -c "
import socket
socket.create_connection(('127.0.0.1', $port)).close()
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', 9))
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM, 136)
except OSError:
    pass
"
        id=$(json_get job <<<"$output")
        ctl --json wait "$id" > "$BATS_TEST_TMPDIR/records"
        ctl run --network host -- true
        ctl run -- true
        ctl metrics > "$BATS_TEST_TMPDIR/after"
        b=$(cat "$BATS_TEST_TMPDIR/before") a=$(cat "$BATS_TEST_TMPDIR/after")
        delta() { echo $(( $(metric "$1" <<<"$a") - $(metric "$1" <<<"$b") )); }
        [ "$(delta 'sbx_jobs_started_total{network="host",audit="true"}')" = 1 ]
        [ "$(delta 'sbx_jobs_started_total{network="host",audit="false"}')" = 1 ]
        [ "$(delta 'sbx_jobs_started_total{network="none",audit="false"}')" = 1 ]
        [ "$(delta 'sbx_jobs_started_total{network="restricted",audit="true"}')" = 0 ]
        [ "$(delta 'sbx_network_events_total{kind="connect",verdict="allow"}')" = 1 ]
        [ "$(delta 'sbx_network_events_total{kind="sendmsg",verdict="allow"}')" = 1 ]
        [ "$(delta 'sbx_network_events_total{kind="socket",verdict="deny"}')" = 1 ]
        [ "$(delta 'sbx_network_events_total{kind="connect",verdict="deny"}')" = 0 ]
        # and every series agrees with the job's record
        net_metrics_check "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after" < "$BATS_TEST_TMPDIR/records"
        # no restricted jobs here: no pool to show
        ! grep -q '^sbx_network_pool' <<<"$a" || false
        command -v promtool >/dev/null || skip "promtool (Debian package prometheus) is not installed"
        promtool check metrics < "$BATS_TEST_TMPDIR/after"
}

# flood N: a job that waits for /workspace/go, sends N datagrams, and says
# so; the daemon is stopped meanwhile, so whatever the ring buffer takes
# stays there. Leaves the result in $res.
flood() {
        run ctl --json submit --network host --audit -- python3 -c "
import os, socket, time
open('/workspace/ready', 'w').close()
while not os.path.exists('/workspace/go'):
    time.sleep(0.02)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range($1):
    s.sendto(b'x', ('127.0.0.1', 9))
open('/workspace/sent', 'w').close()
"
        id=$(json_get job <<<"$output")
        ws="$SUP_DIR/state/work/$id"
        for i in $(seq 1200); do [ -e "$ws/ready" ] && break; sleep 0.05; done
        [ -e "$ws/ready" ]
        SUP_PID=$(cat "$SUP_DIR/daemon.pid") # a test before may have restarted it
        kill -STOP "$SUP_PID"
        touch "$ws/go"
        sent=no
        for i in $(seq 1200); do [ -e "$ws/sent" ] && sent=yes && break; sleep 0.05; done
        kill -CONT "$SUP_PID"
        res=$(ctl --json wait "$id" || true)
        [ "$sent" = yes ] && [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "sent: $sent"; echo "$res"; ctl logs "$id"; false; }
}

@test "past network_events an event is only counted (dropped), by the programs themselves, none lost" {
        # network_events = 50: the 4 KiB ring (56 events) never fills
        before=$(ctl metrics)
        flood 500
        after=$(ctl metrics)
        [ "$(json_get result.network.events_kept <<<"$res")" -eq 50 ]
        [ "$(json_get result.network.events_dropped <<<"$res")" -eq 450 ]
        [ "$(json_get result.network.events_lost <<<"$res")" -eq 0 ]
        # the metrics count the 50 received, and the 450 dropped once the job ended
        ev='sbx_network_events_total{kind="sendmsg",verdict="allow"}'
        [ $(( $(metric "$ev" <<<"$after") - $(metric "$ev" <<<"$before") )) -eq 50 ]
        [ $(( $(metric sbx_network_events_dropped_total <<<"$after") - $(metric sbx_network_events_dropped_total <<<"$before") )) -eq 450 ]
        [ "$(metric sbx_network_events_lost_total <<<"$after")" = "$(metric sbx_network_events_lost_total <<<"$before")" ]
}

@test "a full ring buffer's losses are counted in the job's result and logged, never silent" {
        # network_events = 1000: more than the 4 KiB ring holds
        sed -i 's/^network_events = 50$/network_events = 1000/' "$SUP_DIR/sup.conf"
        sup_stop
        sup_start
        before=$(ctl metrics)
        flood 500
        kept=$(json_get result.network.events_kept <<<"$res")
        dropped=$(json_get result.network.events_dropped <<<"$res")
        lost=$(json_get result.network.events_lost <<<"$res")
        after=$(ctl metrics)
        sed -i 's/^network_events = 1000$/network_events = 50/' "$SUP_DIR/sup.conf"
        sup_stop
        sup_start
        [ "$kept" -le 56 ]
        [ "$lost" -ge 444 ]
        [ $((kept + dropped + lost)) -eq 500 ]
        # a new daemon counts from 0, as Prometheus counters may (the test
        # before had 450 dropped)
        [ "$(metric sbx_network_events_dropped_total <<<"$before")" = 0 ]
        [ "$(metric 'sbx_jobs_started_total{network="host",audit="true"}' <<<"$before")" = 0 ]
        # the metrics: what was received, dropped and lost
        [ "$(metric sbx_network_events_lost_total <<<"$after")" = "$lost" ]
        [ "$(metric sbx_network_events_dropped_total <<<"$after")" = "$dropped" ]
        [ "$(metric 'sbx_network_events_total{kind="sendmsg",verdict="allow"}' <<<"$after")" = "$kept" ]
        grep -q "job $id: network audit: $lost events lost" "$SUP_DIR/daemon.log"
}

@test "restricted is refused where no network_pool is configured, and bad network objects are refused naming the field" {
        run -0 raw '{"v":1,"op":"run","command":["true"],"network":{"mode":"restricted","allow":["127.0.0.1:80"]}}'
        [ "$(json_get error.code <<<"$output")" = E_FORBIDDEN ]
        sed -i 's/^network = none host$/network = none host restricted/' "$SUP_DIR/sup.conf"
        sup_stop
        sup_start
        run -0 raw '{"v":1,"op":"run","command":["true"],"network":{"mode":"restricted"}}'
        [ "$(json_get error.code <<<"$output")" = E_UNSUPPORTED ]
        [[ "$(json_get error.message <<<"$output")" == *"this daemon cannot run restricted jobs (no network_pool is configured)"* ]]
        run -0 raw '{"v":1,"op":"run","command":["true"],"network":{"audit":1}}'
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
        [[ "$(json_get error.message <<<"$output")" == *"field 'network.audit': expected boolean"* ]]
        run -0 raw '{"v":1,"op":"run","command":["true"],"network":{"audit":true,"allow":[]}}'
        [[ "$(json_get error.message <<<"$output")" == *"field 'network.allow': only with mode \"restricted\""* ]]
        run -0 raw '{"v":1,"op":"run","command":["true"],"network":{"mode":"restricted","allow":["10.0.0.1:99999"]}}'
        [[ "$(json_get error.message <<<"$output")" == *"field 'network.allow[0]': allow '10.0.0.1:99999': bad port"* ]]
}

@test "a daemon without job cgroups refuses an audit (E_UNSUPPORTED, saying why) and runs unaudited jobs as before" {
        sup_stop
        cp "$SUP_DIR/sup.conf" "$SUP_DIR/sup.conf.saved"
        sed -i 's|^cgroup = .*|cgroup = none|' "$SUP_DIR/sup.conf"
        sup_start
        run -0 raw '{"v":1,"op":"run","command":["true"],"network":{"mode":"host","audit":true}}'
        [ "$(json_get error.code <<<"$output")" = E_UNSUPPORTED ]
        [[ "$(json_get error.message <<<"$output")" == *"field 'network.audit': this daemon cannot audit network use (it has no job cgroups"* ]]
        run -0 raw '{"v":1,"op":"run","command":["true"],"profile":"audited","network":"host"}'
        [ "$(json_get error.code <<<"$output")" = E_UNSUPPORTED ]
        [[ "$(json_get error.message <<<"$output")" == *"profile 'audited' says [net] audit = yes: this daemon cannot audit network use"* ]]
        run ctl run --network host -- true
        [ "$status" -eq 0 ]
        sup_stop
        mv "$SUP_DIR/sup.conf.saved" "$SUP_DIR/sup.conf"
        sup_start
}
