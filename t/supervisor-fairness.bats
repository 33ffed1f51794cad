#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) SECURITY: no tenant can hold up the others. One tenant
# holding connections, many clients sending half of long request lines, a
# flood of refused requests, 40 big logs requests and a job ending with
# 100,000 artifact matches, each as the hostile review ran it: the other
# tenant is still served, the daemon's memory and audit log stay bounded.

load sup-unit/daemon
# hundreds of clients: no leak scan at their exit (ctl in sup-unit/daemon.bash)
SUP_CTL_LEAK_CHECK=0
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config "socket_mode = 0666
max_tenant_connections = 20
max_connections = 4096
max_request = 4M
request_memory = 8M"
        cat >> "$SUP_DIR/sup.conf" <<EOC
[tenant.other]
uids = $(id -u nobody)
profiles = default
EOC
        sup_start
}

teardown_file() {
        sup_fini
}

client() {
        "$SBX_STAGE/bin/sup-client" "$SUP_SOCK" "$@"
}

# peak_rss_kb: the daemon's peak resident memory so far (VmHWM).
peak_rss_kb() {
        awk '/^VmHWM:/ { print $2 }' "/proc/$(cat "$SUP_DIR/daemon.pid")/status"
}

@test "one tenant holding connections is capped at max_tenant_connections; another tenant still gets in" {
        out="$BATS_TEST_TMPDIR/hold"
        "$SBX_STAGE/bin/sup-client" "$SUP_SOCK" --hold 200 6 > "$out" &
        holder=$!
        for i in $(seq 100); do [ -s "$out" ] && break; sleep 0.1; done
        # 20 kept, the other 180 told why and closed
        [ "$(head -1 "$out")" = "held 20 of 200" ]
        [ "$(grep -c E_TOO_MANY_CONNECTIONS "$out")" = 180 ]
        # the same tenant gets no 21st
        run ctl ping
        [ "$status" -ne 0 ]
        [[ "$output" == *max_tenant_connections* ]]
        # the other tenant is served while the first holds its share
        run -0 ctl_nobody ping
        [[ "$output" == *other* ]]
        kill "$holder" 2>/dev/null || true
        wait "$holder" 2>/dev/null || true
}

@test "200 clients each sending half of a 2 MB line: E_BUSY past request_memory, the daemon stays small" {
        before=$(peak_rss_kb)
        run -0 client --halfline 200 2000000
        echo "# $output" >&3
        read -r _ pending _ busy _ n <<<"$output"
        [ "$n" = 200 ]
        # 8M of budget holds a few half lines; the rest were told E_BUSY
        [ "$pending" -ge 1 ]
        [ "$pending" -le 8 ]
        [ $((pending + busy)) -eq 200 ]
        after=$(peak_rss_kb)
        echo "# daemon peak RSS ${before} kB before, ${after} kB after" >&3
        # the review saw 827 MB; the budget is 8M plus a first chunk per client
        [ "$after" -lt $((before + 64 * 1024)) ]
        run -0 ctl_nobody ping
}

@test "5,000 refused requests write a bounded number of audit lines, counting the ones left out" {
        audit="$SUP_DIR/audit.log"
        skip_lines=$(wc -l < "$audit")
        start=$(date +%s)
        # profile 'nope' is not the tenant's: every request is refused
        yes '{"v":1,"op":"run","command":["true"],"profile":"nope"}' | head -n 5000 | client > "$BATS_TEST_TMPDIR/replies"
        elapsed=$(( $(date +%s) - start + 1 ))
        [ "$(grep -c E_FORBIDDEN "$BATS_TEST_TMPDIR/replies")" = 5000 ]
        new_lines() {
                tail -n +$((skip_lines + 1)) "$audit" | grep '"rejected"'
        }
        written=$(new_lines | wc -l)
        # a burst of 100, then 20 a second
        [ "$written" -le $((100 + 20 * elapsed + 20)) ]
        # past the refill, the next refusal says how many were left out since
        # the last line: every refusal is written or counted, once
        sleep 1.2
        raw '{"v":1,"op":"run","command":["true"],"profile":"nope"}' >/dev/null
        written=$(new_lines | wc -l)
        suppressed=$(new_lines | json_get suppressed | awk '{ n += $1 } END { print n + 0 }')
        echo "# $written lines written, $suppressed left out and counted" >&3
        [ "$suppressed" -gt 0 ]
        [ $((written + suppressed)) -eq 5001 ]
        # the other tenant's refusals have budgets of their own
        run ctl_nobody run --profile shell -- true
        [ "$status" -ne 0 ]
        [ "$(grep '"rejected"' "$audit" | tail -1 | json_get uid)" = "$(id -u nobody)" ]
        [ -z "$(grep '"rejected"' "$audit" | tail -1 | json_get suppressed)" ]
}

@test "SIGHUP reopens the audit log after it was moved away" {
        audit="$SUP_DIR/audit.log"
        mv "$audit" "$audit.1"
        kill -HUP "$(cat "$SUP_DIR/daemon.pid")"
        for i in $(seq 50); do [ -e "$audit" ] && break; sleep 0.1; done
        [ -e "$audit" ]
        run -0 ctl run -- true
        grep -q '"accepted"' "$audit"
        ! grep -q "$(tail -1 "$audit" | json_get job)" "$audit.1" || false
        run -0 ctl ping
}

# victim_pings N: N pings by the other tenant, one every 20 ms; prints the
# slowest in whole ms.
victim_pings() {
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$SBX_STAGE/bin/sup-client" "$SUP_SOCK" \
                --pings "$1" 20 | awk '{ printf "%d\n", $NF }'
}

@test "40 logs requests on a 16 MiB capture: the other tenant is answered within a second throughout" {
        job=$(ctl submit --output 16M -- sh -c 'yes sbx-fairness | head -c 16777216')
        run -0 ctl wait "$job"
        # 20 at a time (this file's max_tenant_connections), in two waves
        (
                for w in 0 20; do
                        for i in $(seq $((w + 1)) $((w + 20))); do ctl logs "$job" > "$BATS_TEST_TMPDIR/logs.$i" & done
                        wait
                done
        ) &
        readers=$!
        slowest=$(victim_pings 100)
        wait "$readers"
        echo "# slowest ping ${slowest} ms (the review saw 55 s)" >&3
        [ "$slowest" -lt 1000 ]
        # and each of the 40 got the whole capture
        for i in $(seq 40); do [ "$(stat -c %s "$BATS_TEST_TMPDIR/logs.$i")" = 16777216 ]; done
}

@test "a job ending with 100,000 empty artifact matches: the other tenant is answered within a second, 10,000 kept" {
        job=$(ctl submit --disk 1G --timeout 2m --artifact 'd/*' -- \
                sh -c 'mkdir d && cd d && seq 100000 | xargs touch && sleep 0.5')
        slowest=$(victim_pings 250)
        run -0 ctl wait "$job"
        echo "# slowest ping ${slowest} ms (the review saw 17.7 s)" >&3
        [ "$slowest" -lt 1000 ]
        run -0 ctl --json result "$job"
        [ "$(json_get result.artifacts_truncated <<<"$output")" = true ]
        [ "$(grep -o '"sha256"' <<<"$output" | wc -l)" = 10000 ]
}
