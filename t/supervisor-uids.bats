#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8), job_uids in sbx-supervisord.conf(5): a job's uid goes
# back to the pool once no process of it is left, and only then; without
# job cgroups the daemon kills what is left of the uid and checks that
# nothing is. A pool of one uid runs job after job.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
        [ "$(id -u)" = 0 ] || skip "the daemon must run as root to give jobs uids of their own"
        STRAY=
}

teardown() {
        [ -z "$STRAY" ] || kill -KILL "$STRAY" 2>/dev/null || true
        sup_stop
}

# one_uid_daemon CGROUP: a daemon whose pool is the first uid of this file's
# range alone.
one_uid_daemon() {
        rm -f "$SUP_DIR/sup.conf"
        sup_config
        UID1=${SUP_JOB_UIDS%-*}
        sed -i -e "s|^job_uids = .*|job_uids = $UID1-$UID1|" -e "s|^cgroup = .*|cgroup = $1|" "$SUP_DIR/sup.conf"
        sup_start
}

# run_id: run `id -u` as a job. Its uid comes back a moment after its
# client hears of the previous job's end (once that job's processes are
# gone); until then a job fails for want of a uid, so try for 30 s.
run_id() {
        local i out
        for i in $(seq 300); do
                if out=$(ctl run -- id -u 2>&1); then
                        echo "$out"
                        return 0
                fi
                [[ "$out" == *"no free job uid"* ]] || { echo "$out"; return 1; }
                sleep 0.1
        done
        echo "$out"
        return 1
}

@test "without job cgroups a pool of one uid runs job after job" {
        one_uid_daemon none
        for i in 1 2 3 4 5; do
                run run_id
                [ "$status" -eq 0 ]
                [ "$output" = "$UID1" ]
        done
        ! grep -q "cannot make sure no process of it is left" "$SUP_DIR/daemon.log" || false
}

@test "without job cgroups a process left running as a job's uid is killed before the uid runs another job" {
        one_uid_daemon none
        job=$(ctl submit -- sleep 300)
        # A process of the job's uid the job's sandbox does not hold (as an
        # escaped one would be), with a parent that reaps it at once.
        /usr/bin/python3 -c '
import subprocess, sys
p = subprocess.Popen(["setpriv", "--reuid", sys.argv[1], "--regid", sys.argv[1], "--clear-groups", "sleep", "300"])
open(sys.argv[2], "w").write(str(p.pid))
print(p.wait())' "$UID1" "$SUP_DIR/stray.pid" > "$SUP_DIR/stray.status" &
        STRAY=$!
        for i in $(seq 600); do [ -s "$SUP_DIR/stray.pid" ] && break; sleep 0.05; done
        # its pid is known before setpriv has taken the uid
        for i in $(seq 600); do
                [ "$(stat -c %u "/proc/$(cat "$SUP_DIR/stray.pid")")" = "$UID1" ] && break
                sleep 0.05
        done
        [ "$(stat -c %u "/proc/$(cat "$SUP_DIR/stray.pid")")" = "$UID1" ]
        ctl cancel "$job" >/dev/null
        ctl wait "$job" >/dev/null || true
        run run_id
        [ "$status" -eq 0 ]
        [ "$output" = "$UID1" ]
        # the stray was killed (SIGKILL), not left to finish
        wait "$STRAY"
        STRAY=
        [ "$(cat "$SUP_DIR/stray.status")" = -9 ]
}

@test "with job cgroups a pool of one uid runs job after job" {
        [ "$SUP_CGROUP" != none ] || skip "no writable cgroup2 hierarchy here"
        one_uid_daemon "$SUP_CGROUP"
        for i in 1 2 3; do
                run run_id
                [ "$status" -eq 0 ]
                [ "$output" = "$UID1" ]
        done
}
