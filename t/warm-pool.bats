#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# Warm pools (sbx-supervisord(8), WARM POOLS): sandboxes made ahead for a
# tenant, each taken by one job that a cold start would have given the
# same sandbox, then ended; made again after use, ended when unused, and
# flushed by a change of policy or profile. Hostile: a job that attacks
# its sandbox's agent, one that leaves files and processes behind for the
# next, a pool that would hold the places its tenant's other jobs need.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config "socket_mode = 0666"
        sed -i 's/^max_jobs = 32$/max_jobs = 4/' "$SUP_DIR/sup.conf"
        cat >> "$SUP_DIR/sup.conf" <<EOC
warm = 2
warm_idle = 10m
max_memory = 2G

[tenant.other]
uids = $(id -u nobody)
profiles = default
max_jobs = 3
warm = 1
warm_idle = 2s
EOC
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        session_setup
}

other_ctl() {
        as_user "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" "$@"
}

# warm_boxes [other]: the job ids of the tenant's running warm sandboxes
# (jobs whose command is the agent's), one a line.
warm_boxes() {
        local c=ctl
        [ "${1-}" = other ] && c=other_ctl
        "$c" --json ls | jq -r '.jobs[] | select(.command == ["sbx-init"] and .state == "running") | .job'
}

# warm_ready [other]: the tenant's warm sandboxes a job can take now, as
# its metrics say
warm_ready() {
        local c=ctl t=admin
        [ "${1-}" = other ] && c=other_ctl t=other
        "$c" metrics | sed -n "s/^sbx_warm_sandboxes{tenant=\"$t\",state=\"ready\"} //p"
}

# pool_at N [other]: until the tenant has N warm sandboxes running, all of
# them ready (a job submitted before then may start cold).
pool_at() {
        local i
        for i in $(seq 300); do
                if [ "$(warm_boxes "${2-}" | wc -l)" = "$1" ] && [ "$(warm_ready "${2-}")" = "$1" ]; then
                        return 0
                fi
                sleep 0.1
        done
        echo "the pool has $(warm_boxes "${2-}" | wc -l) sandboxes running, $(warm_ready "${2-}") ready, not $1" >&2
        tail -20 "$SUP_DIR/daemon.log" >&2
        return 1
}

# rec JOB FIELD: a field of a job's record (as compact JSON)
rec() {
        ctl --json result "$1" | jq -c ".result.$2"
}

# ended_by BOX REASON: until the warm sandbox BOX's record says it ended
# for REASON (within 20 s).
ended_by() {
        local i
        for i in $(seq 200); do
                [ "$(ctl --json result "$1" 2>/dev/null | jq -r .result.session.ended)" = "$2" ] && return 0
                sleep 0.1
        done
        echo "warm sandbox $1: $(ctl --json result "$1" 2>&1 | jq -c .result.session)" >&2
        return 1
}

# job_of OUTPUT: the job id in the first line of a --json run's output
job_of() {
        json_get job <<<"${1%%$'\n'*}"
}

@test "a job takes a warm sandbox: output, status, limits and protections as a cold start's; the record says warm" {
        pool_at 2
        before=$(warm_boxes | sort)
        run -3 ctl --json run -- sh -c 'echo out; echo err >&2; exit 3'
        j=$(job_of "$output")
        run -3 ctl wait "$j"
        run -0 ctl logs "$j"
        [ "$output" = "$(printf 'out\nerr')" ]
        [ "$(rec "$j" warm)" = true ]
        [ "$(rec "$j" exit_code)" = 3 ]
        # a cold start of the same command (retries keep a job cold)
        run -3 ctl --json run --retries 1 -- sh -c 'echo out; echo err >&2; exit 3'
        c=$(job_of "$output")
        run -3 ctl wait "$c"
        [ "$(rec "$c" warm)" = false ]
        [ "$(rec "$j" protections.seccomp)" = '"default"' ]
        [ "$(rec "$j" limits)" = "$(rec "$c" limits)" ]
        [ "$(rec "$j" protections)" = "$(rec "$c" protections)" ]
        [ "$(rec "$j" workspace)" = "$(rec "$c" workspace)" ]
        [ "$(rec "$j" cgroup)" = "$(rec "$c" cgroup)" ]
        # it ran in one of the sandboxes that were ready, as that one's uid,
        # which then ended, used; the pool is made again
        pool_at 2
        used=$(comm -23 <(echo "$before") <(warm_boxes | sort))
        [ "$(echo "$used" | wc -l)" = 1 ]
        [ "$(rec "$used" session.ended)" = '"used"' ]
        [ "$(rec "$used" warm)" = true ]
        [ "$(rec "$used" job_uid)" = "$(rec "$j" job_uid)" ]
        # the metrics count it, and not the cold one
        w=$(ctl metrics | sed -n 's/^sbx_jobs_warm_total{tenant="admin"} //p')
        run -0 ctl run -- true
        run -0 ctl run --retries 1 -- true
        [ "$(ctl metrics | sed -n 's/^sbx_jobs_warm_total{tenant="admin"} //p')" = $((w + 1)) ]
}

@test "each warm sandbox runs one job: files, processes and the uid of one are never the next one's" {
        pool_at 2
        run -0 ctl --json run -- sh -c 'echo secret > /workspace/left; (sleep 600 &) ; id -u'
        a=$(job_of "$output")
        run -0 ctl wait "$a"
        [ "$(rec "$a" warm)" = true ]
        pool_at 2
        run -0 ctl run -- sh -c 'ls -A /workspace; pgrep -x sleep || echo no-sleep; id -u'
        [ "${lines[0]}" = no-sleep ]
        [ "${lines[1]}" != "$(rec "$a" job_uid)" ]
        # the first one's processes went with its sandbox
        wait_until 10 sh -c "! pgrep -u $(rec "$a" job_uid) >/dev/null"
}

@test "a job that asks for what a warm sandbox does not give starts cold and runs as it would" {
        pool_at 2
        echo data > "$BATS_TEST_TMPDIR/in"
        run -0 ctl --json run --upload "$BATS_TEST_TMPDIR/in:in" -- cat in
        [ "$(rec "$(job_of "$output")" warm)" = false ]
        run -0 ctl --json run --memory 512M -- true
        [ "$(rec "$(job_of "$output")" warm)" = false ]
        run -0 ctl --json run --artifact 'x' -- touch x
        [ "$(rec "$(job_of "$output")" warm)" = false ]
        run -0 ctl --json run --profile shell -- true
        [ "$(rec "$(job_of "$output")" warm)" = false ]
        # and one that asks for nothing of that kind takes one
        run -0 ctl --json run --env A=1 --timeout 30s -- sh -c 'echo $A'
        [ "$(rec "$(job_of "$output")" warm)" = true ]
}

@test "a warm job's timeout is its own, and a cancel stops it; its sandbox ends with it" {
        pool_at 2
        run -124 ctl --json run --timeout 1s -- sleep 30
        j=$(job_of "$output")
        [ "$(rec "$j" warm)" = true ]
        [ "$(rec "$j" timed_out)" = true ]
        pool_at 2
        j=$(ctl submit -- sleep 30)
        wait_until 10 sh -c "[ \"\$('$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' --json status $j | jq -r .job.state)\" = running ]"
        run -0 ctl cancel "$j"
        run ctl wait "$j"
        [ "$status" -ne 0 ]
        [ "$(rec "$j" cancelled)" = true ]
        [ "$(rec "$j" warm)" = true ]
        pool_at 2
}

@test "hostile: a warm job that kills everything it can, or floods its output, ends only itself" {
        pool_at 2
        # every process it may signal, its sandbox's agent among them: the
        # sandbox ends, and the job with it
        before=$(warm_boxes | sort)
        run ctl --json run -- sh -c 'sleep 100 & kill -STOP -1; kill -KILL -1; sleep 5; echo alive'
        j=$(job_of "$output")
        [ "$(rec "$j" warm)" = true ]
        [ "$(rec "$j" stdout.size)" = 0 ]
        # killed with the rest; or, when it killed the agent before the
        # agent's answer that it started, an error that says so
        if [ "$status" = 125 ]; then
                [ "$(rec "$j" state)" = '"error"' ]
                [[ "$(rec "$j" error.message)" == *"the session's agent ended or stopped answering before it said whether the command started"* ]]
        else
                [ "$status" = 137 ]
                [ "$(rec "$j" signal)" = 9 ]
        fi
        # the sandbox it was in ended as crashed; the next job takes another
        pool_at 2
        used=$(comm -23 <(echo "$before") <(warm_boxes | sort))
        [ "$(echo "$used" | wc -l)" = 1 ]
        ended_by "$used" crashed
        pool_at 2
        run -0 ctl run -- echo next
        [ "$output" = next ]
        # output past the cap is cut, as a cold job's is
        run -0 ctl --json run --output 64K -- sh -c 'head -c 10000000 /dev/zero'
        j=$(job_of "$output")
        [ "$(rec "$j" warm)" = false ]
        run -0 ctl --json run -- sh -c 'head -c 30000000 /dev/zero | tr "\0" x'
        j=$(job_of "$output")
        [ "$(rec "$j" warm)" = true ]
        [ "$(rec "$j" stdout.truncated)" = true ]
        run -0 ctl ping
}

@test "the pool holds places of max_jobs: a job of its tenant that would wait takes the place of an unused warm sandbox" {
        pool_at 2
        # max_jobs 4: four cold jobs at once (their memory keeps them cold)
        local ids=() k
        for k in 1 2 3 4; do
                ids+=("$(ctl submit --memory 512M -- sh -c 'sleep 3')")
        done
        for k in "${ids[@]}"; do
                wait_until 10 sh -c "[ \"\$('$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' --json status $k | jq -r .job.state)\" = running ]"
        done
        # the pool gave up its places: no warm sandbox runs beside them
        [ "$(warm_boxes | wc -l)" = 0 ]
        for k in "${ids[@]}"; do
                run -0 ctl wait "$k"
        done
        # made again once the places are free
        pool_at 2
        grep -q 'a warm sandbox ends (yielded)' "$SUP_DIR/daemon.log"
}

@test "a reload flushes the pool, and so does a change of the profile it was made with" {
        pool_at 2
        old=$(warm_boxes | sort)
        run -0 ctl reload
        for b in $old; do
                ended_by "$b" flushed
        done
        pool_at 2
        [ -z "$(comm -12 <(echo "$old") <(warm_boxes | sort))" ]
        # the profile on disk changes: the next job starts cold, the pool
        # is made again with the new profile
        old=$(warm_boxes | sort)
        touch "$SBX_STAGE/profiles/default.ini"
        run -0 ctl --json run -- true
        [ "$(rec "$(job_of "$output")" warm)" = false ]
        for b in $old; do
                ended_by "$b" flushed
        done
        pool_at 2
        run -0 ctl --json run -- true
        [ "$(rec "$(job_of "$output")" warm)" = true ]
}

@test "an unused warm sandbox ends after warm_idle, and none is made again until its tenant runs a job" {
        # tenant other (warm = 1, warm_idle = 2s) has run nothing: its jobs
        # are the sandboxes made for it at the start (and at the reload
        # above, if it ran), each ended idle
        pool_at 0 other
        run -0 other_ctl --json ls
        [ "$(jq '.jobs | length' <<<"$output")" -ge 1 ]
        for b in $(jq -r '.jobs[].job' <<<"$output"); do
                [ "$(other_ctl --json result "$b" | jq -r .result.session.ended)" = idle ]
                [ "$(other_ctl --json result "$b" | jq -r .result.warm)" = true ]
        done
        sleep 3
        [ "$(warm_boxes other | wc -l)" = 0 ]
        # its next job starts cold, and brings the pool back
        run -0 other_ctl --json run -- true
        [ "$(other_ctl --json result "$(job_of "$output")" | jq -r .result.warm)" = false ]
        pool_at 1 other
        run -0 other_ctl --json run -- id -u
        [ "$(other_ctl --json result "$(job_of "$output")" | jq -r .result.warm)" = true ]
        # made again after that use, and ended idle once more
        pool_at 1 other
        pool_at 0 other
}

@test "a restart: the warm sandboxes from before end, new ones are made, a warm job that was running is recorded interrupted" {
        pool_at 2
        old=$(warm_boxes | sort)
        j=$(ctl submit -- sleep 60)
        wait_until 10 sh -c "[ \"\$('$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' --json status $j | jq -r .job.state)\" = running ]"
        [ "$(ctl --json status "$j" | jq -r .job.state)" = running ]
        kill -KILL "$SUP_PID"
        sup_start
        pool_at 2
        run -125 ctl wait "$j"
        [ "$(rec "$j" error.code)" = '"E_RESTARTED"' ]
        [ "$(rec "$j" warm)" = true ]
        for b in $old; do
                ended_by "$b" restarted
        done
        [ -z "$(comm -12 <(echo "$old") <(warm_boxes | sort))" ]
}

@test "hostile: a pool whose sandboxes cannot be set up backs off (1 s, 2 s, 4 s ...) instead of spinning" {
        # a tenant whose default profile binds what does not exist: every
        # sandbox of its pool fails at set-up
        printf '[fs]\nro-bind = /nonexistent-sbx-warm /x\n' > "$SBX_STAGE/profiles/broken.ini"
        cp "$SUP_DIR/sup.conf" "$BATS_TEST_TMPDIR/sup.conf.before"
        cat >> "$SUP_DIR/sup.conf" <<EOC

[tenant.broken]
uids = daemon
profiles = broken
default_profile = broken
max_jobs = 2
warm = 1
EOC
        run -0 ctl reload
        sleep 6
        # made at 0, 1 and 3 s (waits of 1, 2, then 4 s): three, not hundreds
        n=$(grep -c 'tenant broken: a warm sandbox ended before it was ready' "$SUP_DIR/daemon.log")
        [ "$n" -ge 2 ]
        [ "$n" -le 4 ]
        grep -q 'tenant broken: a warm sandbox ended before it was ready (2 in a row): the pool is made again in 2000 ms' "$SUP_DIR/daemon.log"
        # the other tenants' pools are not held up by it
        pool_at 2
        run -0 ctl --json run -- true
        [ "$(rec "$(job_of "$output")" warm)" = true ]
        cp "$BATS_TEST_TMPDIR/sup.conf.before" "$SUP_DIR/sup.conf"
        run -0 ctl reload
}

@test "a pool that would take every place of its tenant, or more than 64, is refused by name" {
        cp "$SUP_DIR/sup.conf" "$BATS_TEST_TMPDIR/bad.conf"
        sed -i 's/^warm = 2$/warm = 4/' "$BATS_TEST_TMPDIR/bad.conf"
        run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$BATS_TEST_TMPDIR/bad.conf" --check-config
        [[ "$output" == *"[tenant.admin] warm = 4 holds as many sandboxes as max_jobs (4) lets it run: at most 3"* ]]
        sed -i 's/^warm = 4$/warm = 65/' "$BATS_TEST_TMPDIR/bad.conf"
        run -1 "$SBX_STAGE/bin/sbx-supervisord" --config "$BATS_TEST_TMPDIR/bad.conf" --check-config
        [[ "$output" == *"warm: expected a number from 0 to 64, got '65'"* ]]
}
