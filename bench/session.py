#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# The client half of bench/session.sh: times sessions on the daemon's
# socket (argv[1]) and prints one line per figure.
import os
import sys
import time

from sbxbench import Conn, pct, rss_kb

sock_path, runs, idle_n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def ready(c, sid):
    while c.req({"op": "session.show", "session": sid})["state"] != "ready":
        time.sleep(0.0005)


c = Conn(sock_path)

# 1. create to ready
creates = []
for i in range(max(10, runs // 20)):
    t0 = time.perf_counter()
    sid = c.req({"op": "session.create", "ttl_s": 600})["session"]
    ready(c, sid)
    creates.append((time.perf_counter() - t0) * 1000)
    c.req({"op": "session.close", "session": sid})
print("session create to ready, ms: " + pct(creates))

sid = c.req({"op": "session.create", "ttl_s": 600})["session"]
ready(c, sid)

# 2. request to the command's first instruction: the command reads the
# clock first thing, on the same CLOCK_REALTIME as ours: clock-first
# (static, in a session of the profile that binds it) and date (dynamic).
def first_clock(sid, cmd):
    xs = []
    for i in range(runs):
        t0 = time.time_ns()
        c.send({"op": "session.exec", "session": sid, "command": cmd, "follow": True})
        xs.append((int(c.follow_end()["stdout"].strip()) - t0) / 1e6)
    return pct(xs)


csid = c.req({"op": "session.create", "ttl_s": 600, "profile": "clock"})["session"]
ready(c, csid)
print("exec, request to the command's first clock read (clock-first, static), ms: %s" % first_clock(csid, ["/clock-first"]))
c.req({"op": "session.close", "session": csid})
print("exec, request to the command's first clock read (date +%%s%%N, dynamic), ms: %s" % first_clock(sid, ["date", "+%s%N"]))

# 3. round trip of true, and the same as a one-shot job
rt, one = [], []
for i in range(runs):
    t0 = time.perf_counter()
    c.send({"op": "session.exec", "session": sid, "command": ["true"], "follow": True})
    c.follow_end()
    rt.append((time.perf_counter() - t0) * 1000)
    if i % 2 == 0:
        t0 = time.perf_counter()
        c.send({"op": "run", "command": ["true"], "follow": True})
        c.follow_end()
        one.append((time.perf_counter() - t0) * 1000)
print("exec of true in a live session, request to its end event, ms: " + pct(rt))
print("one-shot job of true (run), request to its end event, ms: " + pct(one))
c.req({"op": "session.close", "session": sid})

# 5. a service's round trip through the proxy against the same client
# inside the sandbox, straight to the server: a 1 KiB answer, on one
# keep-alive connection and on a new connection each time.
svc_port = int(sys.argv[5])
here = os.path.dirname(os.path.abspath(__file__))
sid = c.req({"op": "session.create", "ttl_s": 600})["session"]
ready(c, sid)
for name in ("service-server.py", "service-client.py"):
    with open(os.path.join(here, name)) as f:
        c.req({"op": "session.put", "session": sid, "path": name, "data": f.read()})
c.send({"op": "session.exec", "session": sid, "command": ["sh", "-c", "python3 service-server.py 8000 >srv.log 2>&1 &"], "follow": True})
c.follow_end()
ex = c.req({"op": "session.expose", "session": sid, "port": 8000})
n = max(50, runs // 2)


def stats(lines):
    out = {}
    for line in lines.strip().splitlines():
        name, *xs = line.split()
        out[name] = [float(x) for x in xs]
    return out


def exec_out(cmd):
    c.send({"op": "session.exec", "session": sid, "command": cmd, "follow": True})
    return c.follow_end()["stdout"]


# the server is up once a request inside answers
exec_out(["python3", "-c", "import socket, time\nfor i in range(400):\n    try:\n        socket.create_connection(('127.0.0.1', 8000)).close(); break\n    except OSError: time.sleep(0.025)"])
inside = stats(exec_out(["python3", "service-client.py", "127.0.0.1", "8000", "localhost", "-", str(n)]))
import subprocess
proxied = stats(subprocess.run(["/usr/bin/python3", os.path.join(here, "service-client.py"), "127.0.0.1", str(svc_port), ex["host"],
                                ex["token"], str(n)], check=True, capture_output=True, text=True).stdout)
for kind in ("keepalive", "fresh"):
    a, b = inside[kind], proxied[kind]
    p50 = lambda xs: xs[len(xs) // 2]
    print("service GET of 1 KiB, %s connection, ms: direct in the sandbox p50 %.3f p95 %.3f; through the proxy p50 %.3f p95 %.3f;"
          " ratio of p50s %.2f" % ("one keep-alive" if kind == "keepalive" else "a new", p50(a), a[int(len(a) * 0.95)], p50(b),
                                   b[int(len(b) * 0.95)], p50(b) / p50(a)))
c.req({"op": "session.close", "session": sid})


# 4. memory: the daemon's RSS with idle sessions, and an agent's own
daemon = int(sys.argv[4])
time.sleep(0.5)
before = rss_kb(daemon)
sids = []
for i in range(idle_n):
    sids.append(c.req({"op": "session.create", "ttl_s": 600, "idle_s": 600})["session"])
for s in sids:
    ready(c, s)
after = rss_kb(daemon)
agents = []
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                if f.read().startswith(b"/.sbx-init"):
                    agents.append(rss_kb(int(p)))
        except OSError:
            pass
print("daemon RSS: %d kB before, %d kB with %d idle sessions: %.1f kB more per session"
      % (before, after, idle_n, (after - before) / max(1, idle_n)))
if agents:
    print("sbx-init RSS per session, kB: min %d  max %d  (n %d)" % (min(agents), max(agents), len(agents)))
for s in sids:
    c.req({"op": "session.close", "session": s})
