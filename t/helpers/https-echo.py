#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# A local HTTPS server for the header secrets' tests: every request is
# answered with a JSON object of what it got (method, path, headers, body),
# and the same object is appended as a line to LOG, so a test sees both
# what came back through the daemon's proxy and what really arrived.
#
#   https-echo.py CERT KEY LOG PORTFILE
#
# It listens on 127.0.0.1 (a port of the kernel's choice, written to
# PORTFILE once it accepts) until killed.
import http.server
import json
import os
import ssl
import sys

cert, key, log, portfile = sys.argv[1:5]


class Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def answer(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace") if n else ""
        got = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()), "body": body}
        with open(log, "a") as f:
            f.write(json.dumps(got) + "\n")
        out = json.dumps(got).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = answer

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
tmp = portfile + ".tmp"
with open(tmp, "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(tmp, portfile)
srv.serve_forever()
