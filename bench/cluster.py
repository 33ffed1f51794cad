#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# bench/cluster.sh's client: jobs through the nodes' sockets, and the
# database asked with psql.
#   cluster.py rate SOCK[,SOCK...] CLIENTS JOBS
#       CLIENTS clients at once, each running JOBS jobs of `true` (run with
#       follow: request to the end event), round-robin over the sockets;
#       prints jobs/s and the submit -> result latency.
#   cluster.py burst SOCK[,SOCK...] JOBS CONNINFO
#       JOBS submitted at once by 8 clients (no follow), then waited for;
#       prints the deepest queue the database saw, the time to drain it,
#       refusals.
#   cluster.py failover SOCK[,SOCK...] CONNINFO PIDFILE NODE OTHER[,OTHER]
#       four long jobs with a retry, run by NODE alone (the OTHERs drain
#       meanwhile, and are back with room); NODE (pid in PIDFILE) is
#       killed; prints the time from its death to each of its jobs running
#       on another node.
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


def burst(socks, jobs, conninfo, clients=8):
    """jobs submitted by `clients` threads at once; the queue's depth
    watched from the first submission."""
    refused = [0]
    lock = threading.Lock()
    done_submitting = threading.Event()
    depth = [0]

    def watch():
        while True:
            q = int(sql(conninfo, "SELECT count(*) FROM sbx_jobs WHERE state <> 'done'"))
            depth[0] = max(depth[0], q)
            if q == 0 and done_submitting.is_set():
                return
            time.sleep(0.02)

    def client(k):
        conns = [Conn(s) for s in socks]
        bad = 0
        for i in range(k, jobs, clients):
            c = conns[i % len(conns)]
            c.send({"op": "run", "command": ["true"]})
            if '"ok": true' not in c.f.readline().replace('"ok":true', '"ok": true'):
                bad += 1
        with lock:
            refused[0] += bad

    t0 = time.monotonic()
    w = threading.Thread(target=watch)
    w.start()
    ts = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    submitted = time.monotonic() - t0
    done_submitting.set()
    w.join()
    drained = time.monotonic() - t0
    print("  burst of %d from %d clients: submitted in %.2f s (%.0f/s), refused %d, deepest queue %d, all done after %.2f s (%.1f jobs/s)"
          % (jobs, clients, submitted, jobs / submitted, refused[0], depth[0], drained, (jobs - refused[0]) / drained))


def failover(socks, conninfo, pidfile, node, others):
    """Long jobs with a retry, claimed by `node` alone (the others drain
    meanwhile); the others take them back with room to run them; `node`
    is killed."""
    conns = [Conn(s) for s in socks]
    for o in others:
        conns[0].req({"op": "drain", "node": o})
    time.sleep(1.5)
    for i in range(4):
        conns[i % len(conns)].req({"op": "run", "command": ["sleep", "30"], "retries": 1})
    victims = []
    for _ in range(400):
        victims = sql(conninfo, "SELECT id FROM sbx_jobs WHERE node = '%s' AND state = 'running'" % node).split()
        if len(victims) >= 4:
            break
        time.sleep(0.05)
    for o in others:
        conns[0].req({"op": "drain", "node": o, "undo": True})
    with open(pidfile) as f:
        pid = int(f.read())
    os.kill(pid, signal.SIGKILL)
    t0 = time.monotonic()
    moved = {}
    ids = ",".join("'%s'" % v for v in victims)
    while len(moved) < len(victims) and time.monotonic() - t0 < 120:
        for row in sql(conninfo, "SELECT id FROM sbx_jobs WHERE id IN (%s) AND state = 'running' AND attempt = 2" % ids).split():
            moved.setdefault(row, (time.monotonic() - t0) * 1000)
        time.sleep(0.02)
    print("  %s killed holding %d jobs: each running on another node after ms: %s"
          % (node, len(victims), " ".join("%.0f" % v for v in sorted(moved.values()))))
    for jid in victims:
        conns[0].req({"op": "cancel", "job": jid})


def main():
    what, socks = sys.argv[1], sys.argv[2].split(",")
    if what == "rate":
        rate(socks, int(sys.argv[3]), int(sys.argv[4]))
    elif what == "burst":
        burst(socks, int(sys.argv[3]), sys.argv[4])
    elif what == "failover":
        failover(socks, sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6].split(","))


if __name__ == "__main__":
    main()
