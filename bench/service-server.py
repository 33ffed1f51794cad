#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# The server bench/session.py runs in a session: 1 KiB for GET /kib, over
# HTTP/1.1 keep-alive. Usage: service-server.py PORT
import http.server
import sys

BODY = b"x" * 1024


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # its head and body are two writes: without this the body waits for
    # the client's delayed ACK (40 ms), direct or proxied alike
    disable_nagle_algorithm = True

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *a):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
