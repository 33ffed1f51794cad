#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# An npm registry for the dependency tests, over HTTP: every NAME-VERSION.tgz
# in DIR (a gzipped tar with package/package.json, as npm packs it) is a
# version of the package its package.json names, published when the file
# was last modified. GET /NAME (a scoped name as /@SCOPE%2fNAME or
# /@SCOPE/NAME) answers the package's document: each version's
# package.json with dist {tarball, integrity (sha512), shasum}, and "time".
# Tarballs are served from /NAME/-/FILE. Each request's path is appended
# to LOG. Prints "ready" once it listens on ADDR:PORT. Made up for the
# hostile cases: "elsewhere" has its tarball on another host (OTHER,
# HOST:PORT), and "slowpkg" answers after 30 seconds.
#
#   npm-registry.py DIR ADDR PORT LOG OTHER
import base64
import datetime
import hashlib
import http.server
import json
import os
import sys
import tarfile
import time
import urllib.parse

root, addr, port, log, other = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def packages():
    """name -> {version: (file, package.json, bytes, mtime)}"""
    out = {}
    for f in sorted(os.listdir(root)):
        if not f.endswith(".tgz"):
            continue
        p = os.path.join(root, f)
        with tarfile.open(p, "r:gz") as t:
            meta = json.load(t.extractfile("package/package.json"))
        with open(p, "rb") as fh:
            data = fh.read()
        out.setdefault(meta["name"], {})[meta["version"]] = (f, meta, data, os.path.getmtime(p))
    return out


def document(name, versions):
    doc = {"name": name, "versions": {}, "time": {}, "dist-tags": {}}
    for v, (f, meta, data, mtime) in versions.items():
        m = dict(meta)
        m["dist"] = {
            "tarball": f"http://{addr}:{port}/{name}/-/{f}",
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
            "shasum": hashlib.sha1(data).hexdigest(),
        }
        doc["versions"][v] = m
        doc["time"][v] = iso(mtime)
        doc["dist-tags"]["latest"] = v
    if name == "elsewhere":
        for m in doc["versions"].values():
            m["dist"]["tarball"] = f"http://{other}/elsewhere/-/elsewhere-1.0.0.tgz"
    return doc


class Registry(http.server.BaseHTTPRequestHandler):
    def reply(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with open(log, "a") as f:
            f.write(self.path + "\n")
        path = urllib.parse.unquote(self.path.split("?")[0]).strip("/")
        pkgs = packages()
        if "/-/" in path:
            name, f = path.split("/-/", 1)
            for v, (file, meta, data, mtime) in pkgs.get(name, {}).items():
                if file == f:
                    return self.reply(200, data, "application/octet-stream")
            return self.reply(404, b'{"error":"not found"}')
        if path == "slowpkg":
            time.sleep(30)
        if path in pkgs:
            return self.reply(200, json.dumps(document(path, pkgs[path])).encode())
        self.reply(404, b'{"error":"not found"}')

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer((addr, port), Registry)
print("ready", flush=True)
srv.serve_forever()
