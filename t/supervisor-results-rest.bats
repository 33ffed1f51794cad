#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) FILES, results/index: when the index file is missing,
# the daemon serves before it has read every kept record (they are read in
# batches on a worker thread), and every answer that needs a finished job
# it has not read yet waits for the reading instead of being wrong: a
# listing, a submit with an idempotency key, the status of an old job.
# t/helpers/gate-records.so, preloaded into the daemon, holds the reading
# back while $GATE exists, so that "before" and "after" are certain.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

N=1200

setup_file() {
        sup_init
        sup_config "retention = 3650d"
        export GATE="$SUP_DIR/gate" HELPER="$SBX_BUILDDIR/t/helpers/gate-records.so"
        rm -f "$GATE"
        [ -f "$HELPER" ] || return 0
        sup_start
        # one real record as the template of $N more
        ctl run --idempotency-key first -- /bin/true
        export FIRST
        FIRST=$(ctl --json ls | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["jobs"][0]["job"])')
        sup_stop
        /usr/bin/python3 - "$SUP_DIR/state/results" "$FIRST" "$N" <<'EOF'
import json, os, sys
d, first, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rec = json.load(open(os.path.join(d, first + ".json")))
for i in range(n):
    rec["job"] = "j%020x" % (0xabc00000 + i)
    rec["idempotency_key"] = "old-%d" % i
    rec["created"] = "2026-01-01T00:%02d:%02d.000Z" % (i // 60 % 60, i % 60)
    with open(os.path.join(d, rec["job"] + ".json"), "w") as f:
        json.dump(rec, f)
EOF
}

teardown_file() {
        rm -f "$GATE"
        sup_fini
}

setup() {
        require_userns
        [ -f "$HELPER" ] || skip "t/helpers/gate-records.so was not built"
}

teardown() {
        rm -f "$GATE"
        sup_stop
}

# start the daemon without its index file, the reading held at the gate
start_gated() {
        rm -f "$SUP_DIR/state/results/index"
        touch "$GATE"
        : > "$SUP_DIR/daemon.log"
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
                LD_PRELOAD="$HELPER" SBX_TEST_RECORD_GATE="$GATE" sup_start
}

read_done() {
        grep -q "records the index file lacked read in" "$SUP_DIR/daemon.log"
}

@test "without its index file the daemon serves at once and runs jobs while it reads the kept records" {
        start_gated
        grep -q "the index file lacks $((N + 1)) records; reading them while serving" "$SUP_DIR/daemon.log"
        run -0 ctl run -- /bin/echo served
        [ "$output" = served ]
        # the reading is still held: nothing said it was done
        run -1 read_done
        rm "$GATE"
        wait_until 60 read_done
        [ -s "$SUP_DIR/state/results/index" ]
        # the rewritten index file lists every record: no reading next time
        sup_stop
        : > "$SUP_DIR/daemon.log"
        sup_start
        run -1 grep -q "index file lacks" "$SUP_DIR/daemon.log"
        run -0 ctl --json ls --limit 10000
        [ "$(echo "$output" | /usr/bin/python3 -c 'import json, sys; print(len(json.load(sys.stdin)["jobs"]))')" -ge $((N + 2)) ]
}

@test "a listing, a keyed submit and the status of an old job wait for the reading, then answer from every record" {
        start_gated
        ctl --json ls --limit 10000 > "$SUP_DIR/ls.out" &
        local ls_pid=$!
        ctl --json submit --idempotency-key old-77 -- /bin/true > "$SUP_DIR/submit.out" &
        local submit_pid=$!
        ctl status j000000000000abc0002a > "$SUP_DIR/status.out" &
        local status_pid=$!
        # each has had its time to be answered wrongly: none is answered
        ctl ping
        sleep 1
        [ ! -s "$SUP_DIR/ls.out" ] || false
        [ ! -s "$SUP_DIR/submit.out" ] || false
        [ ! -s "$SUP_DIR/status.out" ] || false
        rm "$GATE"
        wait "$ls_pid"
        wait "$submit_pid"
        wait "$status_pid"
        # every old record listed, once
        /usr/bin/python3 - "$SUP_DIR/ls.out" "$N" <<'EOF'
import json, sys
jobs = [j["job"] for j in json.load(open(sys.argv[1]))["jobs"]]
n = int(sys.argv[2])
old = [j for j in jobs if j.startswith("j000000000000abc")]
assert len(old) == n, (len(old), n)
assert len(set(jobs)) == len(jobs), "a job listed twice"
EOF
        # the keyed submit is the old job (j000000000000abc0004d is old-77), not a new one
        grep -q '"j000000000000abc0004d"' "$SUP_DIR/submit.out"
        grep -q "succeeded" "$SUP_DIR/status.out"
}

@test "a job that ends while the records are read is indexed once, and stopping meanwhile loses nothing" {
        start_gated
        run -0 ctl --json submit -- /bin/true
        local id
        id=$(echo "$output" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["job"])')
        run -0 ctl wait "$id"
        # stopped with the reading held: the daemon waits for its batch
        kill -TERM "$SUP_PID"
        rm "$GATE"
        wait_until 30 pid_gone "$SUP_PID"
        sup_stop
        sup_start
        run -0 ctl --json ls --limit 10000
        echo "$output" | /usr/bin/python3 -c '
import json, sys
jobs = [j["job"] for j in json.load(sys.stdin)["jobs"]]
assert jobs.count(sys.argv[1]) == 1, jobs.count(sys.argv[1])
assert len(set(jobs)) == len(jobs)
assert sum(j.startswith("j000000000000abc") for j in jobs) == int(sys.argv[2])
' "$id" "$N"
}
