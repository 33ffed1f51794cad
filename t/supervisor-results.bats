#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) FILES, results/index: the finished jobs' index is cached
# across restarts, and the records stay the truth. After a restart every
# tenant lists exactly its own jobs, newest first, as before; idempotency
# keys still find their job and still refuse a different request; a cache
# that is garbled, lacks a record, names a record that is gone, or is
# missing altogether is repaired from the records.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config "socket_mode = 0666"
        cat >> "$SUP_DIR/sup.conf" <<EOC

[tenant.other]
uids = nobody
profiles = default
max_jobs = 4
EOC
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
        rm -rf "$SUP_DIR/state"
        sup_start
}

teardown() {
        sup_stop
}

# The jobs a caller lists, newest first, with their states: "ID:STATE ...".
listing() {
        "$@" --json ls --limit 1000 |
                python3 -c 'import json, sys; print(" ".join(j["job"] + ":" + j["state"] for j in json.load(sys.stdin)["jobs"]))'
}

cache_lines() {
        tail -n +2 "$SUP_DIR/state/results/index" | wc -l
}

@test "after a restart each tenant lists its own jobs as before, and idempotency keys hold, from the cache" {
        ctl run -- true >/dev/null
        ctl run --idempotency-key deploy-1 -- sh -c 'exit 3' >/dev/null || true
        ctl_nobody run -- true >/dev/null
        ctl run -- false >/dev/null || true
        ctl_nobody run --idempotency-key deploy-1 -- true >/dev/null
        keyed=$(ctl --json submit --idempotency-key deploy-1 -- sh -c 'exit 3' | json_get job)
        before=$(listing ctl)
        before_other=$(listing ctl_nobody)
        [ "$(wc -w <<<"$before")" = 3 ]
        [ "$(wc -w <<<"$before_other")" = 2 ]
        [[ "$before" == *"$keyed:failed"* ]]

        sup_stop
        # one line per record, behind the format's header
        [ "$(head -1 "$SUP_DIR/state/results/index")" = "sbx-results-index 1" ]
        [ "$(cache_lines)" = 5 ]
        # the start reads the cache, not the records: one that cannot be
        # parsed would be left out were it read, and is listed all the same
        rec=$SUP_DIR/state/results/$keyed.json
        mv "$rec" "$rec.saved"
        echo garbage > "$rec"
        sup_start
        mv "$rec.saved" "$rec"

        [ "$(listing ctl)" = "$before" ]
        [ "$(listing ctl_nobody)" = "$before_other" ]
        [ "$(ctl --json status "$keyed" | json_get job.state)" = failed ]
        run ctl --json submit --idempotency-key deploy-1 -- sh -c 'exit 3'
        [ "$status" -eq 0 ]
        [ "$(json_get job <<<"$output")" = "$keyed" ]
        [ "$(json_get duplicate <<<"$output")" = true ]
        # the request's digest came through the cache too
        run -125 ctl --json submit --idempotency-key deploy-1 -- sh -c 'exit 4'
        [ "$(json_get error.code <<<"$output")" = E_CONFLICT ]
        # another tenant's key of the same name is its own
        run -0 ctl_nobody --json submit --idempotency-key deploy-1 -- true
        [ "$(json_get duplicate <<<"$output")" = true ]
        [ "$(json_get job <<<"$output")" != "$keyed" ]
}

@test "a garbled, incomplete or stale cache is repaired from the records, and a missing one rebuilt" {
        for i in 1 2 3 4 5; do
                ctl run -- sh -c "exit $i" >/dev/null || true
        done
        all=$(listing ctl)
        sup_stop
        ids=($(sed 's/:[a-z_]*//g' <<<"$all"))
        idx=$SUP_DIR/state/results/index
        # a record whose line the cache lacks (as after a crash before the
        # append), a line whose checksum fails, a line whose record is gone
        grep -v "^${ids[0]} " "$idx" > "$idx.new"
        sed -i "s/^${ids[1]} failed 4 /${ids[1]} failed 9 /" "$idx.new"
        mv "$idx.new" "$idx"
        run -1 grep -q "^${ids[1]} failed 4 " "$idx"
        rm -rf "$SUP_DIR/state/results/${ids[2]}.json" "$SUP_DIR/state/results/${ids[2]}"
        sup_start

        expect=$(sed "s/${ids[2]}:failed *//; s/ *\$//" <<<"$all")
        [ "$(listing ctl)" = "$expect" ]
        [ "$(ctl --json status "${ids[1]}" | json_get job.exit_code)" = 4 ]
        # rewritten at that start: one good line per record
        [ "$(cache_lines)" = 4 ]
        grep -q "^${ids[0]} " "$idx"
        grep -q "^${ids[1]} failed 4 " "$idx"
        run -1 grep -q "^${ids[2]} " "$idx"

        sup_stop
        rm "$idx"
        sup_start
        [ "$(listing ctl)" = "$expect" ]
        [ "$(cache_lines)" = 4 ]
}
