#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The HTTP API against the socket: trivial jobs (/bin/true) submitted with
# "follow" and timed to their end event, through the daemon's socket, over
# HTTP and over HTTPS (keep-alive, one connection per client; a test CA
# made here). Prints p50/p95 of sequential submit->end latency per path
# (alternating rounds) and jobs/s with CLIENTS clients per path.
# Goals: HTTP adds <= 0.3 ms p50 and keeps >= 90 % of the socket's jobs/s.
#
# Usage: bench/http.sh [JOBS] [CLIENTS] [ROUNDS]   (run as root, after make)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
jobs=${1:-400}
clients=${2:-8}
rounds=${3:-4}

[ "$(id -u)" = 0 ] || { echo "bench: run as root (jobs run as nobody)" >&2; exit 77; }
for f in launcher/sbx-launch supervisor/sbx-supervisord; do
        [ -x "$top/$f" ] || { echo "bench: $top/$f not built (make)" >&2; exit 1; }
done
command -v openssl >/dev/null || { echo "bench: openssl is needed for the test CA" >&2; exit 1; }

stage=$(mktemp -d /tmp/sbx-bench-http.XXXXXX)
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/profiles" "$stage/work"
cp "$top/launcher/sbx-launch" "$top/supervisor/sbx-supervisord" "$stage/bin/"
cp "$top"/profiles/*.ini "$stage/profiles/"
chmod -R a+rX "$stage"
mount -t tmpfs -o size=256m,mode=0711 sbx-bench-work "$stage/work"

port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT=$(port)
TPORT=$(port)
token=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=sbx-bench-ca -keyout "$stage/ca.key" -out "$stage/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$stage/srv.key" -out "$stage/srv.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' > "$stage/ext"
openssl x509 -req -in "$stage/srv.csr" -CA "$stage/ca.crt" -CAkey "$stage/ca.key" -CAcreateserial -days 1 -extfile "$stage/ext" \
        -out "$stage/srv.crt" 2>/dev/null

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

[http]
listen = 127.0.0.1:$PORT
listen_tls = 127.0.0.1:$TPORT
tls_cert = $stage/srv.crt
tls_key = $stage/srv.key

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
        [ -S "$stage/sock" ] && curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
        sleep 0.05
done

echo "machine:      $(nproc) CPUs, kernel $(uname -r); load $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$top/bench/http-client.py" "$stage/sock" "$PORT" "$TPORT" "$token" "$stage/ca.crt" "$jobs" "$clients" "$rounds"
