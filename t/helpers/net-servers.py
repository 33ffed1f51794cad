#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Servers for the network tests, run inside a test-made network namespace:
# each argument is tcp:ADDR:PORT or udp:ADDR:PORT ([ADDR]:PORT for IPv6).
# A TCP server sends "ok ADDR:PORT\n" (as given) to each client and closes;
# a UDP server answers each datagram the same way. Prints "ready" once every socket listens.
import select
import socket
import sys

socks = {}
for spec in sys.argv[1:]:
    proto, where = spec.split(":", 1)
    addr, port = where.rsplit(":", 1)
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr.strip("[]"), int(port)))
    if proto == "tcp":
        s.listen(128)
    socks[s] = (proto, ("ok %s:%s\n" % (addr, port)).encode())
print("ready", flush=True)
while True:
    for s in select.select(list(socks), [], [])[0]:
        proto, msg = socks[s]
        if proto == "tcp":
            c, _ = s.accept()
            try:
                c.sendall(msg)
            finally:
                c.close()
        else:
            _, peer = s.recvfrom(2048)
            s.sendto(msg, peer)
