#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# 200 sessions of one tenant at once (sbx-supervisord(8), SESSIONS): all
# become ready, each keeps its own files and runs its own commands, the
# tenant's max_sessions holds at 200, and they all end.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        # a session's sandbox holds one of max_jobs for its life
        sup_config "socket_mode = 0666
max_jobs = 210"
        sed -i 's/^max_jobs = 32$/max_jobs = 210/' "$SUP_DIR/sup.conf"
        cat >> "$SUP_DIR/sup.conf" <<EOC
max_sessions = 200
session_ttl_max = 10m
EOC
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        session_setup
}

@test "200 sessions at once: every one ready, each with its own files, the 201st refused, all ended by close" {
        local k sids=() n=200
        # Under a sanitizer build (the CI's second run) its point is memory
        # errors, not scale: 50, and max_sessions that many.
        if grep -q -- '--enable-sanitizers' "$SBX_BUILDDIR/config.log" 2>/dev/null; then
                n=50
                sup_stop
                sed -i "s/^max_sessions = 200$/max_sessions = $n/" "$SUP_DIR/sup.conf"
                sup_start
        fi
        echo "# $n sessions" >&3
        # Eight callers at a time (the daemon serves them at once); each
        # writes what it got to files of its own, numbered. The TTL is the
        # tenant's maximum: on a loaded machine the whole test has taken
        # more than 5 minutes, and a session that ended by its TTL cannot
        # be closed.
        local d=$BATS_TEST_TMPDIR sbx="$SBX_STAGE/bin/sbxctl --socket $SUP_SOCK"
        run -0 sh -c "seq 0 $((n - 1)) | xargs -P 8 -I{} sh -c '$sbx session create --ttl 10m > $d/sid.{}'"
        for k in $(seq 0 $((n - 1))); do
                sids+=("$(cat "$d/sid.$k")")
                [[ "${sids[$k]}" =~ ^[0-9a-f]{32}$ ]]
        done
        [ "$(printf '%s\n' "${sids[@]}" | sort -u | wc -l)" = "$n" ]
        [ "$(ctl --json session list | jq '[.sessions[] | select(.state == "ready")] | length')" = "$n" ]
        run ! ctl session create
        [[ "$output" == *E_LIMIT* ]]
        [[ "$output" == *"has $n sessions, its max_sessions"* ]]
        run -0 sh -c "seq 0 $((n - 1)) | xargs -P 8 -I{} sh -c '$sbx session exec \$(cat $d/sid.{}) -- sh -c \"echo {} > mine; cat mine; id -u\" > $d/out.{}'"
        for k in $(seq 0 $((n - 1))); do
                [ "$(head -1 "$d/out.$k")" = "$k" ] || { echo "session $k: $(cat "$d/out.$k")"; false; }
                sed -n 2p "$d/out.$k" >> "$d/uids"
        done
        # each its own uid
        [ "$(sort -u "$d/uids" | wc -l)" = "$n" ]
        run -0 sh -c "seq 0 $((n - 1)) | xargs -P 8 -I{} sh -c '$sbx session close \$(cat $d/sid.{}) >/dev/null'"
        wait_until 60 sh -c "[ \"\$('$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' --json session list | jq '.sessions | length')\" = 0 ]"
        # nothing of them is left running (other files' sessions may be)
        wait_until 30 sh -c "! pgrep -U '$(paste -sd, "$BATS_TEST_TMPDIR/uids")' >/dev/null"
}
