#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# A daemon that is not root makes each workspace a plain directory on the
# disk of its state directory, and encrypts it with a key of its own where
# that file system can (fscrypt, policy v2): here an ext4 made with the
# encrypt feature on a loop device, and, for the other case, a tmpfs. The
# daemon runs as a uid no other test file uses (NR_UID), so that the
# kernel's count of that uid's keys (/proc/key-users) is the daemon's alone.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

NR_UID=64999

# nr_start DIR: a daemon as NR_UID with its socket and state in DIR.
nr_start() {
        local dir=$1
        mkdir -p "$dir"
        chown "$NR_UID:$NR_UID" "$dir"
        cat > "$dir/sup.conf" <<EOC
[daemon]
socket = $dir/sock
state_dir = $dir/state
launcher = $SBX_STAGE/bin/sbx-launch
profile_path = $SBX_STAGE/profiles
cgroup = none
job_uids = none

[tenant.admin]
uids = root
profiles = default shell
EOC
        setpriv --reuid="$NR_UID" --regid="$NR_UID" --clear-groups -- \
                "$SBX_STAGE/bin/sbx-supervisord" --config "$dir/sup.conf" >>"$dir/daemon.log" 2>&1 3>&- &
        echo $! > "$dir/daemon.pid"
        SUP_SOCK=$dir/sock
        wait_until 30 "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" ping || { cat "$dir/daemon.log"; return 1; }
}

nr_stop() {
        local dir=$1
        [ -f "$dir/daemon.pid" ] || return 0
        kill "$(cat "$dir/daemon.pid")" 2>/dev/null || true
        wait_until 10 sh -c "! kill -0 $(cat "$dir/daemon.pid") 2>/dev/null" || kill -9 "$(cat "$dir/daemon.pid")" 2>/dev/null || true
        rm -f "$dir/daemon.pid"
}

setup_file() {
        sup_init
        [ "$(id -u)" = 0 ] || return 0
        export IMG=$SUP_DIR/ext4.img ENC=$SUP_DIR/enc PLAIN=$SUP_DIR/plain
        truncate -s 64M "$IMG"
        mkdir -p "$ENC" "$PLAIN"
        if mkfs.ext4 -q -O encrypt "$IMG" && mount -o loop "$IMG" "$ENC"; then
                nr_start "$ENC/d"
        fi
        if mount -t tmpfs -o size=32m sbx-test "$PLAIN"; then
                nr_start "$PLAIN/d"
        fi
}

teardown_file() {
        nr_stop "$ENC/d"
        nr_stop "$PLAIN/d"
        umount "$ENC" 2>/dev/null || true
        umount "$PLAIN" 2>/dev/null || true
        sup_fini
}

setup() {
        require_userns
        [ "$(id -u)" = 0 ] || skip "making the file systems needs root"
}

nr_keys() { # keys the kernel counts for NR_UID (0 when it lists none)
        awk -v u="$NR_UID:" '$1 == u { split($3, k, "/"); print k[1]; found = 1 } END { if (!found) print 0 }' /proc/key-users
}

@test "not root, on ext4 with encryption: the job's files are never on the disk in clear, the record says encrypted, and the key is gone at the end" {
        mountpoint -q "$ENC" || skip "no loop device or ext4 with the encrypt feature here"
        SUP_SOCK=$ENC/d/sock
        [ "$(nr_keys)" = 0 ]
        # the text is made by the job: the command line (in the journal, on
        # the same disk) does not hold it
        run -0 ctl submit -- sh -c 'printf "SECRET-%s-MARKER" 4711 > /workspace/f; sync; touch /workspace/written; sleep 30'
        local job=$output
        wait_until 20 test -e "$ENC/d/state/work/$job/written"
        [ "$(nr_keys)" = 1 ]
        sync -f "$ENC"
        run -1 grep -c SECRET-4711-MARKER "$IMG"
        # the same text in a plain directory of that disk is found there
        mkdir -p "$ENC/control"
        printf "SECRET-%s-MARKER" 4712 > "$ENC/control/f"
        sync -f "$ENC"
        run -0 grep -c SECRET-4712-MARKER "$IMG"
        run -0 ctl cancel "$job"
        run -143 ctl --json wait "$job"
        [ "$(json_get result.workspace.storage <<<"$output")" = directory ]
        [ "$(json_get result.workspace.encrypted <<<"$output")" = true ]
        [ "$(json_get result.workspace.noswap <<<"$output")" = false ]
        [ "$(nr_keys)" = 0 ]
}

@test "not root, on a file system without encryption: a plain directory, and the record says so" {
        mountpoint -q "$PLAIN" || skip "cannot mount a tmpfs here"
        SUP_SOCK=$PLAIN/d/sock
        run -0 ctl --json run -- sh -c 'echo hi > /workspace/f; cat /workspace/f'
        job=$(json_get job <<<"${lines[0]}")
        [[ "${lines[*]}" == *hi* ]]
        run -0 ctl --json result "$job"
        [ "$(json_get result.workspace.storage <<<"$output")" = directory ]
        [ "$(json_get result.workspace.encrypted <<<"$output")" = false ]
        [ "$(nr_keys)" = 0 ]
}
