#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) under load: 200 jobs in flight from 10 clients at once,
# each with its own output and exit status; every result present and right.
# Under the sanitizers (SBX_SANITIZED, set by make check in such a build)
# 60: that run looks for memory errors on the same paths, at a tenth of
# the speed; the plain run shows the load.

load sup-unit/daemon
# hundreds of clients: no leak scan at their exit (ctl in sup-unit/daemon.bash)
SUP_CTL_LEAK_CHECK=0
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config "max_jobs = 16
max_queue = 1024"
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
}

# jobs of each client
PER=${SBX_SANITIZED:+6}
PER=${PER:-20}

client() {
        local c=$1 i ids=()
        for i in $(seq $PER); do
                ids+=("$(ctl submit -- sh -c "echo client-$c-job-$i; exit $(( (c * 20 + i) % 7 ))")")
        done
        for i in $(seq $PER); do
                ctl --json wait "${ids[$((i - 1))]}" > "$SUP_DIR/load-$c-$i.json" || true
                echo "${ids[$((i - 1))]}" > "$SUP_DIR/load-$c-$i.id"
        done
}

@test "200 concurrent jobs from 10 clients (60 under the sanitizers) all finish with the right results" {
        for c in $(seq 10); do client "$c" & done
        wait
        ok=0
        for c in $(seq 10); do
                for i in $(seq $PER); do
                        f="$SUP_DIR/load-$c-$i.json"
                        [ "$(json_get result.exit_code < "$f")" = $(( (c * 20 + i) % 7 )) ] || { echo "bad exit in $f"; cat "$f"; return 1; }
                        job=$(cat "$SUP_DIR/load-$c-$i.id")
                        [ "$(ctl logs "$job")" = "client-$c-job-$i" ] || { echo "bad output for $job"; return 1; }
                        ok=$((ok + 1))
                done
        done
        [ "$ok" -eq $((10 * PER)) ]
        # and the daemon is idle and well afterwards
        [ "$(ctl --json ls --state active | json_get jobs)" = "[]" ]
        [ "$(ls "$SUP_DIR/state/work" | wc -l)" -eq 0 ]
}
