#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Try sbx-supervisord from the build tree: start it on a temporary socket
# with a one-tenant configuration, run a sample job through sbxctl, show its
# result, and stop the daemon. Works as root (jobs run as nobody) or as an
# ordinary user (jobs run as that user).
#
# Usage: contrib/try-supervisor.sh [COMMAND [ARG]...]
#        (SBX_BUILDDIR: the build tree, when it is not the source tree)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
build=${SBX_BUILDDIR:-$top}
for f in launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbx-unpack supervisor/sbxctl; do
        [ -x "$build/$f" ] || { echo "try-supervisor: $build/$f is not built (run make)" >&2; exit 1; }
done

d=$(mktemp -d /tmp/sbx-try.XXXXXX)
pid=
cleanup() {
        [ -z "$pid" ] || { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
        rm -rf "$d"
}
trap cleanup EXIT INT TERM

# Staged where the job user can reach them: the build tree may sit under a
# directory it cannot traverse.
chmod 0755 "$d"
mkdir "$d/bin" "$d/profiles"
cp "$build/launcher/sbx-launch" "$build/supervisor/sbx-supervisord" "$build/supervisor/sbx-unpack" "$build/supervisor/sbxctl" "$d/bin/"
cp "$top"/profiles/*.ini "$d/profiles/"
chmod -R a+rX "$d"

job_user=$(id -un)
[ "$(id -u)" = 0 ] && job_user=nobody
cat > "$d/sbx-supervisord.conf" <<EOC
[daemon]
socket = $d/sbx.sock
state_dir = $d/state
launcher = $d/bin/sbx-launch
profile_path = $d/profiles
cgroup = none

[tenant.me]
uids = $(id -u)
job_user = $job_user
EOC

"$d/bin/sbx-supervisord" --config "$d/sbx-supervisord.conf" 2>"$d/daemon.log" &
pid=$!
i=0
until "$d/bin/sbxctl" --socket "$d/sbx.sock" ping >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
                echo "try-supervisor: the daemon did not start:" >&2
                cat "$d/daemon.log" >&2
                exit 1
        fi
        sleep 0.05
done

"$d/bin/sbxctl" --socket "$d/sbx.sock" ping
if [ $# -eq 0 ]; then
        set -- sh -c 'echo "hello from job $SBX_JOB_ID (tenant $SBX_TENANT), uid $(id -u), in $(pwd)"'
fi
status=0
"$d/bin/sbxctl" --socket "$d/sbx.sock" run --timeout 30s -- "$@" || status=$?
job=$("$d/bin/sbxctl" --socket "$d/sbx.sock" ls --limit 1 | awk 'NR == 2 { print $1 }')
"$d/bin/sbxctl" --socket "$d/sbx.sock" result "$job"
exit "$status"
