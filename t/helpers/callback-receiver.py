#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A control plane's callback receiver for the tests, on 127.0.0.1.

    callback-receiver.py DIR SECRET_FILE

Listens on a free port (written to DIR/port once it listens), and answers
each POST (and GET) as DIR/mode says (read at every request; "ok" when
absent):

    ok              200
    fail N          500 to the next N requests, then 200
    500 | 404 | ... that status, always
    429 SECONDS     429 with Retry-After: SECONDS
    stall SECONDS   read the request, then answer 200 only after SECONDS
    failjob JOB     500 to the posts of that job (X-Sbx-Job), 200 to others
    hang            read the request (logged with status 0), then never
                    answer: the connection is held until the sender
                    gives up (a dead receiver that still accepts)
    refuse          close the listening socket (connections are refused)
                    until the mode changes; a request on a connection
                    kept alive from before is cut without an answer
    redirect STATUS URL
                    answer STATUS (301, 302, 303, 307 or 308) with
                    Location: URL, except to a request for URL's own path,
                    answered 200 (a client that follows is seen there)

Every request is appended to DIR/log as one JSON line: the time, its
method and path, the status answered, the X-Sbx-* and traceparent
headers, whether the X-Sbx-Signature verifies with the secret, and the
body's job, delivery, trace_id, event, result state and end time, and a
progress post's started, elapsed_ms, heartbeat and stdout_bytes.
"""
import hashlib
import hmac
import http.server
import json
import os
import socket
import sys
import threading
import time
import urllib.parse

DIR, SECRET_FILE = sys.argv[1], sys.argv[2]
with open(SECRET_FILE, "rb") as f:
    SECRET = f.read()
if SECRET.endswith(b"\n"):
    SECRET = SECRET[:-1]

lock = threading.Lock()
fail_state = {"mode": None, "left": 0}


def mode():
    try:
        with open(os.path.join(DIR, "mode")) as f:
            return f.read().split()
    except FileNotFoundError:
        return ["ok"]


def verify(sig, body):
    try:
        parts = dict(p.split("=", 1) for p in sig.split(","))
        t, v1 = parts["t"], parts["v1"]
    except (ValueError, KeyError, AttributeError):
        return False
    want = hmac.new(SECRET, t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, v1)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        m = mode()
        if m[0] == "refuse":
            # Down: a connection kept alive from before is cut too.
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        status, extra = 200, {}
        if m[0] == "hang":
            status = 0
        with lock:
            if m[0] == "fail":
                key = " ".join(m)
                if fail_state["mode"] != key:
                    fail_state["mode"], fail_state["left"] = key, int(m[1])
                if fail_state["left"] > 0:
                    fail_state["left"] -= 1
                    status = 500
            elif m[0] == "429":
                status, extra = 429, {"Retry-After": m[1]}
            elif m[0] == "failjob":
                if self.headers.get("X-Sbx-Job") == m[1]:
                    status = 500
            elif m[0] == "stall":
                time.sleep(float(m[1]))
            elif m[0] == "redirect":
                if self.path != urllib.parse.urlsplit(m[2]).path:
                    status, extra = int(m[1]), {"Location": m[2]}
            elif m[0].isdigit():
                status = int(m[0])
        try:
            doc = json.loads(body)
        except ValueError:
            doc = {}
        rec = {
            "t": time.time(),
            "method": self.command,
            "path": self.path,
            "status": status,
            "delivery": self.headers.get("X-Sbx-Delivery"),
            "event": self.headers.get("X-Sbx-Event"),
            "body_event": doc.get("event"),
            "elapsed_ms": doc.get("elapsed_ms"),
            "heartbeat": doc.get("heartbeat"),
            "stdout_bytes": doc.get("stdout_bytes"),
            "started": doc.get("started"),
            "job": self.headers.get("X-Sbx-Job"),
            "attempt": self.headers.get("X-Sbx-Attempt"),
            "traceparent": self.headers.get("traceparent"),
            "sig_ok": verify(self.headers.get("X-Sbx-Signature"), body),
            "body_job": doc.get("job"),
            "body_delivery": doc.get("delivery"),
            "trace_id": doc.get("trace_id"),
            "state": (doc.get("result") or {}).get("state"),
            "ended": (doc.get("result") or {}).get("ended"),
        }
        with lock:
            with open(os.path.join(DIR, "log"), "a") as f:
                f.write(json.dumps(rec) + "\n")
        if status == 0:
            # until the sender closes the connection
            self.close_connection = True
            while self.connection.recv(4096):
                pass
            return
        self.send_response(status)
        for k, v in extra.items():
            self.send_header(k, v)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    # A redirect followed with GET (after 301, 302 or 303) is logged too.
    do_GET = do_POST


class Server(http.server.ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A daemon that stops drops its kept-alive connections: not news.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


def main():
    srv = Server(("127.0.0.1", 0), Handler)
    port = srv.server_address[1]
    with open(os.path.join(DIR, "port.tmp"), "w") as f:
        f.write(str(port))
    os.rename(os.path.join(DIR, "port.tmp"), os.path.join(DIR, "port"))
    srv.timeout = 0.1
    while True:
        if mode()[0] == "refuse":
            if srv.socket.fileno() >= 0:
                srv.socket.close()
            time.sleep(0.1)
            continue
        if srv.socket.fileno() < 0:
            srv.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            srv.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            srv.socket.bind(("127.0.0.1", port))
            srv.socket.listen(64)
        srv.handle_request()


main()
