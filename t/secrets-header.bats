#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Header secrets (sbx-supervisord(8) SECRETS, "header"): the job gets a
# placeholder as long as the value; its names of the secret's hosts
# resolve to its own 127.0.0.1, where the daemon ends its TLS with a
# certificate of a CA made for that job alone, opens TLS to the real host
# (checked against secret_proxy_ca) and sends the value where the job put
# the placeholder. A real HTTPS server (t/helpers/https-echo.py, its
# certificate from a CA made here with openssl) logs what arrives and
# echoes it back, so the tests see both sides. Hostile: a host name the
# secret is not for, the value echoed back by the host, the job's own CA
# file put to use for another name, a header secret without a restricted
# network, secret_hosts that name what they may not.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

HOST=api.sbx-test.example
OTHER=other.sbx-test.example

setup_file() {
        sup_init
        command -v openssl >/dev/null || return 0
        local d=$SUP_DIR/tls
        mkdir -p "$d"
        # the upstream's CA, and a certificate for both names
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=sbx test upstream CA" \
                -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$HOST" -keyout "$d/srv.key" \
                -out "$d/srv.csr" 2>/dev/null
        printf 'subjectAltName = DNS:%s, DNS:%s\n' "$HOST" "$OTHER" > "$d/ext"
        openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 -extfile "$d/ext" \
                -out "$d/srv.pem" 2>/dev/null
        # and one the daemon must not trust: signed by nobody it knows
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$HOST" \
                -addext "subjectAltName = DNS:$HOST" -keyout "$d/self.key" -out "$d/self.pem" 2>/dev/null
        /usr/bin/python3 "$SBX_SRCDIR/t/helpers/https-echo.py" "$d/srv.pem" "$d/srv.key" "$SUP_DIR/echo.log" "$SUP_DIR/echo.port" \
                >"$SUP_DIR/echo.out" 2>&1 3>&- &
        echo $! > "$SUP_DIR/echo.pid"
        /usr/bin/python3 "$SBX_SRCDIR/t/helpers/https-echo.py" "$d/self.pem" "$d/self.key" "$SUP_DIR/self.log" "$SUP_DIR/self.port" \
                >"$SUP_DIR/self.out" 2>&1 3>&- &
        echo $! > "$SUP_DIR/self.pid"
        wait_until 30 test -s "$SUP_DIR/echo.port"
        wait_until 30 test -s "$SUP_DIR/self.port"
        export EPORT=$(cat "$SUP_DIR/echo.port") SPORT=$(cat "$SUP_DIR/self.port")
        export VAL='hdr-Secret-Value_0123456789abcdef'
        export POOL="10.213.$((RANDOM % 125 * 2)).0/23"
        sup_config "network_pool = $POOL
secret_proxy_ca = $d/ca.pem"
        sed -i "s/^profiles = default shell\$/&\\nnetwork = none restricted\\nnetwork_allow = 192.0.2.1:9\\/tcp/" "$SUP_DIR/sup.conf"
        cat >> "$SUP_DIR/sup.conf" <<EOC
secrets = API_KEY:header SELF_KEY:header PLAIN
secret_hosts = API_KEY=$HOST@127.0.0.1:$EPORT SELF_KEY=self.sbx-test.example@127.0.0.1:$SPORT

[tenant.t1]
uids = nobody
profiles = default
network = restricted
network_allow = 192.0.2.1:9/tcp
secrets = T1_KEY:header
secret_hosts = T1_KEY=$HOST@127.0.0.1:$EPORT
EOC
        sup_start
        printf %s "$VAL" | ctl secret set admin API_KEY
        printf %s 'self-signed-host-value-1' | ctl secret set admin SELF_KEY
        printf %s 'plain-file-secret-value' | ctl secret set admin PLAIN
        printf %s 'tenant-one-header-value' | ctl secret set t1 T1_KEY
}

teardown_file() {
        local f
        for f in echo self; do
                [ -f "$SUP_DIR/$f.pid" ] && kill "$(cat "$SUP_DIR/$f.pid")" 2>/dev/null || true
        done
        sup_fini
}

setup() {
        require_userns
        command -v openssl >/dev/null || skip "openssl (the command) makes the test CA"
        [ "$(id -u)" = 0 ] || skip "restricted jobs need a root daemon (eBPF, veth, nftables)"
        [ "$SUP_CGROUP" != none ] || skip "no writable cgroup2 here: jobs have no cgroup to attach the programs to"
        grep -q "restricted jobs: veths" "$SUP_DIR/daemon.log" ||
                skip "the daemon cannot run restricted jobs here: $(grep -o 'restricted jobs unavailable.*' "$SUP_DIR/daemon.log" | head -1)"
}

# job [sbxctl submit options] -- COMMAND...: run it restricted, waited for;
# its record in $res, its stdout in $out.
job() {
        local opts=()
        while [ "$1" != -- ]; do opts+=("$1"); shift; done
        shift
        run ctl --json submit --network restricted "${opts[@]}" -- "$@"
        [ "$status" -eq 0 ] || { echo "$output"; return 1; }
        id=$(json_get job <<<"$output")
        res=$(ctl --json wait "$id")
        out=$(ctl logs "$id")
}

# Python in the job: GET https://$1/path with "Authorization: Bearer
# $API_KEY" (the placeholder), printing the echoed JSON.
GET_PY='
import os, sys, urllib.request
req = urllib.request.Request("https://" + sys.argv[1] + "/hello?x=1", headers={"Authorization": "Bearer " + os.environ[sys.argv[2]]})
print(urllib.request.urlopen(req, timeout=20).read().decode())
'

@test "the job gets a placeholder as long as the value; the host gets the value in the header; what it echoes back shows the placeholder" {
        job --secret API_KEY -- bash -c 'printf "%s\n" "$API_KEY" "$SSL_CERT_DIR" "$SBX_PROXY_CA"; exec python3 -c "$1" '"$HOST"' API_KEY' _ "$GET_PY"
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; echo "$out"; cat "$SUP_DIR/daemon.log" | tail -20; false; }
        ph=$(sed -n 1p <<<"$out")
        [ "${#ph}" = "${#VAL}" ]
        [[ "$ph" == sbx* ]]
        [ "$ph" != "$VAL" ]
        [ "$(sed -n 2p <<<"$out")" = "/run/secrets:/etc/ssl/certs" ]
        [ "$(sed -n 3p <<<"$out")" = "/run/secrets/sbx-proxy-ca.pem" ]
        # what arrived: the value, in the header the job wrote
        [ "$(tail -1 "$SUP_DIR/echo.log" | jq -r '.headers.Authorization')" = "Bearer $VAL" ]
        [ "$(tail -1 "$SUP_DIR/echo.log" | jq -r '.path')" = "/hello?x=1" ]
        # what came back: the placeholder where the host echoed the value
        echoed=$(sed -n 4p <<<"$out" | jq -r '.headers.Authorization')
        [ "$echoed" = "Bearer $ph" ]
        [[ "$out" != *"$VAL"* ]]
        [[ "$out" != *"[secret API_KEY]"* ]]
        # the record counts the connection
        [ "$(json_get result.secrets.0.mode <<<"$res")" = header ]
        [ "$(json_get result.secrets.0.proxy.connections <<<"$res")" = 1 ]
}

@test "a POST body with the placeholder reaches the host with the value (the job's bytes, same length); curl given SBX_PROXY_CA" {
        command -v curl >/dev/null || skip "no curl here"
        job --secret API_KEY -- bash -c 'curl -sS --fail --max-time 20 --cacert "$SBX_PROXY_CA" -X POST --data "key=$API_KEY" https://'"$HOST"'/post'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; echo "$out"; false; }
        [ "$(tail -1 "$SUP_DIR/echo.log" | jq -r '.body')" = "key=$VAL" ]
        [ "$(tail -1 "$SUP_DIR/echo.log" | jq -r '.method')" = POST ]
        [[ "$out" != *"$VAL"* ]]
}

@test "a name that is not the secret's host gets no certificate: the proxy ends the handshake, nothing reaches the host" {
        command -v curl >/dev/null || skip "no curl here"
        local before
        before=$(wc -l < "$SUP_DIR/echo.log")
        # the job points another name at the proxy itself
        job --secret API_KEY -- bash -c 'curl -sS --max-time 20 --cacert "$SBX_PROXY_CA" --resolve '"$OTHER"':443:127.0.0.1 https://'"$OTHER"'/ -H "X-Key: $API_KEY"; echo "curl exit $?"'
        [ "$(json_get result.state <<<"$res")" = succeeded ]
        [[ "$out" == *"curl exit 35"* ]] || [[ "$out" == *"curl exit 60"* ]] || { echo "$out"; false; }
        [ "$(wc -l < "$SUP_DIR/echo.log")" = "$before" ]
        [ "$(json_get result.secrets.0.proxy.refused <<<"$res")" = 1 ]
        # and the other name does not resolve to it
        job --secret API_KEY -- python3 -c 'import socket, sys
try:
    print(socket.gethostbyname(sys.argv[1]))
except OSError as e:
    print("no address:", e)' "$OTHER"
        [[ "$out" == "no address"* ]] || { echo "$out"; false; }
}

@test "the job's CA is its own: another job's CA does not verify its certificates, and the CA signs for the secret's hosts only" {
        job --secret API_KEY -- bash -c 'cat "$SBX_PROXY_CA"'
        [ "$(json_get result.state <<<"$res")" = succeeded ]
        printf '%s\n' "$out" > "$BATS_TEST_TMPDIR/ca1.pem"
        job --secret API_KEY -- bash -c 'cat "$SBX_PROXY_CA"'
        printf '%s\n' "$out" > "$BATS_TEST_TMPDIR/ca2.pem"
        run -1 cmp -s "$BATS_TEST_TMPDIR/ca1.pem" "$BATS_TEST_TMPDIR/ca2.pem"
        run -0 openssl x509 -in "$BATS_TEST_TMPDIR/ca1.pem" -noout -text
        [[ "$output" == *"CA:TRUE"* ]]
        [[ "$output" == *"Name Constraints: critical"* ]]
        [[ "$output" == *"Permitted"*"DNS:$HOST"* ]]
        [[ "$output" != *"DNS:$OTHER"* ]]
        # the file OpenSSL looks up in $SSL_CERT_DIR is named by its hash
        job --secret API_KEY -- bash -c 'cat "$SBX_PROXY_CA"; cd /run/secrets; for f in *.0; do cmp "$f" "$SBX_PROXY_CA" && echo "$f"; done'
        printf '%s\n' "$out" | sed '/END CERTIFICATE/q' > "$BATS_TEST_TMPDIR/ca3.pem"
        [ "$(tail -1 <<<"$out")" = "$(openssl x509 -in "$BATS_TEST_TMPDIR/ca3.pem" -noout -hash).0" ] || { echo "$out"; false; }
}

@test "an upstream whose certificate the daemon does not trust gets nothing: the job hears 502 and why" {
        job --secret SELF_KEY -- python3 -c '
import os, urllib.request, urllib.error
req = urllib.request.Request("https://self.sbx-test.example/", headers={"Authorization": os.environ["SELF_KEY"]})
try:
    urllib.request.urlopen(req, timeout=20)
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())'
        [ "$(json_get result.state <<<"$res")" = succeeded ]
        [[ "$out" == "502 sbx secrets proxy: TLS to self.sbx-test.example: its certificate"* ]] || { echo "$out"; false; }
        [ ! -s "$SUP_DIR/self.log" ]
}

@test "a job's flood of connections: past 16 at once they are closed; garbage instead of TLS is refused; the proxy serves on" {
        job --secret API_KEY -- python3 -c '
import os, select, socket, sys, time, urllib.request
held = []
for i in range(20):
    s = socket.create_connection(("127.0.0.1", 443), timeout=5)
    held.append(s)
time.sleep(1)
closed = 0
for s in held:
    r, _, _ = select.select([s], [], [], 0)
    if r and s.recv(1) == b"":
        closed += 1
print("closed", closed)
for s in held:
    s.close()
g = socket.create_connection(("127.0.0.1", 443), timeout=5)
g.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 10)
g.settimeout(15)
try:
    print("garbage answered", len(g.recv(100)) >= 0)
except ConnectionResetError:
    print("garbage answered", True)
g.close()
# the slots come back as their threads see the ends
for attempt in range(50):
    try:
        req = urllib.request.Request("https://'"$HOST"'/after", headers={"X-Key": os.environ["API_KEY"]})
        print(urllib.request.urlopen(req, timeout=20).status)
        break
    except OSError as e:
        time.sleep(0.2)
'
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; echo "$out"; false; }
        [ "$(sed -n 1p <<<"$out")" = "closed 4" ] || { echo "$out"; false; }
        [ "$(sed -n 2p <<<"$out")" = "garbage answered True" ]
        [ "$(sed -n 3p <<<"$out")" = 200 ] || { echo "$out"; false; }
        [ "$(tail -1 "$SUP_DIR/echo.log" | jq -r '.headers["X-Key"]')" = "$VAL" ]
        # the 4 closed, the 16 that never spoke TLS, the garbage
        [ "$(json_get result.secrets.0.proxy.refused <<<"$res")" = 21 ] || { echo "$res"; false; }
        [ "$(json_get result.secrets.0.proxy.connections <<<"$res")" = 1 ]
}

@test "a session's execs reach the host through its sandbox's proxy, one CA for the session" {
        run -0 ctl session create --network restricted --secret API_KEY --ttl 2m
        sid=$output
        run -0 ctl session exec "$sid" -- python3 -c "$GET_PY" "$HOST" API_KEY
        [ "$(jq -r '.headers.Authorization' <<<"$output")" = "Bearer $(ctl session exec "$sid" -- printenv API_KEY)" ]
        [ "$(tail -1 "$SUP_DIR/echo.log" | jq -r '.headers.Authorization')" = "Bearer $VAL" ]
        run -0 ctl session exec "$sid" -- python3 -c "$GET_PY" "$HOST" API_KEY
        [ "$(tail -1 "$SUP_DIR/echo.log" | jq -r '.headers.Authorization')" = "Bearer $VAL" ]
        [ "$(ctl session exec "$sid" -- cat /run/secrets/sbx-proxy-ca.pem)" = "$(ctl session exec "$sid" -- sh -c 'cat "$SBX_PROXY_CA"')" ]
        run -0 ctl session close "$sid"
}

@test "the value is nowhere in the sandbox: not its environment, files or the memory of its processes after a proxied request" {
        # the process that made the request stays, its answer in its memory
        run -0 ctl --json submit --network restricted --secret API_KEY -- bash -c '
env > /tmp/env; grep -r . /run/secrets > /tmp/files 2>&1
exec python3 -c "$1
import sys, time
print(\"done\", flush=True)
time.sleep(60)" '"$HOST"' API_KEY' _ "$GET_PY"
        id=$(json_get job <<<"$output")
        wait_until 30 sh -c "'$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' logs '$id' | grep -qx done"
        [ "$(tail -1 "$SUP_DIR/echo.log" | jq -r '.headers.Authorization')" = "Bearer $VAL" ]
        ph=$(ctl logs "$id" | head -1 | jq -r '.headers.Authorization' | sed 's/^Bearer //')
        [ "${#ph}" = "${#VAL}" ]
        local procs
        procs=$(find "$SUP_CGROUP/job-$id" -name cgroup.procs -exec cat {} +)
        [ -n "$procs" ]
        # every readable mapping of every process of the job; the
        # placeholder is counted too, to show the scan sees what the
        # process got
        run -0 /usr/bin/python3 -c '
import sys
val, ph = sys.argv[1].encode(), sys.argv[2].encode()
found = seen = scanned = 0
for pid in sys.argv[3:]:
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", 0)
    except OSError:
        continue
    for line in maps:
        a, b = (int(x, 16) for x in line.split()[0].split("-"))
        # readable; not a sanitizer reserved shadow (terabytes, none of it data)
        if "r" not in line.split()[1] or b - a > (1 << 30):
            continue
        # in pieces of 16 MiB, overlapping by the length of the value
        at = a
        while at < b:
            try:
                mem.seek(at)
                chunk = mem.read(min(b - at, (16 << 20) + len(val)))
            except (OSError, ValueError):
                break
            scanned += len(chunk)
            found += chunk.count(val)
            seen += chunk.count(ph)
            at += 16 << 20
print("scanned", scanned, "placeholder", seen, "value", found)' "$VAL" "$ph" $procs
        [[ "$output" == "scanned "*" value 0" ]] || { echo "$output"; false; }
        [ "$(awk '{print $4}' <<<"$output")" -gt 0 ]
        [ "$(awk '{print $2}' <<<"$output")" -gt 1000000 ]
        ctl cancel "$id" || true
}

@test "a policy change that takes the host off secret_hosts holds for new jobs: the name no longer resolves to the proxy" {
        run -0 ctl policy set admin "secret_hosts=API_KEY=elsewhere.sbx-test.example SELF_KEY=self.sbx-test.example@127.0.0.1:$SPORT" --reason test
        job --secret API_KEY -- python3 -c 'import socket, sys
try:
    print(socket.gethostbyname(sys.argv[1]))
except OSError:
    print("no address")' "$HOST"
        [ "$out" = "no address" ] || { echo "$out"; false; }
        run -0 ctl policy set admin "secret_hosts=API_KEY=$HOST@127.0.0.1:$EPORT SELF_KEY=self.sbx-test.example@127.0.0.1:$SPORT" --reason test
        job --secret API_KEY -- python3 -c "$GET_PY" "$HOST" API_KEY
        [ "$(tail -1 "$SUP_DIR/echo.log" | jq -r '.headers.Authorization')" = "Bearer $VAL" ]
}

@test "secret_proxy_ca that cannot be read or holds no certificate stops the daemon at start, naming the file" {
        local c=$BATS_TEST_TMPDIR/ca.conf
        sed "s|^secret_proxy_ca = .*|secret_proxy_ca = $BATS_TEST_TMPDIR/none.pem|; s|^socket = .*|socket = $BATS_TEST_TMPDIR/s|; s|^state_dir = .*|state_dir = $BATS_TEST_TMPDIR/st|" \
                "$SUP_DIR/sup.conf" > "$c"
        run timeout 20 "$SBX_STAGE/bin/sbx-supervisord" --config "$c"
        [ "$status" -ne 0 ]
        [ "$status" -ne 124 ]
        [[ "$output" == *"secret_proxy_ca $BATS_TEST_TMPDIR/none.pem: "* ]] || { echo "$output"; false; }
        echo "not a certificate" > "$BATS_TEST_TMPDIR/none.pem"
        run timeout 20 "$SBX_STAGE/bin/sbx-supervisord" --config "$c"
        [ "$status" -ne 0 ]
        [ "$status" -ne 124 ]
        [[ "$output" == *"secret_proxy_ca $BATS_TEST_TMPDIR/none.pem: "* ]] || { echo "$output"; false; }
}

@test "a header secret needs a restricted network; another tenant's header secret is not granted" {
        run -125 ctl submit --secret API_KEY -- true
        [[ "$output" == *E_FORBIDDEN*"'API_KEY' is a header secret"*"network restricted"* ]]
        run -125 ctl submit --network restricted --secret T1_KEY -- true
        [[ "$output" == *E_FORBIDDEN*"not granted secret 'T1_KEY'"* ]]
}

@test "a job that asked for no header secret has no proxy: 127.0.0.1:443 refuses, the host's name does not resolve" {
        job --secret PLAIN -- python3 -c '
import socket
s = socket.socket()
try:
    s.connect(("127.0.0.1", 443)); print("connected")
except OSError as e:
    print("refused", e.errno)
try:
    print(socket.gethostbyname("'"$HOST"'"))
except OSError:
    print("no address")'
        [ "$(json_get result.state <<<"$res")" = succeeded ]
        [ "$(sed -n 1p <<<"$out")" = "refused 111" ] || { echo "$out"; false; }
        [ "$(sed -n 2p <<<"$out")" = "no address" ]
}

@test "the value is nowhere in the state directory, the log, the audit or the metrics after proxied jobs" {
        [ -s "$SUP_DIR/echo.log" ] || skip "no proxied request ran before"
        run -1 grep -r -a -F -q "$VAL" "$SUP_DIR/state" --exclude-dir=secrets
        run -1 grep -a -F -q "$VAL" "$SUP_DIR/daemon.log"
        run -1 grep -a -F -q "$VAL" "$SUP_DIR/audit.log"
        run -0 ctl metrics
        [[ "$output" != *"$VAL"* ]]
}

@test "secret_hosts refused by name: a file secret's hosts, a header secret without hosts, a bad host, a bad address" {
        local c=$BATS_TEST_TMPDIR/bad.conf
        check() {
                sed '/^secrets = API_KEY:header/,$d' "$SUP_DIR/sup.conf" > "$c"
                printf '%s\n' "$@" >> "$c"
                run "$SBX_STAGE/bin/sbx-supervisord" --config "$c" --check-config
        }
        check 'secrets = A:file' 'secret_hosts = A=api.example.com'
        [ "$status" -ne 0 ]
        [[ "$output" == *"secret_hosts names 'A', which its secrets key does not grant as NAME:header"* ]]
        check 'secrets = A:header'
        [ "$status" -ne 0 ]
        [[ "$output" == *"header secret 'A' has no host in secret_hosts"* ]]
        check 'secrets = A:header' 'secret_hosts = A=localhost'
        [ "$status" -ne 0 ]
        [[ "$output" == *":"*"secret_hosts: A: 'localhost' is not a host's name"* ]]
        check 'secrets = A:header' 'secret_hosts = A=10.0.0.1'
        [ "$status" -ne 0 ]
        [[ "$output" == *"'10.0.0.1' is not a host's name"* ]]
        check 'secrets = A:header' 'secret_hosts = A=api.example.com@nowhere.example:443'
        [ "$status" -ne 0 ]
        [[ "$output" == *"'nowhere.example' is not an IP address"* ]]
        check 'secrets = A:header' 'secret_hosts = A=api.example.com@127.0.0.1:70000'
        [ "$status" -ne 0 ]
        [[ "$output" == *"port '70000' of 127.0.0.1 is not 1 to 65535"* ]]
        check 'secrets = A:header' 'secret_hosts = A=api.example.com A=API.example.com'
        [ "$status" -ne 0 ]
        [[ "$output" == *"host 'api.example.com' is named twice"* ]] || { echo "$output"; false; }
        check 'secrets = A:header' 'secret_hosts = A=api.example.com@[::1]:8443 A=b.example.com'
        [ "$status" -eq 0 ] || { echo "$output"; false; }
}

@test "with privilege separation (user = sbx, sbx-privd makes the socket): the same request, the value only on the host's side" {
        sup_user_mode
        sup_stop
        # the front, as sbx, reads the CA file and its state directory
        chmod 0755 "$SUP_DIR" "$SUP_DIR/tls"
        chmod 0644 "$SUP_DIR/tls/ca.pem"
        sed -i "s|^state_dir = .*|state_dir = $SUP_DIR/state-user|; s|^socket = .*|socket = $SUP_SOCK|" "$SUP_DIR/sup.conf"
        sed -i "s|^\\[daemon\\]\$|&\\n$(printf %s "$SUP_USER_LINES" | sed -z 's/\n/\\n/g')|" "$SUP_DIR/sup.conf"
        export SUP_SOCK SBX_SOCKET
        sup_start
        grep -q "restricted jobs: veths made by sbx-privd" "$SUP_DIR/daemon.log" || { grep -i 'restricted\|network' "$SUP_DIR/daemon.log"; false; }
        printf %s "$VAL" | ctl secret set admin API_KEY
        job --secret API_KEY -- bash -c 'printf "%s\n" "$API_KEY"; exec python3 -c "$1" '"$HOST"' API_KEY' _ "$GET_PY"
        [ "$(json_get result.state <<<"$res")" = succeeded ] || { echo "$res"; echo "$out"; false; }
        ph=$(sed -n 1p <<<"$out")
        [ "$(tail -1 "$SUP_DIR/echo.log" | jq -r '.headers.Authorization')" = "Bearer $VAL" ]
        [ "$(sed -n 2p <<<"$out" | jq -r '.headers.Authorization')" = "Bearer $ph" ]
        [ "$ph" != "$VAL" ]
        # the front that holds the value runs as sbx
        [ "$(stat -c %U "/proc/$(cat "$SUP_DIR/daemon.pid")")" = sbx ]
}
