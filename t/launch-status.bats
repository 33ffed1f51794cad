#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) STATUS RECORD and SUPERVISOR PROTOCOL: --json-status-fd
# lines, --info-fd, --block-fd and --sync-fd.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
        st="$BATS_TEST_TMPDIR/status"
}

# (Tests that watch a descriptor for end of file start sbx-launch as a
# simple background command: the shell then forks and executes it directly
# and keeps no copy of its redirections, as it would for a function.)

@test "status: a start line with the command's pid, then an end line with every field" {
        run sbx --json-status-fd 5 -- sh -c 'exit 3' 5>"$st"
        [ "$status" -eq 3 ]
        [ "$(wc -l < "$st")" -eq 2 ]
        # each line is one JSON object
        jq -e . "$st" >/dev/null
        [ "$(jq -s '.[0] | keys | join(",")' "$st")" = '"child-pid,protections"' ]
        # what the sandbox has is known from the start, as at the end
        [ "$(jq -s -c '.[0].protections == .[1].protections' "$st")" = true ]
        [ "$(jq -s '.[0]."child-pid" > 1' "$st")" = true ]
        [ "$(jq -s -c '.[1] | keys_unsorted' "$st")" = '["exit-code","signal","timed-out","wall-ms","cpu-ms","peak-rss-kb","peak-vm-kb","limits","protections"]' ]
        [ "$(jq -s -c '.[1].limits | keys_unsorted' "$st")" = '["timeout","cpu","memory","data","processes","file-size","open-files","stack","core"]' ]
        [ "$(jq -s -c '.[1].protections | keys_unsorted' "$st")" = '["no-new-privs","seccomp","landlock-abi","landlock-fs","landlock-net","landlock-scoped","caps-dropped","nested-userns-blocked","proc-masked","openat2","setid-refused","memfd-refused"]' ]
        [ "$(jq -s '.[1]."exit-code"' "$st")" = 3 ]
        [ "$(jq -s '.[1].signal' "$st")" = null ]
        [ "$(jq -s '.[1]."timed-out"' "$st")" = false ]
        [ "$(jq -s '.[1] | (."wall-ms" | type) + (."cpu-ms" | type) + (."peak-rss-kb" | type)' "$st")" = '"numbernumbernumber"' ]
        [ "$(jq -s '.[1]."peak-rss-kb" > 100' "$st")" = true ]
        [ "$(jq -s '.[1].protections.openat2' "$st")" = true ]
        [ "$(jq -s '.[1].protections | [.[] | type] | unique | join(",")' "$st")" != '""' ]
}

@test "status: child-pid is the command's pid as seen from outside" {
        sbx --json-status-fd 5 -- sleep 1.5 5>"$st" &
        for _ in $(seq 50); do [ -s "$st" ] && break; sleep 0.05; done
        pid=$(jq -s '.[0]."child-pid"' "$st")
        [ "$(tr '\0' ' ' < "/proc/$pid/cmdline")" = "sleep 1.5 " ]
        wait
}

@test "status: a signal death has signal set and exit-code 128+N" {
        run sbx --json-status-fd 5 -- sh -c 'kill -USR1 $$' 5>"$st"
        [ "$status" -eq 138 ]
        [ "$(jq -s -c '.[1] | [."exit-code", .signal]' "$st")" = '[138,10]' ]
}

@test "status: a setup failure is one error line naming the step" {
        run sbx --json-status-fd 5 --ro-bind /nonexistent-sbx /x -- true 5>"$st"
        [ "$status" -eq 125 ]
        [ "$(wc -l < "$st")" -eq 1 ]
        [ "$(jq -c . "$st")" = '{"exit-code":125,"error":{"step":"ro-bind","message":"/nonexistent-sbx: No such file or directory"}}' ]
}

@test "status: a profile error also reaches the status fd" {
        run sbx --json-status-fd 5 --set limits.cpu=lots -- true 5>"$st"
        [ "$status" -eq 125 ]
        [ "$(jq -r '.error.step' "$st")" = profile ]
        [[ "$(jq -r '.error.message' "$st")" == *cpu* ]]
}

@test "status: bytes that are not UTF-8, in a failing bind path and in a message, are written as U+FFFD" {
        command -v python3 >/dev/null || skip "python3 is needed to parse the record strictly"
        # python3's json module, given bytes, refuses anything but UTF-8.
        local parse='import json, sys
r = json.loads(open(sys.argv[1], "rb").read())
print(r["exit-code"], r["error"]["step"])
print(r["error"]["message"])'
        run sbx --json-status-fd 5 --ro-bind $'/nonexistent-sbx/\xff\xfe-caf\xc3\xa9' /x -- true 5>"$st"
        [ "$status" -eq 125 ]
        grep -qF '\ufffd\ufffd' "$st"
        run python3 -c "$parse" "$st"
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "125 ro-bind" ]
        [ "${lines[1]}" = $'/nonexistent-sbx/\xef\xbf\xbd\xef\xbf\xbd-caf\xc3\xa9: No such file or directory' ]

        # A profile error quotes the bad value: an overlong '/', a cut
        # sequence and a UTF-16 surrogate, each byte one U+FFFD.
        run sbx --json-status-fd 5 --set $'limits.cpu=\xc0\xaf\xe2\x82-\xed\xa0\x80' -- true 5>"$st"
        [ "$status" -eq 125 ]
        run python3 -c "$parse" "$st"
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "125 profile" ]
        local r=$'\xef\xbf\xbd'
        [[ "${lines[1]}" == *"(value '$r$r$r$r-$r$r$r')" ]]
}

@test "status: exec failures have no start line but a full end line" {
        run -127 sbx --json-status-fd 5 -- no-such-command-sbx 5>"$st"
        [ "$status" -eq 127 ]
        [ "$(wc -l < "$st")" -eq 1 ]
        [ "$(jq '."exit-code"' "$st")" = 127 ]
}

@test "status fd is not inherited by the command" {
        run sbx --json-status-fd 5 --info-fd 6 -- sh -c 'test -e /proc/self/fd/5 || test -e /proc/self/fd/6 || echo none' 5>"$st" 6>/dev/null
        [ "$status" -eq 0 ]
        [ "$output" = none ]
}

@test "info-fd: child-pid and the namespace ids, matching /proc" {
        info="$BATS_TEST_TMPDIR/info"
        sbx --info-fd 6 -- sleep 30 6>"$info" &
        launcher=$!
        # generous: a loaded machine may take seconds to set up
        for _ in $(seq 200); do [ -s "$info" ] && break; sleep 0.05; done
        pid=$(jq '."child-pid"' "$info")
        [ "$pid" -gt 1 ]
        for n in mnt pid net ipc uts cgroup; do
                want=$(stat -L -c %i "/proc/$pid/ns/$n")
                echo "$n: want $want got $(jq ".namespaces.$n" "$info")" >&2
                [ "$(jq ".namespaces.$n" "$info")" = "$want" ]
        done
        # user: the one owning those namespaces, the same as the command's
        # or its parent (pid 1 may nest one more to lock out nesting)
        user=$(jq ".namespaces.user" "$info")
        [ "$user" -gt 0 ]
        [ "$user" != "$(stat -L -c %i /proc/self/ns/user)" ]
        [ "$(jq ".namespaces.net" "$info")" != "$(stat -L -c %i /proc/self/ns/net)" ]
        # ending the command ends the sandbox and the launcher
        kill "$pid"
        wait "$launcher" || true
}

@test "info-fd: end of file right after the record, while the sandbox still runs" {
        fifo="$BATS_TEST_TMPDIR/info"
        mkfifo "$fifo"
        if [ "$(id -u)" = 0 ]; then
                setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$SBX_LAUNCH" --info-fd 6 -- sleep 3 6>"$fifo" &
        else
                "$SBX_LAUNCH" --info-fd 6 -- sleep 3 6>"$fifo" &
        fi
        run timeout 2 cat "$fifo"
        [ "$status" -eq 0 ]
        [[ "$output" == '{"child-pid": '* ]]
        wait
}

@test "status fd 2 (shared with stderr) works and the command keeps its stderr" {
        run sbx --json-status-fd 2 -- sh -c 'echo to-stderr >&2'
        [ "$status" -eq 0 ]
        [[ "$output" == *to-stderr* ]]
        [[ "$output" == *'"exit-code": 0'* ]]
}

@test "block-fd: the command waits for a byte, then runs" {
        fifo="$BATS_TEST_TMPDIR/fifo"
        mkfifo "$fifo"
        out="$BATS_TEST_TMPDIR/out"
        sbx --block-fd 6 -- sh -c 'echo ran' 6<"$fifo" >"$out" &
        exec 7>"$fifo"
        sleep 0.5
        [ ! -s "$out" ]
        echo x >&7
        exec 7>&-
        wait $!
        [ "$(cat "$out")" = ran ]
}

@test "block-fd: closed without a byte, setup fails and the command never runs" {
        run sbx --block-fd 6 -- sh -c 'echo ran' 6</dev/null
        [ "$status" -eq 125 ]
        [[ "$output" == *"block-fd"* ]]
        [[ "$output" != *ran* ]]
}

@test "sync-fd: stays open while the sandbox lives and closes when it ends" {
        fifo="$BATS_TEST_TMPDIR/sync"
        mkfifo "$fifo"
        start=$(date +%s%N)
        if [ "$(id -u)" = 0 ]; then
                setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$SBX_LAUNCH" --sync-fd 6 -- sh -c 'setsid sleep 30 & sleep 1' 6>"$fifo" &
        else
                "$SBX_LAUNCH" --sync-fd 6 -- sh -c 'setsid sleep 30 & sleep 1' 6>"$fifo" &
        fi
        # EOF on the read side comes only once every holder is gone
        cat "$fifo" > /dev/null
        end=$(date +%s%N)
        wait $!
        elapsed=$(( (end - start) / 1000000 ))
        [ "$elapsed" -ge 900 ] && [ "$elapsed" -lt 10000 ]
}

# The limits object says how each limit was enforced (issue 9: a record
# once said "limits-by": "rlimit" for limits nobody enforced).
@test "status: each limit says how it was enforced, read back from the command's process" {
        run sbx --json-status-fd 5 --timeout 30s --set limits.cpu=7 --set limits.processes=40 \
                --set limits.file-size=5M --set limits.open-files=77 --set limits.core=unlimited -- true 5>"$st"
        [ "$status" -eq 0 ]
        [ "$(jq -s -c '.[1].limits.timeout' "$st")" = '{"value":30000,"by":"launcher"}' ]
        [ "$(jq -s -c '.[1].limits.cpu' "$st")" = '{"value":7,"by":"rlimit","per":"process"}' ]
        [ "$(jq -s -c '.[1].limits."file-size"' "$st")" = '{"value":5242880,"by":"rlimit","per":"file"}' ]
        [ "$(jq -s -c '.[1].limits."open-files"' "$st")" = '{"value":77,"by":"rlimit","per":"process"}' ]
        # infinite: enforced by nothing
        [ "$(jq -s -c '.[1].limits.core' "$st")" = '{"value":null,"by":"none"}' ]
        # RLIMIT_NPROC counts per user namespace: a cap for this sandbox
        [ "$(jq -s -c '.[1].limits.processes' "$st")" = '{"value":40,"by":"rlimit","per":"sandbox"}' ]
}

@test "status: a limit the profile leaves out shows the caller's own rlimit, or none" {
        run as_user bash -c "ulimit -S -n 99; ulimit -S -f unlimited; exec env SBX_PROFILE_PATH=$SBX_PROFILE_PATH $SBX_LAUNCH --profile /dev/null --json-status-fd 5 --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 -- true" 5>"$st"
        [ "$status" -eq 0 ]
        [ "$(jq -s -c '.[1].limits."open-files"' "$st")" = '{"value":99,"by":"rlimit","per":"process"}' ]
        [ "$(jq -s -c '.[1].limits."file-size"' "$st")" = '{"value":null,"by":"none"}' ]
        [ "$(jq -s -c '.[1].limits.timeout' "$st")" = '{"value":null,"by":"none"}' ]
}

@test "status: processes of a root caller are never held to RLIMIT_NPROC, and the record says none" {
        [ "$(id -u)" = 0 ] || skip "needs a root caller (the suite runs as root in CI)"
        run "$SBX_LAUNCH" --json-status-fd 5 --set limits.processes=8 -- python3 -c '
import os, time
for i in range(20):
    if os.fork() == 0:
        time.sleep(2); os._exit(0)
print("forked 20")' 5>"$st"
        [ "$status" -eq 0 ]
        [ "$output" = "forked 20" ]
        [ "$(jq -s -c '.[1].limits.processes' "$st")" = '{"value":8,"by":"none"}' ]
}

@test "status: a memory limit says what it covers, and never more" {
        if ldd "$SBX_LAUNCH" 2>/dev/null | grep -q libasan; then
                skip "sbx-launch is an AddressSanitizer build, which does not set memory limits"
        fi
        run -0 sbx --json-status-fd 5 --set limits.memory=512M -- true 5>"$st"
        [ "$(jq -s -c '.[1].limits.memory' "$st")" = '{"value":536870912,"by":"rlimit","per":"process","covers":["address-space","memfd","sysv-shm","tmpfs"]}' ]
        [ "$(jq -s '.[1].protections."memfd-refused"' "$st")" = true ]
        # an unsized tmpfs and a profile that allows memfd: neither is covered
        run -0 sbx --json-status-fd 5 --set limits.memory=512M --set security.allow=memfd_create --tmpfs /big -- true 5>"$st"
        [ "$(jq -s -c '.[1].limits.memory.covers' "$st")" = '["address-space","sysv-shm"]' ]
        [ "$(jq -s '.[1].protections."memfd-refused"' "$st")" = false ]
        # no memory limit: nothing refused, nothing claimed
        run -0 sbx --json-status-fd 5 --set limits.memory=unlimited -- true 5>"$st"
        [ "$(jq -s -c '.[1].limits.memory' "$st")" = '{"value":null,"by":"none"}' ]
        [ "$(jq -s '.[1].protections."memfd-refused"' "$st")" = false ]
}

@test "status: limits of a command that could not be executed were in place; the timeout is the launcher's own" {
        run sbx --json-status-fd 5 --set limits.processes=10 -- /nonexistent/cmd 5>"$st"
        [ "$status" -eq 127 ]
        [ "$(jq -s -c '.[0].limits.processes' "$st")" = '{"value":10,"by":"rlimit","per":"sandbox"}' ]
        run sbx --json-status-fd 5 --set limits.processes=10 --set limits.timeout=1s -- sh -c 'exec sleep 5' 5>"$st"
        [ "$status" -eq 124 ]
        [ "$(jq -s -c '.[1].limits.timeout' "$st")" = '{"value":1000,"by":"launcher"}' ]
}
