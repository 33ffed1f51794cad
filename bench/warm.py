#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# The client half of bench/warm.sh: times warm and cold starts of one-shot
# jobs on the daemon's socket (argv[1]) and prints one line per figure.
import os
import sys
import threading
import time

from sbxbench import Conn, pct, rss_kb

sock_path, runs, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


c = Conn(sock_path)


def pool_ready():
    """Until the tenant's pool has all its sandboxes ready (a job can take
    one), as the daemon's metrics say (in cluster mode too, where "list"
    shows the database's jobs and not the node's sandboxes)."""
    key = 'sbx_warm_sandboxes{tenant="bench",state="ready"} '
    for i in range(2000):
        text = c.req({"op": "metrics"})["metrics"]
        ready = [int(l[len(key):]) for l in text.splitlines() if l.startswith(key)]
        if ready and ready[0] >= warm:
            return
        time.sleep(0.005)
    raise SystemExit("bench: the pool was not made again")


def run(cmd, cold):
    """One run with follow: (its stdout, ms to its end event, warm?)."""
    req = {"op": "run", "command": cmd, "follow": True}
    if cold:
        req["retries"] = 1
    t0 = time.perf_counter()
    c.send(req)
    m = c.follow_end()
    return m["stdout"], (time.perf_counter() - t0) * 1000, m["result"]["warm"]


def first_clock(cold):
    xs, n_warm = [], 0
    for i in range(runs):
        if not cold:
            pool_ready()
        t0 = time.time_ns()
        out, _, w = run(["/clock-first"], cold)
        xs.append((int(out.strip()) - t0) / 1e6)
        n_warm += w
    return "%s, warm %d of %d" % (pct(xs), n_warm, runs)


print("run, request to the command's first clock read (clock-first), warm, ms: " + first_clock(False))
print("run, request to the command's first clock read (clock-first), cold, ms: " + first_clock(True))

for cold in (False, True):
    xs, n_warm = [], 0
    for i in range(runs):
        if not cold:
            pool_ready()
        _, ms, w = run(["true"], cold)
        xs.append(ms)
        n_warm += w
    print("run of true, request to its end event, %s, ms: %s, warm %d of %d" % ("cold" if cold else "warm", pct(xs), n_warm, runs))

# back to back, no waiting for the pool: the first ones are warm, then
# each job takes what has been made again meanwhile or starts cold
pool_ready()
xs, n_warm = [], 0
for i in range(runs):
    _, ms, w = run(["true"], False)
    xs.append(ms)
    n_warm += w
print("run of true back to back (the pool refills meanwhile), ms: %s, warm %d of %d" % (pct(xs), n_warm, runs))

# throughput: CLIENTS connections each running `true` back to back for a
# few seconds, warm (the pool as it is) and cold

def throughput(cold, clients=4, seconds=5.0):
    done = []

    def client():
        cc = Conn(sock_path)
        n = 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            req = {"op": "run", "command": ["true"], "follow": True}
            if cold:
                req["retries"] = 1
            cc.send(req)
            m = cc.follow_end()
            n += 1
            done.append(m["result"]["warm"])
    ts = [threading.Thread(target=client) for i in range(clients)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return len(done) / (time.perf_counter() - t0), sum(done), len(done)


for cold in (True, False):
    pool_ready()
    rate, n_warm, n = throughput(cold)
    print("jobs/s of true, 4 clients, %s: %.1f (warm %d of %d)" % ("cold" if cold else "with the pool", rate, n_warm, n))

# memory: the daemon's, and what each waiting sandbox holds (its launcher
# and its agent), read from /proc
pool_ready()


daemon_pid = int(sys.argv[4])
per = []
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        with open("/proc/%s/comm" % p) as f:
            comm = f.read().strip()
        if comm in ("sbx-launch", ".sbx-init"):
            per.append((comm, rss_kb(int(p))))
    except OSError:
        pass
launch = [k for c, k in per if c == "sbx-launch"]
init = [k for c, k in per if c == ".sbx-init"]
print("daemon RSS with a pool of %d: %d kB; per waiting sandbox: its launcher's (and pid 1's) RSS %s kB, its agent's %s kB"
      % (warm, rss_kb(daemon_pid), "/".join(map(str, sorted(launch))), "/".join(map(str, sorted(init)))))
