#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# A PEP 503 "simple" package index for the dependency tests, over HTTP:
# every wheel in DIR is listed under /simple/NAME/ (NAME normalised) with
# a link to /files/WHEEL#sha256=HEX, and served from there. Each request's
# path is appended to LOG. Prints "ready" once it listens on ADDR:PORT.
# Three projects are made up for the hostile cases: "sdistonly" lists only
# a source archive (whose setup.py would fetch /ran-setup if it ran),
# "elsewhere" a wheel on another host (OTHER, HOST:PORT), and "slowpkg"
# answers after 30 seconds. The page of "sbxlate" comes after 4 seconds.
# A request whose Accept asks for PEP 691 JSON and not HTML gets the
# project's page as JSON, each file with its PEP 700 upload-time (the
# wheel's modification time).
#
#   pip-index.py DIR ADDR PORT LOG OTHER
import hashlib
import http.server
import os
import datetime
import json
import re
import sys
import time

root, addr, port, log, other = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
MADE_UP = {
    "sdistonly": '<a href="/files/sdistonly-1.0.tar.gz#sha256=' + "0" * 64 + '">sdistonly-1.0.tar.gz</a>',
    "elsewhere": f'<a href="http://{other}/files/elsewhere-1.0-py3-none-any.whl">elsewhere-1.0-py3-none-any.whl</a>',
}


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


class Index(http.server.BaseHTTPRequestHandler):
    def reply(self, code, body, ctype="text/html"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with open(log, "a") as f:
            f.write(self.path + "\n")
        wheels = sorted(w for w in os.listdir(root) if w.endswith(".whl"))
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        if len(parts) == 2 and parts[0] == "simple" and norm(parts[1]) in MADE_UP:
            return self.reply(200, ("<html><body>" + MADE_UP[norm(parts[1])] + "</body></html>\n").encode())
        if len(parts) == 2 and parts[0] == "simple" and norm(parts[1]) == "slowpkg":
            time.sleep(30)
            return self.reply(404, b"late\n", "text/plain")
        if len(parts) == 2 and parts[0] == "simple" and norm(parts[1]) == "sbxlate":
            time.sleep(4)
        if len(parts) == 2 and parts[0] == "simple":
            links, files = [], []
            for w in wheels:
                if norm(w.split("-")[0]) == norm(parts[1]):
                    p = os.path.join(root, w)
                    with open(p, "rb") as f:
                        h = hashlib.sha256(f.read()).hexdigest()
                    links.append(f'<a href="/files/{w}#sha256={h}">{w}</a><br>')
                    t = datetime.datetime.fromtimestamp(os.path.getmtime(p), datetime.timezone.utc)
                    files.append({"filename": w, "url": f"/files/{w}", "hashes": {"sha256": h},
                                  "upload-time": t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")})
            if not links:
                return self.reply(404, b"no such project\n", "text/plain")
            accept = self.headers.get("Accept", "")
            if "application/vnd.pypi.simple.v1+json" in accept and "html" not in accept:
                page = {"meta": {"api-version": "1.1"}, "name": norm(parts[1]), "files": files}
                return self.reply(200, json.dumps(page).encode(), "application/vnd.pypi.simple.v1+json")
            body = "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n"
            return self.reply(200, body.encode())
        if len(parts) == 2 and parts[0] == "files" and parts[1] in wheels:
            with open(os.path.join(root, parts[1]), "rb") as f:
                return self.reply(200, f.read(), "application/octet-stream")
        self.reply(404, b"not found\n", "text/plain")

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer((addr, port), Index)
print("ready", flush=True)
srv.serve_forever()
