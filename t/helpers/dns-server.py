#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A tiny upstream resolver for the DNS proxy tests, run in the test host's
# namespace, on its first address (argv[1]), port 53, over UDP and TCP
# (each message after its length in two bytes): db.test -> that address,
# other.test -> argv[2], slow.test -> argv[1] after 0.5 s (within dns_upstream_timeout); with argv[3] (an
# IPv6 address), v6.test's AAAA -> it; many.test -> 32 addresses (argv[1]
# first, then .100 to .130 of its /24): past 512 bytes, so over UDP only a
# truncated answer (TC set, no records) and over TCP the whole; over TCP
# only, stall.test never answers and cut.test's answer stops halfway and
# the connection closes; spread.test -> 8 addresses of 100.64.0.0/10 no
# answer gave before; ip-A-B-C-D.test's A -> A.B.C.D and ip6-X.test's AAAA
# -> X with each '-' a ':' (ip6---1.test: ::1), any address at all, for
# the rebinding tests; names starting with drop (drop.test, drop2.test)
# are never answered, over UDP or TCP;
# other types: no records; other names: NXDOMAIN.
# (A test fixture; the daemon parses DNS with ldns.)
import socket
import socketserver
import struct
import sys
import itertools
import threading
import time

BASE = sys.argv[1].rsplit(".", 1)[0]
NAMES = {"spread.test": [], "db.test": [sys.argv[1]], "other.test": [sys.argv[2]], "slow.test": [sys.argv[1]], "v6.test": None,
         "many.test": [sys.argv[1]] + ["%s.%d" % (BASE, i) for i in range(100, 131)],
         "stall.test": [sys.argv[1]], "cut.test": [sys.argv[1]]}
AAAA = {"v6.test": sys.argv[3]} if len(sys.argv) > 3 else {}
SPREAD = itertools.count()  # (next() is atomic in CPython: UDP and TCP threads share it)


def answer(q):
    qid, flags = struct.unpack("!HH", q[:4])
    i, labels = 12, []
    while q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode().lower())
        i += 1 + q[i]
    qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
    question = q[12:i + 5]
    name = ".".join(labels)
    literal = None
    if len(labels) == 2 and labels[1] == "test" and labels[0].startswith("ip-") and qtype == 1:
        literal = (socket.AF_INET, labels[0][3:].replace("-", "."), 1)
    elif len(labels) == 2 and labels[1] == "test" and labels[0].startswith("ip6-") and qtype == 28:
        literal = (socket.AF_INET6, labels[0][4:].replace("-", ":"), 28)
    if literal:
        data = socket.inet_pton(literal[0], literal[1])
        rr = struct.pack("!HHHIH", 0xC00C, literal[2], 1, 60, len(data)) + data
        return struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question + rr, name
    if name not in NAMES:
        return struct.pack("!HHHHHH", qid, 0x8183, 1, 0, 0, 0) + question, name
    if qtype == 28 and name in AAAA:
        rr = struct.pack("!HHHIH", 0xC00C, 28, 1, 60, 16) + socket.inet_pton(socket.AF_INET6, AAAA[name])
        return struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question + rr, name
    if qtype == 1 and name == "spread.test":
        addrs = []
        for _ in range(8):
            k = next(SPREAD)
            addrs.append("100.%d.%d.%d" % (64 + (k >> 16) % 64, (k >> 8) & 255, k & 255))
        rrs = b"".join(struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(a) for a in addrs)
        return struct.pack("!HHHHHH", qid, 0x8180, 1, len(addrs), 0, 0) + question + rrs, name
    if qtype != 1 or NAMES[name] is None:
        return struct.pack("!HHHHHH", qid, 0x8180, 1, 0, 0, 0) + question, name
    rrs = b"".join(struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(a) for a in NAMES[name])
    return struct.pack("!HHHHHH", qid, 0x8180, 1, len(NAMES[name]), 0, 0) + question + rrs, name


def truncated(q, a):
    """What fits in 512 bytes over UDP: the header with TC set, the question."""
    qid, flags, qd = struct.unpack("!HHH", a[:6])
    i = 12
    while q[i]:
        i += 1 + q[i]
    return struct.pack("!HHHHHH", qid, flags | 0x0200, qd, 0, 0, 0) + q[12:i + 5]


class TCPHandler(socketserver.BaseRequestHandler):
    def read(self, n):
        b = b""
        while len(b) < n:
            k = self.request.recv(n - len(b))
            if not k:
                return None
            b += k
        return b

    def handle(self):
        while True:
            h = self.read(2)
            q = h and self.read(struct.unpack("!H", h)[0])
            if not q:
                return
            try:
                a, name = answer(q)
            except Exception:
                return
            if name == "stall.test" or name.startswith("drop"):
                time.sleep(60)
                return
            if name == "cut.test":
                self.request.sendall(struct.pack("!H", len(a)) + a[:len(a) // 2])
                return
            self.request.sendall(struct.pack("!H", len(a)) + a)


class TCPServer(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


tcp = TCPServer((sys.argv[1], 53), TCPHandler)
threading.Thread(target=tcp.serve_forever, daemon=True).start()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
print("ready", flush=True)
while True:
    q, peer = s.recvfrom(4096)
    try:
        a, name = answer(q)
    except Exception:
        continue
    if name.startswith("drop"):
        continue
    if len(a) > 512:
        a = truncated(q, a)
    if name == "slow.test":
        threading.Timer(0.5, s.sendto, (a, peer)).start()
    else:
        s.sendto(a, peer)
