#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# What the benchmarks' Python clients share: a connection to the daemon's
# socket speaking sbx-protocol(7), percentiles as they print them, and a
# process's resident set.
import json
import socket


class Conn:
    def __init__(self, sock_path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(sock_path)
        self.f = self.s.makefile("rw")

    def send(self, o):
        o["v"] = 1
        self.f.write(json.dumps(o) + "\n")
        self.f.flush()

    def recv(self):
        m = json.loads(self.f.readline())
        if m.get("ok") is False:
            raise SystemExit("bench: daemon said %s" % m["error"])
        return m

    def req(self, o):
        self.send(o)
        return self.recv()

    def follow_end(self):
        """The end event of the job just sent with follow, and what it
        printed on stdout meanwhile."""
        out = ""
        while True:
            m = self.recv()
            if m.get("event") == "output" and m.get("stream") == "stdout":
                out += m.get("data", "")
            if m.get("event") == "end":
                m["stdout"] = out
                return m


def pct(xs):
    xs = sorted(xs)
    at = lambda p: xs[min(len(xs) - 1, int(len(xs) * p))]
    return "p50 %.2f  p95 %.2f  p99 %.2f  (n %d)" % (at(0.50), at(0.95), at(0.99), len(xs))


def rss_kb(pid):
    """A process's resident set (VmRSS), in kB; 0 when it has none."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
