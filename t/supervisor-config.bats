#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord.conf(5): a bad configuration stops the daemon before it
# starts, with file:line; --check-config says so without starting.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
}

teardown_file() {
        umount "$SUP_DIR/ws-tmpfs" 2>/dev/null || true
        sup_fini
}

daemon() {
        "$SBX_STAGE/bin/sbx-supervisord" "$@"
}

@test "an unknown key is refused with file:line" {
        printf '[daemon]\nmax_jobs = 2\nmax_jbos = 3\n' > "$SUP_DIR/bad.conf"
        run daemon --config "$SUP_DIR/bad.conf"
        [ "$status" -eq 1 ]
        [[ "$output" == *"$SUP_DIR/bad.conf:3: daemon.max_jbos: unknown key (known in [daemon]: "* ]]
        [ ! -S "$SUP_SOCK" ]
}

@test "bad values name the key and the line" {
        printf '[daemon]\n\n[tenant.t]\nuids = 5\nmax_memory = lots\n' > "$SUP_DIR/bad.conf"
        run daemon --config "$SUP_DIR/bad.conf" --check-config
        [ "$status" -eq 1 ]
        [[ "$output" == *"bad.conf:5: max_memory: invalid size 'lots'"* ]]
        printf '[tenant.t]\nuids = 5\njob_user = root\n' > "$SUP_DIR/bad.conf"
        run -1 daemon --config "$SUP_DIR/bad.conf" --check-config
        [[ "$output" == *"bad.conf:3: job_user: jobs never run as root"* ]]
}

@test "a profile_path line longer than a line may be is refused on its own line; split with '\\' it is read whole" {
        # Six directories that do not exist, then the real one: 250 bytes.
        local dirs="" i
        for i in 1 2 3 4 5 6; do dirs="$dirs/nonexistent-sbx-profiles-$i-$(printf '%020d' "$i"):"; done
        printf '[daemon]\nmax_jobs = 2\nprofile_path = %s%s\nmax_queue = 3\n' "$dirs" "$SBX_STAGE/profiles" \
                > "$SUP_DIR/long.conf"
        [ "$(sed -n 3p "$SUP_DIR/long.conf" | wc -c)" -gt 200 ]
        run daemon --config "$SUP_DIR/long.conf" --check-config
        [ "$status" -eq 1 ]
        [[ "$output" == *"long.conf:3: line longer than 199 bytes"* ]]
        # nothing of the line's tail is read as a key or a line of its own
        [[ "$output" != *"unknown key"* ]]
        [[ "$output" != *":4:"* ]]

        # The same value split with '\' and continued on an indented line:
        # a mistake on the continuation is reported at the key's line...
        printf '[daemon]\nprofile_path = /a:\\\n    relative\n' > "$SUP_DIR/long.conf"
        run daemon --config "$SUP_DIR/long.conf" --check-config
        [ "$status" -eq 1 ]
        [[ "$output" == *"long.conf:2: profile_path: 'relative' is not an absolute path"* ]]
        # ...and the daemon finds profiles in the directory named last.
        sup_config
        awk -v dirs="$dirs" -v real="$SBX_STAGE/profiles" '
                /^profile_path = / {
                        n = split(dirs, d, ":")
                        printf "profile_path = "
                        for (i = 1; i < n; i++) printf "%s:\\\n    ", d[i]
                        print real
                        next
                }
                { print }' "$SUP_DIR/sup.conf" > "$SUP_DIR/split.conf"
        mv "$SUP_DIR/split.conf" "$SUP_DIR/sup.conf"
        grep -q '^    /nonexistent-sbx-profiles-6' "$SUP_DIR/sup.conf"
        sup_start
        run ctl run --profile shell -- sh -c 'echo ran with the shell profile'
        sup_stop
        [ "$status" -eq 0 ]
        [[ "$output" == *"ran with the shell profile"* ]]
}

@test "an indented line continues list keys only; other mistakes name their line" {
        printf '[daemon]\nmax_jobs = 2\n    3\n' > "$SUP_DIR/bad.conf"
        run daemon --config "$SUP_DIR/bad.conf" --check-config
        [ "$status" -eq 1 ]
        [[ "$output" == *"bad.conf:3: daemon.max_jobs: takes a single line (an indented line continues the previous key)"* ]]
        printf '[tenant.t]\nuids = 5\n    6 7\nprofiles = default\n  shell\n' > "$SUP_DIR/ok.conf"
        run daemon --config "$SUP_DIR/ok.conf" --check-config
        [ "$status" -eq 0 ]
        printf '[daemon]\n  max_jobs = 2\n  max_queue = 3\n' > "$SUP_DIR/bad.conf"
        run daemon --config "$SUP_DIR/bad.conf" --check-config
        [ "$status" -eq 1 ]
        [[ "$output" == *"bad.conf:3: indented line is read as a continuation of 'max_jobs'; do not indent keys"* ]]
        printf '[daemon] max_jobs = 2\n' > "$SUP_DIR/bad.conf"
        run -1 daemon --config "$SUP_DIR/bad.conf" --check-config
        [[ "$output" == *"bad.conf:1: unexpected text after the section header"* ]]
        printf '[daemon]\nmax_jobs = 2\nmax_jbos = 3\n' > "$SUP_DIR/bad.conf"
        run -1 daemon --config "$SUP_DIR/bad.conf" --check-config
        [[ "$output" == *"bad.conf:3: daemon.max_jbos: unknown key (known in [daemon]: socket socket_mode "* ]]
}

@test "a missing configuration file is an error naming it" {
        run daemon --config "$SUP_DIR/nope.conf"
        [ "$status" -eq 1 ]
        [[ "$output" == *"$SUP_DIR/nope.conf: No such file or directory"* ]]
}

@test "--check-config accepts a good file" {
        sup_config
        run daemon --config "$SUP_DIR/sup.conf" --check-config
        [ "$status" -eq 0 ]
        [[ "$output" == *"OK (1 tenants)"* ]]
}

@test "--socket overrides the configured path" {
        sup_config
        "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" --socket "$SUP_DIR/other.sock" >"$SUP_DIR/o.log" 2>&1 3>&- &
        pid=$!
        for i in $(seq 50); do [ -S "$SUP_DIR/other.sock" ] && break; sleep 0.05; done
        run "$SBX_STAGE/bin/sbxctl" --socket "$SUP_DIR/other.sock" ping
        kill -TERM "$pid"
        wait "$pid" || true
        [ "$status" -eq 0 ]
        # the socket is removed on a clean stop
        [ ! -e "$SUP_DIR/other.sock" ]
}

@test "a second daemon on the same socket or state directory refuses to start" {
        sup_config
        sup_start
        # same socket, another state directory
        sed "s|^state_dir = .*|state_dir = $SUP_DIR/state2|" "$SUP_DIR/sup.conf" > "$SUP_DIR/second.conf"
        run daemon --config "$SUP_DIR/second.conf"
        [ "$status" -eq 1 ]
        [[ "$output" == *"another daemon is listening on $SUP_SOCK"* ]]
        # same state directory, another socket: it would take the first
        # daemon's running jobs for a crash's leftovers
        job=$(ctl submit -- sleep 2)
        run daemon --config "$SUP_DIR/sup.conf" --socket "$SUP_DIR/second.sock"
        [ "$status" -eq 1 ]
        [[ "$output" == *"another sbx-supervisord is using state_dir"* ]]
        run ctl wait "$job"
        [ "$status" -eq 0 ]
        sup_stop
}

@test "workspace_dir puts the workspaces on another file system, owned by the daemon alone" {
        require_userns
        run daemon --check-config --config <(printf '[daemon]\nworkspace_dir = scratch\n')
        [ "$status" -eq 1 ]
        [[ "$output" == *":2: workspace_dir: must be an absolute path"* ]]

        ws="$SUP_DIR/ws-tmpfs"
        mkdir -p "$ws"
        # A tmpfs where the test may mount one (root), else a plain directory.
        if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=16m,mode=0700 sbx-test-ws "$ws" 2>/dev/null; then
                mounted=1
        fi
        sup_config "workspace_dir = $ws"
        sup_start
        run ctl run -- sh -c 'echo "$SBX_WORKSPACE"; pwd; echo data > /workspace/out; ls -l /workspace/out | cut -d" " -f1'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = /workspace ]
        [ "${lines[1]}" = /workspace ]
        [ "${lines[2]}" = "-rw-r--r--" ]
        # the daemon made it 0711 and locked it; the job's workspace is gone
        [ "$(stat -c %a "$ws")" = 711 ]
        [ -z "$(find "$ws" -mindepth 1 -maxdepth 1 -name 'j*')" ]
        # while a job runs, its workspace is there and nowhere else
        job=$(ctl submit -- sh -c 'touch /workspace/here; until [ -e /workspace/go ]; do sleep 0.05; done')
        wait_until 30 test -e "$ws/$job/here"
        [ ! -e "$SUP_DIR/state/work/$job" ]
        # a second daemon (another state directory) may not share it
        sed -e "s|^state_dir = .*|state_dir = $SUP_DIR/state2|" -e "s|^socket = .*|socket = $SUP_DIR/second.sock|" \
                "$SUP_DIR/sup.conf" > "$SUP_DIR/second.conf"
        run daemon --config "$SUP_DIR/second.conf"
        [ "$status" -eq 1 ]
        [[ "$output" == *"another sbx-supervisord is using workspace_dir $ws"* ]]
        touch "$ws/$job/go"
        run ctl wait "$job"
        [ "$status" -eq 0 ]
        [ ! -e "$ws/$job" ]
        sup_stop
        rm -f "$SUP_DIR/sup.conf"
        [ -z "${mounted:-}" ] || umount "$ws"
}

@test "a workspace_dir owned by someone else is refused" {
        [ "$(id -u)" = 0 ] || skip "needs root to make a directory another user owns"
        mkdir -p "$SUP_DIR/ws-nobody"
        chown nobody "$SUP_DIR/ws-nobody"
        sup_config "workspace_dir = $SUP_DIR/ws-nobody"
        run daemon --config "$SUP_DIR/sup.conf"
        rm -f "$SUP_DIR/sup.conf"
        [ "$status" -eq 1 ]
        [[ "$output" == *"workspace_dir $SUP_DIR/ws-nobody is owned by uid $(id -u nobody), not by the daemon"* ]]
}

@test "a launcher that does not exist is an error at start" {
        sup_config
        sed -i "s|^launcher = .*|launcher = $SUP_DIR/no-such-launcher|" "$SUP_DIR/sup.conf"
        run daemon --config "$SUP_DIR/sup.conf"
        [ "$status" -eq 1 ]
        [[ "$output" == *"launcher $SUP_DIR/no-such-launcher"* ]]
}

@test "contrib/try-supervisor.sh runs a sample job through a temporary daemon" {
        require_userns
        run "$SBX_SRCDIR/contrib/try-supervisor.sh" sh -c 'echo "job $SBX_JOB_ID"; exit 3'
        [ "$status" -eq 3 ]
        [[ "${lines[0]}" == *"tenant me"* ]]
        [[ "${lines[1]}" =~ ^job\ j[0-9a-f]{20}$ ]]
        [[ "$output" == *"state:     failed"* ]]
        run "$SBX_SRCDIR/contrib/try-supervisor.sh"
        [ "$status" -eq 0 ]
        [[ "$output" == *"hello from job j"* ]]
}

@test "contrib/try-supervisor.sh cleans up after a daemon that fails to start" {
        fake="$SUP_DIR/fakebuild"
        mkdir -p "$fake/launcher" "$fake/supervisor"
        cp "$SBX_BUILDDIR/launcher/sbx-launch" "$fake/launcher/"
        cp "$SBX_BUILDDIR/supervisor/sbxctl" "$SBX_BUILDDIR/supervisor/sbx-unpack" "$fake/supervisor/"
        printf '#!/bin/sh\necho "broken on purpose" >&2\nexit 1\n' > "$fake/supervisor/sbx-supervisord"
        chmod +x "$fake/supervisor/sbx-supervisord"
        before=$(ls -d /tmp/sbx-try.* 2>/dev/null | wc -l)
        run env SBX_BUILDDIR="$fake" "$SBX_SRCDIR/contrib/try-supervisor.sh"
        [ "$status" -eq 1 ]
        [[ "$output" == *"broken on purpose"* ]]
        [ "$(ls -d /tmp/sbx-try.* 2>/dev/null | wc -l)" -eq "$before" ]
}

@test "unknown options are usage errors" {
        run daemon --bogus
        [ "$status" -eq 2 ]
        run "$SBX_STAGE/bin/sbxctl" frobnicate
        [ "$status" -ne 0 ]
}
