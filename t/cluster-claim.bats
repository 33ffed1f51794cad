#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) RUNNING MANY NODES: what a node does with the jobs it
# claims. Warm pools (WARM POOLS): a node that claims jobs keeps its
# tenants' warm sandboxes, and a job it claims takes one as a job submitted
# to a daemon alone does; the places they hold count as free to its
# claims, and a claimed job that would wait for one makes the sandbox end,
# whoever's it is. An api node keeps none; a draining node ends its own.
# A claimed job's policy is decided again by its profile as at its
# acceptance. A lone worker restarted gives back what it ran, for good.
# Two nodes on one real PostgreSQL: node1 (role both) runs the jobs, node2
# (role api) takes most of the submissions.

load sup-unit/daemon
load helpers/cluster
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        pg_find
        pg_start
        export NODE_DAEMON_LINES="socket_mode = 0666"
        export NODE_TENANT_LINES=$'warm = 2\nwarm_idle = 10m\nmax_memory = 2G'
        node_config 1
        node_config 2 "role = api"
        # a profile that asks for the network audit itself
        sed -i 's/^profiles = default shell$/profiles = default shell audited/' "$SUP_DIR/n1/sup.conf" "$SUP_DIR/n2/sup.conf"
        sed 's/^mode = none$/&\naudit = yes/' "$SBX_STAGE/profiles/default.ini" >"$SBX_STAGE/profiles/audited.ini"
        node_start 1
        node_start 2
}

teardown_file() {
        cluster_fini
        sup_fini
}

setup() {
        cluster_setup
        session_setup
}

# warm N STATE: node N's warm sandboxes of tenant admin in STATE (ready,
# starting), as its metrics say
warm() {
        nctl "$1" metrics | sed -n "s/^sbx_warm_sandboxes{tenant=\"admin\",state=\"$2\"} //p"
}

# pool_at N K: until node N has K warm sandboxes, all of them ready
pool_at() {
        local i
        for i in $(seq 300); do
                [ "$(warm "$1" ready)" = "$2" ] && [ "$(warm "$1" starting)" = 0 ] && return 0
                sleep 0.1
        done
        echo "node $1: $(warm "$1" ready) warm sandboxes ready, $(warm "$1" starting) starting, not $2 ready" >&2
        tail -20 "$SUP_DIR/n$1/daemon.log" >&2
        return 1
}

# job_of OUTPUT: the job id in the first line of a --json run's output
job_of() {
        json_get job <<<"${1%%$'\n'*}"
}

# rec JOB FIELD: a field of a job's record, through node2 (compact JSON)
rec() {
        nctl 2 --json result "$1" | jq -c ".result.$2"
}

# state N JOB: the job's state, through node N
state() {
        nctl "$1" --json status "$2" | jq -r .job.state
}

# state_is JOB STATE...: the job's state (through node2, as its tenant:
# admin's as root, other's as nobody) is one of STATEs
state_is() {
        local s k
        s=$(state 2 "$1")
        [ "$s" != null ] || s=$(nctl_nobody 2 --json status "$1" | jq -r .job.state)
        shift
        for k in "$@"; do
                [ "$s" = "$k" ] && return 0
        done
        return 1
}

# log_count N TEXT: lines of node N's log with TEXT
log_count() {
        grep -c "$2" "$SUP_DIR/n$1/daemon.log" || true
}

@test "a job submitted through an api node runs in a warm sandbox of the node that claims it; the api node keeps none" {
        pool_at 1 2
        [ "$(warm 2 ready)" = 0 ]
        [ "$(warm 2 starting)" = 0 ]
        w=$(nctl 1 metrics | sed -n 's/^sbx_jobs_warm_total{tenant="admin"} //p')
        run -3 nctl 2 --json run -- sh -c 'echo out; echo err >&2; exit 3'
        j=$(job_of "$output")
        [ "$(rec "$j" warm)" = true ]
        [ "$(rec "$j" exit_code)" = 3 ]
        [ "$(pg_sql "SELECT node || ' ' || attempt || ' ' || state FROM sbx_jobs WHERE id = '$j'")" = "node1 1 done" ]
        run -0 nctl 1 logs "$j"
        [ "$output" = "$(printf 'out\nerr')" ]
        # one that asks for what a warm sandbox does not give starts cold
        run -3 nctl 2 --json run --retries 1 -- sh -c 'exit 3'
        [ "$(rec "$(job_of "$output")" warm)" = false ]
        run -0 nctl 2 --json run --memory 512M -- true
        [ "$(rec "$(job_of "$output")" warm)" = false ]
        # the pool is made again; the metrics count the warm one alone
        pool_at 1 2
        [ "$(nctl 1 metrics | sed -n 's/^sbx_jobs_warm_total{tenant="admin"} //p')" = $((w + 1)) ]
        [ "$(warm 2 ready)" = 0 ]
}

@test "claimed jobs that would wait for the places the pool holds make its sandboxes end, for any tenant; the pool comes back after" {
        pool_at 1 2
        y=$(log_count 1 'a warm sandbox ends (yielded)')
        # node1 has max_jobs 4: two cold jobs of admin (their memory keeps
        # them cold) beside the two sandboxes fill it
        a1=$(nctl 2 submit --memory 512M -- sleep 8)
        a2=$(nctl 2 submit --memory 512M -- sleep 8)
        wait_until 15 state_is "$a1" running
        wait_until 15 state_is "$a2" running
        [ "$(warm 1 ready)" = 2 ]
        # two of tenant other, which has no pool: admin's sandboxes give
        # them their places, and they run while admin's still do
        o1=$(nctl_nobody 2 submit -- sleep 1)
        o2=$(nctl_nobody 2 submit -- sleep 1)
        wait_until 15 state_is "$o1" running succeeded
        wait_until 15 state_is "$o2" running succeeded
        [ "$(state 2 "$a1")" = running ]
        [ "$(state 2 "$a2")" = running ]
        [ "$(log_count 1 'a warm sandbox ends (yielded)')" = $((y + 2)) ]
        run -0 nctl_nobody 2 wait "$o1"
        run -0 nctl_nobody 2 wait "$o2"
        # two more cold ones of admin: while the queue holds runnable jobs
        # no sandbox is made again
        a3=$(nctl 2 submit --memory 512M -- sleep 1)
        a4=$(nctl 2 submit --memory 512M -- sleep 1)
        for k in "$a1" "$a2" "$a3" "$a4"; do
                run -0 nctl 2 wait "$k"
        done
        [ "$(rec "$a3" warm)" = false ]
        # nothing waits: made again
        pool_at 1 2
}

@test "a drained node ends its unused warm sandboxes, and makes them again once it claims again" {
        pool_at 1 2
        run -0 nctl 2 drain node1
        wait_until 10 grep -q 'warm sandboxes end (drained)' "$SUP_DIR/n1/daemon.log"
        pool_at 1 0
        # nothing claims meanwhile: a job waits in the queue
        j=$(nctl 2 submit -- echo drained-wait)
        sleep 1.5
        [ "$(pg_sql "SELECT state FROM sbx_jobs WHERE id = '$j'")" = queued ]
        run -0 nctl 2 drain --undo node1
        run -0 nctl 2 wait "$j"
        pool_at 1 2
}

@test "a burst through both nodes: every job ends once with its own output, warm or cold, none run twice" {
        pool_at 1 2
        local ids=() i
        for i in $(seq 30); do
                ids+=("$(nctl $((i % 2 + 1)) submit -- sh -c "echo job-$i")")
        done
        local warm_n=0
        for i in $(seq 30); do
                run -0 nctl 2 wait "${ids[$((i - 1))]}"
                run -0 nctl 1 logs "${ids[$((i - 1))]}"
                [ "$output" = "job-$i" ]
                [ "$(pg_sql "SELECT attempt || ' ' || state FROM sbx_jobs WHERE id = '${ids[$((i - 1))]}'")" = "1 done" ]
                if [ "$(rec "${ids[$((i - 1))]}" warm)" = true ]; then
                        warm_n=$((warm_n + 1))
                fi
        done
        echo "warm: $warm_n of 30" >&3
        [ "$warm_n" -ge 1 ]
        pool_at 1 2
}

@test "the node killed with a warm job running: the job is recorded interrupted once, its sandbox's processes are gone, the pool comes back" {
        pool_at 1 2
        j=$(nctl 2 submit -- sleep 67)
        wait_until 15 state_is "$j" running
        node_kill 1
        node_start 1
        run -125 nctl 2 wait "$j"
        [ "$(rec "$j" error.code)" = '"E_RESTARTED"' ]
        [ "$(pg_sql "SELECT attempt || ' ' || state FROM sbx_jobs WHERE id = '$j'")" = "1 done" ]
        wait_until 15 sh -c '! pgrep -f "^sleep 67$" >/dev/null'
        pool_at 1 2
}

@test "the only worker restarted: what it gives back is not renewed by its own heartbeat; it runs again (retries) or is recorded interrupted" {
        # (a node renewed the leases of every row that named it, so a job it
        # gave back at its start stayed running in the database for as long
        # as it lived, when no other node took it first)
        c=$(nctl 2 submit --memory 512M -- sleep 68)
        r=$(nctl 2 submit --memory 512M --retries 1 -- sh -c 'sleep 3; echo again')
        wait_until 15 state_is "$c" running
        wait_until 15 state_is "$r" running
        node_kill 1
        node_start 1
        run -125 timeout 30 "$SBX_STAGE/bin/sbxctl" --socket "$(node_sock 2)" wait "$c"
        [[ "$output" == *"E_RESTARTED: node node1, which ran it, stopped renewing its lease"* ]]
        run -0 timeout 30 "$SBX_STAGE/bin/sbxctl" --socket "$(node_sock 2)" wait "$r"
        [ "$(pg_sql "SELECT attempt || ' ' || state FROM sbx_jobs WHERE id = '$r'")" = "2 done" ]
        run -0 nctl 1 logs "$r"
        [ "$output" = again ]
        wait_until 15 sh -c '! pgrep -f "^sleep 68$" >/dev/null'
}

@test "a claimed job's profile asks for the network audit: the node that claims it audits it, as the one that accepted it decided" {
        grep -qx "audit = yes" "$SBX_STAGE/profiles/audited.ini"
        run -0 nctl 2 --json submit --profile audited -- true
        j=$(json_get job <<<"$output")
        run -0 nctl 2 --json wait "$j"
        [ "$(json_get result.state <<<"$output")" = succeeded ]
        [ "$(json_get result.network.audit <<<"$output")" = true ]
}
