#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# SECURITY.md items 18, 19 and 25: the caller's loader variables, a command
# named like an option, and jobs that try to exhaust a resource (fork bomb,
# memory bomb, disk filler, fd hog, output flood). Each is stopped at its
# limit and the machine stays healthy.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
}

@test "LD_PRELOAD, LD_AUDIT and LD_LIBRARY_PATH from the caller never reach the job (item 18)" {
        run env LD_PRELOAD=/evil.so LD_AUDIT=/audit.so LD_LIBRARY_PATH=/evil bash -c \
                "$(declare -f as_user sbx); SBX_PROFILE_PATH='$SBX_PROFILE_PATH' SBX_LAUNCH='$SBX_LAUNCH'; sbx -- env"
        [ "$status" -eq 0 ]
        # (the host's ld.so complains on stderr about the bogus paths;
        # what matters is the job's environment)
        ! echo "$output" | grep -q '^LD_' || false
        run env LD_PRELOAD=/evil.so LD_AUDIT=/audit.so LD_LIBRARY_PATH=/evil bash -c \
                "$(declare -f as_user sbx); SBX_PROFILE_PATH='$SBX_PROFILE_PATH' SBX_LAUNCH='$SBX_LAUNCH'; sbx --set env.clear=no -- env"
        [ "$status" -eq 0 ]
        echo "$output" | grep -q '^PATH='
        ! echo "$output" | grep -q '^LD_' || false
        # ... unless the profile sets one on purpose
        run -0 sbx --setenv LD_LIBRARY_PATH /opt/lib -- env
        [[ "$output" == *"LD_LIBRARY_PATH=/opt/lib"* ]]
}

@test "a command named like an option (--bind) after -- runs as the command (item 19)" {
        local dir
        dir=$(user_dir)
        printf '#!/bin/sh\necho "ran as command: $*"\n' > "$dir/--bind"
        chmod 0755 "$dir/--bind"
        run sbx --ro-bind "$dir" /x --setenv PATH /x:/usr/bin -- --bind /etc /y
        [ "$status" -eq 0 ]
        [ "$output" = "ran as command: /etc /y" ]
        run sbx -- --version
        [ "$status" -eq 127 ]
}

@test "fork bomb: stopped by the process limit and the timeout, nothing survives (item 25)" {
        local mark="sbx-bomb-$$-$RANDOM" st="$BATS_TEST_TMPDIR/status"
        run sbx --set limits.processes=64 --timeout 3s --json-status-fd 3 -- \
                sh -c 'f() { f | f & }; f; sleep 60' "$mark" 3>"$st"
        [ "$status" -eq 124 ]
        grep -q '"timed-out": true' "$st"
        # no process of the bomb is left anywhere on the host
        # (the bracket keeps grep from matching its own command line)
        wait_until 10 no_process "sbx-[b]omb-${mark#sbx-bomb-}"
        ! grep -lsa -- "sbx-[b]omb-${mark#sbx-bomb-}" /proc/[0-9]*/cmdline || false
}

@test "fork bomb: fork fails at the process limit instead of exhausting the host (item 25)" {
        run sbx --set limits.processes=16 -- sh -c 'for i in $(seq 40); do sleep 5 & done 2>&1; echo started'
        # the command ran (dash gives up at the fork it cannot make: 2)
        [ "$status" -lt 125 ]
        [[ "$output" == *"fork"* ]] || [[ "$output" == *"Resource temporarily unavailable"* ]]
}

@test "memory bomb: allocation fails at the memory limit (item 25)" {
        if ldd "$SBX_LAUNCH" 2>/dev/null | grep -q libasan; then
                skip "sbx-launch is an AddressSanitizer build, which does not set memory limits"
        fi
        run sbx --set limits.memory=256M -- python3 -c 'x = bytearray(1 << 31); print("ALLOCATED")'
        [ "$status" -ne 0 ]
        [[ "$output" == *MemoryError* ]]
        [[ "$output" != *ALLOCATED* ]]
}

@test "disk filler: a sized tmpfs fills up with ENOSPC, bytes and inodes (item 25)" {
        local dir
        dir=$(user_dir)
        printf '[fs]\ntmpfs = /fill size=1M nr_inodes=32 mode=0777\n' > "$dir/fill.ini"
        chmod a+r "$dir/fill.ini"
        run -0 sbx --profile default --profile "$dir/fill.ini" -- \
                sh -c 'dd if=/dev/zero of=/fill/big bs=64k count=100 2>&1; rm -f /fill/big; i=0; while [ $i -lt 100 ]; do touch /fill/f$i || break; i=$((i + 1)); done; echo "files=$i"'
        [[ "$output" == *"No space left on device"* ]]
        local files=${output##*files=}
        [ "$files" -lt 100 ]
}

@test "fd hog: opening files fails at the open-files limit (item 25)" {
        run sbx --set limits.open-files=64 -- python3 -c '
import os
fds = []
try:
    for _ in range(10000): fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e: print("stopped", len(fds), e.strerror)'
        [ "$status" -eq 0 ]
        [[ "$output" == "stopped "*" Too many open files" ]]
        local n=${output#stopped }
        [ "${n%% *}" -lt 64 ]
}

@test "output flood: a job writing without end into a file is stopped at the file-size limit (item 25)" {
        local out
        out=$(user_dir)/flood
        local rc=0
        # not through `run`: its capture would swallow the flood
        sbx --set limits.file-size=1M -- yes flood > "$out" || rc=$?
        [ "$rc" -eq 153 ] # 128 + SIGXFSZ: the record names the limit's signal
        [ "$(stat -c %s "$out")" -le 1048576 ]
}

@test "output flood: a job flooding a pipe is ended by the timeout and the launcher stays responsive (item 25)" {
        local st="$BATS_TEST_TMPDIR/status"
        run -0 bash -c "$(declare -f as_user sbx); SBX_PROFILE_PATH='$SBX_PROFILE_PATH' SBX_LAUNCH='$SBX_LAUNCH'; sbx --timeout 2s --json-status-fd 3 -- yes 3>'$st' | wc -c"
        grep -q '"timed-out": true' "$st"
        [ "$output" -gt 0 ]
}
