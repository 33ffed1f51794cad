#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# net-metrics-check.py BEFORE AFTER [DNS]: do the daemon's network counters
# agree with the records of the jobs that ran between two expositions?
# BEFORE and AFTER are files with the exposition (sbxctl metrics); the
# records come on stdin, as sbxctl --json wait prints them, one after
# another. Checks that each sbx_network_events_total{kind,verdict} grew by
# the events of that kind and verdict in the records, and the dropped and
# lost counters by the records' counts; with DNS, that the DNS proxy's
# queries read (every outcome but malformed and rate_limited) grew by the
# records' dns events of queries (those with a "reason" are the addresses
# of withheld answers, not queries).
# A record with dropped or lost events cannot be told apart by kind: it is
# refused, so the check always compares like with like. Prints each
# mismatch; exits 1 if there is one.
import json
import re
import sys

KINDS = ("connect", "sendmsg", "socket", "dns")
VERDICTS = ("allow", "deny")
LINE = re.compile(r"^([a-z_]+)(\{[^}]*\})? (\S+)$")


def exposition(path):
    values = {}
    with open(path) as f:
        for line in f:
            m = LINE.match(line.strip())
            if m:
                values[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return values


def records(text):
    dec = json.JSONDecoder()
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return
        obj, i = dec.raw_decode(text, i)
        yield obj["result"]


def main():
    before, after = exposition(sys.argv[1]), exposition(sys.argv[2])
    dns = len(sys.argv) > 3 and sys.argv[3] == "DNS"
    want = {(k, v): 0 for k in KINDS for v in VERDICTS}
    dropped = lost = n = withheld = 0
    bad = []
    for rec in records(sys.stdin.read()):
        n += 1
        net = rec["network"]
        if net["events_dropped"] or net["events_lost"]:
            bad.append("job %s: %s events dropped, %s lost: not comparable by kind" %
                       (rec.get("id"), net["events_dropped"], net["events_lost"]))
        dropped += net["events_dropped"]
        lost += net["events_lost"]
        for e in rec["network_events"]:
            want[(e["kind"], e["verdict"])] += 1
            if e["kind"] == "dns" and "reason" in e:
                withheld += 1

    def delta(name):
        return after.get(name, 0) - before.get(name, 0)

    for (k, v), count in sorted(want.items()):
        name = 'sbx_network_events_total{kind="%s",verdict="%s"}' % (k, v)
        if name not in after:
            bad.append("%s: not in the exposition" % name)
        elif delta(name) != count:
            bad.append("%s grew by %d; the records have %d" % (name, delta(name), count))
    for name, count in (("sbx_network_events_dropped_total", dropped), ("sbx_network_events_lost_total", lost)):
        if delta(name) != count:
            bad.append("%s grew by %d; the records have %d" % (name, delta(name), count))
    if dns:
        queries = sum(delta(name) for name in after
                      if name.startswith("sbx_network_dns_queries_total{")
                      and 'outcome="malformed"' not in name and 'outcome="rate_limited"' not in name)
        events = want[("dns", "allow")] + want[("dns", "deny")] - withheld
        if queries != events:
            bad.append("the DNS proxy's queries grew by %d; the records have %d dns events" % (queries, events))
    for b in bad:
        print(b)
    print("%d records checked" % n)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
