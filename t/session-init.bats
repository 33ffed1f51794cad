#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-init(8) as a sandbox's command, driven through the client library
# (lib/initc.h) by t/helpers/init-client, which plays the daemon's part:
# one command per line in, one answer per command out. The launcher runs
# as nobody, as in the other launch tests.

load helpers/common
bats_require_minimum_version 1.5.0

setup_file() {
        sbx_stage
        cp "$SBX_BUILDDIR/init/sbx-init" "$SBX_BUILDDIR/t/helpers/init-client" "$SBX_STAGE/bin/"
        chmod a+rx "$SBX_STAGE/bin/"*
}

setup() {
        require_userns
        TIMEOUT=5000
        WS=/work
        # A sanitizer build's agent maps terabytes of shadow memory: no
        # address-space rlimit for it.
        EXTRA=()
        if ldd "$SBX_STAGE/bin/sbx-init" 2>/dev/null | grep -q libasan; then
                EXTRA=(--set limits.memory=unlimited)
        fi
}

# session: the commands on stdin, against a fresh sandbox whose workspace
# is a tmpfs at $WS.
session() {
        as_user env SBX_PROFILE_PATH="$SBX_PROFILE_PATH" "$SBX_STAGE/bin/init-client" --timeout "$TIMEOUT" -- \
                "$SBX_LAUNCH" "${EXTRA[@]}" --pass-fd 3 --ro-bind "$SBX_STAGE/bin" /sbx --tmpfs "$WS" \
                -- /sbx/sbx-init --workspace "$WS"
}

@test "the agent says it is ready, as the sandbox's pid 2 (the launcher's init is pid 1)" {
        run session </dev/null
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "ready pid=2 "* ]]
}

@test "spawn: stdout and stderr read back from the handed pipes, exit status and rusage in the exit event" {
        run session <<'EOF2'
run -- sh -c 'echo to-out; echo to-err >&2; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 7'
run -e GREETING=hello -- sh -c 'echo $GREETING from $(pwd)'
run -- no-such-command
EOF2
        [ "$status" -eq 0 ]
        [ "${lines[1]}" = to-out ]
        [ "${lines[2]}" = "stderr: to-err" ]
        [[ "${lines[3]}" == "exit code=7 "* ]]
        # the loop took CPU time and the shell some memory
        [[ "${lines[3]}" =~ utime_us=([0-9]+)\ stime_us=([0-9]+)\ maxrss_kb=([0-9]+) ]]
        [ $((BASH_REMATCH[1] + BASH_REMATCH[2])) -gt 0 ]
        [ "${BASH_REMATCH[3]}" -gt 0 ]
        [ "${lines[4]}" = "hello from /work" ]
        [[ "${lines[5]}" == "exit code=0 "* ]]
        [ "${lines[6]}" = "error ENOENT" ]
}

@test "spawn: a PATH given with the command is the one searched; the agent's own environment is unchanged after it" {
        run session <<'EOF2'
run -- sh -c 'mkdir -p bin2 && printf "#!/bin/sh\necho found-in-bin2\n" > bin2/tool && chmod 755 bin2/tool'
run -e PATH=/work/bin2:/usr/bin -- tool
run -- tool
run -- sh -c 'echo "$PATH"'
EOF2
        [ "$status" -eq 0 ]
        [[ "${lines[1]}" == "exit code=0 "* ]]
        [ "${lines[2]}" = found-in-bin2 ]
        [[ "${lines[3]}" == "exit code=0 "* ]]
        # without the addition the agent's PATH is searched again
        [ "${lines[4]}" = "error ENOENT" ]
        [[ "${lines[5]}" != *bin2* ]]
}

@test "state is kept between spawns: a file written by one is read by the next; a background process lives on" {
        run session <<'EOF2'
run -- sh -c 'echo kept > state.txt'
bg -- sleep 1000
run -- cat state.txt
signal 2 0
signal 2 9
wait 2
signal 2 0
EOF2
        [ "$status" -eq 0 ]
        [[ "${lines[1]}" == "exit code=0 "* ]]
        [ "${lines[2]}" = "handle 2" ]
        [ "${lines[3]}" = kept ]
        [ "${lines[5]}" = ok ]
        [ "${lines[6]}" = ok ]
        [[ "${lines[7]}" == "exit signal=9 "* ]]
        # an ended process's handle is never good again
        [ "${lines[8]}" = "error ESRCH" ]
}

@test "signal: to the command, or to its whole process group; a handle never given is ESRCH" {
        run session <<'EOF2'
bg -- sh -c 'trap "exit 42" TERM; : > trapped; while :; do sleep 0.05; done'
bg -- sh -c 'sleep 1000 & sleep 1000 & wait'
await trapped
signal 1 15
wait 1
signal 2 15 group
wait 2
signal 77 15
signal 1 99
EOF2
        [ "$status" -eq 0 ]
        # (the signal goes once the trap is set)
        [ "${lines[3]}" = found ]
        [[ "${lines[5]}" == "exit code=42 "* ]] || { printf '%s\n' "${lines[@]}"; false; }
        [[ "${lines[7]}" == "exit signal=15 "* ]]
        [ "${lines[8]}" = "error ESRCH" ]
        [ "${lines[9]}" = "error EINVAL" ]
}

@test "a pseudo-terminal as stdin: the command's controlling terminal" {
        run session <<'EOF2'
run -p -- sh -c 'test -t 0 && tty'
EOF2
        [ "$status" -eq 0 ]
        [[ "${lines[1]}" == /dev/pts/* ]]
        [[ "${lines[2]}" == "exit code=0 "* ]]
}

@test "a terminal for all three: 24x80 unless a size is given; a bad size, or a size without a terminal, is refused" {
        run session <<'EOF2'
run -t -- stty size
run -t -w 50 132 -- stty size
run -t -w 1 1000 -- stty size
run -t -w 0 80 -- stty size
run -t -w 24 1001 -- stty size
run -w 30 100 -- stty size
run -p -w 30 100 -- stty size
EOF2
        [ "$status" -eq 0 ]
        # (a terminal's lines end in CR LF)
        [ "$(printf '%s\n' "${lines[@]}" | tr -d '\r' | grep -v '^exit ' | tail -n +2)" = "24 80
50 132
1 1000
error EINVAL
error EINVAL
error EINVAL
error EINVAL" ] || { printf '%s\n' "${lines[@]}"; false; }
}

@test "put and get through the handed descriptors; ls, stat, mkdir and rm in the workspace" {
        local d
        d=$(user_dir)
        printf 'line one\nline two\n' > "$d/src"
        chmod a+r "$d/src"
        run session <<EOF2
mkdir sub
put $d/src sub/copy.txt
run -- sh -c 'wc -l < sub/copy.txt'
get sub/copy.txt
stat sub/copy.txt
ls sub
rm sub/copy.txt
rm sub
stat sub
EOF2
        [ "$status" -eq 0 ]
        [ "${lines[1]}" = ok ]
        [ "${lines[2]}" = ok ]
        [ "${lines[3]}" = 2 ]
        [ "${lines[5]}" = "line one" ]
        [ "${lines[6]}" = "line two" ]
        [ "${lines[7]}" = "stat reg 0644 18" ]
        [ "${lines[8]}" = "entry 8 copy.txt" ]
        [ "${lines[9]}" = "ls 1" ]
        [ "${lines[10]}" = ok ]
        [ "${lines[11]}" = ok ]
        [ "${lines[12]}" = "error ENOENT" ]
}

@test "paths out of the workspace are refused: .., absolute, a symlink out, a symlink within, a cwd through a link" {
        run session <<'EOF2'
get ../etc/passwd
get /etc/passwd
get a/../../etc/passwd
run -- sh -c 'ln -s /etc/passwd out; ln -s .. up; mkdir d; ln -s d/f in; echo x > d/f'
get out
get up/etc/passwd
ls up
get in
stat out
run -C up -- cat etc/passwd
rm out
stat out
EOF2
        [ "$status" -eq 0 ]
        [ "${lines[1]}" = "error EXDEV" ]
        [ "${lines[2]}" = "error EXDEV" ]
        [ "${lines[3]}" = "error EXDEV" ]
        [ "${lines[5]}" = "error ELOOP" ]
        [ "${lines[6]}" = "error ELOOP" ]
        [ "${lines[7]}" = "error ELOOP" ]
        [ "${lines[8]}" = "error ELOOP" ]
        # the link itself, never its target
        [ "${lines[9]}" = "stat lnk 0777 11" ]
        [ "${lines[10]}" = "error ELOOP" ]
        [ "${lines[11]}" = ok ]
        [ "${lines[12]}" = "error ENOENT" ]
        [[ "$output" != *root:* ]]
}

@test "a put through a symlink does not write its target" {
        local d
        d=$(user_dir)
        echo payload > "$d/src"
        chmod a+r "$d/src"
        run session <<EOF2
run -- sh -c 'echo original > /tmp/target; ln -s /tmp/target link'
put $d/src link
run -- cat /tmp/target
EOF2
        [ "$status" -eq 0 ]
        [ "${lines[2]}" = "error ELOOP" ]
        [ "${lines[3]}" = original ]
}

@test "a symlink swapped in and out of a directory while files are fetched through it never leads out" {
        local cmds i
        # d is in turn the workspace's directory real (holding a passwd of
        # its own), absent, and a link to /etc
        cmds="run -- sh -c 'mkdir real; echo inside > real/passwd; ln -s /etc evil'"
        cmds+=$'\n'"bg -- python3 -c 'import os; r = os.rename; [(r(\"real\", \"d\"), r(\"d\", \"real\"), r(\"evil\", \"d\"), r(\"d\", \"evil\")) for _ in iter(int, 1)]'"
        cmds+=$'\n'"run -- sh -c 'while test -e real; do sleep 0.01; done'"
        for i in $(seq 300); do
                cmds+=$'\n'"get d/passwd"
        done
        # Never /etc's passwd; and the loop really ran against the fetches
        # (some met the directory, some the link): on a loaded machine the
        # renaming process may not get a CPU during one sandbox's 300
        # fetches, so up to five sandboxes, each checked.
        local ran=0 attempt
        for attempt in 1 2 3 4 5; do
                run session <<<"$cmds"
                [ "$status" -eq 0 ]
                [[ "$output" != *root:* ]]
                if [[ "$output" == *inside* || "$output" == *ELOOP* ]]; then
                        ran=1
                        break
                fi
        done
        [ "$ran" = 1 ]
}

@test "a FIFO is never handed over, for reading or writing, and nothing hangs" {
        local d
        d=$(user_dir)
        echo data > "$d/src"
        chmod a+r "$d/src"
        run session <<EOF2
run -- mkfifo fifo
get fifo
bg -- sh -c 'cat fifo > /dev/null'
put $d/src fifo
stat fifo
EOF2
        [ "$status" -eq 0 ]
        [ "${lines[2]}" = "error EINVAL" ]
        # refused, with or without a reader at the other end yet
        [[ "${lines[4]}" == "error EINVAL" || "${lines[4]}" == "error ENXIO" ]]
        [ "${lines[5]}" = "stat fifo 0644 0" ]
}

@test "a process that kills sbx-init ends its session: the client sees end-of-file, at once" {
        WS=/work-killed
        TIMEOUT=20000
        local t0=$SECONDS
        run session <<'EOF2'
run -- sh -c 'kill -KILL $PPID'
stat .
EOF2
        [ "$status" -eq 3 ]
        [[ "$output" == *"lost: EPIPE"* ]]
        # far from the 20 s timeout: end-of-file, not a timeout
        [ $((SECONDS - t0)) -lt 10 ]
        wait_until 10 no_process "sbx-init --workspace /work-killed"
}

@test "a process that stops sbx-init: the client times out, never hangs, and the session ends" {
        WS=/work-stopped
        TIMEOUT=1000
        run session <<'EOF2'
run -- sh -c 'kill -STOP $PPID'
stat .
EOF2
        [ "$status" -eq 3 ]
        [[ "$output" == *"lost: ETIMEDOUT"* ]]
        wait_until 10 no_process "sbx-init --workspace /work-stopped"
}

@test "a flood of requests is answered, each one, and the agent goes on" {
        run session <<'EOF2'
flood 5000
run -- echo still-here
EOF2
        [ "$status" -eq 0 ]
        [ "${lines[1]}" = "flood 5000 5000" ]
        [ "${lines[2]}" = still-here ]
}

@test "truncated, oversized, unknown and malformed datagrams are answered with an error, never a crash" {
        run session <<'EOF2'
raw short
raw badlen
raw big
raw unknown
raw fds
raw spawn-strings
raw spawn-argc
raw path-nonul
raw signal-short
run -- echo still-here
EOF2
        [ "$status" -eq 0 ]
        [ "${lines[1]}" = "reply type=0x1ffff id=0 error EBADMSG" ]
        [ "${lines[2]}" = "reply type=0x10005 id=4242 error EBADMSG" ]
        [ "${lines[3]}" = "reply type=0x10005 id=4242 error EMSGSIZE" ]
        [ "${lines[4]}" = "reply type=0x10063 id=4242 error EOPNOTSUPP" ]
        [ "${lines[5]}" = "reply type=0x10005 id=4242 error EBADMSG" ]
        [ "${lines[6]}" = "reply type=0x10001 id=4242 error EBADMSG" ]
        [ "${lines[7]}" = "reply type=0x10001 id=4242 error E2BIG" ]
        [ "${lines[8]}" = "reply type=0x10005 id=4242 error EINVAL" ]
        [ "${lines[9]}" = "reply type=0x10002 id=4242 error EBADMSG" ]
        [ "${lines[10]}" = still-here ]
}

@test "an orphan of a command is adopted by the agent (a subreaper) and reaped, not left a zombie" {
        run session <<'EOF2'
run -- sh -c '(sleep 0.5 &); for f in /proc/[0-9]*/stat; do read -r p c s pp r < $f; test $p != $$ && test $pp = 2 && echo orphan of 2; done; true'
run -- sh -c 'sleep 1; grep -l "^State:.*zombie" /proc/[0-9]*/status | wc -l'
EOF2
        [ "$status" -eq 0 ]
        # the sleep, exec'd or not yet (its name may still be sh's)
        [ "${lines[1]}" = "orphan of 2" ]
        [ "${lines[3]}" = 0 ]
}

@test "a command holds nothing of the agent's: not the socket, not the workspace's descriptor" {
        # (ls straight to the command's stdout: a pipe or a redirection
        # would give the shell descriptors of its own while ls looks)
        run session <<'EOF2'
run -- sh -c 'ls /proc/$$/fd'
run -- sh -c 'ls -l /proc/$$/fd'
EOF2
        [ "$status" -eq 0 ]
        [ "$(printf '%s\n' "${lines[1]}" "${lines[2]}" "${lines[3]}" | xargs)" = "0 1 2" ]
        [[ "${lines[4]}" == "exit code=0 "* ]]
        [[ "$output" == *"0 -> "*"1 -> "*"2 -> "* ]]
        [[ "$output" != *socket:* ]]
}

@test "at most 256 commands run at once: the next spawn is EAGAIN until one ends" {
        local cmds i
        EXTRA+=(--set limits.processes=1000)
        cmds=
        for i in $(seq 257); do
                cmds+="bg -- sleep 1000"$'\n'
        done
        cmds+=$'signal 1 9\nwait 1\nbg -- sleep 1000'
        TIMEOUT=20000
        run session <<<"$cmds"
        [ "$status" -eq 0 ]
        [ "${lines[256]}" = "handle 256" ]
        [ "${lines[257]}" = "error EAGAIN" ]
        [[ "${lines[259]}" == "exit signal=9 "* ]]
        # handles are never reused
        [ "${lines[260]}" = "handle 257" ]
}

# listened: like session, with the listening socket at $SOCK on fd 4 and
# sbx-init --listen-fd 4 (the daemon's way back after a restart). The
# socket's directory is the test's, outside the sandbox.
listened() {
        SOCK=$(mktemp -d "$SBX_STAGE/sock.XXXXXX")/agent.sock
        [ "$(id -u)" != 0 ] || chown nobody "${SOCK%/*}"
        as_user env SBX_PROFILE_PATH="$SBX_PROFILE_PATH" "$SBX_STAGE/bin/init-client" --timeout "$TIMEOUT" --listen "$SOCK" -- \
                "$SBX_LAUNCH" "${EXTRA[@]}" --pass-fd 3 --pass-fd 4 --ro-bind "$SBX_STAGE/bin" /sbx --tmpfs "$WS" \
                -- /sbx/sbx-init --workspace "$WS" --fd 3 --listen-fd 4 "$@"
}

@test "--listen-fd: after the connection ends the agent keeps its processes and files, and the next connection gets them with the exits held meanwhile" {
        run listened --orphan-timeout 5000 <<'EOF2'
run -- sh -c 'echo still here > kept.txt'
bg -- sleep 0.2
bg -- sleep 1000
drop
pause 600
reconnect
wait 2
run -- cat kept.txt
signal 3 9
wait 3
EOF2
        [ "$status" -eq 0 ]
        [[ "${lines[0]}" == "ready pid=2 connection=1 running=0 ended=0 "* ]]
        [[ "${lines[1]}" == "exit code=0 "* ]]
        [ "${lines[2]}" = "handle 2" ]
        [ "${lines[3]}" = "handle 3" ]
        [ "${lines[4]}" = dropped ]
        # the sleep of 0.2 s ended while no one was connected: held, then sent
        [[ "${lines[6]}" == "ready pid=2 connection=2 running=1 ended=1 "* ]]
        [[ "${lines[7]}" == "exit code=0 "* ]]
        [ "${lines[8]}" = "still here" ]
        [[ "${lines[9]}" == "exit code=0 "* ]]
        [ "${lines[10]}" = ok ]
        [[ "${lines[11]}" == "exit signal=9 "* ]]
}

@test "--listen-fd: no connection within --orphan-timeout ends the agent, and the sandbox with it" {
        run listened --orphan-timeout 300 <<'EOF2'
bg -- sleep 1000
drop
launcher-end 5000
EOF2
        [ "$status" -eq 0 ]
        [ "${lines[2]}" = dropped ]
        [[ "$output" == *"sbx-init: no connection for 300 ms: ending the session"* ]]
        [[ "$output" =~ launcher\ ended\ after_ms=([0-9]+) ]]
        [ "${BASH_REMATCH[1]}" -ge 250 ]
}

@test "--listen-fd: a command holds neither the listening socket nor the connection" {
        run listened <<'EOF2'
run -- sh -c 'ls -l /proc/$$/fd | grep -c socket; ls /proc/$$/fd | xargs'
EOF2
        [ "$status" -eq 0 ]
        [ "${lines[1]}" = 0 ]
        [ "${lines[2]}" = "0 1 2" ]
}

@test "--listen-fd refuses what is not a listening SOCK_SEQPACKET socket, and --orphan-timeout 0" {
        run as_user "$SBX_LAUNCH" "${EXTRA[@]}" --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/sbx-init --listen-fd 0 </dev/null
        [ "$status" -eq 1 ]
        [[ "$output" == *"--listen-fd"* ]]
        run as_user "$SBX_LAUNCH" "${EXTRA[@]}" --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/sbx-init --listen-fd 4 --orphan-timeout 0
        [ "$status" -eq 2 ]
        [[ "$output" == *usage* ]]
}
