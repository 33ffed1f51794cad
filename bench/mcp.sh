#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# sbx-mcp and /mcp from an agent's side: the official MCP TypeScript SDK's
# client (installed from npm into a temporary directory) calls run_code
# with print(1) N times over stdio (sbx-mcp) and over Streamable HTTP (the
# daemon's /mcp), alternating; p50 and p95 of the round trip, beside the
# same job through the socket by sbxctl (hyperfine).
#
# Usage: bench/mcp.sh [N]   (run as root, after make; needs node and npm)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-100}
[ "$(id -u)" = 0 ] || { echo "bench: run as root (jobs run as nobody)" >&2; exit 77; }
command -v node >/dev/null && command -v npm >/dev/null || { echo "bench: node and npm are needed" >&2; exit 1; }
for f in launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbx-mcp supervisor/sbxctl; do
        [ -x "$top/$f" ] || { echo "bench: $top/$f not built (make)" >&2; exit 1; }
done

stage=$(mktemp -d /tmp/sbx-bench-mcp.XXXXXX)
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/profiles" "$stage/work" "$stage/npm"
cp "$top/launcher/sbx-launch" "$top/supervisor/sbx-supervisord" "$top/supervisor/sbx-mcp" "$top/supervisor/sbxctl" "$stage/bin/"
cp "$top"/profiles/*.ini "$stage/profiles/"
chmod -R a+rX "$stage"
mount -t tmpfs -o size=256m,mode=0711 sbx-bench-work "$stage/work"
npm install --prefix "$stage/npm" --no-audit --no-fund '@modelcontextprotocol/sdk@1' >"$stage/npm.log" 2>&1 ||
        { tail "$stage/npm.log"; echo "bench: npm install failed" >&2; exit 1; }
cp "$top/bench/mcp-client.mjs" "$stage/npm/"

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
cat > "$stage/sup.conf" <<EOC
[daemon]
socket = $stage/sock
state_dir = $stage/state
workspace_dir = $stage/work
launcher = $stage/bin/sbx-launch
profile_path = $stage/profiles
cgroup = none

[tenant.bench]
uids = root

[http]
listen = 127.0.0.1:$port

[token.bench]
tenant = bench
sha256 = $(printf %s "$token" | sha256sum | cut -d' ' -f1)
EOC
"$stage/bin/sbx-supervisord" --config "$stage/sup.conf" 2>"$stage/daemon.log" &
pid=$!
cleanup() {
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        umount "$stage/work" 2>/dev/null || true
        rm -rf "$stage"
}
trap cleanup EXIT INT TERM
for i in $(seq 200); do
        curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
        sleep 0.05
done

echo "machine:      $(nproc) CPUs, kernel $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg)"
node "$stage/npm/mcp-client.mjs" "$stage/bin/sbx-mcp" "$stage/sock" "http://127.0.0.1:$port/mcp" "$token" "$n"
hyperfine -N --warmup 3 --runs "$n" --style basic "$stage/bin/sbxctl --socket $stage/sock run -- python3 -c print(1)" 2>&1 |
        sed -n 's/^ *Time (mean ± σ): *\(.*\)$/  socket sbxctl run python3 -c print(1): mean \1/p'
