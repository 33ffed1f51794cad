#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# SECURITY.md items 1-7: the syscall filter, attacked from inside a
# sandbox built with the default profile, as an unprivileged user.
# try-syscall prints the errno of a call made with harmless bad
# arguments: EFAULT/EBADF/EINVAL means the call reached the kernel,
# EPERM/ENOSYS/EAFNOSUPPORT means the filter stopped it.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
        [ -x "$SBX_STAGE/bin/try-syscall" ] || skip "try-syscall was not built"
}

# try NAME [ARG]... inside the default sandbox
try() {
        sbx --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/try-syscall "$@"
}

# try_in MODE NAME [ARG]... with [security] seccomp = MODE
try_in() {
        local mode=$1
        shift
        sbx --set security.seccomp="$mode" --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/try-syscall "$@"
}

@test "allowed calls still reach the kernel (a filter that blocks everything fails here)" {
        run try read -1 0 0
        [ "$status" -eq 0 ]
        [ "$output" = EBADF ]
        run -0 try ioctl -1 0x5401
        [ "$output" = EBADF ]
        run -0 try openat -100 bad 0
        [ "$output" = EFAULT ]
        run -0 try socket 1 99 0
        [ "$output" = EINVAL ]
        run -0 try getpid
        [ "$output" = OK ]
}

@test "TIOCSTI terminal injection is refused, also with garbage in the high 32 bits (item 1)" {
        run try ioctl 0 0x5412 bad
        [ "$status" -eq 0 ]
        [ "$output" = EPERM ]
        run -0 try ioctl 0 0x100005412 bad
        [ "$output" = EPERM ]
        run -0 try ioctl 0 0xffffffff00005412 bad
        [ "$output" = EPERM ]
}

@test "TIOCLINUX console injection is refused (item 1)" {
        run -0 try ioctl 0 0x541c bad
        [ "$output" = EPERM ]
        run -0 try ioctl 0 0x10000541c bad
        [ "$output" = EPERM ]
}

@test "the command runs in a new session, away from the caller's terminal (item 1)" {
        run sbx -- sh -c 'ps_sid=$(cut -d" " -f6 /proc/self/stat); echo "$ps_sid $$"'
        [ "$status" -eq 0 ]
        # sh is the session leader: its sid is its own pid.
        set -- $output
        [ "$1" = "$2" ]
}

@test "i386 int 0x80 calls kill the job instead of bypassing the filter (item 2)" {
        [ "$(uname -m)" = x86_64 ] || skip "i386 ABI test is x86_64-only"
        # Outside the sandbox the same call reaches the kernel (or the
        # kernel lacks IA32 emulation, then there is nothing to bypass).
        run "$SBX_STAGE/bin/try-syscall" --abi i386 getpid
        if [ "$status" -ne 0 ] || [ "$output" != OK ]; then skip "this kernel has no i386 emulation"; fi
        run try --abi i386 getpid
        [ "$status" -eq 159 ] # 128 + SIGSYS
        run try --abi i386 mount
        [ "$status" -eq 159 ]
        run try --abi i386 unshare 0x10000000
        [ "$status" -eq 159 ]
}

@test "x32 syscall numbers (nr | 0x40000000) kill the job instead of bypassing the filter (item 2)" {
        [ "$(uname -m)" = x86_64 ] || skip "x32 ABI test is x86_64-only"
        # Without the filter the kernel answers ENOSYS (no CONFIG_X86_X32_ABI)
        # or runs the call; with it the filter must act first, so the job
        # dies of SIGSYS either way: this proves the filter saw the call.
        run try --abi x32 mount
        [ "$status" -eq 159 ]
        run try --abi x32 unshare 0x10000000
        [ "$status" -eq 159 ]
        run try --abi x32 getpid
        [ "$status" -eq 159 ]
}

@test "unshare with namespace flags is refused with EPERM (item 3)" {
        for flag in 0x10000000 0x00020000 0x20000000 0x40000000 0x08000000 0x04000000 0x02000000 0x80; do
                run -0 try unshare $flag
                [ "$output" = EPERM ] || { echo "unshare $flag: $output"; false; }
        done
        # Flags that make no namespace still reach the kernel.
        run -0 try unshare 0x200
        [ "$output" = OK ]
}

@test "clone with CLONE_NEWUSER is refused with EPERM, clone3 with ENOSYS, setns with EPERM (item 3)" {
        # CLONE_NEWUSER|CLONE_NEWNS|CLONE_FS: the kernel itself would say
        # EINVAL, so a missing filter cannot create anything here.
        run -0 try clone 0x10020200
        [ "$output" = EPERM ]
        run -0 try clone 0x40000200
        [ "$output" = EPERM ]
        run -0 try clone3 bad 88
        [ "$output" = ENOSYS ]
        run -0 try setns -1 0
        [ "$output" = EPERM ]
}

@test "the new mount API and the old one are refused (item 4)" {
        for s in open_tree move_mount fsopen fsconfig fsmount fspick mount_setattr mount umount2 pivot_root chroot; do
                run -0 try $s
                [ "$output" = EPERM ] || { echo "$s: $output"; false; }
        done
}

@test "io_uring, userfaultfd, bpf, perf_event_open, keyrings, ptrace, process_vm, kexec, modules, syslog, acct are refused (item 5)" {
        for s in io_uring_setup io_uring_enter io_uring_register userfaultfd bpf perf_event_open \
                 keyctl add_key request_key ptrace process_vm_readv process_vm_writev \
                 kexec_load kexec_file_load init_module finit_module delete_module syslog acct \
                 quotactl swapon swapoff reboot settimeofday clock_settime clock_adjtime adjtimex; do
                run -0 try $s
                [ "$output" = EPERM ] || { echo "$s: $output"; false; }
        done
}

@test "personality other than PER_LINUX (ASLR off, READ_IMPLIES_EXEC) is refused (item 5)" {
        run -0 try personality 0x0040000 # ADDR_NO_RANDOMIZE
        [ "$output" = EPERM ]
        run -0 try personality 0x0400000 # READ_IMPLIES_EXEC
        [ "$output" = EPERM ]
        run -0 try personality 0x100000000
        [ "$output" = EPERM ]
        run -0 try personality 0
        [ "$output" = OK ]
}

@test "syscalls newer than the reviewed list return ENOSYS" {
        # 457 statmount, 462 mseal, 467 open_tree_attr (Linux 6.8-6.15)
        for nr in 457 458 462 467 500; do
                run -0 try $nr
                [ "$output" = ENOSYS ] || { echo "$nr: $output"; false; }
        done
}

@test "socket families other than UNIX, INET, INET6, NETLINK get EAFNOSUPPORT (item 6)" {
        # AF_PACKET, AF_KEY, AF_BLUETOOTH, AF_ALG, AF_VSOCK, AF_APPLETALK, AF_UNSPEC
        for fam in 17 15 31 38 40 5 0; do
                run -0 try socket $fam 3 0
                [ "$output" = EAFNOSUPPORT ] || { echo "family $fam: $output"; false; }
        done
        # AF_PACKET with garbage in the high bits of the register
        run -0 try socket 0x100000011 3 0
        [ "$output" = EAFNOSUPPORT ]
        for fam in 1 2 10 16; do
                run -0 try socket $fam 99 0
                [ "$output" = EINVAL ] || { echo "family $fam: $output"; false; }
        done
}

@test "/proc/self/status shows NoNewPrivs 1, Seccomp 2 and all five capability sets empty (item 7)" {
        run sbx -- cat /proc/self/status
        [ "$status" -eq 0 ]
        echo "$output" | grep -qx 'NoNewPrivs:[[:space:]]*1'
        echo "$output" | grep -qx 'Seccomp:[[:space:]]*2'
        for set in CapInh CapPrm CapEff CapBnd CapAmb; do
                echo "$output" | grep -qx "$set:[[:space:]]*0000000000000000" || { echo "$set not empty"; false; }
        done
}

@test "the status record reports the protections that were applied" {
        local st="$BATS_TEST_TMPDIR/status"
        run sbx --json-status-fd 3 -- true 3>"$st"
        [ "$status" -eq 0 ]
        grep -q '"no-new-privs": true' "$st"
        grep -q '"seccomp": "default"' "$st"
        grep -q '"caps-dropped": true' "$st"
        grep -q '"nested-userns-blocked": true' "$st"
        grep -q '"proc-masked": true' "$st"
}

@test "seccomp = strict still runs sh and python3 but refuses sockets and ptrace" {
        run sbx --set security.seccomp=strict -- sh -c 'echo hello from sh; python3 -c "print(6*7)"'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "hello from sh" ]
        [ "${lines[1]}" = 42 ]
        run -0 try_in strict socket 1 1 0
        [ "$output" = ENOSYS ]
        run -0 try_in strict ptrace
        [ "$output" = ENOSYS ]
        run -0 try_in strict read -1 0 0
        [ "$output" = EBADF ]
        run -0 try_in strict ioctl 0 0x5412 bad
        [ "$output" = ENOSYS ]
        run -0 try_in strict unshare 0x10000000
        [ "$output" = ENOSYS ]
}

@test "seccomp = none loads no filter but still sets no_new_privs" {
        run sbx --set security.seccomp=none -- cat /proc/self/status
        [ "$status" -eq 0 ]
        echo "$output" | grep -qx 'NoNewPrivs:[[:space:]]*1'
        echo "$output" | grep -qx 'Seccomp:[[:space:]]*0'
        run -0 try_in none keyctl
        [ "$output" = EOPNOTSUPP ]
        run -0 try_in none ptrace
        [ "$output" = ESRCH ]
        run -0 try_in none personality 0x0040000
        [ "$output" = OK ]
}

@test "profile allow lines lift a built-in denial and deny lines add one with its errno" {
        run sbx --set security.allow=personality --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/try-syscall personality 0x0040000
        [ "$status" -eq 0 ]
        [ "$output" = OK ]
        run -0 sbx --set security.deny=getcwd:EACCES --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/try-syscall getcwd bad 10
        [ "$output" = EACCES ]
        run -0 sbx --set security.deny=uname --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/try-syscall uname bad
        [ "$output" = EPERM ]
        # the rest of the default list still holds
        run -0 sbx --set security.allow=personality --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/try-syscall bpf
        [ "$output" = EPERM ]
}
