#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Sessions through a real daemon (sbx-protocol(7), SESSIONS): a sandbox
# whose command is sbx-init, commands run in it one after another keeping
# its files and processes, files moved in and out, its TTL and idle
# timeout, its end and the records that say why, and what a hostile
# caller or a hostile sandbox can do to it.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config "socket_mode = 0666"
        cat >> "$SUP_DIR/sup.conf" <<EOC
max_sessions = 3
session_ttl_max = 10m
session_idle_max = 5m

[tenant.other]
uids = $(id -u nobody)
profiles = default shell
session_memory_max = 1G
EOC
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        session_setup
}

teardown() {
        # every session of a test ends with it (max_sessions is small)
        sessions_close_all
}

# other_ctl ARGS...: sbxctl as nobody, in tenant "other".
other_ctl() {
        as_user "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" "$@"
}

@test "files and processes are kept from one exec to the next; each exec has its own record naming the session" {
        run -0 ctl session create --ttl 2m
        sid=$output
        [[ "$sid" =~ ^[0-9a-f]{32}$ ]]
        run -0 ctl session exec "$sid" -- sh -c 'echo 41 > n; sleep 1001 & echo started'
        [ "$output" = started ]
        run -0 ctl session exec "$sid" -- sh -c 'echo $(( $(cat n) + 1 )); pgrep -x sleep >/dev/null && echo still-running'
        [ "${lines[0]}" = 42 ]
        [ "${lines[1]}" = still-running ]
        run -3 ctl session exec "$sid" -- sh -c 'echo to-err >&2; exit 3'
        [[ "$output" == *to-err* ]]
        # the exec's record
        run -0 ctl --json session exec "$sid" -- echo hi
        job=$(json_get job <<<"${lines[0]}")
        # its follower hears it start, then its output, then its end
        [ "$(jq -r 'select(.event) | .event' <<<"$output" | tr '\n' ' ')" = "started output end " ]
        run -0 ctl --json result "$job"
        [ "$(json_get result.session.id <<<"$output")" = "$sid" ]
        [ "$(json_get result.session.role <<<"$output")" = exec ]
        [ "$(json_get result.state <<<"$output")" = succeeded ]
        # closing ends its processes: nothing of it is left on the host
        run -0 ctl --json session show "$sid"
        box=$(json_get job <<<"$output")
        run -0 ctl session close "$sid"
        run ! ctl --json wait "$box"
        [ "$(json_get result.session.role <<<"$output")" = sandbox ]
        [ "$(json_get result.session.ended <<<"$output")" = closed ]
        ! pgrep -f 'sleep 1001' || false
}

@test "a Python interpreter's variables live across execs (it reads code from a fifo in the workspace)" {
        run -0 ctl session create
        sid=$output
        run -0 ctl session exec "$sid" -- sh -c 'mkfifo in; python3 -c "
g = {}
while True:
    with open(\"in\") as f:
        for line in f:
            exec(line, g)
" >log 2>&1 & echo up'
        run -0 ctl session exec "$sid" -- sh -c 'echo "x = 41" > in'
        run -0 ctl session exec "$sid" -- sh -c 'echo "open(\"out\", \"w\").write(str(x + 1))" > in
                for i in $(seq 100); do [ -s out ] && break; sleep 0.05; done; cat out'
        [ "$output" = 42 ]
}

@test "an exec's stdin kept open takes input as it comes: a Python interpreter answers each line before the next" {
        run -0 ctl session create
        sid=$output
        run -0 /usr/bin/python3 - "$SUP_SOCK" "$sid" <<'EOF'
import json, socket, sys
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    return s, s.makefile("rw")
def send(f, o):
    o["v"] = 1
    f.write(json.dumps(o) + "\n")
    f.flush()
a, fa = conn()
b, fb = conn()
sid = sys.argv[2]
code = "import sys\nfor line in sys.stdin:\n    exec(line)\n"
send(fa, {"op": "session.exec", "session": sid, "command": ["python3", "-u", "-c", code], "follow": True, "stdin_open": True})
job = json.loads(fa.readline())["job"]
def until_output(want):
    got = ""
    while want not in got:
        m = json.loads(fa.readline())
        assert m.get("event") != "end", m
        if m.get("event") == "output":
            got += m.get("data", "")
    return got
def stdin(data, eof=False):
    send(fb, {"op": "session.stdin", "session": sid, "job": job, "data": data, "eof": eof})
    return json.loads(fb.readline())
assert stdin("x = 41\n")["written"] == 7
assert stdin("print(x + 1)\n")["ok"]
print("first", until_output("42").strip())
assert stdin("x = 100\n")["ok"]
assert stdin("print(x * 2)\n", eof=True)["closed"] is True
print("second", until_output("200").strip())
while True:
    m = json.loads(fa.readline())
    if m.get("event") == "end":
        print("exit", m["result"]["exit_code"])
        break
r = stdin("print(1)\n")
print("after", r["error"]["code"])
EOF
        echo "$output"
        [ "${lines[0]}" = "first 42" ]
        [ "${lines[1]}" = "second 200" ]
        [ "${lines[2]}" = "exit 0" ]
        # ended: not running (E_CONFLICT), or already gone from the session (E_NOT_FOUND)
        [[ "${lines[3]}" == "after E_CONFLICT" || "${lines[3]}" == "after E_NOT_FOUND" ]]
        # without stdin_open there is nothing to write to
        run -0 ctl session exec "$sid" --detach -- sleep 30
        job=$output
        run -0 raw "{\"v\":1,\"op\":\"session.stdin\",\"session\":\"$sid\",\"job\":\"$job\",\"data\":\"x\"}"
        [[ "$output" == *E_CONFLICT* ]]
        [[ "$output" == *"was not kept open"* ]]
        # a detached exec is followed again by its job id
        run -0 ctl session exec "$sid" --detach -- sh -c 'echo one; sleep 0.3; echo two'
        run -0 ctl logs -f "$output"
        [ "$output" = "one
two" ]
        # sbxctl -i: standard input as it comes
        run -0 sh -c "printf 'hello\nworld\n' | '$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' session exec $sid -i -- cat"
        [ "$output" = "hello
world" ]
}

@test "a terminal for a command (tty, sbxctl -t): its stdin, stdout and stderr are one pseudo-terminal, 24x80; the end of input is its EOF character" {
        run -0 ctl session create
        sid=$output
        sbx=("$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK")
        # (the terminal echoes the input, and the shell's prompts share lines
        # with what it prints: the outputs are looked for within lines,
        # each unlike anything in the input)
        run -3 sh -c "printf 'tty; stty size; echo to-\$((1+1))-err >&2; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-\$((1+2)); exit 3\n' |
                '${sbx[0]}' --socket '$SUP_SOCK' session exec $sid -t -- sh"
        out=$(printf '%s' "$output" | tr -d '\r')
        grep -q '/dev/pts/[0-9]' <<<"$out"
        grep -q '24 80' <<<"$out"
        grep -q 'to-2-err' <<<"$out"
        grep -q 'all-3' <<<"$out"
        # cat ends at the terminal's end of input (^D, sent at sbxctl's):
        # the line twice, as echoed and as cat wrote it
        run -0 sh -c "printf 'hello\n' | '${sbx[0]}' --socket '$SUP_SOCK' session exec $sid -t -- cat"
        [ "$(printf '%s' "$output" | tr -d '\r' | grep -c '^hello$')" = 2 ]
        # without a terminal it has none
        run -0 ctl session exec "$sid" -- sh -c '[ -t 0 ] || [ -t 1 ] || echo none'
        [ "$output" = none ]
        run -0 ctl session close "$sid"
}

@test "a terminal's size: sbxctl -t passes its own, session.resize changes it (the command gets SIGWINCH); bad sizes and other jobs are refused" {
        run -0 ctl session create
        sid=$output
        sbx="$SBX_STAGE/bin/sbxctl --socket $SUP_SOCK"
        # sbxctl at a terminal of 40x100 (script(1) makes one)
        run -0 script -q -e -c "stty rows 40 cols 100; $sbx session exec $sid -t -- stty size" /dev/null </dev/null
        [[ "$(tr -d '\r' <<<"$output")" == *"40 100"* ]] || { echo "$output"; false; }
        # ... and once its terminal is 40x150, so is the command's (stdin
        # given explicitly: a background command's is /dev/null)
        out=$BATS_TEST_TMPDIR/out
        cat > "$BATS_TEST_TMPDIR/at-terminal" <<EOS
stty rows 40 cols 100
exec 3<&0
$sbx session exec $sid -t -- sh -c 'trap "stty size; exit 0" WINCH; stty size; i=0; while [ \$i -lt 200 ]; do sleep 0.05; i=\$((i+1)); done' <&3 >$out &
until grep -q '40 100' $out; do sleep 0.05; done
stty cols 150
wait
EOS
        run -0 timeout 30 script -q -e -c "sh $BATS_TEST_TMPDIR/at-terminal" /dev/null </dev/null
        [[ "$(tr -d '\r' < "$out")" == *"40 150"* ]] || { cat "$out"; false; }
        # a command that says its size at the start and at each SIGWINCH
        req() { printf '{"v":1,"op":"%s","session":"%s"%s}' "$1" "$sid" "$2"; }
        run -0 raw "$(req session.exec ',"command":["sh","-c","trap \"stty size\" WINCH; stty size; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done"],"tty":true,"rows":30,"cols":90')"
        job=$(json_get job <<<"$output")
        wait_until 10 sh -c "$sbx logs $job | grep -q '30 90'"
        run -0 raw "$(req session.resize ',"job":"'"$job"'","rows":50,"cols":132')"
        [ "$(json_get rows <<<"$output") $(json_get cols <<<"$output")" = "50 132" ]
        wait_until 10 sh -c "$sbx logs $job | grep -q '50 132'"
        # bad sizes, a size without a terminal, a job without one, a job
        # of no session, an unknown field
        for bad in ',"job":"'"$job"'","rows":0,"cols":80' ',"job":"'"$job"'","rows":24,"cols":1001' \
                   ',"job":"'"$job"'","rows":24' ',"job":"'"$job"'","rows":"24","cols":80' ',"job":"'"$job"'","rows":24,"cols":80,"x":1'; do
                run -0 raw "$(req session.resize "$bad")"
                [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ] || { echo "$bad: $output"; false; }
        done
        run -0 raw "$(req session.exec ',"command":["true"],"rows":30')"
        [ "$(json_get error.code <<<"$output")" = E_BAD_REQUEST ]
        [[ "$(json_get error.message <<<"$output")" == *"need 'tty'"* ]]
        run -0 raw "$(req session.exec ',"command":["true"],"tty":true,"cols":5000')"
        [[ "$(json_get error.message <<<"$output")" == *"'cols': 1 to 1000"* ]]
        run -0 ctl --json session exec "$sid" --detach -- sleep 30
        plain=$(json_get job <<<"$output")
        run -0 raw "$(req session.resize ',"job":"'"$plain"'","rows":50,"cols":132')"
        [ "$(json_get error.code <<<"$output")" = E_CONFLICT ]
        [[ "$(json_get error.message <<<"$output")" == *"no terminal"* ]]
        run -0 raw "$(req session.resize ',"job":"j00000000000000000000","rows":50,"cols":132')"
        [ "$(json_get error.code <<<"$output")" = E_NOT_FOUND ] || { echo "$output"; false; }
        # another tenant's caller does not reach it
        run -0 sh -c "printf '%s\n' '$(req session.resize ',"job":"'"$job"'","rows":10,"cols":10')' | setpriv --reuid=nobody --regid=nogroup --clear-groups -- '$SBX_STAGE/bin/sup-client' '$SUP_SOCK'"
        [ "$(json_get error.code <<<"$output")" = E_NOT_FOUND ]
        run -0 ctl session close "$sid"
        # once it ended: the session says so
        run -0 raw "$(req session.resize ',"job":"'"$job"'","rows":50,"cols":132')"
        [ "$(json_get error.code <<<"$output")" = E_SESSION_ENDED ]
}

@test "put and get move files in and out, binary ones too; ls lists the workspace" {
        run -0 ctl session create
        sid=$output
        head -c 300000 /dev/urandom > "$BATS_TEST_TMPDIR/blob"
        # a path whose directory is missing is refused, then made by a command
        run -125 ctl session put "$sid" "$BATS_TEST_TMPDIR/blob" nodir/blob
        [[ "$output" == *E_NOT_FOUND* ]]
        run -0 ctl session exec "$sid" -- mkdir nodir
        run -0 ctl session put "$sid" "$BATS_TEST_TMPDIR/blob" nodir/blob
        run -0 ctl session exec "$sid" -- sha256sum nodir/blob
        [ "${output%% *}" = "$(sha256sum < "$BATS_TEST_TMPDIR/blob" | cut -d' ' -f1)" ]
        run -0 ctl session get "$sid" nodir/blob -o "$BATS_TEST_TMPDIR/back"
        cmp "$BATS_TEST_TMPDIR/blob" "$BATS_TEST_TMPDIR/back"
        run -0 ctl session ls "$sid"
        [[ "$output" == *nodir/* ]]
}

@test "put and get move 100 MB in pieces; a piece out of order is refused; past the disk limit is E_LIMIT" {
        # Under a sanitizer build (the CI's second run) its point is memory
        # errors, not size: 20 MB in a workspace of 32M.
        local size=100000000 disk=160M
        if grep -q -- '--enable-sanitizers' "$SBX_BUILDDIR/config.log" 2>/dev/null; then
                size=20000000 disk=32M
        fi
        run -0 ctl session create --disk $disk
        sid=$output
        head -c $size /dev/urandom > "$BATS_TEST_TMPDIR/big"
        run -0 ctl session put "$sid" "$BATS_TEST_TMPDIR/big" big
        run -0 ctl session exec "$sid" -- sh -c 'wc -c < big'
        [ "$output" = $size ]
        run -0 ctl session get "$sid" big -o "$BATS_TEST_TMPDIR/back"
        [ "$(sha256sum < "$BATS_TEST_TMPDIR/big")" = "$(sha256sum < "$BATS_TEST_TMPDIR/back")" ]
        # a piece that does not follow on where the file ends
        run -0 raw "{\"v\":1,\"op\":\"session.put\",\"session\":\"$sid\",\"path\":\"big\",\"offset\":5,\"data\":\"x\"}"
        [[ "$output" == *E_CONFLICT* ]]
        [[ "$output" == *"not 5"* ]]
        run -0 ctl session exec "$sid" -- sh -c 'wc -c < big'
        [ "$output" = $size ]
        # as much again does not fit
        run ! ctl session put "$sid" "$BATS_TEST_TMPDIR/big" big2
        [[ "$output" == *E_LIMIT* ]]
        [[ "$output" == *"no space left in the session's workspace"* ]]
        rm -f "$BATS_TEST_TMPDIR/big" "$BATS_TEST_TMPDIR/back"
}

@test "no path leads out of the workspace: '..', absolute paths and symlinks are refused" {
        run -0 ctl session create
        sid=$output
        run -0 ctl session exec "$sid" -- ln -s /etc/passwd pw
        run -125 ctl session get "$sid" pw
        [[ "$output" == *E_BAD_REQUEST* || "$output" == *E_NOT_FOUND* ]]
        [[ "$output" != *root:* ]]
        run -125 ctl session get "$sid" ../../../etc/passwd
        [[ "$output" == *E_BAD_REQUEST* ]]
        run -125 ctl session get "$sid" /etc/passwd
        [[ "$output" == *E_BAD_REQUEST* ]]
        # a put through the symlink does not write its target
        echo x > "$BATS_TEST_TMPDIR/x"
        run -125 ctl session put "$sid" "$BATS_TEST_TMPDIR/x" pw
        grep -q '^root:' /etc/passwd
}

@test "the TTL ends the session on time, the record says ttl, and requests after get E_SESSION_ENDED" {
        run -0 ctl session create --ttl 2s
        sid=$output
        run -0 ctl --json session show "$sid"
        box=$(json_get job <<<"$output")
        run ! ctl --json wait "$box"
        [ "$(json_get result.session.ended <<<"$output")" = ttl ]
        wall=$(json_get result.wall_ms <<<"$output")
        [ "$wall" -ge 2000 ]
        # its timer fires at 2 s; the sandbox then takes its end in SIGTERM
        # (within 100 ms on a quiet machine; the bound leaves room for a
        # suite running three files at once, and catches a TTL that is
        # not kept)
        limit=500
        ldd "$SBX_STAGE/bin/sbx-supervisord" | grep -q libasan && limit=1000
        [ $((wall - 2000)) -lt "$limit" ] || { echo "ended $((wall - 2000)) ms late"; false; }
        run -125 ctl session exec "$sid" -- true
        [[ "$output" == *E_SESSION_ENDED*"ttl"* ]]
}

@test "the idle timeout ends a session nobody spoke to; a request resets it" {
        # An sbxctl takes up to ~0.5 s to start on a loaded machine (more
        # with the sanitizers), so the gap between two requests can be
        # that much longer than the 0.5 s asked: the timeout leaves room
        # for it, and the requests still outlast it.
        idle=2 n=6
        ldd "$SBX_STAGE/bin/sbx-supervisord" | grep -q libasan && idle=3 n=8
        run -0 ctl session create --idle ${idle}s
        sid=$output
        run -0 ctl --json session show "$sid"
        box=$(json_get job <<<"$output")
        # requests every 0.5 s keep it alive past its idle timeout
        for i in $(seq "$n"); do
                sleep 0.5
                run -0 ctl session show "$sid"
        done
        run ! ctl --json wait "$box"
        [ "$(json_get result.session.ended <<<"$output")" = idle ]
        run -125 ctl session show "$sid"
        [[ "$output" == *E_SESSION_ENDED*idle* ]]
}

@test "another tenant's session, a made-up id and a malformed one are not found" {
        run -0 ctl session create
        sid=$output
        run -125 other_ctl session show "$sid"
        [[ "$output" == *E_NOT_FOUND* ]]
        run -125 other_ctl session exec "$sid" -- true
        [[ "$output" == *E_NOT_FOUND* ]]
        run -125 other_ctl session close "$sid"
        run -0 ctl session show "$sid"
        run -125 ctl session show 0123456789abcdef0123456789abcdef
        [[ "$output" == *E_NOT_FOUND* ]]
        run -125 ctl session show not-an-id
        [[ "$output" == *E_BAD_REQUEST* ]]
        # an exec's id is not a session's
        run -0 ctl --json session exec "$sid" -- true
        job=$(json_get job <<<"${lines[0]}")
        run -125 other_ctl result "$job"
        [[ "$output" == *E_NOT_FOUND* ]]
}

@test "a sandbox that kills or stops its agent ends its own session only" {
        run -0 ctl session create
        victim=$output
        run -0 ctl session create
        other=$output
        # the agent is pid 2 of the sandbox
        run ! ctl session exec "$victim" -- sh -c 'kill -KILL 2; sleep 1'
        run -125 ctl session exec "$victim" -- true
        [[ "$output" == *E_SESSION_ENDED* ]]
        run -0 ctl session exec "$other" -- echo alive
        [ "$output" = alive ]
        # a stopped agent: the next request finds it mute and ends it
        run -0 ctl session create
        stopped=$output
        run ! ctl session exec "$stopped" --timeout 2s -- sh -c 'kill -STOP 2'
        run -125 ctl session exec "$stopped" -- true
        [[ "$output" == *E_SESSION_ENDED* || "$output" == *"agent failed"* ]]
        run -0 ctl session exec "$other" -- echo still
        [ "$output" = still ]
        run -0 ctl ping
}

@test "max_sessions caps a tenant's sessions; ttl and idle past the tenant's maxima are refused" {
        for i in 1 2 3; do
                run -0 ctl session create
        done
        run -125 ctl session create
        [[ "$output" == *E_LIMIT*max_sessions* ]]
        run -125 ctl session create --ttl 11m
        [[ "$output" == *E_LIMIT* ]]
}

@test "session_memory_max caps the memory limits of a tenant's live sessions together" {
        run -0 other_ctl session create --memory 600M
        first=$output
        run ! other_ctl session create --memory 600M
        [[ "$output" == *E_LIMIT* ]]
        [[ "$output" == *"session_memory_max is 1073741824 bytes; its live sessions' memory limits take 629145600"* ]]
        run -0 other_ctl session create --memory 400M
        second=$output
        # an ended session gives its share back
        run -0 other_ctl --json session show "$first"
        box=$(json_get job <<<"$output")
        run -0 other_ctl session close "$first"
        run ! other_ctl --json wait "$box"
        run -0 other_ctl session create --memory 600M
        run -0 other_ctl session close "$output"
        run -0 other_ctl session close "$second"
}

@test "an exec's timeout stops it; session.signal reaches a running one" {
        run -0 ctl session create
        sid=$output
        run ! ctl --json session exec "$sid" --timeout 1s -- sleep 30
        [ "$(json_get result.error.code <<<"${lines[-1]}")" = E_TIMEOUT ]
        ctl session exec "$sid" -- sh -c 'echo go; sleep 30' >/dev/null 2>&1 &
        running() { ctl --json session show "$sid" | jq -r '.running[0] // empty'; }
        wait_until 10 sh -c "[ -n \"\$('$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' --json session show $sid | jq -r '.running[0] // empty')\" ]"
        job=$(running)
        run -0 ctl session signal "$sid" "$job" TERM
        run ! ctl --json wait "$job"
        [ "$(json_get result.signal <<<"$output")" = 15 ]
        # it has ended: nothing to signal
        run -125 ctl session signal "$sid" "$job" KILL
        [[ "$output" == *E_CONFLICT* || "$output" == *E_NOT_FOUND* ]]
        wait
}
