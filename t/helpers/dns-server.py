#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# A tiny upstream resolver for the DNS proxy tests, run in the test host's
# namespace, on its first address (argv[1]): db.test -> that address,
# other.test -> argv[2], slow.test -> argv[1] after 3 s; with argv[3] (an
# IPv6 address), v6.test's AAAA -> it; other types: no records; other
# names: NXDOMAIN. (A test fixture; the daemon parses DNS with ldns.)
import socket
import struct
import sys
import threading
import time

NAMES = {"db.test": sys.argv[1], "other.test": sys.argv[2], "slow.test": sys.argv[1], "v6.test": None}
AAAA = {"v6.test": sys.argv[3]} if len(sys.argv) > 3 else {}


def answer(q):
    qid, flags = struct.unpack("!HH", q[:4])
    i, labels = 12, []
    while q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode().lower())
        i += 1 + q[i]
    qtype = struct.unpack("!H", q[i + 1:i + 3])[0]
    question = q[12:i + 5]
    name = ".".join(labels)
    if name not in NAMES:
        return struct.pack("!HHHHHH", qid, 0x8183, 1, 0, 0, 0) + question, name
    if qtype == 28 and name in AAAA:
        rr = struct.pack("!HHHIH", 0xC00C, 28, 1, 60, 16) + socket.inet_pton(socket.AF_INET6, AAAA[name])
        return struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question + rr, name
    if qtype != 1 or NAMES[name] is None:
        return struct.pack("!HHHHHH", qid, 0x8180, 1, 0, 0, 0) + question, name
    rr = struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(NAMES[name])
    return struct.pack("!HHHHHH", qid, 0x8180, 1, 1, 0, 0) + question + rr, name


s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 53))
print("ready", flush=True)
while True:
    q, peer = s.recvfrom(4096)
    try:
        a, name = answer(q)
    except Exception:
        continue
    if name == "slow.test":
        threading.Timer(3, s.sendto, (a, peer)).start()
    else:
        s.sendto(a, peer)
