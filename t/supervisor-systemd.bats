#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) SYSTEMD: readiness and status notifications, socket
# activation, and the shipped units.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config
}

teardown_file() {
        sup_fini
}

require_libsystemd() {
        ldd "$SBX_STAGE/bin/sbx-supervisord" | grep -q libsystemd ||
                skip "built without libsystemd (--without-systemd)"
}

@test "READY=1 and STATUS= reach NOTIFY_SOCKET" {
        require_libsystemd
        # it listens for long enough; the test ends it once all came
        "$SBX_STAGE/bin/sup-client" --notify-listen "$SUP_DIR/notify" 120 > "$SUP_DIR/notify.out" 3>&- &
        listener=$!
        wait_until 10 test -S "$SUP_DIR/notify"
        NOTIFY_SOCKET="$SUP_DIR/notify" "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" 2>"$SUP_DIR/n.log" 3>&- &
        pid=$!
        wait_until 30 grep -q READY=1 "$SUP_DIR/notify.out"
        ctl run -- true
        kill -TERM "$pid"
        wait "$pid"
        wait_until 30 grep -q 'STOPPING=1' "$SUP_DIR/notify.out"
        kill "$listener"
        wait "$listener" || true
        grep -q '^READY=1' "$SUP_DIR/notify.out"
        grep -q 'STATUS=0 running, 0 queued' "$SUP_DIR/notify.out"
        grep -q 'STOPPING=1' "$SUP_DIR/notify.out"
}

@test "socket activation: the daemon serves the socket systemd passes" {
        require_libsystemd
        command -v systemd-socket-activate >/dev/null || skip "systemd-socket-activate is not installed"
        sock="$SUP_DIR/activated.sock"
        systemd-socket-activate -l "$sock" "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" \
                2>"$SUP_DIR/act.log" 3>&- &
        act=$!
        for i in $(seq 50); do [ -S "$sock" ] && break; sleep 0.05; done
        run -0 "$SBX_STAGE/bin/sbxctl" --socket "$sock" run -- echo activated
        [ "$output" = activated ]
        grep -q "listening on the socket passed by systemd" "$SUP_DIR/act.log"
        # the configured socket was not created
        [ ! -e "$SUP_SOCK" ]
        kill -TERM "$act"
        wait "$act" || true
}

@test "the service units are generated with the configured paths and documented: the front as user sbx without capabilities, sbx-privd with the cgroup" {
        unit="$SBX_BUILDDIR/contrib/systemd/sbx-supervisord.service"
        helper="$SBX_BUILDDIR/contrib/systemd/sbx-privd.service"
        [ -f "$unit" ]
        grep -q '^Type=notify$' "$unit"
        grep -q '^User=sbx$' "$unit"
        grep -q '^CapabilityBoundingSet=$' "$unit"
        ! grep -q '^Delegate=' "$unit" || false
        grep -q '^Delegate=yes$' "$helper"
        grep -q '^Documentation=man:sbx-supervisord(8)' "$unit"
        grep -q '^Documentation=man:sbx-privd(8)' "$helper"
        grep -Eq '^ExecStart=/[^@]*/sbx-supervisord --foreground --config /[^@]*/sbx/sbx-supervisord.conf$' "$unit"
        grep -Eq '^ExecStart=/[^@]*/sbx-privd --listen 3 --front sbx ' "$helper"
        grep -Eq '^ListenSequentialPacket=/[^@]*/sbx-privd.sock$' "$SBX_BUILDDIR/contrib/systemd/sbx-privd.socket"
        grep -Eq '^helper_socket = /[^@]*/sbx-privd.sock$' "$SBX_BUILDDIR/contrib/sbx-supervisord.conf"
        if command -v systemd-analyze >/dev/null; then
                # only complaints about paths not installed here are allowed
                run systemd-analyze verify "$unit" "$SBX_BUILDDIR/contrib/systemd/sbx-supervisord.socket" \
                        "$helper" "$SBX_BUILDDIR/contrib/systemd/sbx-privd.socket"
                # it fails only with complaints, and those are the allowed ones
                [ "$status" -eq 0 ] || [ -n "$output" ]
                ! grep -v -e 'is not executable' -e "Command 'man " -e 'not found' <<<"$output" | grep -q . || false
        fi
}

@test "cgroup = auto at the root of the hierarchy makes a subtree of its own and uses it" {
        mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
        [ -n "$mnt" ] || skip "no cgroup2 mount"
        [ "$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)" = / ] ||
                skip "not in the root cgroup (under systemd, auto needs Delegate=yes)"
        [ -w "$mnt/cgroup.procs" ] || skip "the cgroup2 root is not writable"
        [ ! -e "$mnt/sbx-supervisord" ] || skip "$mnt/sbx-supervisord exists: another daemon may be using it"
        sup_config
        sed -i 's|^cgroup = .*|cgroup = auto|' "$SUP_DIR/sup.conf"
        sup_start
        grep -q "job cgroups under $mnt/sbx-supervisord (created)" "$SUP_DIR/daemon.log"
        run -0 ctl --json run -- sh -c 'cat /proc/self/cgroup'
        [ "$(json_get result.cgroup <<<"$output")" = true ]
        sup_stop
        [ -z "$(ls -d "$mnt"/sbx-supervisord/job-* 2>/dev/null)" ]
        rmdir "$mnt/sbx-supervisord"
}
