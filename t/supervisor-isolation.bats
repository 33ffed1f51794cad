#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) SECURITY, around the sandbox: the attacks of a
# hostile review, reproduced, failing safely. Each job has a uid of its
# own; nothing a job writes is setuid or a device from the host's side;
# its workspace is out of other users' reach; its environment is never on a
# command line; limits hold for the job as a whole, or the record says what
# they covered.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config "socket_mode = 0666"
        cat >> "$SUP_DIR/sup.conf" <<EOC
[tenant.other]
uids = $(id -u nobody)
profiles = default shell
EOC
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
        [ "$(id -u)" = 0 ] || skip "the daemon must run as root to give jobs uids and workspaces of their own"
}

# logs_are JOB TEXT: the job's output so far is TEXT.
logs_are() {
        [ "$(ctl logs "$1")" = "$2" ]
}

# bomb_refused JOB: the job's stderr reports a failed fork (sbxctl logs
# writes a job's stderr on its own stderr; read whole, as grep -q would
# end the pipe early).
bomb_refused() {
        [[ "$(ctl logs --stream stderr "$1" 2>&1)" == *[Ff]ork* ]]
}

# wait_running JOB: until the job runs.
wait_running() {
        local i
        for i in $(seq 200); do
                [ "$(ctl --json status "$1" | json_get job.state)" = running ] && return 0
                sleep 0.05
        done
        return 1
}

@test "two jobs at once run as two different uids, neither of them a user's" {
        a=$(ctl submit -- sh -c 'id -u; sleep 2')
        b=$(ctl submit -- sh -c 'id -u; sleep 2')
        ctl wait "$a" >/dev/null
        ctl wait "$b" >/dev/null
        ua=$(ctl logs "$a")
        ub=$(ctl logs "$b")
        [ "$ua" != "$ub" ]
        ! getent passwd "$ua" || false
        [ "$(ctl --json result "$a" | json_get result.job_uid)" = "$ua" ]
}

@test "a setuid copy of a shell planted in the workspace is not setuid from the host, and other users cannot reach it" {
        job=$(ctl submit -- sh -c 'cp /usr/bin/python3 /workspace/py; chmod 6755 /workspace/py; echo "chmod $?" > /workspace/tried; sleep 30')
        wait_running "$job"
        ws="$SUP_DIR/state/work/$job"
        for i in $(seq 200); do [ -s "$ws/tried" ] && break; sleep 0.05; done
        # sbx-launch's syscall filter refuses the set-id mode (sbx-launch(1),
        # SECURITY): the bits never get there...
        [ "$(cat "$ws/tried")" = "chmod 1" ]
        [ "$(stat -c %a "$ws/py")" = 755 ]
        # ...and the workspace is a nosuid, nodev file system of its own anyway
        findmnt -n -o OPTIONS --target "$ws" | grep -q nosuid
        findmnt -n -o OPTIONS --target "$ws" | grep -q nodev
        # run from the host it does not take the job's uid
        run -0 "$ws/py" -c 'import os; print(os.geteuid())'
        [ "$output" = 0 ]
        # and another local user cannot even reach it
        run setpriv --reuid=nobody --regid=nogroup --clear-groups -- ls "$ws"
        [ "$status" -ne 0 ]
        [[ "$output" == *"Permission denied"* ]]
        ctl cancel "$job"
        ctl wait "$job" >/dev/null || true
}

@test "the job's environment values are not on any command line, in the daemon's log or its audit log" {
        job=$(ctl submit --env TOKEN=hunter2-secret-value -- sh -c 'echo "$TOKEN"; sleep 3')
        wait_running "$job"
        # the job's shell has run: every process between the daemon and it exists
        wait_until 30 logs_are "$job" hunter2-secret-value
        ! grep -a -q hunter2-secret-value /proc/[0-9]*/cmdline || false
        ! ps -eo args | grep -v grep | grep -q hunter2-secret-value || false
        ctl wait "$job" >/dev/null
        [ "$(ctl logs "$job")" = hunter2-secret-value ]
        ! grep -q hunter2-secret-value "$SUP_DIR/daemon.log" || false
        ! grep -q hunter2-secret-value "$SUP_DIR/audit.log" || false
}

@test "CPU time is the job's: two busy children together stop at cpu_s (cgroup cpu.stat)" {
        [ "$SUP_CGROUP" != none ] || skip "no writable cgroup2 hierarchy here: CPU time is then an rlimit per process"
        run -137 ctl --json run --cpu 2s --timeout 60s -- sh -c 'sh -c "while :; do :; done" & sh -c "while :; do :; done" & wait'
        job=$(json_get job <<<"${lines[0]}")
        run -0 ctl --json result "$job"
        [ "$(json_get result.state <<<"$output")" = killed ]
        [ "$(json_get result.error.code <<<"$output")" = E_CPU_TIME ]
        [ "$(json_get result.limits.cpu_s.by <<<"$output")" = cgroup ]
        cpu=$(json_get result.cpu_ms <<<"$output")
        # two CPUs at most, checked four times a second: a little over
        [ "$cpu" -ge 2000 ] && [ "$cpu" -lt 3500 ]
}

@test "memory kept by rlimits: memfd_create is refused and the record says what the limit covers" {
        ctl_has_memcg=$(grep -c 'memory yes' "$SUP_DIR/daemon.log" || true)
        [ "$ctl_has_memcg" = 0 ] || skip "the memory controller enforces memory here"
        run -0 ctl --json run --memory 256M -- python3 -c '
import os, sys
try:
    fd = os.memfd_create("x")
except OSError as e:
    print("memfd", e.errno); sys.exit(0)
os.ftruncate(fd, 1 << 31); print("memfd made")'
        [[ "${lines[*]}" == *"memfd 1"* ]]   # EPERM
        job=$(json_get job <<<"${lines[0]}")
        run -0 ctl --json result "$job"
        [ "$(json_get result.limits.memory.by <<<"$output")" = rlimit ]
        [[ "$(json_get result.limits.memory.covers <<<"$output")" == *"each process"* ]]
}

@test "the workspace has a size: a job filling it gets ENOSPC and the record says tmpfs" {
        run -0 ctl --json run --disk 8M -- sh -c 'head -c 20000000 /dev/zero > /workspace/big; echo "exit $?"; ls -l /workspace/big | cut -d" " -f5'
        [[ "${lines[*]}" == *"No space left on device"* ]]
        job=$(json_get job <<<"${lines[0]}")
        run -0 ctl --json result "$job"
        [ "$(json_get result.limits.disk.value <<<"$output")" = $((8 << 20)) ]
        [ "$(json_get result.limits.disk.by <<<"$output")" = tmpfs ]
        run -125 ctl --json run --disk 2G -- true
        [ "$(json_get error.code <<<"${lines[0]}")" = E_LIMIT ]   # above the default max_disk of 1G
}

@test "the workspace is a tmpfs mounted noswap where the kernel has it (6.4 on), as the job sees it and the record says" {
        workspace_is_noswap_tmpfs
}

@test "fork bombs in one tenant's jobs, with default settings, do not keep another tenant's jobs from starting" {
        # (with one uid for every job, the bombs' processes counted against
        # every job's process limit: others failed to start with EAGAIN)
        bomb=$(ctl submit --timeout 20s -- sh -c 'b() { b & b & }; b; sleep 30')
        bomb2=$(ctl submit --timeout 20s -- sh -c 'b() { b & b & }; b; sleep 30')
        wait_running "$bomb"
        # a bomb is at its process limit: one of its forks failed
        wait_until 60 bomb_refused "$bomb"
        for i in 1 2 3 4 5; do
                run setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" run -- echo ok
                [ "$status" -eq 0 ]
                [ "$output" = ok ]
        done
        ctl cancel "$bomb"
        ctl cancel "$bomb2"
        ctl wait "$bomb" >/dev/null || true
        ctl wait "$bomb2" >/dev/null || true
}
