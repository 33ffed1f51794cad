#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What the proxy of header secrets costs a request (sbx-supervisord(8)
# HEADER SECRETS), through a real sbx-supervisord as root: an HTTPS server
# (t/helpers/https-echo.py, its certificate from a CA made here) on a test
# host in a network namespace of its own, which restricted jobs may reach
# directly; jobs that time, from inside, SBX_BENCH_REQUESTS requests each
# (default 50) to it, alternating:
#   direct-new    a TLS connection of its own per request, to the server
#   proxy-new     the same through the proxy (127.0.0.1:443 in the job),
#                 the placeholder replaced by the value on the way
#   direct-kept   one connection, one request after the other on it
#   proxy-kept    the same through the proxy
# Prints p50 and p95 of each in microseconds over ROUNDS jobs, and the
# ratios proxy/direct of the p50s.
# Usage: bench/secret-proxy.sh [ROUNDS]       (as root, after make)
set -eu

rounds=${1:-3}
n=${SBX_BENCH_REQUESTS:-50}
command -v openssl >/dev/null || { echo "bench: needs openssl (the command) for the test CA" >&2; exit 77; }
. "$(dirname "$0")/testhost.sh"

bench_setup sproxy
host=api.bench.test
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=sbx bench CA" \
        -keyout "$stage/ca.key" -out "$stage/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$host" -keyout "$stage/srv.key" \
        -out "$stage/srv.csr" 2>/dev/null
printf 'subjectAltName = DNS:%s\n' "$host" > "$stage/ext"
openssl x509 -req -in "$stage/srv.csr" -CA "$stage/ca.pem" -CAkey "$stage/ca.key" -CAcreateserial -days 2 \
        -extfile "$stage/ext" -out "$stage/srv.pem" 2>/dev/null
# the server, on th.1:8443, Nagle off (else each answer's last piece
# waits for the client's delayed ACK)
bench_bg "$stage/srv.out" /usr/bin/python3 -c '
import ssl, sys, http.server, json
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def do_GET(self):
        out = json.dumps(dict(self.headers.items())).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(out))); self.end_headers(); self.wfile.write(out)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer((sys.argv[1], 8443), H)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain(sys.argv[2], sys.argv[3])
s.socket = c.wrap_socket(s.socket, server_side=True)
print("ready", flush=True)
s.serve_forever()' "$th.1" "$stage/srv.pem" "$stage/srv.key"
cat > "$stage/sup.conf" <<EOC
secret_proxy_ca = $stage/ca.pem

[tenant.bench]
uids = root
network = none restricted
network_allow = $th.0/24:*/any
secrets = KEY:header
secret_hosts = KEY=$host@$th.1:8443
EOC
bench_daemon
printf %s 'bench-secret-value-0123456789' | ctl secret set bench KEY

echo "machine:      $(nproc) CPUs, kernel $(uname -r)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)"

probe='
import os, socket, ssl, sys, time
ca, th, n, host = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
direct = ssl.create_default_context(cadata=ca)
proxy = ssl.create_default_context(cafile=os.environ["SBX_PROXY_CA"])
req = ("GET / HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + os.environ["KEY"] + "\r\n\r\n").encode()
def connect(way):
    s = socket.create_connection((th, 8443) if way == "direct" else ("127.0.0.1", 443))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return (direct if way == "direct" else proxy).wrap_socket(s, server_hostname=host)
def one(s):
    s.sendall(req)
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(4096)
    h, _, body = head.partition(b"\r\n\r\n")
    k = int([l.split(b":")[1] for l in h.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(body) < k:
        body += s.recv(4096)
t = {w: [] for w in ("direct-new", "proxy-new", "direct-kept", "proxy-kept")}
kept = {w: connect(w) for w in ("direct", "proxy")}
for i in range(n):
    for way in ("direct", "proxy"):
        a = time.perf_counter_ns()
        s = connect(way); one(s); s.close()
        t[way + "-new"].append((time.perf_counter_ns() - a) // 1000)
        a = time.perf_counter_ns()
        one(kept[way])
        t[way + "-kept"].append((time.perf_counter_ns() - a) // 1000)
for w, v in t.items():
    print(w, " ".join(map(str, v)))
'
ca=$(cat "$stage/ca.pem")
ctl run --network restricted -- true > /dev/null   # warm up
for r in $(seq "$rounds"); do
        id=$(ctl --json submit --network restricted --allow "$th.1:8443" --secret KEY -- python3 -c "$probe" "$ca" "$th.1" "$n" "$host" |
                python3 -c 'import json,sys; print(json.load(sys.stdin)["job"])')
        ctl wait "$id" > /dev/null 2>&1 || { echo "bench: the job failed:" >&2; ctl result "$id" >&2; ctl logs "$id" >&2; exit 1; }
        ctl logs "$id" | while read -r way rest; do printf '%s\n' $rest >> "$stage/$way"; done
done
pct() {
        sort -n "$1" | awk '{ v[NR] = $1 } function at(p, i) { i = int(NR * p) + 1; return v[i > NR ? NR : i] }
                END { printf "%d %d %d", NR, at(0.5), at(0.95) }'
}
declare -A p50
for way in direct-new proxy-new direct-kept proxy-kept; do
        read -r cnt a b <<<"$(pct "$stage/$way")"
        p50[$way]=$a
        printf '%-12s requests %d p50_us %d p95_us %d\n' "$way" "$cnt" "$a" "$b"
done
awk -v a="${p50[proxy-new]}" -v b="${p50[direct-new]}" -v c="${p50[proxy-kept]}" -v d="${p50[direct-kept]}" \
        'BEGIN { printf "ratio proxy/direct p50: new connection %.2f, kept connection %.2f\n", a / b, c / d }'
