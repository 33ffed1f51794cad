#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Metrics (sbx-protocol(7) metrics, sbx-supervisord.conf(5)
# metrics_listen): the Prometheus text exposition on the metrics
# operation and on an HTTP listener, accepted by promtool, and changing as
# jobs run and end.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

UID_B=41031

setup_file() {
        sup_init
        PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        export PORT
        sup_config "socket_mode = 0666
metrics_listen = 127.0.0.1:$PORT"
        sed -i 's/^profiles = default shell$/profiles = default shell broken/' "$SUP_DIR/sup.conf"
        cat >> "$SUP_DIR/sup.conf" <<EOC

[tenant.bravo]
uids = $UID_B
job_user = nobody
job_group = nogroup
profiles = default
EOC
        # a profile whose set-up fails in the launcher: a bind of nothing
        printf '[fs]\nro-bind = /nonexistent/sbx-metrics /x\n' > "$SBX_STAGE/profiles/broken.ini"
        chmod a+r "$SBX_STAGE/profiles/broken.ini"
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
}

scrape() {
        curl -sf "http://127.0.0.1:$PORT/metrics"
}

# value METRIC_WITH_LABELS: its value in the exposition on stdin (0 if absent)
value() {
        awk -v m="$1" '$1 == m { v = $2 } END { print v == "" ? 0 : v }'
}

@test "the metrics operation and the HTTP listener both pass promtool check metrics" {
        command -v promtool >/dev/null || skip "promtool (Debian package prometheus) is not installed"
        ctl run -- true
        run -0 sh -c "'$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' metrics | promtool check metrics"
        run -0 sh -c "curl -sf 'http://127.0.0.1:$PORT/metrics' | promtool check metrics"
        # the HTTP response says which format it is
        curl -sfI "http://127.0.0.1:$PORT/metrics" | grep -qi '^content-type: text/plain; version=0.0.4'
}

@test "values change as jobs run and end: by tenant and state, running, histograms, output bytes" {
        before=$(scrape)
        ok0=$(value 'sbx_jobs_ended_total{tenant="admin",state="succeeded"}' <<<"$before")
        fail0=$(value 'sbx_jobs_ended_total{tenant="admin",state="failed"}' <<<"$before")
        start0=$(value sbx_job_startup_seconds_count <<<"$before")
        runc0=$(value sbx_job_run_seconds_count <<<"$before")
        out0=$(value 'sbx_job_output_bytes_total{tenant="admin",stream="stdout"}' <<<"$before")
        ctl run -- sh -c 'printf 12345'
        run ctl run -- false
        [ "$status" -eq 1 ]
        after=$(scrape)
        [ "$(value 'sbx_jobs_ended_total{tenant="admin",state="succeeded"}' <<<"$after")" = $((ok0 + 1)) ]
        [ "$(value 'sbx_jobs_ended_total{tenant="admin",state="failed"}' <<<"$after")" = $((fail0 + 1)) ]
        [ "$(value sbx_job_startup_seconds_count <<<"$after")" = $((start0 + 2)) ]
        [ "$(value sbx_job_run_seconds_count <<<"$after")" = $((runc0 + 2)) ]
        [ "$(value 'sbx_job_output_bytes_total{tenant="admin",stream="stdout"}' <<<"$after")" = $((out0 + 5)) ]
        # +Inf holds every observation
        [ "$(value 'sbx_job_run_seconds_bucket{le="+Inf"}' <<<"$after")" = "$(value sbx_job_run_seconds_count <<<"$after")" ]
        # a running job is counted as running, and not any more once it ended
        job=$(ctl submit --timeout 60s -- sleep 30)
        for i in $(seq 300); do
                [ "$(ctl --json status "$job" | json_get job.state)" = running ] && break
                sleep 0.1
        done
        [ "$(scrape | value sbx_jobs_running)" -ge 1 ]
        ctl cancel "$job" >/dev/null
        ctl wait "$job" >/dev/null || true
        [ "$(scrape | value 'sbx_jobs_ended_total{tenant="admin",state="killed"}')" -ge 1 ]
}

@test "a sandbox set-up failure is counted by the launcher's step" {
        run ctl run --profile broken -- true
        [ "$status" -eq 125 ]
        run -0 sh -c "curl -sf 'http://127.0.0.1:$PORT/metrics' | grep '^sbx_job_setup_failures_total{step=\"'"
        [[ "${lines[0]}" =~ \ [1-9][0-9]*$ ]]
}

@test "queued jobs are counted while they wait" {
        # more jobs than max_jobs (32): the rest wait in the queue
        for i in $(seq 36); do ctl submit --timeout 60s -- sleep 30 >> "$BATS_TEST_TMPDIR/jobs"; done
        [ "$(scrape | value sbx_jobs_queued)" -ge 4 ]
        while read -r j; do ctl cancel "$j" >/dev/null; done < "$BATS_TEST_TMPDIR/jobs"
        for i in $(seq 300); do
                [ "$(scrape | value sbx_jobs_running)" = 0 ] && [ "$(scrape | value sbx_jobs_queued)" = 0 ] && break
                sleep 0.1
        done
        [ "$(scrape | value sbx_jobs_queued)" = 0 ]
}

@test "through the socket a tenant sees its own tenant's series only" {
        ctl run -- true
        run -0 setpriv --reuid=$UID_B --regid=$UID_B --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" metrics
        [[ "$output" != *'tenant="admin"'* ]]
        [[ "$output" == *"sbx_jobs_running "* ]]
        run -0 ctl metrics
        [[ "$output" == *'tenant="admin"'* ]]
}

@test "the listener serves GET /metrics only" {
        run -0 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/"
        [ "$output" = 404 ]
        run -0 curl -s -o /dev/null -w '%{http_code}' -X POST --data x "http://127.0.0.1:$PORT/metrics"
        [ "$output" = 405 ]
}

@test "a bad metrics_listen is a configuration error naming the key" {
        for bad in 127.0.0.1 localhost:9464 127.0.0.1:0 '::1:9464' 127.0.0.1:99999; do
                printf '[daemon]\nsocket = %s\nstate_dir = %s\nmetrics_listen = %s\n' "$SUP_DIR/x.sock" "$SUP_DIR/x" "$bad" > "$SUP_DIR/bad.conf"
                run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/bad.conf" --check-config
                [ "$status" -ne 0 ]
                [[ "$output" == *"metrics_listen"* ]]
        done
}
