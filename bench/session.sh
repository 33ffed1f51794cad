#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Sessions (sbx-protocol(7), SESSIONS) against one-shot jobs, through a
# real daemon as root (jobs as their own uids), one client on its socket
# (bench/session.py, under /usr/bin/python3):
#   - session.create to ready (its agent answered), p50/p95/p99;
#   - session.exec: request to the command's first clock read, for
#     bench/clock-first (static: its first act is to read the clock) and
#     for `date +%s%N` (dynamic: the loader runs first); the client's clock
#     is the same CLOCK_REALTIME. Beside it the floor: clock-first started
#     by posix_spawn straight from a process on the host, no sandbox, no
#     daemon;
#   - session.exec of `true`, request to its end event (its record is
#     durable), against a one-shot `run` of `true` the same way;
#   - a service's GET of 1 KiB through the daemon's proxy against the same
#     client inside the sandbox straight to the server (bench/service-*.py),
#     on one keep-alive connection and on a new one each time;
#   - the daemon's RSS before and with IDLE idle sessions, and each
#     sbx-init's own RSS.
# Goals (issue: sessions): exec p50 <= 1 ms, p99 <= 5 ms to the first
# instruction; <= 64 KB of daemon RSS per idle session; sbx-init <= 1 MB;
# proxied service round trip <= 1.3 x direct for a 1 KiB answer.
#
# Usage: bench/session.sh [RUNS] [IDLE]   (defaults 300 and 50; as root, after make)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-300}
idle=${2:-50}
. "$top/bench/stage.sh"
stage_daemon
slots=$((idle + 8))
svc_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
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
service_listen = 127.0.0.1:$svc_port

[tenant.bench]
uids = root
max_jobs = $slots
max_sessions = $slots
max_disk = 16M
session_services = yes
profiles = default clock
EOC
start_daemon

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "floor: posix_spawn of clock-first on the host, to its clock read, ms: $("$stage/bin/clock-first" --spawn "$runs")"
/usr/bin/python3 "$top/bench/session.py" "$stage/sock" "$runs" "$idle" "$pid" "$svc_port"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
