#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# bench/http.sh's client: N jobs of /bin/true, each submitted with "follow"
# and timed to its end event, over the daemon's socket (NDJSON), over HTTP
# and over HTTPS (both keep-alive, one connection per client). Sequential
# latencies (p50, p95) per path, in alternating rounds so that drift hits
# every path alike; then jobs/s with C clients at once per path.
import http.client, json, socket, ssl, statistics, sys, threading, time

sock_path, port, tport, token, ca, n, clients, rounds = sys.argv[1:9]
n, clients, rounds = int(n), int(clients), int(rounds)
RUN = {"command": ["/bin/true"], "follow": True}

class Sock:
    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(sock_path)
        self.f = self.s.makefile("rb")
    def job(self):
        self.s.sendall((json.dumps(dict(RUN, v=1, op="run")) + "\n").encode())
        while True:
            m = json.loads(self.f.readline())
            if m.get("ok") is False:
                raise SystemExit("socket: %s" % m)
            if m.get("event") == "end":
                return

    def ping(self):
        self.s.sendall(b'{"v":1,"op":"ping"}\n')
        m = json.loads(self.f.readline())
        assert m["ok"], m

class Http:
    def __init__(self, tls):
        if tls:
            self.c = http.client.HTTPSConnection("127.0.0.1", int(tport), context=ssl.create_default_context(cafile=ca))
        else:
            self.c = http.client.HTTPConnection("127.0.0.1", int(port))
        self.h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
        self.body = json.dumps(RUN)
    def job(self):
        self.c.request("POST", "/v1/jobs", self.body, self.h)
        r = self.c.getresponse()
        data = r.read()
        if r.status != 200 or b'"event":"end"' not in data:
            raise SystemExit("http: %d %s" % (r.status, data[:200]))

    def ping(self):
        self.c.request("GET", "/v1/ping", headers=self.h)
        r = self.c.getresponse()
        r.read()
        assert r.status == 200, r.status

paths = {"socket": lambda: Sock(), "http": lambda: Http(False), "https": lambda: Http(True)}

def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))]

lat = {k: [] for k in paths}
conns = {k: f() for k, f in paths.items()}
for c in conns.values():
    for i in range(5):  # warm up
        c.job()
for r in range(rounds):
    for k, c in conns.items():
        for i in range(n // rounds):
            t = time.perf_counter()
            c.job()
            lat[k].append((time.perf_counter() - t) * 1000)
# A request without a job: what the path itself costs.
plat = {k: [] for k in paths}
for r in range(rounds):
    for k, c in conns.items():
        for i in range(n * 5 // rounds):
            t = time.perf_counter()
            c.ping()
            plat[k].append((time.perf_counter() - t) * 1000)
print("sequential ping round trip, %d per path in %d alternating rounds:" % (n * 5, rounds))
for k, v in plat.items():
    print("  %-7s p50 %.3f ms  p95 %.3f ms" % (k, pct(v, 0.5), pct(v, 0.95)))
print("  http adds p50 %+.3f ms, https %+.3f ms over the socket" %
      (pct(plat["http"], 0.5) - pct(plat["socket"], 0.5), pct(plat["https"], 0.5) - pct(plat["socket"], 0.5)))
print("sequential submit->end latency, %d jobs per path in %d alternating rounds:" % (n, rounds))
for k, v in lat.items():
    print("  %-7s p50 %.2f ms  p95 %.2f ms" % (k, pct(v, 0.5), pct(v, 0.95)))
print("  http adds p50 %+.2f ms, https %+.2f ms over the socket" %
      (pct(lat["http"], 0.5) - pct(lat["socket"], 0.5), pct(lat["https"], 0.5) - pct(lat["socket"], 0.5)))

def throughput(k):
    per = n // clients
    cs = [paths[k]() for i in range(clients)]
    def work(c):
        for i in range(per):
            c.job()
    ts = [threading.Thread(target=work, args=(c,)) for c in cs]
    t = time.perf_counter()
    for x in ts: x.start()
    for x in ts: x.join()
    return per * clients / (time.perf_counter() - t)

print("throughput with %d clients, %d jobs per path:" % (clients, n))
tp = {}
for k in paths:
    tp[k] = throughput(k)
    print("  %-7s %.0f jobs/s" % (k, tp[k]))
print("  http keeps %.0f %% of the socket's jobs/s, https %.0f %%" % (100 * tp["http"] / tp["socket"], 100 * tp["https"] / tp["socket"]))
