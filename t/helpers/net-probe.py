#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Run inside a job: tries each destination given as tcp:ADDR:PORT,
# udp:ADDR:PORT ([ADDR]:PORT for IPv6), name:HOST:PORT (resolved to an IPv4
# address, then TCP), name6:HOST:PORT (the same with IPv6), dnsburst:HOST:N (N
# queries at once to 127.0.0.1:53, then the answers counted), dnsseq:HOST:N
# (N queries one after the other, each answer awaited), dnsflood:
# HOST:N:SECONDS (N queries, the answers counted for SECONDS), raw or ping,
# dnsq:udp|tcp:A|AAAA:HOST (one query to 127.0.0.1:53: "rcode N ADDR,..."),
# dnst:udp|tcp:A|AAAA:HOST (the same, then "in S s", the seconds it took),
# connect:ADDR:PORT (a TCP connect only: "connected" or the errno's name),
# gwconnect:PORT (the same to the job's default gateway, IPv4),
# gai:HOST (getaddrinfo, any family: "resolved" or "failed", and the
# seconds it took), names:PREFIX:N (N A queries of PREFIX0.test,
# PREFIX1.test, ...: "refused K first_refused I"), and prints one line
# each: the destination, then what came back ("ok ...", the server's
# words) or the errno's name.
import errno
import socket
import struct
import sys
import time


def target(spec):
    proto, rest = spec.split(":", 1)
    addr, port = rest.rsplit(":", 1)
    addr = addr.strip("[]")
    return proto, addr, int(port), socket.AF_INET6 if ":" in addr else socket.AF_INET


def burst(host, n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    qname = b"".join(bytes([len(l)]) + l.encode() for l in host.split(".")) + b"\0"
    for i in range(n):
        s.sendto(struct.pack("!HHHHHH", i, 0x0100, 1, 0, 0, 0) + qname + struct.pack("!HH", 1, 1), ("127.0.0.1", 53))
    answered = refused = 0
    s.settimeout(10)
    try:
        while answered + refused < n:
            a = s.recv(4096)
            if a[3] & 0xF == 5:
                refused += 1
            else:
                answered += 1
    except socket.timeout:
        pass
    return "answered %d refused %d" % (answered, refused)


def seq(host, n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(10)
    qname = b"".join(bytes([len(l)]) + l.encode() for l in host.split(".")) + b"\0"
    answered = refused = 0
    first_refused = -1
    for i in range(n):
        s.sendto(struct.pack("!HHHHHH", i, 0x0100, 1, 0, 0, 0) + qname + struct.pack("!HH", 1, 1), ("127.0.0.1", 53))
        try:
            a = s.recv(4096)
        except socket.timeout:
            break
        if a[3] & 0xF == 5:
            refused += 1
            if first_refused < 0:
                first_refused = i
        else:
            answered += 1
    return "answered %d refused %d first_refused %d" % (answered, refused, first_refused)


def flood(host, n, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    qname = b"".join(bytes([len(l)]) + l.encode() for l in host.split(".")) + b"\0"
    start = time.monotonic()
    for i in range(n):
        s.sendto(struct.pack("!HHHHHH", i, 0x0100, 1, 0, 0, 0) + qname + struct.pack("!HH", 1, 1), ("127.0.0.1", 53))
    answered = 0
    while time.monotonic() - start < seconds:
        s.settimeout(max(0.01, seconds - (time.monotonic() - start)))
        try:
            s.recv(4096)
            answered += 1
        except socket.timeout:
            pass
    return "answered %d in %.1f s" % (answered, time.monotonic() - start)


def qmsg(host, qtype, qid=1):
    qname = b"".join(bytes([len(l)]) + l.encode() for l in host.split(".")) + b"\0"
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + qname + struct.pack("!HH", qtype, 1)


def rrs(a):
    """The A and AAAA records of an answer, as text."""
    i = 12
    while a[i]:
        i += 1 + a[i]
    i += 5
    out = []
    for _ in range(struct.unpack("!H", a[6:8])[0]):
        rtype, _, _, rdlen = struct.unpack("!HHIH", a[i + 2:i + 12])
        if rtype == 1:
            out.append(socket.inet_ntop(socket.AF_INET, a[i + 12:i + 12 + rdlen]))
        elif rtype == 28:
            out.append(socket.inet_ntop(socket.AF_INET6, a[i + 12:i + 12 + rdlen]))
        i += 12 + rdlen
    return out


def dnsq(proto, qtype, host):
    m = qmsg(host, 28 if qtype == "AAAA" else 1)
    if proto == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(10)
        s.sendto(m, ("127.0.0.1", 53))
        a = s.recv(4096)
    else:
        s = socket.create_connection(("127.0.0.1", 53), timeout=10)
        s.sendall(struct.pack("!H", len(m)) + m)
        b = b""
        while len(b) < 2 or len(b) < 2 + struct.unpack("!H", b[:2])[0]:
            k = s.recv(65536)
            if not k:
                return "closed"
            b += k
        a = b[2:]
    return "rcode %d %s" % (a[3] & 0xF, ",".join(rrs(a)))


def gateway():
    with open("/proc/net/route") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == "00000000":
                return socket.inet_ntoa(struct.pack("<I", int(fields[2], 16)))
    return None


def connect_only(addr, port):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect((addr, port))
    return "connected"


def names(prefix, n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(10)
    refused, first = 0, -1
    for i in range(n):
        s.sendto(qmsg("%s%d.test" % (prefix, i), 1, i), ("127.0.0.1", 53))
        a = s.recv(4096)
        if a[3] & 0xF == 5:
            refused += 1
            if first < 0:
                first = i
    return "refused %d first_refused %d" % (refused, first)


def probe(spec):
    try:
        if spec.startswith("dnsq:"):
            _, proto, qtype, host = spec.split(":")
            return dnsq(proto, qtype, host)
        if spec.startswith("dnst:"):
            _, proto, qtype, host = spec.split(":")
            start = time.monotonic()
            what = dnsq(proto, qtype, host)
            return "%s in %.1f s" % (what, time.monotonic() - start)
        if spec.startswith("connect:"):
            _, rest = spec.split(":", 1)
            addr, port = rest.rsplit(":", 1)
            return connect_only(addr.strip("[]"), int(port))
        if spec.startswith("gwconnect:"):
            return connect_only(gateway(), int(spec.split(":")[1]))
        if spec.startswith("gai:"):
            start = time.monotonic()
            try:
                socket.getaddrinfo(spec[4:], 80, socket.AF_UNSPEC, socket.SOCK_STREAM)
                what = "resolved"
            except socket.gaierror:
                what = "failed"
            return "%s in %.1f s" % (what, time.monotonic() - start)
        if spec.startswith("names:"):
            _, prefix, n = spec.split(":")
            return names(prefix, int(n))
        if spec.startswith("dnsflood:"):
            _, host, n, seconds = spec.split(":")
            return flood(host, int(n), float(seconds))
        if spec.startswith("dnsseq:"):
            _, host, n = spec.split(":")
            return seq(host, int(n))
        if spec.startswith("dnsburst:"):
            _, host, n = spec.split(":")
            return burst(host, int(n))
        if spec.startswith("name:") or spec.startswith("name6:"):
            kind, host, port = spec.split(":")
            fam = socket.AF_INET6 if kind == "name6" else socket.AF_INET
            try:
                addr = socket.getaddrinfo(host, int(port), fam, socket.SOCK_STREAM)[0][4]
            except socket.gaierror:
                return "unresolved"
            s = socket.socket(fam)
            s.settimeout(20)
            s.connect(addr)
            return s.recv(100).decode().strip()
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
