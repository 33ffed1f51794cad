#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A registry for the bundle tests: serves a directory over HTTP on
127.0.0.1, logs every request, and misbehaves on request.

    registry-server.py ROOT LOG PORTFILE [CONTROL]

Writes the port it listens on to PORTFILE. Each request is logged to LOG
("GET /hello/index.json") before it is answered. CONTROL, read again at
every request, holds lines "GLOB ACTION [ARG]" (fnmatch against the path
without its leading '/'); the first that matches decides:

    500              answer HTTP 500
    404              answer HTTP 404
    refuse           close the connection without an answer
    truncate         announce the whole length, send half, close
    stall SECS       announce the whole length, send half, then wait SECS
    delay SECS       wait SECS, then answer normally
    hold FILE        wait until FILE exists (at most five minutes), then answer
    slow BYTES       send BYTES bytes a second (bounded by the file)
    redirect URL     answer 302 with Location: URL
"""
import fnmatch
import http.server
import os
import socket
import sys
import threading
import time


def rules(path):
    try:
        with open(CONTROL) as f:
            for line in f:
                w = line.split()
                if len(w) >= 2 and fnmatch.fnmatch(path, w[0]):
                    return w[1], (w[2] if len(w) > 2 else None)
    except (OSError, TypeError):
        pass
    return None, None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        path = self.path.split("?")[0].lstrip("/")
        with LOCK, open(LOG, "a") as f:
            f.write("GET /%s\n" % path)
        action, arg = rules(path)
        if action == "refuse":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if action in ("500", "404"):
            body = b"no\n"
            self.send_response(int(action))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if action == "redirect":
            self.send_response(302)
            self.send_header("Location", arg)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if action == "delay":
            time.sleep(float(arg))
        if action == "hold":
            for _ in range(6000):
                if os.path.exists(arg):
                    break
                time.sleep(0.05)
        full = os.path.realpath(os.path.join(ROOT, path))
        if not full.startswith(os.path.realpath(ROOT) + "/") or not os.path.isfile(full):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(full, "rb") as f:
            data = f.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if action in ("truncate", "stall"):
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            if action == "stall":
                time.sleep(float(arg))
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if action == "slow":
            rate = max(1, int(arg))
            for i in range(0, len(data), rate):
                self.wfile.write(data[i : i + rate])
                self.wfile.flush()
                time.sleep(1)
            return
        self.wfile.write(data)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


ROOT, LOG, PORTFILE = sys.argv[1], sys.argv[2], sys.argv[3]
CONTROL = sys.argv[4] if len(sys.argv) > 4 else None
LOCK = threading.Lock()
srv = Server(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
