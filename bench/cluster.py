#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# bench/cluster.sh's client: jobs through the nodes' sockets, and the
# database asked with psql.
#   cluster.py rate SOCK[,SOCK...] CLIENTS JOBS
#       CLIENTS clients at once, each running JOBS jobs of `true` (run with
#       follow: request to the end event), round-robin over the sockets;
#       prints jobs/s and the submit -> result latency.
#   cluster.py burst SOCK[,SOCK...] JOBS CONNINFO
#       JOBS submitted at once (no follow), then waited for; prints the
#       deepest queue the database saw, the time to drain it, refusals.
#   cluster.py failover SOCK[,SOCK...] CONNINFO PIDFILE NODE
#       long jobs with a retry; the node NODE (pid in PIDFILE) is killed
#       once it runs some; prints the time from its death to each of its
#       jobs running on another node.
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sbxbench import Conn, pct  # noqa: E402


def sql(conninfo, q):
    return subprocess.run(["psql", "-XAtq", conninfo, "-c", q], check=True, capture_output=True, text=True).stdout.strip()


def rate(socks, clients, jobs):
    lat = []
    lock = threading.Lock()

    def client(k):
        mine = []
        conns = [Conn(s) for s in socks]
        for i in range(jobs):
            c = conns[(k + i) % len(conns)]
            t0 = time.monotonic()
            c.send({"op": "run", "command": ["true"], "follow": True})
            c.recv()
            m = c.follow_end()
            if m["result"]["state"] != "succeeded":
                raise SystemExit("bench: a job ended %s" % m["result"]["state"])
            mine.append((time.monotonic() - t0) * 1000)
        with lock:
            lat.extend(mine)

    t0 = time.monotonic()
    ts = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.monotonic() - t0
    print("  %d clients x %d jobs: %.1f jobs/s; submit -> result ms: %s" % (clients, jobs, clients * jobs / wall, pct(lat)))


def burst(socks, jobs, conninfo):
    conns = [Conn(s) for s in socks]
    ids, refused = [], 0
    t0 = time.monotonic()
    for i in range(jobs):
        c = conns[i % len(conns)]
        c.send({"op": "run", "command": ["true"]})
        m = c.f.readline()
        if '"ok":true' in m.replace(" ", ""):
            ids.append(m)
        else:
            refused += 1
    submitted = time.monotonic() - t0
    deepest = 0
    while True:
        q = int(sql(conninfo, "SELECT count(*) FROM sbx_jobs WHERE state <> 'done'"))
        deepest = max(deepest, q)
        if q == 0:
            break
        time.sleep(0.05)
    drained = time.monotonic() - t0
    print("  burst of %d: submitted in %.2f s (%.0f/s), refused %d, deepest queue %d, all done after %.2f s (%.1f jobs/s)"
          % (jobs, submitted, jobs / submitted, refused, deepest, drained, len(ids) / drained))


def failover(socks, conninfo, pidfile, node):
    conns = [Conn(s) for s in socks]
    for i in range(12):
        conns[i % len(conns)].req({"op": "run", "command": ["sleep", "30"], "retries": 1})
    victims = []
    for _ in range(200):
        victims = sql(conninfo, "SELECT id FROM sbx_jobs WHERE node = '%s' AND state = 'running'" % node).split()
        if len(victims) >= 2:
            break
        time.sleep(0.05)
    with open(pidfile) as f:
        pid = int(f.read())
    os.kill(pid, signal.SIGKILL)
    t0 = time.monotonic()
    moved = {}
    ids = ",".join("'%s'" % v for v in victims)
    while len(moved) < len(victims) and time.monotonic() - t0 < 120:
        for row in sql(conninfo, "SELECT id, node FROM sbx_jobs WHERE id IN (%s) AND state = 'running' AND attempt = 2" % ids).split():
            jid = row.split("|")[0]
            moved.setdefault(jid, (time.monotonic() - t0) * 1000)
        time.sleep(0.02)
    print("  %s killed holding %d jobs: each running on another node after ms: %s"
          % (node, len(victims), " ".join("%.0f" % v for v in sorted(moved.values()))))
    # the rest go away
    sql(conninfo, "UPDATE sbx_jobs SET cancel = true WHERE state <> 'done'")
    for jid in sql(conninfo, "SELECT id FROM sbx_jobs WHERE state <> 'done'").split():
        for c in conns:
            try:
                c.req({"op": "cancel", "job": jid})
                break
            except SystemExit:
                continue


def main():
    what, socks = sys.argv[1], sys.argv[2].split(",")
    if what == "rate":
        rate(socks, int(sys.argv[3]), int(sys.argv[4]))
    elif what == "burst":
        burst(socks, int(sys.argv[3]), sys.argv[4])
    elif what == "failover":
        failover(socks, sys.argv[3], sys.argv[4], sys.argv[5])


if __name__ == "__main__":
    main()
