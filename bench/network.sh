#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What restricted networking and the network audit cost, through a real
# sbx-supervisord as root:
#   1. start-up: `sbxctl run -- true` with --network none against
#      --network restricted (a veth made and the programs attached before
#      the command starts), one job after the other, alternating in rounds;
#      p50 and p95 of each, and the p50 added (target: <= 2 ms); and the
#      daemon's own timing of the veth pair, its addresses and routes (its
#      debug log): p50 and p95 over the restricted jobs;
#   2. connect() round trip to a server on 127.0.0.1 from a host-mode job,
#      with the audit programs attached (--audit) and without, measured by
#      the job itself over SBX_BENCH_CONNECTS connects (default 2000); the
#      ratio of the medians (target: <= 1.1);
#   3. events recorded without loss: a job sends N datagrams as fast as it
#      can (N = 10,000 and 100,000), with the default 256 KiB ring; the
#      job's rate and how many events the result counts as lost.
# With SBX_BENCH_POOL6=PREFIX (e.g. fd5b:7a1c:4e02::/64) the daemon has that
# network_pool6 too: restricted jobs get IPv6 addresses and a route as well.
# SBX_BENCH_USER=NAME runs the daemon with "user = NAME": the front as NAME,
# every job, its veth and its audit through sbx-privd.
# Usage: bench/network.sh [ROUNDS]       (as root, after make)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
per_round=20

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 77; }
for f in launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbxctl; do
        [ -x "$top/$f" ] || { echo "bench: $top/$f not built (make)" >&2; exit 1; }
done
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$mnt" ] && [ -w "$mnt/cgroup.procs" ] || { echo "bench: needs a writable cgroup2 (job cgroups)" >&2; exit 77; }

stage=$(mktemp -d /tmp/sbx-bench-net.XXXXXX)
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/profiles"
cp "$top/launcher/sbx-launch" "$top/supervisor/sbx-supervisord" "$top/supervisor/sbxctl" "$stage/bin/"
cp "$top"/profiles/*.ini "$stage/profiles/"
chmod -R a+rX "$stage"
cg="$mnt/sbx-bench-net-$$"
sock=$stage/sock
user_lines=
if [ -n "${SBX_BENCH_USER:-}" ]; then
        cp "$top/supervisor/privd/sbx-privd" "$stage/bin/"
        # (the socket's directory is made for the user)
        sock=$stage/run/sock
        user_lines="user = $SBX_BENCH_USER
helper = $stage/bin/sbx-privd"
fi
cat > "$stage/sup.conf" <<EOC
[daemon]
socket = $sock
$user_lines
state_dir = $stage/state
launcher = $stage/bin/sbx-launch
profile_path = $stage/profiles
cgroup = $cg
network_pool = 10.214.$((RANDOM % 250)).0/24
network_events = 1000
${SBX_BENCH_POOL6:+network_pool6 = $SBX_BENCH_POOL6}

[tenant.bench]
uids = root
network = none host restricted
network_allow = 127.0.0.1:*/any
max_jobs = 16
EOC
SBX_DEBUG=1 "$stage/bin/sbx-supervisord" --config "$stage/sup.conf" 2>"$stage/daemon.log" &
pid=$!
srv=
cleanup() {
        [ -z "$srv" ] || kill "$srv" 2>/dev/null || true
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        rmdir "$cg" 2>/dev/null || true
        rm -rf "$stage"
}
trap cleanup EXIT INT TERM
for i in $(seq 200); do [ -S "$sock" ] && break; sleep 0.05; done
ctl() { "$stage/bin/sbxctl" --socket "$sock" "$@"; }
# the socket can be there a moment before the network's set-up is logged
for i in $(seq 200); do grep -q "restricted jobs: veths\|restricted jobs unavailable" "$stage/daemon.log" && break; sleep 0.05; done
grep -q "restricted jobs: veths" "$stage/daemon.log" || { echo "bench: the daemon cannot run restricted jobs:" >&2; cat "$stage/daemon.log" >&2; exit 1; }
[ -z "${SBX_BENCH_POOL6:-}" ] || grep -q "/126s of the network_pool6" "$stage/daemon.log" ||
        { echo "bench: the daemon has no IPv6 for restricted jobs:" >&2; cat "$stage/daemon.log" >&2; exit 1; }

echo "machine:      $(nproc) CPUs, kernel $(uname -r)"
echo "IPv6:         ${SBX_BENCH_POOL6:-none} (network_pool6)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)"

# Milliseconds of one command, to a file.
timed() {
        local out=$1 t0 t1
        shift
        t0=$(date +%s%N)
        "$@" >/dev/null
        t1=$(date +%s%N)
        echo "$(( (t1 - t0) / 1000 ))" | awk '{ printf "%.3f\n", $1 / 1000 }' >> "$out"
}
pct() {
        sort -n "$1" | awk '{ v[NR] = $1 } function at(p, i) { i = int(NR * p) + 1; return v[i > NR ? NR : i] }
                END { printf "runs %d p50_ms %.2f p95_ms %.2f", NR, at(0.5), at(0.95) }'
}
p50() { sort -n "$1" | awk '{ v[NR] = $1 } END { i = int(NR * 0.5) + 1; if (i > NR) i = NR; print v[i] }'; }

echo "--- 1. start-up: sbxctl run -- true, none vs restricted, $rounds rounds of $per_round each"
ctl run -- true; ctl run --network restricted -- true   # warm up
for r in $(seq "$rounds"); do
        for i in $(seq "$per_round"); do timed "$stage/none" ctl run --network none -- true; done
        for i in $(seq "$per_round"); do timed "$stage/restricted" ctl run --network restricted --allow 127.0.0.1:80 -- true; done
done
echo "none:       $(pct "$stage/none")"
echo "restricted: $(pct "$stage/restricted")"
echo "added p50:  $(awk -v a="$(p50 "$stage/none")" -v b="$(p50 "$stage/restricted")" 'BEGIN { printf "%.2f ms", b - a }')"
grep -o "the veth made in [0-9]* us" "$stage/daemon.log" | awk '{ printf "%.3f\n", $5 / 1000 }' > "$stage/veth"
echo "veth made:  $(pct "$stage/veth") (the daemon's debug log)"

echo "--- 2. connect() round trip to 127.0.0.1 from a host-mode job, audit programs attached or not"
python3 - "$stage/port" <<'PY' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(1024)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept(); c.close()
PY
srv=$!
for i in $(seq 100); do [ -s "$stage/port" ] && break; sleep 0.05; done
port=$(cat "$stage/port")
n=${SBX_BENCH_CONNECTS:-2000}
probe="
import socket, time, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
t = []
for i in range(n):
    s = socket.socket()
    a = time.perf_counter_ns()
    s.connect(('127.0.0.1', port))
    t.append(time.perf_counter_ns() - a)
    s.close()
t.sort()
print('%.1f %.1f' % (t[len(t) // 2] / 1000, t[len(t) * 95 // 100] / 1000))
"
for r in $(seq 3); do
        ctl run --network host -- python3 -c "$probe" "$port" "$n" >> "$stage/plain"
        ctl run --network host --audit -- python3 -c "$probe" "$port" "$n" >> "$stage/audited" 2>/dev/null
done
med() { awk '{ print $1 }' "$1" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "without the programs: p50 $(med "$stage/plain") us (per run: $(awk '{ printf "%s/%s ", $1, $2 }' "$stage/plain")us p50/p95)"
echo "with the audit:       p50 $(med "$stage/audited") us (per run: $(awk '{ printf "%s/%s ", $1, $2 }' "$stage/audited")us p50/p95)"
echo "ratio of the medians: $(awk -v a="$(med "$stage/plain")" -v b="$(med "$stage/audited")" 'BEGIN { printf "%.2f", b / a }')"

echo "--- 3. events recorded without loss: N datagrams as fast as the job sends them (ring 256 KiB)"
flood="
import socket, time, sys
n = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
a = time.perf_counter()
for i in range(n):
    s.sendto(b'x', ('127.0.0.1', 9))
d = time.perf_counter() - a
print('%d %.0f' % (n, n / d))
"
for n in 10000 100000; do
        id=$(ctl --json submit --network host --audit -- python3 -c "$flood" "$n" | sed 's/.*"job":"\([^"]*\)".*/\1/')
        ctl wait "$id" >/dev/null || true
        rate=$(ctl logs "$id" | awk '{ print $2 }')
        res=$(ctl --json result "$id")
        lost=$(echo "$res" | python3 -c 'import json,sys; n=json.load(sys.stdin)["result"]["network"]; print(n["events_kept"] + n["events_dropped"], n["events_lost"])')
        echo "N=$n: sent at $rate/s; recorded (kept+counted) and lost: $lost"
done
