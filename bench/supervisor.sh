#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord throughput and latency: trivial jobs (/bin/true) through
# the socket from N concurrent clients, each a "run" that follows the job to
# its end event (so the durable result record is written before the clock
# stops). Prints:
#   - the daemon's RSS when idle, and its peak under load;
#   - jobs/s with N clients as fast as they go;
#   - the daemon's own CPU time per job at that rate;
#   - submit->result latency p50/p95/p99 at half that rate (the clients'
#     jobs evenly spread in time, not in bursts), against bare
#     sbx-launch runs of the same command with the same load shape (clients,
#     rate) as the same user: the difference is the daemon's overhead. The
#     daemon and bare runs alternate in SBX_BENCH_ROUNDS rounds (default 4)
#     and each side's latencies are pooled, here and for the sequential
#     figures.
# Targets (2-core machine): >= 200 jobs/s, p95 overhead <= 5 ms, idle RSS
# <= 10 MB. The state directory's filesystem decides what fsync costs; it is
# printed (set SBX_BENCH_STATE to measure on another one). The workspaces go
# on a tmpfs of their own (workspace_dir, as sbx-supervisord.conf(5)
# recommends); SBX_BENCH_WORK=state keeps them in the state directory.
# Jobs get a cgroup each when cgroup2 is writable; SBX_BENCH_CGROUP=none
# measures without. On ext4 without a journal, creating a file skips every
# inode of its group deleted in the last 60 s (360 s while the inode table
# block is dirty): a run right after anything deleted many files there (the
# previous run's cleanup, a test suite) pays for it in every result record;
# leave six minutes between runs. SBX_BENCH_USER=NAME runs the daemon with
# "user = NAME": the front as NAME and every job through sbx-privd (the
# daemon CPU figure then adds the helper's).
#
# Usage: bench/supervisor.sh [JOBS] [CLIENTS]     (run as root, after make)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
jobs=${1:-1000}
clients=${2:-8}

[ "$(id -u)" = 0 ] || { echo "bench: run as root (jobs run as nobody)" >&2; exit 77; }
for f in launcher/sbx-launch supervisor/sbx-supervisord t/sup-unit/sup-client; do
        [ -x "$top/$f" ] || { echo "bench: $top/$f not built (make && make t/sup-unit/sup-client)" >&2; exit 1; }
done

stage=$(mktemp -d /tmp/sbx-bench-sup.XXXXXX)
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/profiles"
cp "$top/launcher/sbx-launch" "$top/supervisor/sbx-supervisord" "$top/t/sup-unit/sup-client" "$stage/bin/"
cp "$top"/profiles/*.ini "$stage/profiles/"
chmod -R a+rX "$stage"
state=${SBX_BENCH_STATE:-$stage/state}
work=${SBX_BENCH_WORK:-tmpfs}
work_line=
if [ "$work" = tmpfs ]; then
        mkdir "$stage/work"
        mount -t tmpfs -o size=256m,mode=0711 sbx-bench-work "$stage/work"
        work_line="workspace_dir = $stage/work"
fi

cg=none
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
if [ "${SBX_BENCH_CGROUP:-auto}" != none ] && [ -n "$mnt" ] && [ -w "$mnt/cgroup.procs" ]; then
        cg="$mnt/sbx-bench-$$"
fi

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
state_dir = $state
$work_line
launcher = $stage/bin/sbx-launch
profile_path = $stage/profiles
cgroup = $cg
max_jobs = 16
max_queue = 4096
audit_log = $stage/audit.log

[tenant.bench]
uids = root
max_jobs = 16
max_queue = 4096
EOC

"$stage/bin/sbx-supervisord" --config "$stage/sup.conf" 2>"$stage/daemon.log" &
pid=$!
cleanup() {
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        [ "$cg" = none ] || rmdir "$cg" 2>/dev/null || true
        [ "$work" != tmpfs ] || umount "$stage/work" 2>/dev/null || true
        rm -rf "$stage"
}
trap cleanup EXIT INT TERM
for i in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done

client="$stage/bin/sup-client"
kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# The daemon's own CPU time (every thread, not its children), in ms; with
# SBX_BENCH_USER, sbx-privd's too.
cpu_ms() {
        local p h
        p=$(awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) * 1000 / hz }' "/proc/$1/stat")
        h=$(pgrep -P "$1" -x sbx-privd || true)
        [ -z "$h" ] || p=$(awk -v hz="$(getconf CLK_TCK)" -v p="$p" '{ print p + ($14 + $15) * 1000 / hz }' "/proc/$h/stat")
        echo "$p"
}

echo "machine:      $(nproc) CPUs, kernel $(uname -r)"
echo "state dir:    $state ($(stat -f -c %T "$(dirname "$state")") filesystem)"
echo "workspaces:   $([ "$work" = tmpfs ] && echo "tmpfs (workspace_dir)" || echo "in the state dir")"
echo "cgroups:      $cg"
if [ -n "${SBX_BENCH_USER:-}" ]; then
        echo "front:        user $SBX_BENCH_USER, jobs through sbx-privd"
else
        echo "front:        root, one process"
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)"
"$client" "$sock" --bench 20 2 >/dev/null   # warm up
sleep 1
echo "idle RSS:     $(kb "$pid" VmRSS) kB"
# Where it is, from smaps: the daemon's own memory (heap, thread stacks,
# eBPF maps, other anonymous) and each library's pages (clean file pages,
# shared with any other process that maps the same file, plus the pages
# its relocations dirtied).
rss_by_mapping() {
        awk '
        /^[0-9a-f]+-[0-9a-f]+ / { name = $6; anon = (name == ""); if (name ~ /^anon_inode:bpf/) name = "eBPF maps"
                                  else if (!anon && name !~ /^\[/) { n = split(name, p, "/"); name = p[n] } }
        /^Size:/ { if (anon) name = ($2 == 8192 ? "thread stacks" : "other anonymous") }
        /^Rss:/ { rss[name] += $2 }
        END { for (k in rss) print rss[k], k }' "/proc/$1/smaps"
}
rss_by_mapping "$pid" > "$stage/rss"
own() { awk -v k="$1" '{ v = $1; $1 = ""; sub(/^ /, "") } $0 == k { print v; f = 1 } END { if (!f) print 0 }' "$stage/rss"; }
echo "  own memory: heap $(own '[heap]') kB, $(ls "/proc/$pid/task" | wc -l) threads: stacks $(own 'thread stacks') kB," \
        "eBPF maps $(own 'eBPF maps') kB, other anonymous $(( $(own 'other anonymous') + $(own '[stack]') )) kB"
grep -v -e ' \[' -e ' thread stacks$' -e ' other anonymous$' -e ' eBPF maps$' "$stage/rss" | sort -rn > "$stage/rss-files"
echo "  files: $(awk '{ s += $1 } END { print s }' "$stage/rss-files") kB in $(wc -l < "$stage/rss-files") (the daemon and its" \
        "libraries); the largest, kB: $(head -10 "$stage/rss-files" | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }')"

launch_true() {
        "$client" --time "$1" "$2" "$3" setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$stage/bin/sbx-launch" -- /bin/true
}
# Percentiles of every latency in a file (as sup-client prints them).
pooled() {
        sort -n "$1" | awk '{ v[NR] = $1 }
                function at(p,  i) { i = int(NR * p) + 1; return v[i > NR ? NR : i] }
                END { printf "jobs %d p50_ms %.2f p95_ms %.2f p99_ms %.2f max_ms %.2f\n", NR, at(0.5), at(0.95), at(0.99), v[NR] }'
}
# Bare and daemon runs alternate in rounds and each side's latencies are
# pooled: the machine's speed drifts over seconds, and a difference of two
# measurements taken at different times would measure the drift.
rounds=${SBX_BENCH_ROUNDS:-4}

echo "--- 1 client, one job after the other: bare sbx-launch and through the daemon, $rounds alternating rounds"
for r in $(seq "$rounds"); do
        SUP_CLIENT_RAW="$stage/seq-bare" launch_true $((300 / rounds)) 1 0 >/dev/null
        SUP_CLIENT_RAW="$stage/seq-sup" "$client" "$sock" --bench $((300 / rounds)) 1 >/dev/null ||
                { echo "bench: jobs failed through the daemon" >&2; exit 1; }
done
seq_bare=$(pooled "$stage/seq-bare")
seq_sup=$(pooled "$stage/seq-sup")
echo "bare:   $seq_bare"
echo "daemon: $seq_sup"

echo "--- $jobs jobs, $clients clients, as fast as they go"
c0=$(cpu_ms "$pid")
full=$("$client" "$sock" --bench "$jobs" "$clients")
c1=$(cpu_ms "$pid")
echo "$full"
echo "daemon CPU:   $(awk -v a="$c0" -v b="$c1" -v n="$jobs" 'BEGIN { printf "%.2f ms a job", (b - a) / n }')"
echo "peak RSS:     $(kb "$pid" VmHWM) kB"

rate=$(echo "$full" | awk '{ for (i = 1; i < NF; i++) if ($i == "jobs_per_s") print int($(i + 1) / 2) }')
n=$((rate * 8))
[ "$n" -ge 100 ] || n=100
per=$((n / rounds))
[ "$per" -ge "$clients" ] || per=$clients
echo "--- at half that rate ($rate jobs/s), $clients clients: $rounds rounds of $per jobs through the daemon, each followed by the same load shape with bare sbx-launch"
for r in $(seq "$rounds"); do
        SUP_CLIENT_RAW="$stage/half-sup" "$client" "$sock" --bench "$per" "$clients" "$rate" >/dev/null ||
                { echo "bench: jobs failed through the daemon" >&2; exit 1; }
        SUP_CLIENT_RAW="$stage/half-bare" launch_true "$per" "$clients" "$rate" >/dev/null
done
half=$(pooled "$stage/half-sup")
bare=$(pooled "$stage/half-bare")
echo "daemon: $half"
echo "bare:   $bare"
p95() { echo "$1" | awk '{ for (i = 1; i < NF; i++) if ($i == "p95_ms") print $(i + 1) }'; }
p50() { echo "$1" | awk '{ for (i = 1; i < NF; i++) if ($i == "p50_ms") print $(i + 1) }'; }
echo "sequential overhead: p50 $(awk -v a="$(p50 "$seq_sup")" -v b="$(p50 "$seq_bare")" 'BEGIN { printf "%.2f ms", a - b }'), p95 $(awk -v a="$(p95 "$seq_sup")" -v b="$(p95 "$seq_bare")" 'BEGIN { printf "%.2f ms", a - b }')"
echo "p50 overhead: $(awk -v a="$(p50 "$half")" -v b="$(p50 "$bare")" 'BEGIN { printf "%.2f ms\n", a - b }')"
echo "p95 overhead: $(awk -v a="$(p95 "$half")" -v b="$(p95 "$bare")" 'BEGIN { printf "%.2f ms\n", a - b }')"
echo "RSS after:    $(kb "$pid" VmRSS) kB"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
