#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# SECURITY.md 25 and 34, issue 9: under the default profile (no --profile,
# as a user first runs sbx-launch) a fork bomb and a memory bomb stop at
# documented bounds. The review forked 3,000 processes and touched 4 GiB
# under a default profile that set neither bound.

load helpers/common

setup() {
        require_userns
        st="$BATS_TEST_TMPDIR/status"
}

require_vm_limits() {
        if ldd "$SBX_LAUNCH" 2>/dev/null | grep -q libasan; then
                skip "sbx-launch is an AddressSanitizer build, which does not set memory limits"
        fi
}

@test "the default profile bounds processes (256 per sandbox) and memory (1 GiB per process)" {
        run sbx --json-status-fd 5 -- true 5>"$st"
        [ "$status" -eq 0 ]
        [ "$(jq -s -c '.[1].limits.processes' "$st")" = '{"value":256,"by":"rlimit","per":"sandbox"}' ]
        if ! ldd "$SBX_LAUNCH" 2>/dev/null | grep -q libasan; then
                [ "$(jq -s -c '.[1].limits.memory | [.value, .by, .per]' "$st")" = '[1073741824,"rlimit","process"]' ]
        fi
}

@test "fork bomb: 3,000 processes under the default profile stop at the process bound" {
        run sbx --timeout 120s -- python3 -c '
import errno, os, time
n = 0
try:
    while n < 3000:
        if os.fork() == 0:
            time.sleep(30); os._exit(0)
        n += 1
    print("forked", n)
except OSError as e:
    print(errno.errorcode[e.errno], n)'
        [ "$status" -eq 0 ]
        [[ "$output" == "EAGAIN "* ]]
        # 256 processes counting pid 1 and the python that forks
        [ "${output#EAGAIN }" -le 254 ]
        [ "${output#EAGAIN }" -ge 200 ]
}

@test "fork bomb: the bound is per sandbox, so a bomb in one does not starve another of the same user" {
        local mark="sbx-pbomb-$$-$RANDOM" err="$BATS_TEST_TMPDIR/bomb.err"
        # each of its processes forks again whenever one of its two
        # children ends, so the bomb stays at its bound once there
        sbx --timeout 60s -- sh -c 'b() { while :; do b & b & wait; done; }; b' "$mark" >/dev/null 2>"$err" &
        # the bound is reached: a fork failed
        wait_until 50 grep -qi fork "$err"
        # the same user starts another sandbox while the first is at its bound
        run sbx -- python3 -c 'import os, time
n = 0
for _ in range(20):
    if os.fork() == 0:
        time.sleep(1); os._exit(0)
    n += 1
print("forked", n)'
        pkill -TERM -f "sbx-launch.*$mark" || true
        wait || true
        [ "$status" -eq 0 ]
        [ "$output" = "forked 20" ]
}

@test "memory bomb: 4 GiB touched under the default profile stops at the bound, by allocation, memfd, /dev/shm, /tmp and SysV shm" {
        require_vm_limits
        run sbx --json-status-fd 5 -- python3 -c '
import ctypes, errno, mmap, os
GiB = 1 << 30
def report(name, f):
    try:
        print(name, f())
    except MemoryError:
        print(name, "MemoryError")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
def anon():
    m = mmap.mmap(-1, 4 * GiB)
    for i in range(0, 4 * GiB, 4096):
        m[i] = 1
    return "touched"
def fill(path):
    chunk = b"x" * (1 << 20)
    done = 0
    try:
        with open(path, "wb") as f:
            while done < 4 * GiB:
                f.write(chunk); f.flush(); done += len(chunk)
    except OSError as e:
        return "%s after %d MiB" % (errno.errorcode[e.errno], done >> 20)
    return "wrote 4 GiB"
def memfd():
    fd = os.memfd_create("bomb")
    os.ftruncate(fd, 4 * GiB)
    return "made"
def shm():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    if libc.shmget(0, 4 * GiB, 0o1600) < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    return "made"
report("bytearray", lambda: len(bytearray(4 * GiB)))
report("mmap", anon)
report("memfd", memfd)
report("devshm", lambda: fill("/dev/shm/bomb"))
report("tmp", lambda: fill("/tmp/bomb"))
report("sysv", shm)' 5>"$st"
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "bytearray MemoryError" ]
        [ "${lines[1]}" = "mmap ENOMEM" ]
        [ "${lines[2]}" = "memfd EPERM" ]
        [[ "${lines[3]}" == "devshm ENOSPC after 0 MiB" ]]
        [[ "${lines[4]}" == "tmp ENOSPC after "* ]]
        [ "${lines[4]#tmp ENOSPC after }" = "64 MiB" ] || [ "${lines[4]#tmp ENOSPC after }" = "63 MiB" ]
        # shmget: refused, or (where pid 1 could cap the IPC namespace) too big
        [[ "${lines[5]}" == "sysv EPERM" || "${lines[5]}" == "sysv EINVAL" || "${lines[5]}" == "sysv ENOSPC" ]]
        [ "$(jq -s '.[1]."peak-rss-kb" < 1100000' "$st")" = true ]
        [ "$(jq -s -c '.[1].limits.memory.covers' "$st")" = '["address-space","memfd","sysv-shm","tmpfs"]' ]
}
