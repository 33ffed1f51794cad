#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A callback backlog: what JOBS deliveries waiting for a receiver that is
# down cost the daemon, with callback_memory_max high enough to hold them
# all in memory and with a small one (the rest wait in the outbox only),
# and how fast the backlog drains once the receiver is back. Trivial jobs
# (/bin/true) from 8 clients through the socket; the receiver is
# t/helpers/callback-receiver.py on 127.0.0.1, refusing connections, then
# answering 200. Prints for each bound:
#   - the daemon's VmRSS before the jobs, with the backlog, and after a
#     restart with the backlog (kB), and sbx_callback_in_memory;
#   - the restart's time to answer a ping (it reads every outbox entry);
#   - deliveries/s once the receiver is back (the first to the last POST).
#
# Usage: bench/callback-backlog.sh [JOBS] [SMALL_BOUND]   (as root, after make)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
jobs=${1:-5000}
jobs=$((jobs / 8 * 8)) # sup-client runs JOBS/CLIENTS each
small=${2:-100}

[ "$(id -u)" = 0 ] || { echo "bench: run as root (jobs run as nobody)" >&2; exit 77; }
for f in launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbxctl t/sup-unit/sup-client; do
        [ -x "$top/$f" ] || { echo "bench: $top/$f not built (make && make t/sup-unit/sup-client)" >&2; exit 1; }
done

stage=$(mktemp -d /tmp/sbx-bench-cbb.XXXXXX)
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/profiles" "$stage/recv" "$stage/work"
cp "$top/launcher/sbx-launch" "$top/supervisor/sbx-supervisord" "$top/supervisor/sbxctl" "$top/t/sup-unit/sup-client" "$stage/bin/"
cp "$top"/profiles/*.ini "$stage/profiles/"
chmod -R a+rX "$stage"
mount -t tmpfs -o size=256m,mode=0711 sbx-bench-work "$stage/work"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$stage/secret"
chmod 0600 "$stage/secret"

echo refuse > "$stage/recv/mode"
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

ctl() { "$stage/bin/sbxctl" --socket "$stage/sock" "$@"; }
metric() { ctl metrics | awk -v n="$1" '$1 == n { print $2 }'; }
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }
now_ms() { date +%s%3N; }

# start_daemon BOUND: sets pid, and start_ms, the ms until it answered a ping
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
max_queue = 8192
callback_backoff = 100ms
callback_backoff_max = 500ms
callback_memory_max = $1

[tenant.bench]
uids = root
max_jobs = 16
max_queue = 8192
callback_url = $url
callback_secret_file = $stage/secret
EOC
        t0=$(now_ms)
        "$stage/bin/sbx-supervisord" --config "$stage/sup.conf" >>"$stage/daemon.log" 2>&1 &
        pid=$!
        for i in $(seq 1200); do ctl ping >/dev/null 2>&1 && break; sleep 0.05; done
        start_ms=$(($(now_ms) - t0))
}
stop_daemon() {
        kill -TERM "$pid"
        wait "$pid" 2>/dev/null || true
        pid=
        rm -f "$stage/sock"
}

echo "machine:      $(nproc) CPUs, kernel $(uname -r)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)"
for bound in 1000000 "$small"; do
        rm -rf "$stage/state"
        echo refuse > "$stage/recv/mode"
        : > "$stage/recv/log"
        start_daemon "$bound"
        before=$(rss)
        "$stage/bin/sup-client" "$stage/sock" --bench "$jobs" 8 >/dev/null
        for i in $(seq 600); do [ "$(metric sbx_callback_backlog)" = "$jobs" ] && break; sleep 0.1; done
        [ "$(metric sbx_callback_backlog)" = "$jobs" ] || { echo "bench: the backlog is $(metric sbx_callback_backlog), not $jobs" >&2; exit 1; }
        echo "--- callback_memory_max $bound, $jobs deliveries waiting (receiver down)"
        echo "rss_kb before $before with_backlog $(rss) in_memory $(metric sbx_callback_in_memory) backlog $(metric sbx_callback_backlog)"
        stop_daemon
        start_daemon "$bound"
        for i in $(seq 600); do [ "$(metric sbx_callback_backlog)" = "$jobs" ] && break; sleep 0.1; done
        echo "restart: ping after ${start_ms} ms; rss_kb $(rss) in_memory $(metric sbx_callback_in_memory)"
        echo ok > "$stage/recv/mode"
        t0=$(now_ms)
        for i in $(seq 3000); do [ "$(metric sbx_callback_backlog)" = 0 ] && break; sleep 0.1; done
        t1=$(now_ms)
        n=$(grep -c '"status": 200' "$stage/recv/log" || true)
        echo "drained: $n deliveries in $((t1 - t0)) ms ($(awk -v n="$n" -v ms=$((t1 - t0)) 'BEGIN { printf "%.0f", n * 1000 / ms }')/s); rss_kb $(rss)"
        stop_daemon
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
