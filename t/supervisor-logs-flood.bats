#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) SECURITY: a flood of logs requests never stalls
# another tenant. A tenant opens many connections, pipelines logs requests
# for a megabyte each on every one, and reads the replies one connection
# after the other, as a simple client does: replies wait unread on all the
# connections but one. The daemon reads no further request from a
# connection until its reply has gone to the socket, makes each reply's
# next piece only when the socket has room, and runs one piece of the
# tenant's at a time: its memory stays small and the other tenant is
# answered at once. (The review's figures, 50 connections x 200 requests
# and 1,000 x 20 on a 16 MiB capture, are in bench/fairness.sh.)

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config "socket_mode = 0666"
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

# peak_rss_kb: the daemon's peak resident memory so far (VmHWM).
peak_rss_kb() {
        awk '/^VmHWM:/ { print $2 }' "/proc/$(cat "$SUP_DIR/daemon.pid")/status"
}

# victim_pings N: the other tenant's N pings, one every 20 ms; prints
# "pings N p50 A p99 B max C" (ms).
victim_pings() {
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$SBX_STAGE/bin/sup-client" "$SUP_SOCK" \
                --pings "$1" 20
}

@test "logs pipelined on 40 connections read one after the other: every reply whole, the other tenant answered at once, the daemon small" {
        job=$(ctl submit --output 8M -- sh -c 'yes sbx-logs-flood | head -c 8388608')
        run -0 ctl wait "$job"
        before=$(peak_rss_kb)
        flood="$BATS_TEST_TMPDIR/flood"
        "$SBX_STAGE/bin/sup-client" "$SUP_SOCK" --logs-flood 40 10 "$job" 1048576 seq > "$flood" &
        flooder=$!
        read -r _ n _ p50 _ p99 _ max <<<"$(victim_pings 250)"
        wait "$flooder"
        after=$(peak_rss_kb)
        echo "# pings: p50 $p50 p99 $p99 max $max ms; daemon peak RSS $before kB before, $after kB after" >&3
        echo "# flood: $(cat "$flood")" >&3
        [ "$n" = 250 ]
        # every request answered on every connection, none dropped, each
        # reply with its 699,050 bytes (a twelfth of client_buffer)
        read -r _ got _ total _ closed _ bytes < "$flood"
        [ "$got" = 400 ]
        [ "$total" = 400 ]
        [ "$closed" = 0 ]
        [ "$bytes" -gt $((400 * 699050)) ]
        # without the bounds the daemon held every unread reply (40 x about
        # 5 MB here; the review saw 358 MB) and the pings waited behind them.
        # A daemon built with ASan keeps what it frees in quarantine (up to
        # 256 MB), so its peak says nothing of what it held: not checked.
        # the target is 50 ms (bench/fairness.sh); a busy test machine makes
        # pings wait that long without any attack, the flood made p99 331 ms.
        # An ASan daemon does everything slower (a CI run saw 104.5 ms with
        # the fix in): 200 ms there, still well under what the flood did.
        local bound=100
        if ldd "$SBX_STAGE/bin/sbx-supervisord" 2>/dev/null | grep -q libasan; then
                echo "# an ASan build: the daemon's peak RSS is not checked (its quarantine keeps freed memory); pings within 200 ms" >&3
                bound=200
        else
                [ "$after" -lt $((before + 32 * 1024)) ]
        fi
        [ "${p99%.*}" -lt "$bound" ]
}
