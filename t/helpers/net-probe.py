#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Run inside a job: tries each destination given as tcp:ADDR:PORT,
# udp:ADDR:PORT, raw or ping, and prints one line each: the destination,
# then what came back ("ok ...", the server's words) or the errno's name.
import errno
import socket
import sys


def target(spec):
    proto, rest = spec.split(":", 1)
    addr, port = rest.rsplit(":", 1)
    addr = addr.strip("[]")
    return proto, addr, int(port), socket.AF_INET6 if ":" in addr else socket.AF_INET


def probe(spec):
    try:
        if spec == "raw":
            socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()
            return "made"
        if spec == "ping":
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP).close()
            return "made"
        proto, addr, port, fam = target(spec)
        if proto == "tcp":
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.settimeout(20)
            s.connect((addr, port))
            return s.recv(100).decode().strip()
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.settimeout(20)
        s.sendto(b"hello", (addr, port))
        return s.recv(100).decode().strip()
    except socket.timeout:
        return "timeout"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


for spec in sys.argv[1:]:
    print(spec, probe(spec), flush=True)
