#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Run inside a job: talks DNS over TCP to the job's proxy (127.0.0.1:53),
# each message after its length in two bytes, and prints one line per
# argument: the argument, then what came of it.
#   query:NAME            one A query on a connection of its own: "rcode N
#                         ADDR,ADDR..." or "closed"
#   pipeline:NAME:N       N queries sent at once on one connection, then N
#                         answers read: "answers K rcode R in-order yes|no"
#   conns:NAME:N          N connections open at once, then a query on each:
#                         "answered A closed C"
#   stall:HOW:N           N connections that send part of a query and wait:
#                         HOW is "prefix" (one byte of the length) or
#                         "message" (a length of 30 and 10 bytes); "closed K"
#                         (each closed by the proxy within 60 s)
#   badlen:L              a length of L (and, if any, L bytes of garbage):
#                         "closed" or "answered"
#   garbage               20 bytes that are no DNS query: "closed" or ...
#   noread:NAME:N         a connection that sends N queries and never reads
#                         the answers: "sent S closed" once the proxy closes it
#   name:NAME:PORT        getaddrinfo (glibc), then a TCP connect to its first
#                         address: "count N" and the server's words, or
#                         "unresolved"
#   nameany:NAME:PORT     the same for any family: glibc asks A and AAAA at
#                         once, over TCP too once truncated
#   tcp:ADDR:PORT         a TCP connect: the server's words
import select
import socket
import struct
import sys
import time

PROXY = ("127.0.0.1", 53)


def qmsg(name, qid):
    qname = b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\0"
    return struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0) + qname + struct.pack("!HH", 1, 1)


def framed(m):
    return struct.pack("!H", len(m)) + m


def read_exact(s, n):
    b = b""
    while len(b) < n:
        k = s.recv(n - len(b))
        if not k:
            return None
        b += k
    return b


def read_msg(s):
    try:
        h = read_exact(s, 2)
        return h and read_exact(s, struct.unpack("!H", h)[0])
    except (ConnectionResetError, socket.timeout):
        return None


def addrs(a):
    """The A records of an answer (names compressed to the question's)."""
    i = 12
    while a[i]:
        i += 1 + a[i]
    i += 5
    out = []
    for _ in range(struct.unpack("!H", a[6:8])[0]):
        rtype, _, _, rdlen = struct.unpack("!HHIH", a[i + 2:i + 12])
        if rtype == 1:
            out.append(socket.inet_ntoa(a[i + 12:i + 12 + rdlen]))
        i += 12 + rdlen
    return out


def connect():
    s = socket.create_connection(PROXY, timeout=60)
    return s


def closed(s, timeout=60):
    """True when the proxy closes s (end of file or reset) in time."""
    s.settimeout(timeout)
    try:
        while True:
            if not s.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def query(name):
    s = connect()
    s.sendall(framed(qmsg(name, 1)))
    a = read_msg(s)
    if a is None:
        return "closed"
    return "rcode %d %s" % (a[3] & 0xF, ",".join(addrs(a)))


def pipeline(name, n):
    s = connect()
    s.sendall(b"".join(framed(qmsg(name, i)) for i in range(n)))
    ids, rcodes = [], set()
    for _ in range(n):
        a = read_msg(s)
        if a is None:
            break
        ids.append(struct.unpack("!H", a[:2])[0])
        rcodes.add(a[3] & 0xF)
    return "answers %d rcode %s in-order %s" % (len(ids), ",".join(map(str, sorted(rcodes))),
                                                 "yes" if ids == list(range(len(ids))) else "no")


def conns(name, n):
    ss = [connect() for _ in range(n)]
    answered = shut = 0
    for i, s in enumerate(ss):
        try:
            s.sendall(framed(qmsg(name, i)))
        except (BrokenPipeError, ConnectionResetError):
            pass
    for s in ss:
        if read_msg(s) is None:
            shut += 1
        else:
            answered += 1
    return "answered %d closed %d" % (answered, shut)


def stall(how, n):
    ss = [connect() for _ in range(n)]
    for s in ss:
        s.sendall(b"\0" if how == "prefix" else struct.pack("!H", 30) + b"\0" * 10)
    return "closed %d" % sum(closed(s) for s in ss)


def badlen(n):
    s = connect()
    s.sendall(struct.pack("!H", n) + b"\xff" * n)
    return "closed" if closed(s) else "answered"


def garbage():
    s = connect()
    s.sendall(framed(b"\x12\x34" + b"\xff" * 18))
    return "closed" if closed(s) else "answered"


def noread(name, n):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(PROXY)
    s.setblocking(False)
    data = b"".join(framed(qmsg(name, i % 65536)) for i in range(n))
    sent, start = 0, time.monotonic()
    # as much as the proxy takes; it stops reading once its answers wait
    while sent < len(data) and time.monotonic() - start < 20:
        try:
            sent += s.send(data[sent:])
        except BlockingIOError:
            select.select([], [s], [], 1)
        except OSError:
            break  # closed by the proxy already
    # then wait, never reading, for the proxy to close it
    p = select.poll()
    p.register(s, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
    shut = bool(p.poll(60000))
    return "sent %d of %d closed %s" % (sent, len(data), "yes" if shut else "no")


def reach(addr):
    s = socket.create_connection(addr, timeout=20)
    return s.recv(100).decode().strip()


def name(host, port, fam=socket.AF_INET):
    try:
        res = socket.getaddrinfo(host, port, fam, socket.SOCK_STREAM)
    except socket.gaierror:
        return "unresolved"
    return "count %d %s" % (len(res), reach(res[0][4]))


def probe(spec):
    kind, _, rest = spec.partition(":")
    args = rest.split(":") if rest else []
    try:
        if kind == "query":
            return query(args[0])
        if kind == "pipeline":
            return pipeline(args[0], int(args[1]))
        if kind == "conns":
            return conns(args[0], int(args[1]))
        if kind == "stall":
            return stall(args[0], int(args[1]))
        if kind == "badlen":
            return badlen(int(args[0]))
        if kind == "garbage":
            return garbage()
        if kind == "noread":
            return noread(args[0], int(args[1]))
        if kind == "name":
            return name(args[0], int(args[1]))
        if kind == "nameany":
            return name(args[0], int(args[1]), socket.AF_UNSPEC)
        if kind == "tcp":
            return reach((args[0], int(args[1])))
        return "unknown probe"
    except OSError as e:
        return "error %s" % e


for spec in sys.argv[1:]:
    print(spec, probe(spec), flush=True)
