#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# The client half of bench/warm.sh: times warm and cold starts of one-shot
# jobs on the daemon's socket (argv[1]) and prints one line per figure.
import sys
import time

from sbxbench import Conn, pct

sock_path, runs, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


c = Conn(sock_path)


def pool_ready():
    """Until the tenant's pool has all its sandboxes running (listed, with
    the agent's command) and the daemon has had time to connect to them."""
    for i in range(2000):
        jobs = c.req({"op": "list", "state": "running"})["jobs"]
        boxes = [j for j in jobs if j.get("command") == ["sbx-init"]]
        if len(boxes) >= warm:
            time.sleep(0.02)
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
