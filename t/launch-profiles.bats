#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The shipped profiles (profiles/*.ini, sbx-profile(5)) each run a real
# program.

load helpers/common

setup() {
        require_userns
        d=$(user_dir)
}

@test "default: a POSIX shell pipeline runs, with no network and a private /tmp" {
        run sbx --profile default -- sh -c 'echo hello > /tmp/x && tr a-z A-Z < /tmp/x; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " "'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = HELLO ]
        [ "${lines[1]}" = lo ]
        [ "${#lines[@]}" -eq 2 ]
}

@test "shell: bash with user names, a writable home and the caller's TERM" {
        TERM=xterm-sbx run sbx --profile shell -- bash -c 'whoami; echo $HOME; touch ~/f && echo home-ok; echo $TERM'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "$(as_user whoami)" ]
        [ "${lines[1]}" = /home/sbx ]
        [ "${lines[2]}" = home-ok ]
        [ "${lines[3]}" = xterm-sbx ]
}

@test "python: a script computes, writes to /tmp, and cannot reach the network" {
        cat > "$d/job.py" <<'PY'
import json, socket, hashlib
open("/tmp/data", "w").write("x" * 1000)
h = hashlib.sha256(open("/tmp/data", "rb").read()).hexdigest()[:8]
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    net = "reachable"
except OSError:
    net = "unreachable"
print(json.dumps({"sum": sum(range(10)), "sha": h, "net": net}))
PY
        chmod 0644 "$d/job.py"
        run sbx --profile python --ro-bind "$d/job.py" /job/job.py -- python3 /job/job.py
        [ "$status" -eq 0 ]
        want=$(python3 -c 'import hashlib; print(hashlib.sha256(b"x" * 1000).hexdigest()[:8])')
        [ "$output" = "{\"sum\": 45, \"sha\": \"$want\", \"net\": \"unreachable\"}" ]
}

@test "python: the interpreter's standard library works (no byte-code written)" {
        run sbx --profile python -- python3 -c 'import sqlite3, ssl, zlib, os; c = sqlite3.connect(":memory:"); print(c.execute("select 6*7").fetchone()[0], os.environ.get("PYTHONDONTWRITEBYTECODE"))'
        [ "$status" -eq 0 ]
        [ "$output" = "42 1" ]
}

@test "node: a script runs with the node from the host" {
        node=$(command -v node) || skip "node is not installed"
        case "$(readlink -f "$node")" in
        /usr/*) ;;
        *) skip "node lives outside /usr ($node); the node profile binds /usr only" ;;
        esac
        printf 'const os = require("os");\nconsole.log(JSON.stringify({h: os.hostname(), n: [1,2,3].map(x => x * 2)}));\n' > "$d/job.js"
        chmod 0644 "$d/job.js"
        run sbx --profile node --ro-bind "$d/job.js" /job/job.js -- node /job/job.js
        [ "$status" -eq 0 ]
        [ "$output" = '{"h":"sbx","n":[2,4,6]}' ]
}
