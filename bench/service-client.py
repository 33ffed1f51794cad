#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Times GET requests of a 1 KiB answer (bench/session.py, services), the
# same way inside a session's sandbox (straight to the server) and on the
# host (through the daemon's proxy): first N on one keep-alive connection,
# then N each on a new connection. Prints two lines of milliseconds,
# sorted: "keepalive ..." and "fresh ...".
# Usage: service-client.py ADDR PORT HOST TOKEN N
import socket
import sys
import time

addr, port, host, token, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
req = ("GET /kib HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (host, "X-Sbx-Token: %s\r\n" % token if token != "-" else "")).encode()


def get(s):
    s.sendall(req)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(65536)
    head, body = buf.split(b"\r\n\r\n", 1)
    length = int([h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")][0])
    while len(body) < length:
        body += s.recv(65536)


def run(fresh):
    times = []
    s = None if fresh else socket.create_connection((addr, port))
    for i in range(n):
        t0 = time.perf_counter()
        if fresh:
            s = socket.create_connection((addr, port))
        get(s)
        if fresh:
            s.close()
        times.append((time.perf_counter() - t0) * 1000)
    if not fresh:
        s.close()
    return sorted(times)


for name, fresh in (("keepalive", False), ("fresh", True)):
    print(name, " ".join("%.4f" % t for t in run(fresh)))
