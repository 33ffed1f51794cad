#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Callbacks: how soon a job's result reaches a control plane, and what
# delivering them costs the daemon. A receiver (t/helpers/callback-receiver.py,
# answering 200) on 127.0.0.1; trivial jobs (/bin/true) through the socket
# from 8 clients. Prints:
#   - job end -> callback received, p50/p95/max, at RATE jobs/s (default
#     100): the receiver's clock when the POST arrived minus the record's
#     "ended" (the same host clock, millisecond resolution);
#   - jobs/s as fast as the clients go, with callbacks on and off, in
#     alternating rounds (SBX_BENCH_ROUNDS, default 3), and their ratio.
# Targets: p95 <= 10 ms at 100 jobs/s; ratio >= 0.9.
#
# Usage: bench/callbacks.sh [JOBS] [RATE]     (run as root, after make)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
jobs=${1:-1000}
rate=${2:-100}
rounds=${SBX_BENCH_ROUNDS:-3}

[ "$(id -u)" = 0 ] || { echo "bench: run as root (jobs run as nobody)" >&2; exit 77; }
for f in launcher/sbx-launch supervisor/sbx-supervisord t/sup-unit/sup-client; do
        [ -x "$top/$f" ] || { echo "bench: $top/$f not built (make && make t/sup-unit/sup-client)" >&2; exit 1; }
done

stage=$(mktemp -d /tmp/sbx-bench-cb.XXXXXX)
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/profiles" "$stage/recv" "$stage/work"
cp "$top/launcher/sbx-launch" "$top/supervisor/sbx-supervisord" "$top/t/sup-unit/sup-client" "$stage/bin/"
cp "$top"/profiles/*.ini "$stage/profiles/"
chmod -R a+rX "$stage"
mount -t tmpfs -o size=256m,mode=0711 sbx-bench-work "$stage/work"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$stage/secret"
chmod 0600 "$stage/secret"

python3 "$top/t/helpers/callback-receiver.py" "$stage/recv" "$stage/secret" &
recv=$!
pid=
cleanup() {
        [ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
        kill "$recv" 2>/dev/null || true
        wait "$recv" 2>/dev/null || true
        umount "$stage/work" 2>/dev/null || true
        rm -rf "$stage"
}
trap cleanup EXIT INT TERM
for i in $(seq 100); do [ -s "$stage/recv/port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(cat "$stage/recv/port")/hook"

# start_daemon on|off
start_daemon() {
        cat > "$stage/sup.conf" <<EOC
[daemon]
socket = $stage/sock
state_dir = $stage/state
workspace_dir = $stage/work
launcher = $stage/bin/sbx-launch
profile_path = $stage/profiles
cgroup = none
max_jobs = 16
max_queue = 4096

[tenant.bench]
uids = root
max_jobs = 16
max_queue = 4096
EOC
        [ "$1" = off ] || printf 'callback_url = %s\ncallback_secret_file = %s\n' "$url" "$stage/secret" >> "$stage/sup.conf"
        "$stage/bin/sbx-supervisord" --config "$stage/sup.conf" 2>>"$stage/daemon.log" &
        pid=$!
        for i in $(seq 200); do [ -S "$stage/sock" ] && break; sleep 0.05; done
        "$stage/bin/sup-client" "$stage/sock" --bench 20 2 >/dev/null
}
stop_daemon() {
        kill -TERM "$pid"
        wait "$pid" 2>/dev/null || true
        pid=
        rm -f "$stage/sock"
}
jps() { awk '{ for (i = 1; i < NF; i++) if ($i == "jobs_per_s") print $(i + 1) }'; }

echo "machine:      $(nproc) CPUs, kernel $(uname -r)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)"

start_daemon on
# The warm-up's 20 callbacks first, so that none of them is counted below.
for i in $(seq 300); do [ "$(cat "$stage/recv/log" 2>/dev/null | wc -l)" -ge 20 ] && break; sleep 0.1; done
: > "$stage/recv/log"
echo "--- $jobs jobs at $rate jobs/s, 8 clients, callbacks on: job end -> callback received"
"$stage/bin/sup-client" "$stage/sock" --bench "$jobs" 8 "$rate" > "$stage/submit"
sed 's/^/submit->end: /' "$stage/submit"
# The clients share the jobs evenly (500 over 8 run 496): wait for as many
# callbacks as jobs really ran, not for JOBS.
ran=$(awk '{ for (i = 1; i < NF; i++) if ($i == "jobs") print $(i + 1) }' "$stage/submit")
for i in $(seq 600); do [ "$(wc -l < "$stage/recv/log")" -ge "${ran:-$jobs}" ] && break; sleep 0.1; done
python3 - "$stage/recv/log" <<'EOP'
import datetime, json, sys
lat = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["status"] != 200 or not r["ended"]:
        continue
    ended = datetime.datetime.strptime(r["ended"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    lat.append((r["t"] - ended.timestamp()) * 1000)
lat.sort()
at = lambda p: lat[min(len(lat) - 1, int(len(lat) * p))]
print("callbacks %d p50_ms %.1f p95_ms %.1f max_ms %.1f" % (len(lat), at(0.5), at(0.95), lat[-1]))
EOP
stop_daemon

echo "--- $jobs jobs, 8 clients, as fast as they go: $rounds rounds each, callbacks off and on"
for r in $(seq "$rounds"); do
        start_daemon off
        "$stage/bin/sup-client" "$stage/sock" --bench "$jobs" 8 | jps >> "$stage/off"
        stop_daemon
        start_daemon on
        "$stage/bin/sup-client" "$stage/sock" --bench "$jobs" 8 | jps >> "$stage/on"
        stop_daemon
done
echo "off: jobs/s $(tr '\n' ' ' < "$stage/off")"
echo "on:  jobs/s $(tr '\n' ' ' < "$stage/on")"
awk 'NR == FNR { off += $1; n++; next } { on += $1; m++ } END { printf "ratio on/off (means): %.2f\n", (on / m) / (off / n) }' "$stage/off" "$stage/on"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
