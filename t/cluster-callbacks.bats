#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) RUNNING MANY NODES, callbacks: a job's callback is a
# row written with its result. The node that ran it delivers it and the
# row says how it settled; a node SIGKILLed with deliveries pending has
# them delivered by another node once its heartbeat has stopped for a
# lease, with the same delivery ids, and when it comes back it drops them
# instead of posting them again. Progress callbacks are posted by the
# node that runs the job (best effort). Two nodes on one real PostgreSQL, the
# receiver is t/helpers/callback-receiver.py.

load sup-unit/daemon
load sup-unit/receiver
load helpers/cluster
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        pg_find
        pg_start
        recv_start
        local url="http://127.0.0.1:$(cat "$SUP_DIR/recv/port")"
        export NODE_DAEMON_LINES="socket_mode = 0666
callback_backoff = 1s
callback_backoff_max = 2s
callback_timeout = 2s"
        export NODE_TENANT_LINES="callback_url = $url/hook
callback_secret_file = $SUP_DIR/secret
callback_allow = $url"
        local n
        for n in 1 2; do
                node_config "$n"
                node_start "$n"
        done
}

teardown_file() {
        recv_stop
        cluster_fini
        sup_fini
}

setup() {
        cluster_setup
        mode ok
}

# cb_row JOB: "STATE NODE" of the job's callback row
cb_row() {
        pg_sql "SELECT state || ' ' || node FROM sbx_callbacks WHERE job = '$1'"
}

# cb_row_is JOB "STATE NODE": until the row says so (within 20 s)
cb_row_is() {
        local i
        for i in $(seq 200); do
                [ "$(cb_row "$1")" = "$2" ] && return 0
                sleep 0.1
        done
        echo "job $1: callback row '$(cb_row "$1")', not '$2'" >&2
        return 1
}

# drain_node2: node2 drains, and has heard so (its log says it)
drain_node2() {
        local before i
        before=$(grep -c "cluster: node node2 drains" "$SUP_DIR/n2/daemon.log" || true)
        run -0 nctl 1 drain node2
        for i in $(seq 100); do
                [ "$(grep -c "cluster: node node2 drains" "$SUP_DIR/n2/daemon.log")" -gt "$before" ] && return 0
                sleep 0.1
        done
        echo "node2 never said it drains" >&2
        return 1
}

# ran_on JOB: the node the database says ran it
ran_on() {
        pg_sql "SELECT node FROM sbx_jobs WHERE id = '$1'"
}

@test "a job's callback is a row written with its result; the node that ran it delivers it, and the row and any node's result say delivered" {
        j=$(nctl 1 submit -- echo hi)
        run -0 nctl 2 wait "$j"
        [[ "$output" == *"state:     succeeded"* ]]
        wait_posts "$j" 1 200
        node=$(ran_on "$j")
        cb_row_is "$j" "delivered $node"
        # the entry in the row is the one posted: the same delivery id
        d=$(posts "$j" | jq -r .delivery)
        [[ "$d" == d* ]]
        [ "$(pg_sql "SELECT entry::json->>'delivery' FROM sbx_callbacks WHERE job = '$j'")" = "$d" ]
        for n in 1 2; do
                run -0 nctl "$n" --json result "$j"
                [ "$(jq -r .callback.state <<<"$output")" = delivered ]
                [ "$(jq -r .callback.delivery <<<"$output")" = "$d" ]
        done
}

@test "a node SIGKILLed with callbacks pending: the other node delivers them once its heartbeat stopped for a lease, with the same delivery ids; back, the node drops them" {
        # node2 drains: node1 runs the jobs
        drain_node2
        mode 500
        ids=()
        for i in 1 2 3; do
                ids+=("$(nctl 1 submit -- echo "job $i")")
        done
        # their rows are pending for node1, which tries (a failing lane
        # tries its oldest delivery, so not all of them yet)
        for j in "${ids[@]}"; do
                cb_row_is "$j" "pending node1"
        done
        wait_until 20 eval '[ "$(grep -c "\"status\": 500" "$SUP_DIR/recv/log")" -ge 1 ]'
        node_kill 1
        run -0 nctl 2 drain node2 --undo
        mode ok
        # node2 takes them over once node1's heartbeat is a lease old
        for j in "${ids[@]}"; do
                wait_posts "$j" 1 200 || { grep -v "^#" "$SUP_DIR/n2/daemon.log" | tail -n 40 >&2; pg_sql "SELECT job, node, state, taken_from FROM sbx_callbacks" >&2; pg_sql "SELECT name, seen, now() FROM sbx_nodes" >&2; false; }
                cb_row_is "$j" "delivered node2"
                # every post of the job carried the delivery id of its entry
                [ "$(posts "$j" | jq -r .delivery | sort -u | wc -l)" = 1 ]
                grep -q "callback of job $j (delivery $(posts "$j" | jq -r .delivery | head -1)) taken over from node node1" \
                        "$SUP_DIR/n2/daemon.log"
        done
        run -0 nctl 2 metrics
        [[ "$output" == *"sbx_cluster_callbacks_taken_over_total 3"* ]]
        # node1 back: it learns at its start which were taken, before it
        # posts anything, and drops them
        node_start 1
        for j in "${ids[@]}"; do
                grep -q "callback of job $j was taken over by node node2 while this node was away: not delivered here" \
                        "$SUP_DIR/n1/daemon.log"
                [ ! -e "$SUP_DIR/n1/state/callbacks/outbox/$j.json" ]
        done
        run -0 nctl 1 callbacks ls
        for j in "${ids[@]}"; do
                [[ "$output" != *"$j"* ]]
        done
        # a job run since is delivered as before
        j=$(nctl 1 submit -- echo after)
        wait_posts "$j" 1 200
        for j in "${ids[@]}"; do
                [ "$(posts "$j" | grep -c '"status": 200')" = 1 ]
        done
}

@test "a result refused by the fence leaves no callback: only the result that stands is posted" {
        # node1 holds a job, is stopped past its lease; node2 runs it again
        drain_node2
        j=$(nctl 1 submit --retries 1 -- sh -c 'sleep 2; echo first')
        for i in $(seq 100); do
                [ "$(pg_sql "SELECT state FROM sbx_jobs WHERE id = '$j'")" = running ] && break
                sleep 0.1
        done
        node_signal 1 STOP
        run -0 nctl 2 drain node2 --undo
        run -0 nctl 2 wait "$j"; echo "OUT: $output" >&2; tail -20 "$SUP_DIR/n1/daemon.log" >&2
        [ "$(ran_on "$j")" = node2 ]
        wait_posts "$j" 1 200
        cb_row_is "$j" "delivered node2"
        # node1 goes on: its job's result is refused, and its callback
        # with it
        node_signal 1 CONT
        for i in $(seq 200); do
                grep -q "job $j.*its result (attempt 1) is refused by the cluster" "$SUP_DIR/n1/daemon.log" && break
                sleep 0.1
        done
        grep -q "job $j.*its result (attempt 1) is refused by the cluster" "$SUP_DIR/n1/daemon.log"
        [ ! -e "$SUP_DIR/n1/state/callbacks/outbox/$j.json" ]
        run -0 nctl 1 callbacks ls
        [[ "$output" != *"$j"* ]]
        [ "$(posts "$j" | wc -l)" = 1 ]
}

@test "progress callbacks: the node that runs a job posts started and heartbeats; run again on another node after its own died, the job gets them from there" {
        j=$(nctl 1 submit --progress 1 -- sleep 3)
        run -0 nctl 2 wait "$j"
        wait_until 20 eval '[ "$(posts "$j" | grep -c "\"event\": \"result\"")" = 1 ]'
        [ "$(posts "$j" | grep -c '"event": "started"')" = 1 ]
        [ "$(posts "$j" | grep -c '"event": "heartbeat"')" -ge 1 ]
        # node1 runs the next one, and is killed while it does: what it
        # had not posted is lost (best effort); node2 runs it again and
        # posts its own
        drain_node2
        k=$(nctl 1 submit --progress 1 --retries 1 -- sleep 5)
        wait_until 20 eval '[ "$(posts "$k" | grep -c "\"event\": \"started\"")" = 1 ]'
        node_kill 1
        run -0 nctl 2 drain node2 --undo
        run -0 nctl 2 wait "$k"
        [ "$(pg_sql "SELECT node || ' ' || attempt FROM sbx_jobs WHERE id = '$k'")" = "node2 2" ]
        wait_until 20 eval '[ "$(posts "$k" | grep -c "\"event\": \"result\"")" = 1 ]'
        [ "$(posts "$k" | grep -c '"event": "started"')" = 2 ]
        node_start 1
}
