#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What a query to a restricted job's DNS proxy costs, over UDP and over
# TCP, through a real sbx-supervisord as root: an upstream resolver
# (t/helpers/dns-server.py) on a test host in a network namespace of its
# own; jobs that time, from inside, SBX_BENCH_QUERIES queries each (default
# 40: the proxy reads 100 of a job's a second) in one of three ways:
#   udp       one socket, one query after the other;
#   tcp-kept  one TCP connection, one query after the other on it;
#   tcp-new   a TCP connection of its own per query (connect, query, close);
# plus glibc's getaddrinfo of a name whose answer is truncated over UDP
# (32 addresses), so that every lookup is asked again over TCP ("trunc").
# Prints p50 and p95 of each in microseconds over ROUNDS jobs each.
# Usage: bench/dns.sh [ROUNDS]       (as root, after make)
set -eu

rounds=${1:-5}
n=${SBX_BENCH_QUERIES:-40}
. "$(dirname "$0")/testhost.sh"

bench_setup dns 2
# the resolver, as t/supervisor-dnstcp.bats runs it
bench_bg "$stage/dns.out" python3 "$top/t/helpers/dns-server.py" "$th.1" "$th.2"
cat > "$stage/sup.conf" <<EOC
dns_upstream = $th.1

[tenant.bench]
uids = root
network = none host restricted
network_allow = *.test:*/any $th.0/24:*/any
EOC
bench_daemon

echo "machine:      $(nproc) CPUs, kernel $(uname -r)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)"

probe='
import socket, struct, sys, time
mode, n = sys.argv[1], int(sys.argv[2])
def q(i, name="db.test"):
    qn = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
    return struct.pack("!HHHHHH", i, 0x0100, 1, 0, 0, 0) + qn + struct.pack("!HH", 1, 1)
def rd(s, k):
    b = b""
    while len(b) < k:
        b += s.recv(k - len(b))
    return b
def tcp(s, i):
    m = q(i)
    s.sendall(struct.pack("!H", len(m)) + m)
    return rd(s, struct.unpack("!H", rd(s, 2))[0])
t = []
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
kept = socket.create_connection(("127.0.0.1", 53)) if mode == "tcp-kept" else None
for i in range(n):
    a = time.perf_counter_ns()
    if mode == "udp":
        u.sendto(q(i), ("127.0.0.1", 53)); u.recv(4096)
    elif mode == "tcp-kept":
        tcp(kept, i)
    elif mode == "tcp-new":
        with socket.create_connection(("127.0.0.1", 53)) as s:
            tcp(s, i)
    else:
        assert len(socket.getaddrinfo("many.test", 80, socket.AF_INET, socket.SOCK_STREAM)) == 32
    t.append((time.perf_counter_ns() - a) // 1000)
    # within the 100 a second of the job: a connection takes one too, and
    # a truncated lookup three (UDP, the connection, TCP)
    time.sleep({"tcp-new": 0.025, "trunc": 0.04}.get(mode, 0))
print("\n".join(map(str, t)))
'
pct() {
        sort -n "$1" | awk '{ v[NR] = $1 } function at(p, i) { i = int(NR * p) + 1; return v[i > NR ? NR : i] }
                END { printf "queries %d p50_us %d p95_us %d", NR, at(0.5), at(0.95) }'
}
ctl run --network restricted --allow db.test:80 -- true   # warm up
for r in $(seq "$rounds"); do
        for mode in udp tcp-kept tcp-new trunc; do
                # submitted and waited for: each lookup's sort by glibc connects
                # a UDP socket to each of the 32 addresses, events that
                # `sbxctl run` would print
                id=$(ctl --json submit --network restricted --allow db.test:80 --allow many.test:80/any -- \
                        python3 -c "$probe" "$mode" "$n" | python3 -c 'import json,sys; print(json.load(sys.stdin)["job"])')
                ctl wait "$id" > /dev/null 2>&1 || { echo "bench: $mode: the job failed:" >&2; ctl result "$id" >&2; exit 1; }
                ctl logs "$id" >> "$stage/$mode"
        done
done
for mode in udp tcp-kept tcp-new trunc; do
        printf "%-9s %s\n" "$mode" "$(pct "$stage/$mode")"
done
