#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Warm pools (sbx-supervisord(8), WARM POOLS) against cold starts, through
# a real daemon as root (jobs as uids of their own), one client on its
# socket (bench/warm.py, under /usr/bin/python3). The same daemon runs
# both: a job with "retries" is never given a warm sandbox, and is
# otherwise the same job, so each pair differs in the start alone.
#   - run (follow): request to the command's first clock read, for
#     bench/clock-first (static: its first act is to read the clock), warm
#     (the pool refilled before each) and cold; the client's clock is the
#     same CLOCK_REALTIME. Beside it the floor: clock-first started by
#     posix_spawn straight from a process on the host;
#   - run of true: request to its end event (its record is durable);
#   - a burst of back-to-back runs past the pool's size: how many were
#     warm, and the latency of the rest (no cliff when the pool is empty);
#   - jobs/s of true from 4 clients at once, cold and with the pool;
#   - the daemon's RSS with the pool, and what each waiting sandbox holds
#     (its launcher's and its agent's RSS).
# Goal (issue: speed): submit -> exec p50 <= 1 ms with a warm pool.
#
# With SBX_BENCH_CLUSTER=1 the daemon is one node in cluster mode
# (sbx-supervisord(8) RUNNING MANY NODES) on a PostgreSQL of its own
# (initdb into the staging directory): every job is a row, claimed by the
# node, and a claimed job takes the node's warm sandboxes.
#
# Usage: bench/warm.sh [RUNS] [WARM]   (defaults 200 and 4; as root, after make)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-200}
warm=${2:-4}
. "$top/bench/stage.sh"
stage_daemon
slots=$((warm * 2 + 2))
cat > "$stage/sup.conf" <<EOC
[daemon]
socket = $stage/sock
state_dir = $stage/state
workspace_dir = $stage/work
launcher = $stage/bin/sbx-launch
init = $stage/bin/sbx-init
profile_path = $stage/profiles
cgroup = none
max_jobs = $slots
audit_log = $stage/audit.log

[tenant.bench]
uids = root
max_jobs = $slots
max_disk = 16M
profiles = clock
default_profile = clock
warm = $warm
EOC
if [ "${SBX_BENCH_CLUSTER:-0}" = 1 ]; then
        stage_postgres
        printf '\n[cluster]\ndatabase = %s\nnode = bench\n' "$pg_conninfo" >>"$stage/sup.conf"
        echo "cluster mode: one node on PostgreSQL"
fi
start_daemon

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "floor: posix_spawn of clock-first on the host, to its clock read, ms: $("$stage/bin/clock-first" --spawn "$runs")"
/usr/bin/python3 "$top/bench/warm.py" "$stage/sock" "$runs" "$warm" "$pid"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
