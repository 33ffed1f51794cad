# SPDX-License-Identifier: Apache-2.0
# Sourced by the benchmarks of restricted jobs (bench/dns.sh,
# bench/secret-proxy.sh): a staging directory with the built binaries and
# profiles, a cgroup for the daemon's jobs, a test host in a network
# namespace of its own (th.1 and the extra addresses asked for, th.254 on
# the host's side), and a root sbx-supervisord whose restricted jobs reach
# it, stopped and removed with everything else at exit. Sets top, stage,
# th, pid; bench_bg adds a background process to stop at exit.

top=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 77; }
for f in launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbxctl; do
        [ -x "$top/$f" ] || { echo "bench: $top/$f not built (make)" >&2; exit 1; }
done
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$mnt" ] && [ -w "$mnt/cgroup.procs" ] || { echo "bench: needs a writable cgroup2 (job cgroups)" >&2; exit 77; }

bench_pids=()
# bench_setup NAME [ADDRESS-SUFFIX...]: stage, and the test host with
# th.1 and th.SUFFIX for each suffix.
bench_setup() {
        local name=$1 a
        shift
        stage=$(mktemp -d "/tmp/sbx-bench-$name.XXXXXX")
        chmod 0755 "$stage"
        mkdir -p "$stage/bin" "$stage/profiles"
        cp "$top/launcher/sbx-launch" "$top/supervisor/sbx-supervisord" "$top/supervisor/sbxctl" "$stage/bin/"
        cp "$top"/profiles/*.ini "$stage/profiles/"
        chmod -R a+rX "$stage"
        cg="$mnt/sbx-bench-$name-$$"
        tns="sbxb-$$" tif="sbxb$((RANDOM % 100000))" th="198.19.$((RANDOM % 256))"
        pid=
        trap bench_cleanup EXIT INT TERM
        ip netns add "$tns"
        ip link add "$tif" type veth peer name eth0 netns "$tns"
        ip addr add "$th.254/24" dev "$tif"
        ip link set "$tif" up
        ip -n "$tns" link set lo up
        ip -n "$tns" link set eth0 up
        for a in 1 "$@"; do
                ip -n "$tns" addr add "$th.$a/24" dev eth0
        done
}

bench_cleanup() {
        local p
        for p in "${bench_pids[@]}"; do
                kill "$p" 2>/dev/null || true
        done
        [ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
        ip netns del "$tns" 2>/dev/null || true
        ip link del "$tif" 2>/dev/null || true
        rmdir "$cg" 2>/dev/null || true
        rm -rf "$stage"
}

# bench_bg OUTFILE COMMAND...: COMMAND on the test host, in the
# background, until it prints "ready" to OUTFILE (10 s at most).
bench_bg() {
        local out=$1 i
        shift
        ip netns exec "$tns" "$@" > "$out" 2>&1 &
        bench_pids+=($!)
        for i in $(seq 200); do grep -q ready "$out" && break; sleep 0.05; done
}

# bench_daemon: the daemon on $stage/sup.conf, with the [daemon] lines
# every benchmark needs before what is already in the file; waits until
# it can run restricted jobs.
bench_daemon() {
        local slot=$(( ($$ + RANDOM) % 1024 )) i
        { cat <<EOC
[daemon]
socket = $stage/sock
state_dir = $stage/state
launcher = $stage/bin/sbx-launch
profile_path = $stage/profiles
cgroup = $cg
network_pool = 10.215.$((RANDOM % 250)).0/24
# a uid range of its own, as the tests pick theirs: a daemon kills the
# processes of a uid before it hands it out, another's jobs' too
job_uids = $((1879113728 + slot * 1024))-$((1879113728 + slot * 1024 + 1023))
EOC
          cat "$stage/sup.conf"; } > "$stage/sup.conf.new"
        mv "$stage/sup.conf.new" "$stage/sup.conf"
        "$stage/bin/sbx-supervisord" --config "$stage/sup.conf" 2>"$stage/daemon.log" &
        pid=$!
        for i in $(seq 200); do [ -S "$stage/sock" ] && break; sleep 0.05; done
        for i in $(seq 200); do grep -q "restricted jobs: veths\|restricted jobs unavailable" "$stage/daemon.log" && break; sleep 0.05; done
        grep -q "restricted jobs: veths" "$stage/daemon.log" ||
                { echo "bench: the daemon cannot run restricted jobs:" >&2; cat "$stage/daemon.log" >&2; exit 1; }
}

ctl() { "$stage/bin/sbxctl" --socket "$stage/sock" "$@"; }
