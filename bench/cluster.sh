#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Cluster mode (sbx-supervisord(8) RUNNING MANY NODES) against one node
# alone, side by side on this machine, with a PostgreSQL of its own
# (initdb into the staging directory, fsync and synchronous_commit on):
#   - jobs/s and submit -> result p50/p95 of `true`, 4 clients at once, and
#     one client alone: one node local-only; one node on PostgreSQL; three
#     nodes on PostgreSQL (the same two CPUs: more nodes cannot add CPU
#     here, they show what the claims and notifications cost);
#   - a burst of 10x a second's worth of jobs submitted at once to the
#     three nodes: refusals, the deepest queue, the time to drain it;
#   - a node killed holding jobs with a retry: the time until each runs on
#     another node (goal: at most the lease + 1 s);
#   - one node on PostgreSQL again with 1,000,000 ended jobs in the table:
#     what the claim, the indexes and the queries cost then.
# Goals (issue: many machines): PostgreSQL mode keeps >= 70 % of local-only
# jobs/s on one node, p95 overhead <= 5 ms.
#
# Usage: bench/cluster.sh [JOBS] [LEASE]   (defaults 100 per client, 5s; as root, after make)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
jobs=${1:-100}
lease=${2:-5s}
[ "$(id -u)" = 0 ] || { echo "bench: run as root (jobs run as uids of their own)" >&2; exit 77; }
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pgbin/initdb" ] || { echo "bench: no PostgreSQL server (apt-get install postgresql-15)" >&2; exit 77; }
stage=$(mktemp -d /tmp/sbx-bench.XXXXXX)
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/profiles" "$stage/pg/sock"
cp "$top/launcher/sbx-launch" "$top/supervisor/sbx-supervisord" "$top/init/sbx-init" "$stage/bin/"
cp "$top"/profiles/*.ini "$stage/profiles/"
chmod -R a+rX "$stage"
chown -R postgres "$stage/pg"
as_pg() { setpriv --reuid=postgres --regid="$(id -g postgres)" --clear-groups -- "$@"; }
as_pg "$pgbin/initdb" -D "$stage/pg/data" --auth=trust -U sbx -E UTF8 >/dev/null
as_pg "$pgbin/pg_ctl" -D "$stage/pg/data" -l "$stage/pg/log" -w -o "-k $stage/pg/sock -c listen_addresses=''" start >/dev/null
conninfo="host=$stage/pg/sock dbname=postgres user=sbx"
pids=""

stop_all() {
        for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
        for p in $pids; do wait "$p" 2>/dev/null || true; done
        pids=""
}
cleanup() {
        stop_all
        as_pg "$pgbin/pg_ctl" -D "$stage/pg/data" -m fast -w stop >/dev/null 2>&1 || true
        rm -rf "$stage"
}
trap cleanup EXIT INT TERM

# node N [cluster]: its configuration and daemon
node() {
        n=$1
        d="$stage/n$n"
        mkdir -p "$d"
        cat >"$d/sup.conf" <<EOC
[daemon]
socket = $d/sock
state_dir = $d/state
launcher = $stage/bin/sbx-launch
init = $stage/bin/sbx-init
profile_path = $stage/profiles
cgroup = none
job_uids = $((1900000000 + n * 4096))-$((1900000000 + n * 4096 + 1023))
max_jobs = 4
max_queue = 100000

[tenant.bench]
uids = root
max_jobs = 64
max_queue = 100000
EOC
        if [ "${2:-}" = cluster ]; then
                printf '[cluster]\ndatabase = %s\nnode = node%s\nlease = %s\n' "$conninfo" "$n" "$lease" >>"$d/sup.conf"
        fi
        "$stage/bin/sbx-supervisord" --config "$d/sup.conf" 2>"$d/daemon.log" &
        echo $! >"$d/pid"
        pids="$pids $!"
        for i in $(seq 200); do [ -S "$d/sock" ] && return 0; sleep 0.05; done
        cat "$d/daemon.log" >&2
        exit 1
}

socks() {
        s=""
        for n in "$@"; do s="${s:+$s,}$stage/n$n/sock"; done
        echo "$s"
}

run_rates() {
        /usr/bin/python3 "$top/bench/cluster.py" rate "$1" 4 "$jobs" | tee "$stage/rate.out"
        /usr/bin/python3 "$top/bench/cluster.py" rate "$1" 1 "$jobs"
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "one node, local journal:"
node 1
run_rates "$(socks 1)"
local_rate=$(sed -n 's/.*: \([0-9]*\)\.[0-9]* jobs\/s.*/\1/p' "$stage/rate.out")
stop_all
rm -rf "$stage/n1"

echo "one node on PostgreSQL:"
node 1 cluster
run_rates "$(socks 1)"
stop_all

echo "three nodes on PostgreSQL:"
for n in 1 2 3; do node "$n" cluster; done
run_rates "$(socks 1 2 3)"
# 10x the jobs/s one node alone did with 4 clients, all at once
burst=$((local_rate * 10))
/usr/bin/python3 "$top/bench/cluster.py" burst "$(socks 1 2 3)" "$burst" "$conninfo"
echo "a node killed (lease $lease):"
/usr/bin/python3 "$top/bench/cluster.py" failover "$(socks 2 3)" "$conninfo" "$stage/n1/pid" node1 node2,node3
stop_all

echo "one node on PostgreSQL, 1,000,000 ended jobs in the table:"
psql -XAtq "$conninfo" -c "INSERT INTO sbx_jobs (id, tenant, digest, accept, state, attempt, node, ended, outcome, exit_code, record)
        SELECT 'jx' || lpad(g::text, 18, '0'), 'bench', '', '{}', 'done', 1, 'gone', now(), 'succeeded', 0, '{}'
        FROM generate_series(1, 1000000) g" >/dev/null
psql -XAtq "$conninfo" -c "VACUUM ANALYZE sbx_jobs" >/dev/null
echo "  table: $(psql -XAtq "$conninfo" -c "SELECT pg_size_pretty(pg_total_relation_size('sbx_jobs'))") with its indexes"
node 1 cluster
run_rates "$(socks 1)"
stop_all
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
