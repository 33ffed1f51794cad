#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# SECURITY.md items 11, 16, 17: /proc, the launcher's exe, fds and cwd.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
}

@test "sensitive /proc entries read empty: kcore, keys, timer_list, sched_debug, sysrq-trigger, latency_stats (item 11)" {
        local tested=0
        for e in kcore keys key-users timer_list sched_debug sysrq-trigger latency_stats; do
                [ -e "/proc/$e" ] || continue
                tested=$((tested + 1))
                run sbx -- sh -c "wc -c < /proc/$e; grep ' /proc/$e ' /proc/self/mountinfo"
                [ "$status" -eq 0 ] || { echo "$e: $output"; false; }
                [ "${lines[0]}" = 0 ] || { echo "$e: $output"; false; }
                [[ "${lines[1]}" == *" ro,"* ]] || { echo "$e not masked: $output"; false; }
        done
        [ "$tested" -gt 0 ] || skip "this kernel has none of the masked /proc files"
}

@test "hardware trees /proc/acpi and /proc/scsi are empty (item 11)" {
        local tested=0
        for e in acpi scsi asound; do
                [ -d "/proc/$e" ] || continue
                tested=$((tested + 1))
                run -0 sbx -- sh -c "ls -A /proc/$e | grep -v '^empty$' | wc -l"
                [ "$output" = 0 ] || { echo "$e: $output"; false; }
        done
        [ "$tested" -gt 0 ] || skip "this kernel has neither /proc/acpi nor /proc/scsi"
}

@test "/proc/sys, /proc/bus, /proc/fs and /proc/irq are read-only mounts (item 11)" {
        run sbx -- cat /proc/self/mountinfo
        [ "$status" -eq 0 ]
        for d in sys bus fs irq; do
                [ -e "/proc/$d" ] || continue
                echo "$output" | grep -E " /proc/$d ro," || { echo "/proc/$d is not read-only"; false; }
        done
}

@test "writing core_pattern (the classic escape to host root) fails (item 11)" {
        run sbx -- sh -c 'echo "|/tmp/evil" > /proc/sys/kernel/core_pattern && echo WRITTEN'
        [ "$status" -ne 0 ]
        [[ "$output" != *WRITTEN* ]]
        [[ "$(cat /proc/sys/kernel/core_pattern)" != *evil* ]]
}

@test "sysrq and other kernel tunables cannot be written either (item 11)" {
        run -0 sbx -- sh -c 'echo 1 > /proc/sys/kernel/sysrq && echo WRITTEN; echo 1 > /proc/sys/vm/drop_caches && echo WRITTEN; exit 0'
        [[ "$output" != *WRITTEN* ]]
}

@test "there is no /sys unless the profile asks for it (item 11)" {
        run sbx -- sh -c 'test -e /sys && echo EXISTS; cut -d" " -f5 /proc/self/mountinfo'
        [ "$status" -eq 0 ]
        [[ "$output" != *EXISTS* ]]
        ! echo "$output" | grep -qx /sys || false
}

@test "/proc/1/exe of the launcher's pid 1 is unreachable and unwritable (item 16)" {
        run -0 sbx -- sh -c 'readlink /proc/1/exe && echo READABLE; cat /proc/1/exe > /dev/null && echo OPENED; echo x >> /proc/1/exe && echo WRITTEN; ls /proc/1/fd && echo FDS; ls /proc/1/root/ && echo ROOT; exit 0'
        [[ "$output" != *READABLE* ]]
        [[ "$output" != *OPENED* ]]
        [[ "$output" != *WRITTEN* ]]
        [[ "$output" != *FDS* ]]
        [[ "$output" != *ROOT* ]]
        cmp -s "$SBX_BUILDDIR/launcher/sbx-launch" "$SBX_LAUNCH"
}

@test "fd census: the job holds only 0, 1, 2 even when the caller leaks fds (item 17)" {
        run sbx -- sh -c 'ls /proc/self/fd' 7</etc/passwd 8<"$SBX_STAGE" 9>"$BATS_TEST_TMPDIR/leak"
        [ "$status" -eq 0 ]
        # ls itself opens one fd (3) for the directory it lists
        [ "$(echo $output)" = "0 1 2 3" ]
}

@test "fd census: an fd passed on purpose with --pass-fd reaches the job, others do not (item 17)" {
        run sbx --pass-fd 7 -- sh -c 'ls /proc/self/fd; cat <&7' 7<<<"passed" 8</etc/passwd
        [ "$status" -eq 0 ]
        [ "$(echo $output)" = "0 1 2 3 7 passed" ]
}

@test "the working directory is inside the new root, never a leaked host directory (item 17)" {
        cd "$SBX_STAGE"
        run sbx -- sh -c 'pwd; ls -d ../../../..; cat /proc/self/cwd/../../etc/passwd >/dev/null 2>&1 && echo HOSTFILE; true'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = /tmp ]
        [[ "$output" != *HOSTFILE* ]]
        [[ "$output" != *unreachable* ]]
}
