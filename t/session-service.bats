#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Sessions' services through the daemon's proxy (sbx-supervisord(8),
# SERVICES): a server in a session's sandbox, exposed, reached with the
# session's token or a signed URL and refused without; upgrades pass; the
# proxy's limits (head size and time, connections per session) and its
# ends (unexpose, close) hold; every connection is audited.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        SVC_PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        export SVC_PORT
        sup_config "socket_mode = 0666
service_listen = 127.0.0.1:$SVC_PORT
service_domain = sbx.test
service_timeout = 1s"
        cat >> "$SUP_DIR/sup.conf" <<EOC
session_services = yes
service_connections = 3
service_bandwidth = 1M

[tenant.other]
uids = $(id -u nobody)
profiles = default shell
EOC
        # The server the sessions run: it answers GET with the headers it
        # got, and /ws with a 101 and then an echo of whatever comes.
        cat > "$SBX_STAGE/echo.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path == "/ws":
            self.send_response(101)
            self.send_header("Upgrade", "websocket")
            self.send_header("Connection", "Upgrade")
            self.end_headers()
            self.wfile.flush()
            while True:
                b = self.connection.recv(4096)
                if not b:
                    return
                self.connection.sendall(b)
        body = "".join("%s: %s\n" % (k, v) for k, v in self.headers.items()).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
        # A raw TCP server: each line back in capitals, and at the client's
        # end of sending, "bye N" (the bytes it got) before it closes.
        cat > "$SBX_STAGE/tcpecho.py" <<'EOF'
import socket, sys, threading
def serve(c):
    n, rest = 0, b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        n += len(b)
        rest += b
        while b"\n" in rest:
            line, rest = rest.split(b"\n", 1)
            c.sendall(line.upper() + b"\n")
    c.sendall(b"bye %d\n" % n)
    c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
EOF
        chmod a+r "$SBX_STAGE/echo.py" "$SBX_STAGE/tcpecho.py"
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        session_setup
}

teardown() {
        sessions_close_all
}

# serving PORT [SERVER]: a session ($sid) running SERVER (echo.py) on
# PORT, exposed ($host, $token).
serving() {
        local server=${2:-echo.py}
        run -0 ctl session create
        sid=$output
        run -0 ctl session put "$sid" "$SBX_STAGE/$server" "$server"
        run -0 ctl session exec "$sid" -- sh -c "python3 $server $1 >srv.log 2>&1 & echo started"
        run -0 session_wait_port "$sid" $1
        run -0 ctl --json session expose "$sid" "$1"
        host=$(json_get host <<<"$output")
        token=$(json_get token <<<"$output")
        [ "$host" = "$1-$sid.sbx.test" ]
        [[ "$token" =~ ^[0-9a-f]{64}$ ]]
}

# code ARGS...: the HTTP status curl got through the proxy.
code() {
        curl -s -o /dev/null -w '%{http_code}' "$@"
}

@test "a session's server is reached through the proxy with its token, never without; the token stays out of the sandbox" {
        serving 8000
        [ "$(code -H "Host: $host" "http://127.0.0.1:$SVC_PORT/")" = 401 ]
        # the token with its last digit changed
        local wrong=${token%?}
        [ "${token: -1}" = 0 ] && wrong+=1 || wrong+=0
        [ "$(code -H "Host: $host" -H "X-Sbx-Token: $wrong" "http://127.0.0.1:$SVC_PORT/")" = 401 ]
        run -0 curl -sf -H "Host: $host" -H "X-Sbx-Token: $token" -H "X-Mine: 42" "http://127.0.0.1:$SVC_PORT/a"
        [[ "$output" == *"X-Mine: 42"* ]]
        [[ "$output" != *"$token"* ]]
        [[ "$output" != *X-Sbx-Token* ]]
        # keep-alive: two requests on one connection
        run -0 curl -sf -H "Host: $host" -H "X-Sbx-Token: $token" "http://127.0.0.1:$SVC_PORT/1" "http://127.0.0.1:$SVC_PORT/2"
        [ "$(grep -c '^Host:' <<<"$output")" = 2 ]
        # every connection has its audit line
        wait_until 10 grep -q '"ev":"service".*"decision":"proxied".*"end":"closed"' "$SUP_DIR/audit.log"
        run -0 grep '"ev":"service"' "$SUP_DIR/audit.log"
        [[ "$output" == *"\"session\":\"$sid\""* ]]
        [[ "$output" == *'"status":401'* ]]
        [[ "$output" == *'"access":"token"'* ]]
}

@test "a signed URL lets in until it expires; a changed one never" {
        serving 8001
        run -0 ctl --json session expose "$sid" 8001 --signed 2
        q=$(json_get signed_query <<<"$output")
        [ "$(code -H "Host: $host" "http://127.0.0.1:$SVC_PORT/?$q")" = 200 ]
        bad=${q%?}
        [ "${q: -1}" = 0 ] && bad+=1 || bad+=0
        [ "$(code -H "Host: $host" "http://127.0.0.1:$SVC_PORT/?$bad")" = 401 ]
        # for another port or session it is not valid
        [ "$(code -H "Host: 8000-$sid.sbx.test" "http://127.0.0.1:$SVC_PORT/?$q")" = 404 ]
        wait_until 10 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: $host' 'http://127.0.0.1:$SVC_PORT/?$q')\" = 401 ]"
}

@test "an upgraded connection (WebSocket) passes both ways" {
        serving 8002
        run -0 /usr/bin/python3 - "$SVC_PORT" "$host" "$token" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(("GET /ws HTTP/1.1\r\nHost: %s\r\nX-Sbx-Token: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n" % (sys.argv[2], sys.argv[3])).encode())
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(4096)
assert head.startswith(b"HTTP/1.1 101"), head
for word in (b"ping", b"x" * 100000):
    s.sendall(word)
    got = b""
    while len(got) < len(word):
        got += s.recv(65536)
    assert got == word
print("echoed")
EOF
        [ "$output" = echoed ]
}

@test "not found: a session not exposing the port, a made-up session, after unexpose; a bad Host is 400; a tenant without session_services cannot expose" {
        serving 8003
        [ "$(code -H "Host: 9999-$sid.sbx.test" -H "X-Sbx-Token: $token" "http://127.0.0.1:$SVC_PORT/")" = 404 ]
        [ "$(code -H "Host: 8003-0123456789abcdef0123456789abcdef.sbx.test" -H "X-Sbx-Token: $token" "http://127.0.0.1:$SVC_PORT/")" = 404 ]
        [ "$(code -H "Host: 8003-$sid.other.test" -H "X-Sbx-Token: $token" "http://127.0.0.1:$SVC_PORT/")" = 400 ]
        [ "$(code -H "Host: $sid.sbx.test" -H "X-Sbx-Token: $token" "http://127.0.0.1:$SVC_PORT/")" = 400 ]
        [ "$(code -H "Host: $host" -H "X-Sbx-Token: $token" "http://127.0.0.1:$SVC_PORT/")" = 200 ]
        run -0 ctl session unexpose "$sid" 8003
        [ "$(code -H "Host: $host" -H "X-Sbx-Token: $token" "http://127.0.0.1:$SVC_PORT/")" = 404 ]
        run ! ctl session unexpose "$sid" 8003
        [[ "$output" == *E_NOT_FOUND* ]]
        # a port nothing listens on: the agent's connection is refused (502)
        run -0 ctl session expose "$sid" 8099
        [ "$(code -H "Host: 8099-$sid.sbx.test" -H "X-Sbx-Token: $token" "http://127.0.0.1:$SVC_PORT/")" = 502 ]
        run -0 as_user "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" session create
        osid=$output
        run ! as_user "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" session expose "$osid" 8000
        [[ "$output" == *E_FORBIDDEN* ]]
        [[ "$output" == *session_services* ]]
        run -0 as_user "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" session close "$osid"
}

@test "hostile clients: a head past 16 KiB is 431, a silent one is cut after service_timeout, a session's 4th connection is 503, and open ones end with the session" {
        serving 8004
        /usr/bin/python3 - "$SVC_PORT" "$host" "$token" > "$BATS_TEST_TMPDIR/out" 2>&1 <<'EOF' &
import socket, sys, time
port, host, token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
def say(*a):
    print(*a, flush=True)
def status(s):
    b = b""
    while b"\r\n" not in b:
        d = s.recv(4096)
        if not d:
            break
        b += d
    return b.split(b" ")[1].decode() if b.startswith(b"HTTP/") else "closed"
def get(s):
    s.sendall(("GET / HTTP/1.1\r\nHost: %s\r\nX-Sbx-Token: %s\r\n\r\n" % (host, token)).encode())
    return status(s)
big = socket.create_connection(("127.0.0.1", port))
big.sendall(b"GET / HTTP/1.1\r\nX-Pad: " + b"a" * 20000)
say("big", status(big))
t0 = time.time()
silent = socket.create_connection(("127.0.0.1", port))
silent.sendall(b"GET / HT")
say("silent", status(silent), "after %.1f s" % (time.time() - t0))
held = [socket.create_connection(("127.0.0.1", port)) for i in range(3)]
for c in held:
    say("held", get(c))
say("fourth", get(socket.create_connection(("127.0.0.1", port))))
say("waiting")
ended = 0
for c in held:
    c.settimeout(30)
    while c.recv(65536):
        pass
    ended += 1
say("ended", ended)
EOF
        wait_until 30 grep -q '^waiting' "$BATS_TEST_TMPDIR/out"
        cat "$BATS_TEST_TMPDIR/out"
        grep -qx 'big 431' "$BATS_TEST_TMPDIR/out"
        grep -q '^silent 408 after' "$BATS_TEST_TMPDIR/out"
        [ "$(grep -c '^held 200' "$BATS_TEST_TMPDIR/out")" = 3 ]
        grep -qx 'fourth 503' "$BATS_TEST_TMPDIR/out"
        run -0 ctl session close "$sid"
        wait_until 30 grep -qx 'ended 3' "$BATS_TEST_TMPDIR/out"
        wait
}

@test "service_bandwidth paces a session's traffic: 3 MB at 1 MB a second take two seconds past the first second's burst" {
        serving 8005
        run -0 ctl session exec "$sid" -- sh -c 'head -c 3000000 /dev/urandom > big; sha256sum < big'
        sum=${output%% *}
        # a plain file server on another port of the same session
        run -0 ctl session exec "$sid" -- sh -c 'python3 -m http.server 8006 --bind 127.0.0.1 >/dev/null 2>&1 & echo ok'
        run -0 session_wait_port "$sid" 8006
        run -0 ctl session expose "$sid" 8006
        run curl -sf -o "$BATS_TEST_TMPDIR/big" -w '%{time_total}' -H "Host: 8006-$sid.sbx.test" -H "X-Sbx-Token: $token" \
                "http://127.0.0.1:$SVC_PORT/big"
        echo "took $output s"
        [ "$status" = 0 ]
        [ "$(sha256sum < "$BATS_TEST_TMPDIR/big" | cut -d' ' -f1)" = "$sum" ]
        # unpaced it takes a few tens of milliseconds here
        awk -v t="$output" 'BEGIN { exit !(t >= 1.5 && t < 10) }'
        wait_until 10 grep -qE '"bytes_out":300[0-9]{4},.*"port":8006' "$SUP_DIR/audit.log"
}

@test "session forward: a raw TCP stream to an exposed port, both ways, the client's end passed on as a half-close; audited as a forward" {
        serving 8010 tcpecho.py
        printf 'hello\nworld\n' > "$BATS_TEST_TMPDIR/in"
        run -0 ctl session forward "$sid" 8010 < "$BATS_TEST_TMPDIR/in"
        [ "$output" = "$(printf 'HELLO\nWORLD\nbye 12')" ]
        wait_until 10 grep -q '"access":"forward"' "$SUP_DIR/audit.log"
        line=$(grep '"access":"forward"' "$SUP_DIR/audit.log" | tail -1)
        [[ "$line" == *"\"session\":\"$sid\""* ]]
        [[ "$line" == *'"port":8010'* ]]
        [[ "$line" == *'"bytes_in":12'* ]]
        [[ "$line" == *'"bytes_out":19'* ]]
        [[ "$line" == *"\"peer\":\"uid $(id -u)\""* ]]
}

@test "session forward --listen: each local connection is a forward of its own, several at once" {
        serving 8011 tcpecho.py
        lport=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" session forward "$sid" 8011 --listen "127.0.0.1:$lport" 2>"$BATS_TEST_TMPDIR/fwd.err" &
        fwd=$!
        wait_until 10 grep -q "forwarding 127.0.0.1 port $lport" "$BATS_TEST_TMPDIR/fwd.err"
        run -0 /usr/bin/python3 - "$lport" <<'EOF'
import socket, sys
cs = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for i in range(3)]
for i, c in enumerate(cs):
    c.sendall(b"client %d\n" % i)
for i, c in enumerate(cs):
    c.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        b = c.recv(4096)
        if not b:
            break
        got += b
    print(got.decode().replace("\n", "|"))
EOF
        kill "$fwd"
        wait "$fwd" || true
        [ "${lines[0]}" = "CLIENT 0|bye 9|" ]
        [ "${lines[1]}" = "CLIENT 1|bye 9|" ]
        [ "${lines[2]}" = "CLIENT 2|bye 9|" ]
        run -2 ctl session forward "$sid" 8011 --listen "127.0.0.1:0x10"
        [[ "$output" == *"--listen: expected [ADDR:]PORT"* ]]
        run -2 ctl session forward "$sid" 0
        [[ "$output" == *"PORT: expected 1 to 65535"* ]]
}

@test "session forward refused: a port not exposed, nothing listening, another tenant's session, past service_connections; bytes sent with the request reach the service; unexpose ends it" {
        serving 8012 tcpecho.py
        run -125 ctl session forward "$sid" 8013
        [[ "$output" == *E_NOT_FOUND*"does not expose port 8013"* ]]
        run -0 ctl session expose "$sid" 8013
        run -125 ctl session forward "$sid" 8013
        [[ "$output" == *E_NOT_FOUND*"nothing answers on port 8013"* ]]
        # a caller in no tenant, and one of another tenant
        run -125 ctl_nobody session forward "$sid" 8012
        [[ "$output" == *E_* ]]
        run -125 as_user "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" session forward "$sid" 8012
        [[ "$output" == *E_NOT_FOUND* ]]
        # a client that sends its bytes with the request, before the
        # reply; then three held forwards, a fourth refused, and unexpose
        # ends the held ones
        /usr/bin/python3 - "$SUP_SOCK" "$sid" > "$BATS_TEST_TMPDIR/out" 2>&1 <<'EOF' &
import json, socket, sys
path, sid = sys.argv[1], sys.argv[2]
def say(*a):
    print(*a, flush=True)
def forward(extra=b""):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.sendall(json.dumps({"v": 1, "op": "session.forward", "session": sid, "port": 8012}).encode() + b"\n" + extra)
    line = b""
    while not line.endswith(b"\n"):
        b = s.recv(1)
        if not b:
            break
        line += b
    return s, json.loads(line)
s, r = forward(b"early bytes\n")
s.shutdown(socket.SHUT_WR)
got = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    got += b
say("early", r["ok"], got.decode().replace("\n", "|"))
held = [forward() for i in range(3)]
say("held", *[r["ok"] for s, r in held])
s, r = forward()
say("fourth", r.get("error", {}).get("code"))
say("waiting")
ended = 0
for s, r in held:
    s.settimeout(30)
    while s.recv(65536):
        pass
    ended += 1
say("ended", ended)
EOF
        wait_until 30 grep -q '^waiting' "$BATS_TEST_TMPDIR/out"
        cat "$BATS_TEST_TMPDIR/out"
        grep -qx 'early True EARLY BYTES|bye 12|' "$BATS_TEST_TMPDIR/out"
        grep -qx 'held True True True' "$BATS_TEST_TMPDIR/out"
        grep -qx 'fourth E_LIMIT' "$BATS_TEST_TMPDIR/out"
        run -0 ctl session unexpose "$sid" 8012
        wait_until 30 grep -qx 'ended 3' "$BATS_TEST_TMPDIR/out"
        wait
        grep -q '"end":"the port was unexposed"' "$SUP_DIR/audit.log"
}
