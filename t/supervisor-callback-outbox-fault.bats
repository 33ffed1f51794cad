#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# A callback's outbox entry that cannot be written (sbx-supervisord(8)
# STORAGE FAULTS): the job's record waits for it, and every message about
# the failure names the entry (callbacks/outbox/JOB.json), not the result
# record; once the outbox is writable again the record and the delivery
# follow.

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
        [ "$(id -u)" = 0 ] || skip "mounting a file system for the outbox needs root"
        head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$SUP_DIR/secret"
        chmod 0600 "$SUP_DIR/secret"
        sup_config "retention = 1h"
        # nothing listens on port 9 (discard): deliveries stay pending
        cat >> "$SUP_DIR/sup.conf" <<EOC
callback_url = http://127.0.0.1:9/hook
callback_secret_file = $SUP_DIR/secret
EOC
        rm -rf "$SUP_DIR/state"
        # the outbox on a file system of its own, which can be made
        # read-only while the daemon runs
        mkdir -p -m 0700 "$SUP_DIR/state/callbacks/outbox"
        mount -t tmpfs -o size=4m,mode=0700 sbx-test-outbox "$SUP_DIR/state/callbacks/outbox"
        OUTBOX_MOUNTED=1
}

teardown() {
        sup_stop
        [ -z "${OUTBOX_MOUNTED:-}" ] || umount -l "$SUP_DIR/state/callbacks/outbox" 2>/dev/null || true
}

@test "an outbox entry that cannot be written is named as such, and the record follows once it can be" {
        sup_start
        mount -o remount,ro "$SUP_DIR/state/callbacks/outbox"
        job=$(ctl submit -- true)
        # told at once (E_STORAGE) or on asking (E_NOT_DONE)
        run ctl wait "$job"
        [ "$status" -ne 0 ]
        [[ "$output" == *"$job ended (succeeded) but its "*"callback outbox entry callbacks/outbox/$job.json"*"Read-only file system"* ]]
        [[ "$output" != *"result record"* ]]
        run ctl submit -- true
        [ "$status" -ne 0 ]
        [[ "$output" == *E_STORAGE*"(callback outbox entry callbacks/outbox/$job.json: Read-only file system)"* ]]
        run ctl result "$job"
        [ "$status" -ne 0 ]
        [[ "$output" == *E_NOT_DONE*"cannot be written yet (callback outbox entry callbacks/outbox/$job.json: Read-only file system)"* ]]
        grep -q "storage is failing (callback outbox entry callbacks/outbox/$job.json: Read-only file system)" "$SUP_DIR/daemon.log"
        grep -q "$job.*cannot write its callback outbox entry callbacks/outbox/$job.json: Read-only file system" "$SUP_DIR/daemon.log"
        run -1 grep -c "result record" "$SUP_DIR/daemon.log"
        [ "$output" = 0 ]
        # writable again: the entry, then the record (retries back off up
        # to 30 s)
        mount -o remount,rw "$SUP_DIR/state/callbacks/outbox"
        for i in $(seq 160); do
                ctl --json result "$job" > "$SUP_DIR/res.json" 2>/dev/null && break
                sleep 0.25
        done
        [ "$(json_get result.state < "$SUP_DIR/res.json")" = succeeded ]
        [ -f "$SUP_DIR/state/callbacks/outbox/$job.json" ]
        [ "$(ctl --json result "$job" | json_get callback.state)" = pending ]
}
