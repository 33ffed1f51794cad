#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) LIMITS: each rlimit is set, hit, and the hit shows in the
# exit status or the status record.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
        st="$BATS_TEST_TMPDIR/status"
}

# An AddressSanitizer build of sbx-launch cannot run under an address-space
# or data limit (its shadow memory is terabytes) and leaves them out.
require_vm_limits() {
        if ldd "$SBX_LAUNCH" 2>/dev/null | grep -q libasan; then
                skip "sbx-launch is an AddressSanitizer build, which does not set memory and data limits"
        fi
}

@test "every limit is set as an rlimit in the command" {
        require_vm_limits
        run sbx --set limits.cpu=7 --set limits.memory=300M --set limits.data=200M --set limits.processes=33 \
                --set limits.file-size=5M --set limits.open-files=77 --set limits.stack=4M \
                -- python3 -c '
import resource as r
for n in ("CPU", "AS", "DATA", "NPROC", "FSIZE", "NOFILE", "STACK", "CORE"):
    print(n, *r.getrlimit(getattr(r, "RLIMIT_" + n)))'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "CPU 7 8" ]
        [ "${lines[1]}" = "AS 314572800 314572800" ]
        [ "${lines[2]}" = "DATA 209715200 209715200" ]
        [ "${lines[3]}" = "NPROC 33 33" ]
        [ "${lines[4]}" = "FSIZE 5242880 5242880" ]
        [ "${lines[5]}" = "NOFILE 77 77" ]
        [ "${lines[6]}" = "STACK 4194304 4194304" ]
        [ "${lines[7]}" = "CORE 0 0" ]
}

@test "no core dumps by default" {
        run -0 sbx -- sh -c 'ulimit -c; ulimit -Hc'
        [ "$(echo $output)" = "0 0" ]
}

@test "cpu: a spinning job gets SIGXCPU, reported as signal 24" {
        run sbx --json-status-fd 5 --set limits.cpu=1 -- sh -c 'while :; do :; done' 5>"$st"
        [ "$status" -eq 152 ]
        [ "$(jq -s '.[1].signal' "$st")" = 24 ]
        # accounted CPU time, not wall time (tick-based: allow slack)
        [ "$(jq -s '.[1]."cpu-ms" >= 500' "$st")" = true ]
}

@test "file-size: writing past it gets SIGXFSZ, reported as signal 25" {
        run sbx --json-status-fd 5 --set limits.file-size=64K -- sh -c 'exec head -c 1000000 /dev/zero > /tmp/big' 5>"$st"
        [ "$status" -eq 153 ]
        [ "$(jq -s '.[1].signal' "$st")" = 25 ]
}

@test "open-files: the job runs out of descriptors (EMFILE)" {
        run sbx --set limits.open-files=16 -- python3 -c '
import errno
fds = []
try:
    while True:
        fds.append(open("/dev/null"))
except OSError as e:
    print(errno.errorcode[e.errno], len(fds))'
        [ "$status" -eq 0 ]
        [[ "$output" == "EMFILE "* ]]
        [ "${output#EMFILE }" -le 13 ]
}

@test "processes: a fork bomb stops at the limit (EAGAIN)" {
        run sbx --set limits.processes=8 -- python3 -c '
import os, errno
n = 0
try:
    while n < 100:
        if os.fork() == 0:
            import time; time.sleep(5); os._exit(0)
        n += 1
except OSError as e:
    print(errno.errorcode[e.errno], n)'
        [ "$status" -eq 0 ]
        [[ "$output" == "EAGAIN "* ]]
        [ "${output#EAGAIN }" -le 8 ]
}

@test "memory: an allocation past the address-space limit fails (MemoryError)" {
        require_vm_limits
        run sbx --set limits.memory=128M -- python3 -c '
try:
    b = bytearray(512 * 1024 * 1024)
    print("allocated")
except MemoryError:
    print("MemoryError")'
        [ "$status" -eq 0 ]
        [ "$output" = MemoryError ]
}

@test "data: an allocation past the data limit fails (MemoryError)" {
        require_vm_limits
        run sbx --set limits.data=64M -- python3 -c '
try:
    b = bytearray(256 * 1024 * 1024)
    print("allocated")
except MemoryError:
    print("MemoryError")'
        [ "$status" -eq 0 ]
        [ "$output" = MemoryError ]
}

@test "stack: deep recursion past the stack limit dies of SIGSEGV, reported as signal 11" {
        run sbx --json-status-fd 5 --set limits.stack=256K -- bash -c 'f() { f; }; f' 5>"$st"
        [ "$status" -eq 139 ]
        [ "$(jq -s '.[1].signal' "$st")" = 11 ]
}

@test "a limit above the caller's own hard limit is a setup error naming the limit" {
        run bash -c "ulimit -n 512; $(declare -f as_user sbx); SBX_PROFILE_PATH=$SBX_PROFILE_PATH SBX_LAUNCH=$SBX_LAUNCH sbx --set limits.open-files=4096 -- true"
        [ "$status" -eq 125 ]
        [[ "$output" == *"sbx-launch: limits: open-files: Operation not permitted"* ]]
}

@test "unlimited under a lower hard limit is that hard limit, not an error" {
        run bash -c "ulimit -Su 300; ulimit -Hu 4000; $(declare -f as_user sbx); SBX_PROFILE_PATH=$SBX_PROFILE_PATH SBX_LAUNCH=$SBX_LAUNCH sbx --set limits.processes=unlimited -- cat /proc/self/limits"
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" =~ Max\ processes\ +4000\ +4000\  ]]
        # a number above the hard limit stays an error
        run bash -c "ulimit -Su 300; ulimit -Hu 4000; $(declare -f as_user sbx); SBX_PROFILE_PATH=$SBX_PROFILE_PATH SBX_LAUNCH=$SBX_LAUNCH sbx --set limits.processes=5000 -- true"
        [ "$status" -eq 125 ]
        [[ "$output" == *"sbx-launch: limits: processes: Operation not permitted"* ]]
}
