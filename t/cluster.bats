#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord(8) RUNNING MANY NODES: three nodes on one real PostgreSQL
# (initdb and pg_ctl into the test's own directory), each with its own
# state, socket, job uids and cgroup. Jobs submitted through any node run
# on some node exactly once; a node killed, a node stopped past its lease
# and the database restarted lose no acknowledged job, and a stopped
# node's late result is refused by the fence; tenants' max_jobs hold across
# the cluster; drains, roles and schema versions do what the man page says.

load sup-unit/daemon
load helpers/cluster
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        pg_find
        pg_start
        # nobody (tenant other) talks to the nodes too
        export NODE_DAEMON_LINES="socket_mode = 0666"
        local n
        for n in 1 2; do
                node_config "$n"
                node_start "$n"
        done
        # node3's front runs without privilege (sbx-privd does what needs
        # it), where this machine can: libpq under the front's filter
        if [ "$(id -u)" = 0 ] && [ "$SUP_CGROUP" != none ]; then
                sup_user_mode
                NODE_DAEMON_LINES="socket_mode = 0666
$SUP_USER_LINES" node_config 3
        else
                node_config 3
        fi
        node_start 3
}

teardown_file() {
        cluster_fini
        sup_fini
}

setup() {
        cluster_setup
}

# The ids as an SQL list.
sql_ids() {
        local out="" id
        for id in "$@"; do
                out="${out:+$out, }'$id'"
        done
        echo "($out)"
}

# done_count ID...: how many of them are done.
done_count() {
        pg_sql "SELECT count(*) FROM sbx_jobs WHERE state = 'done' AND id IN $(sql_ids "$@")"
}

all_done() {
        local want=$1
        shift
        [ "$(done_count "$@")" = "$want" ]
}

# Every node's record files of these jobs, together.
records_of() {
        local id n c=0
        for id in "$@"; do
                for n in 1 2 3 4; do
                        [ -f "$SUP_DIR/n$n/state/results/$id.json" ] && c=$((c + 1))
                done
        done
        echo "$c"
}

@test "three nodes: jobs submitted round-robin through all three each run once, on several nodes; any node answers for any job" {
        local n=${SBX_CLUSTER_JOBS:-120} i ids=()
        for i in $(seq "$n"); do
                ids+=("$(nctl $((i % 3 + 1)) submit -- sh -c "echo job $i")")
        done
        wait_until 180 all_done "$n" "${ids[@]}"
        # once each: one claim, one record file over all nodes
        [ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE id IN $(sql_ids "${ids[@]}") AND attempt = 1 AND outcome = 'succeeded'")" = "$n" ]
        [ "$(records_of "${ids[@]}")" = "$n" ]
        # spread over the nodes: all three claimed some
        [ "$(pg_sql "SELECT count(DISTINCT node) FROM sbx_jobs WHERE id IN $(sql_ids "${ids[@]}")")" = 3 ]
        # node3's front, where it runs without privilege, talked to the
        # database as user sbx
        if grep -q '^user = sbx' "$SUP_DIR/n3/sup.conf"; then
                [ "$(ps -o user= -p "$(node_pid 3)")" = sbx ]
                [ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE node = 'node3' AND id IN $(sql_ids "${ids[@]}")")" -ge 1 ]
        fi
        # any node answers for any job, with its record and its output
        for i in 0 1 2; do
                run nctl $(((i + 1) % 3 + 1)) --json wait "${ids[$i]}"
                [ "$status" -eq 0 ]
                [ "$(json_get result.state <<<"$output")" = succeeded ]
                [ "$(json_get result.job <<<"$output")" = "${ids[$i]}" ]
        done
        run nctl 2 status "${ids[5]}"
        [ "$status" -eq 0 ]
        [[ "$output" == *succeeded* ]]
        # run follows the job wherever it runs: its output comes back
        for i in 1 2 3; do
                run nctl "$i" run -- sh -c 'echo out-$((6*7)); echo err-line >&2; exit 3'
                [ "$status" -eq 3 ]
                [[ "$output" == *out-42* ]]
                [[ "$output" == *err-line* ]]
        done
        # the nodes, as every node sees them
        run nctl 2 nodes
        [ "$status" -eq 0 ]
        [[ "$output" == *node1*both*active* ]]
        [[ "$output" == *node3*both*active* ]]
        [[ "$output" == *"node2"*"(this node)"* ]]
        # the newest three: the runs that exited 3
        run nctl 1 ls --limit 3
        [ "$status" -eq 0 ]
        [ "$(grep -c 'failed .* 3$' <<<"$output")" -eq 3 ]
}

@test "idempotency keys hold across nodes; SQL in a key or a command is data" {
        local key="k'); DROP TABLE sbx_jobs; --"
        local a b
        a=$(nctl 1 submit --idempotency-key "$key" -- echo "it's; DELETE FROM sbx_jobs")
        b=$(nctl 2 submit --idempotency-key "$key" -- echo "it's; DELETE FROM sbx_jobs")
        [ -n "$a" ]
        [ "$a" = "$b" ]
        run nctl 3 --json submit --idempotency-key "$key" -- echo "it's; DELETE FROM sbx_jobs"
        [ "$status" -eq 0 ]
        [ "$(json_get duplicate <<<"$output")" = true ]
        # the same key with another request: refused, naming the first job
        run nctl 3 submit --idempotency-key "$key" -- echo other
        [ "$status" -eq 125 ]
        [[ "$output" == *E_CONFLICT*"$a"* ]]
        run nctl 3 wait "$a"
        [ "$status" -eq 0 ]
        [ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE idem_key = 'k''); DROP TABLE sbx_jobs; --'")" = 1 ]
        # another tenant's job is no job of nobody's, on any node
        run nctl_nobody 2 status "$a"
        [ "$status" -eq 125 ]
        [[ "$output" == *E_NOT_FOUND* ]]
}

@test "a job cannot reach the cluster's database" {
        run nctl 1 run -- sh -c "ls '$PG_DIR/sock' || echo no-socket-here"
        [ "$status" -eq 0 ]
        [[ "$output" == *no-socket-here* ]]
}

# Each node's max_jobs as given (restarted: a daemon key).
nodes_max_jobs() {
        local n
        for n in 1 2 3; do
                # (the first: [daemon]'s)
                sed -i "0,/^max_jobs = [0-9]*$/s//max_jobs = $1/" "$SUP_DIR/n$n/sup.conf"
                node_stop "$n"
                node_start "$n"
        done
}

@test "a tenant's max_jobs holds across the cluster, not per node" {
        local ids=() i max=0 now
        # one job at a time per node: tenant other's two at once are on two
        # nodes, and a third node is free for a third
        nodes_max_jobs 1
        for i in $(seq 8); do
                ids+=("$(nctl_nobody $((i % 3 + 1)) submit -- sleep 1)")
        done
        for i in $(seq 300); do
                now=$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE tenant = 'other' AND state = 'running'")
                [ "$now" -gt "$max" ] && max=$now
                all_done 8 "${ids[@]}" && break
                sleep 0.05
        done
        all_done 8 "${ids[@]}"
        # tenant other: max_jobs 2 over three nodes
        [ "$max" -eq 2 ]
        [ "$(pg_sql "SELECT count(DISTINCT node) FROM sbx_jobs WHERE id IN $(sql_ids "${ids[@]}")")" -ge 2 ]
        nodes_max_jobs 4
}

@test "a drained node finishes its jobs and claims no more; undone, it claims again" {
        run nctl 1 drain node3
        [ "$status" -eq 0 ]
        wait_until 10 eval '[[ "$(nctl 1 nodes)" == *node3*draining* ]]'
        # its heartbeat has seen the drain by now (a third of a lease)
        sleep 1.2
        local ids=() i
        for i in $(seq 9); do
                ids+=("$(nctl $((i % 3 + 1)) submit -- true)")
        done
        wait_until 60 all_done 9 "${ids[@]}"
        [ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE node = 'node3' AND id IN $(sql_ids "${ids[@]}")")" = 0 ]
        [ "$(pg_sql "SELECT running FROM sbx_nodes WHERE name = 'node3'")" = 0 ]
        run nctl 3 drain --undo
        [ "$status" -eq 0 ]
        [[ "$output" == *"node3: claims jobs again"* ]]
        run nctl 1 drain nosuchnode
        [ "$status" -eq 125 ]
        [[ "$output" == *"E_NOT_FOUND"*"no node nosuchnode"* ]]
        # only admins
        run nctl_nobody 1 drain node1
        [ "$status" -eq 125 ]
        [[ "$output" == *E_FORBIDDEN* ]]
}

@test "cancel through any node: a queued job ends at once, a running one is stopped by the node that runs it" {
        local id node other
        id=$(nctl 1 submit -- sleep 30)
        wait_until 20 eval '[ "$(pg_sql "SELECT state FROM sbx_jobs WHERE id = '"'$id'"'")" = running ]'
        node=$(pg_sql "SELECT node FROM sbx_jobs WHERE id = '$id'")
        other=$(( ${node#node} % 3 + 1 ))
        run nctl "$other" --json cancel "$id"
        [ "$status" -eq 0 ]
        [ "$(json_get node <<<"$output")" = "$node" ]
        # (sbxctl wait exits as the job did: SIGTERM)
        run nctl "$other" --json wait "$id"
        [ "$status" -eq 143 ]
        [ "$(json_get result.state <<<"$output")" = killed ]
        [ "$(json_get result.cancelled <<<"$output")" = true ]
        # queued: every node drains, so none claims it
        local n
        for n in 1 2 3; do
                run nctl 1 drain "node$n"
                [ "$status" -eq 0 ]
        done
        sleep 1.2
        id=$(nctl 2 submit -- echo never)
        [ "$(pg_sql "SELECT state FROM sbx_jobs WHERE id = '$id'")" = queued ]
        run nctl 3 --json cancel "$id"
        [ "$status" -eq 0 ]
        [ "$(json_get state <<<"$output")" = killed ]
        run nctl 1 --json result "$id"
        [ "$status" -eq 0 ]
        [ "$(json_get result.state <<<"$output")" = killed ]
        [ "$(json_get result.started <<<"$output")" = null ]
        for n in 1 2 3; do
                run nctl 1 drain --undo "node$n"
                [ "$status" -eq 0 ]
        done
}

@test "a node SIGKILLed mid-burst: jobs with retries run again elsewhere, the others are recorded interrupted naming it" {
        local ids=() i
        for i in $(seq 12); do
                if [ $((i % 2)) = 0 ]; then
                        ids+=("$(nctl $((i % 3 + 1)) submit --retries 1 -- sh -c "sleep 2; echo again $i")")
                else
                        ids+=("$(nctl $((i % 3 + 1)) submit -- sh -c "sleep 2; echo once $i")")
                fi
        done
        wait_until 20 eval '[ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE node = '"'node1'"' AND state = '"'running'"'")" -ge 2 ]'
        local victims
        victims=$(pg_sql "SELECT id FROM sbx_jobs WHERE node = 'node1' AND state = 'running' AND id IN $(sql_ids "${ids[@]}")")
        [ -n "$victims" ]
        node_kill 1
        wait_until 60 all_done 12 "${ids[@]}"
        local v rec retried=0 interrupted=0
        for v in $victims; do
                if [ "$(pg_sql "SELECT retries FROM sbx_jobs WHERE id = '$v'")" = 1 ]; then
                        [ "$(pg_sql "SELECT outcome || ' ' || attempt FROM sbx_jobs WHERE id = '$v'")" = "succeeded 2" ]
                        [ "$(pg_sql "SELECT node FROM sbx_jobs WHERE id = '$v'")" != node1 ]
                        retried=$((retried + 1))
                else
                        rec=$(pg_sql "SELECT record FROM sbx_jobs WHERE id = '$v'")
                        [ "$(json_get error.code <<<"$rec")" = E_RESTARTED ]
                        [[ "$(json_get error.message <<<"$rec")" == *"node node1"*"lease"* ]]
                        interrupted=$((interrupted + 1))
                fi
        done
        [ $((retried + interrupted)) -ge 2 ]
        # the rest ran once and succeeded
        [ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE id IN $(sql_ids "${ids[@]}") AND outcome = 'succeeded'")" -eq $((12 - interrupted)) ]
        # back, node1 gives back what it held and writes nothing for it
        node_start 1
        wait_until 10 grep -q "given back to it" "$SUP_DIR/n1/daemon.log"
        [ "$(records_of "${ids[@]}")" = 12 ]
        run nctl 1 run -- echo node1-back
        [ "$status" -eq 0 ]
        [[ "$output" == *node1-back* ]]
}

@test "a burst through three nodes while one is SIGKILLed and another stopped past its lease: every acknowledged job ends once in the database" {
        local n=${SBX_CLUSTER_JOBS:-120} i ids=() alive=(1 2 3) k=0
        for i in $(seq "$n"); do
                if [ "$i" = $((n / 3)) ]; then
                        node_kill 1
                        alive=(2 3)
                fi
                if [ "$i" = $((n / 2)) ]; then
                        node_signal 2 STOP
                        alive=(3)
                fi
                if [ $((i % 2)) = 0 ]; then
                        ids+=("$(nctl "${alive[$((k % ${#alive[@]}))]}" submit --retries 1 -- sh -c "sleep 0.2; echo $i")")
                else
                        ids+=("$(nctl "${alive[$((k % ${#alive[@]}))]}" submit -- sh -c "sleep 0.2; echo $i")")
                fi
                k=$((k + 1))
        done
        # node2 stays stopped past its lease (3 s), then goes on; node1 comes back
        sleep 4
        node_signal 2 CONT
        node_start 1
        wait_until 120 all_done "$n" "${ids[@]}"
        local set
        set=$(sql_ids "${ids[@]}")
        # every job ended once: succeeded, or interrupted only where it had no
        # retry left (one that had ran again, under attempt 2)
        [ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE id IN $set AND outcome = 'succeeded' AND attempt <= retries + 1")" \
                -eq "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE id IN $set AND outcome = 'succeeded'")" ]
        [ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE id IN $set AND outcome NOT IN ('succeeded', 'error')")" = 0 ]
        # (but for a sandbox that could not be set up: see below)
        local retryable
        retryable=$(pg_sql "SELECT record FROM sbx_jobs WHERE id IN $set AND outcome = 'error' AND attempt <= retries
                AND coalesce(record::json->'error'->>'code', '') NOT IN ('E_SETUP', 'E_SPAWN')")
        [ -z "$retryable" ] || { echo "# ended in error with a retry left: $retryable" >&3; false; }
        # an interrupted job names the node that held it: the killed or the
        # stopped one. (A sandbox that could not be set up on a machine this
        # loaded is the launcher's error, E_SETUP or E_SPAWN, not the
        # cluster's: said, not failed on.)
        local rec bad=0 id code
        for id in $(pg_sql "SELECT id FROM sbx_jobs WHERE id IN $set AND outcome = 'error'"); do
                rec=$(pg_sql "SELECT record FROM sbx_jobs WHERE id = '$id'")
                code=$(json_get error.code <<<"$rec")
                if [ "$code" = E_RESTARTED ]; then
                        [[ "$(json_get error.message <<<"$rec")" == *"node node"[12]","* ]] || { bad=$((bad + 1)); echo "# $rec" >&3; }
                elif [ "$code" = E_SETUP ] || [ "$code" = E_SPAWN ]; then
                        echo "# set-up failure under load, not the cluster's: $rec" >&3
                else
                        bad=$((bad + 1))
                        echo "# $rec" >&3
                fi
        done
        [ "$bad" = 0 ]
        # the database's result is the one of the node that held the job last
        [ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE id IN $set AND record::json->>'job' <> id")" = 0 ]
        # node2's results of jobs taken over meanwhile were refused, each
        # where another node's, of a later attempt, stands
        local fenced job att
        fenced=$(nctl 2 metrics | metric sbx_cluster_fenced_total)
        [ "$fenced" = "$(grep -c "refused by the cluster" "$SUP_DIR/n2/daemon.log" || true)" ]
        while read -r job att; do
                [ "$(pg_sql "SELECT attempt > $att OR node <> 'node2' FROM sbx_jobs WHERE id = '$job'")" = t ]
        done < <(sed -n 's/.*job \(j[0-9a-f]*\) (trace [0-9a-f]*): its result (attempt \([0-9]*\)) is refused.*/\1 \2/p' "$SUP_DIR/n2/daemon.log")
        echo "# $n jobs: $(pg_sql "SELECT outcome, attempt, count(*) FROM sbx_jobs WHERE id IN $set GROUP BY outcome, attempt ORDER BY 1, 2" | tr '\n' ' '); results refused on node2: $fenced" >&3
}

@test "a node stopped past its lease: its job runs again elsewhere, and its late result is refused by the fence" {
        # only node1 claims the job
        run nctl 1 drain node2
        [ "$status" -eq 0 ]
        run nctl 1 drain node3
        [ "$status" -eq 0 ]
        sleep 1.2
        local id
        id=$(nctl 1 submit --retries 1 -- sh -c 'sleep 2; echo slow')
        wait_until 20 eval '[ "$(pg_sql "SELECT node FROM sbx_jobs WHERE id = '"'$id'"'")" = node1 ]'
        node_signal 1 STOP
        run nctl 2 drain --undo node2
        [ "$status" -eq 0 ]
        run nctl 2 drain --undo node3
        [ "$status" -eq 0 ]
        # the lease (3 s) runs out; node2 or node3 runs it again and ends it
        wait_until 40 all_done 1 "$id"
        [ "$(pg_sql "SELECT attempt FROM sbx_jobs WHERE id = '$id'")" = 2 ]
        local winner
        winner=$(pg_sql "SELECT node FROM sbx_jobs WHERE id = '$id'")
        [ "$winner" != node1 ]
        local before
        before=$(pg_sql "SELECT md5(record) FROM sbx_jobs WHERE id = '$id'")
        node_signal 1 CONT
        wait_until 30 eval '[ "$(nctl 1 metrics | metric sbx_cluster_fenced_total)" -ge 1 ]'
        grep -q "$id.*refused by the cluster" "$SUP_DIR/n1/daemon.log"
        # the result that stands is the other node's
        [ "$(pg_sql "SELECT md5(record) || node FROM sbx_jobs WHERE id = '$id'")" = "$before$winner" ]
}

@test "the database restarted mid-burst: submissions meanwhile are refused with E_UNAVAILABLE, nothing acknowledged is lost or run twice" {
        local ids=() i
        for i in $(seq 9); do
                ids+=("$(nctl $((i % 3 + 1)) submit -- sh -c "sleep 1; echo $i")")
        done
        pg_stop
        run nctl 2 submit -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *E_UNAVAILABLE*unreachable* ]]
        # (a job no node holds: the database would have to say)
        run nctl 3 status j0123456789abcdef0123
        [ "$status" -eq 125 ]
        [[ "$output" == *E_UNAVAILABLE* ]]
        [ "$(nctl 2 metrics | metric sbx_cluster_database_up)" = 0 ]
        # down longer than a lease (3 s)
        sleep 4
        pg_start
        wait_until 60 all_done 9 "${ids[@]}"
        [ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE id IN $(sql_ids "${ids[@]}") AND attempt = 1 AND outcome = 'succeeded'")" = 9 ]
        [ "$(records_of "${ids[@]}")" = 9 ]
        wait_until 10 eval '[ "$(nctl 2 metrics | metric sbx_cluster_database_up)" = 1 ]'
        [ "$(nctl 2 metrics | metric sbx_cluster_unavailable_total)" -ge 1 ]
        run nctl 2 run -- echo after
        [ "$status" -eq 0 ]
        [[ "$output" == *after* ]]
}

@test "rows go to the database off the loop: requests pipelined on one connection are answered in order, once each; clients gone before their answer harm nothing" {
        local out ids mark="gone-$$-$RANDOM"
        out=$(/usr/bin/python3 - "$(node_sock 1)" "$mark" <<'PY'
import json, socket, sys
path, mark = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.connect(path)
reqs = "".join(json.dumps({"v": 1, "op": "run", "id": i, "command": ["echo", str(i)]}) + "\n" for i in range(30))
s.sendall(reqs.encode())
f = s.makefile("r")
ids = []
for i in range(30):
    m = json.loads(f.readline())
    assert m.get("ok") is True and m.get("id") == i, ("reply %d out of order or refused: %r" % (i, m))
    ids.append(m["job"])
assert len(set(ids)) == 30, "a job id twice"
# clients that leave before their answer
for i in range(20):
    g = socket.socket(socket.AF_UNIX)
    g.connect(path)
    g.sendall((json.dumps({"v": 1, "op": "run", "command": ["echo", mark]}) + "\n").encode())
    g.close()
print(" ".join(ids))
PY
)
        read -r -a ids <<<"$out"
        [ "${#ids[@]}" -eq 30 ]
        wait_until 60 all_done 30 "${ids[@]}"
        [ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE id IN $(sql_ids "${ids[@]}") AND outcome = 'succeeded'")" = 30 ]
        # each left row of the clients gone is a job that ends, none twice
        wait_until 60 eval '[ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE accept LIKE '"'%$mark%'"' AND state <> '"'done'"'")" = 0 ]'
        [ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE accept LIKE '%$mark%'")" -le 20 ]
        run nctl 1 run -- echo still
        [ "$status" -eq 0 ]
        [[ "$output" == *still* ]]
}

@test "hostile: a row the database refuses fails only its own job, not the others written with it; a result it refuses is kept and written once it takes it" {
        local mark="poison-$$-$RANDOM" out i pids=() ok=0 refused=0
        # slow to refuse: the rows submitted meanwhile share the next batch
        pg_sql "CREATE FUNCTION sbx_test_refuse() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN
                PERFORM pg_sleep(0.4); RAISE EXCEPTION 'refused by the test'; END \$\$"
        local w0 b0
        w0=$(nctl 1 metrics | metric sbx_cluster_writes_total)
        b0=$(nctl 1 metrics | metric sbx_cluster_write_batches_total)
        pg_sql "CREATE TRIGGER sbx_test_refuse BEFORE INSERT ON sbx_jobs FOR EACH ROW
                WHEN (NEW.accept LIKE '%$mark%') EXECUTE FUNCTION sbx_test_refuse()"
        # at once through one node, so that rows share the writer's batches
        for i in $(seq 12); do
                if [ $((i % 3)) = 0 ]; then
                        nctl 1 submit -- echo "$mark" >"$BATS_TEST_TMPDIR/s$i" 2>&1 &
                else
                        nctl 1 submit -- echo "fine $i" >"$BATS_TEST_TMPDIR/s$i" 2>&1 &
                fi
                pids+=($!)
        done
        for i in $(seq 12); do
                if wait "${pids[$((i - 1))]}"; then
                        ok=$((ok + 1))
                        [ $((i % 3)) != 0 ]
                else
                        refused=$((refused + 1))
                        [ $((i % 3)) = 0 ]
                        grep -q E_UNAVAILABLE "$BATS_TEST_TMPDIR/s$i"
                        grep -q "refused by the test" "$BATS_TEST_TMPDIR/s$i"
                fi
        done
        [ "$ok" = 8 ]
        [ "$refused" = 4 ]
        # (some went in one transaction: fewer batches than writes)
        [ $(($(nctl 1 metrics | metric sbx_cluster_writes_total) - w0)) -gt $(($(nctl 1 metrics | metric sbx_cluster_write_batches_total) - b0)) ]
        [ "$(pg_sql "SELECT count(*) FROM sbx_jobs WHERE accept LIKE '%$mark%'")" = 0 ]
        pg_sql "DROP TRIGGER sbx_test_refuse ON sbx_jobs"
        # a result the database refuses: the job's clients hear E_STORAGE,
        # the node keeps it and writes it when the database takes it
        pg_sql "CREATE TRIGGER sbx_test_refuse BEFORE UPDATE ON sbx_jobs FOR EACH ROW
                WHEN (NEW.state = 'done' AND NEW.accept LIKE '%$mark%') EXECUTE FUNCTION sbx_test_refuse()"
        local j n
        j=$(nctl 1 submit -- echo "$mark")
        wait_until 30 eval '[ -n "$(pg_sql "SELECT node FROM sbx_jobs WHERE id = '"'$j'"' AND node IS NOT NULL")" ]'
        n=$(pg_sql "SELECT node FROM sbx_jobs WHERE id = '$j'")
        n=${n#node}
        wait_until 30 grep -q "job $j.*cannot write its result in the cluster's database" "$SUP_DIR/n$n/daemon.log"
        [ "$(pg_sql "SELECT state FROM sbx_jobs WHERE id = '$j'")" = running ]
        run nctl "$n" submit -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *E_STORAGE*"result in the cluster's database"* ]]
        pg_sql "DROP TRIGGER sbx_test_refuse ON sbx_jobs"
        pg_sql "DROP FUNCTION sbx_test_refuse()"
        wait_until 30 eval '[ "$(pg_sql "SELECT outcome FROM sbx_jobs WHERE id = '"'$j'"'")" = succeeded ]'
        run nctl 2 --json result "$j"
        [ "$status" -eq 0 ]
        [[ "$output" == *'"exit_code":0'* ]]
        wait_until 30 nctl 1 submit -- true
}

@test "a node on the database over TCP (libpq tries GSSAPI first: the daemon's own functions must not stand in for Kerberos')" {
        NODE_CONNINFO="postgresql://sbx@127.0.0.1:$PG_PORT/postgres" node_config 4 "role = api"
        node_start 4
        run nctl 4 run -- echo over-tcp
        [ "$status" -eq 0 ]
        [[ "$output" == *over-tcp* ]]
        run nctl 4 nodes
        [ "$status" -eq 0 ]
        [[ "$output" == *node4*api* ]]
        node_stop 4
}

@test "roles: an api node runs nothing, a worker node accepts nothing" {
        node_config 4 "role = api"
        node_start 4
        local id
        id=$(nctl 4 submit -- echo via-api)
        run nctl 4 wait "$id"
        [ "$status" -eq 0 ]
        [ "$(pg_sql "SELECT node FROM sbx_jobs WHERE id = '$id'")" != node4 ]
        run nctl 4 run -- echo followed
        [ "$status" -eq 0 ]
        [[ "$output" == *followed* ]]
        node_stop 4
        node_config 4 "role = worker"
        node_start 4
        run nctl 4 submit -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *E_UNSUPPORTED*"role worker"* ]]
        # a session lives on the node that makes it: neither makes one
        run nctl 4 session create
        [ "$status" -eq 125 ]
        [[ "$output" == *E_UNSUPPORTED*"role worker"* ]]
        node_stop 4
        node_config 4 "role = api"
        node_start 4
        run nctl 4 session create
        [ "$status" -eq 125 ]
        [[ "$output" == *E_UNSUPPORTED*"role api"*"a session lives on the node that makes it"* ]]
        node_stop 4
}

@test "schema: a database whose schema is newer than the node knows is refused at start, by name; an older one is upgraded" {
        [ "$(pg_sql "SELECT version FROM sbx_schema")" = 3 ]
        pg_sql "UPDATE sbx_schema SET version = 99"
        node_config 5
        run "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/n5/sup.conf"
        pg_sql "UPDATE sbx_schema SET version = 3"
        [ "$status" -ne 0 ]
        [[ "$output" == *"schema is version 99, newer than this sbx-supervisord knows (3)"* ]]
        # version 1 (before callbacks and sessions were rows), with its
        # jobs: the next node to start upgrades it in place, a version at
        # a time, and the jobs stay
        jobs=$(pg_sql "SELECT count(*) FROM sbx_jobs")
        pg_sql "DROP TABLE sbx_callbacks; DROP TABLE sbx_sessions; ALTER TABLE sbx_nodes DROP COLUMN api_url; UPDATE sbx_schema SET version = 1"
        node_start 5
        grep -q "upgrading the database's sbx schema from version 1 to 2" "$SUP_DIR/n5/daemon.log"
        grep -q "upgrading the database's sbx schema from version 2 to 3" "$SUP_DIR/n5/daemon.log"
        [ "$(pg_sql "SELECT version FROM sbx_schema")" = 3 ]
        [ "$(pg_sql "SELECT count(*) FROM sbx_callbacks")" = 0 ]
        [ "$(pg_sql "SELECT count(*) FROM sbx_sessions")" = 0 ]
        [ "$(pg_sql "SELECT count(*) FROM sbx_jobs")" = "$jobs" ]
        run -0 nctl 5 run -- echo upgraded
        [ "$output" = upgraded ]
        node_stop 5
        # bad cluster keys are refused naming the line
        printf '[cluster]\nrole = leader\n' >"$SUP_DIR/bad.conf"
        run "$SBX_STAGE/bin/sbx-supervisord" --check-config --config "$SUP_DIR/bad.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"bad.conf:2"*"role: expected 'both', 'api' or 'worker', got 'leader'"* ]]
        printf '[cluster]\nnode = n1\n' >"$SUP_DIR/bad.conf"
        run "$SBX_STAGE/bin/sbx-supervisord" --check-config --config "$SUP_DIR/bad.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"[cluster] has no database"* ]]
        # the connection string from a file: one line, which must be there
        printf '[cluster]\ndatabase_file = %s\n' "$SUP_DIR/db.conninfo" >"$SUP_DIR/bad.conf"
        run "$SBX_STAGE/bin/sbx-supervisord" --check-config --config "$SUP_DIR/bad.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"database_file"*"db.conninfo"* ]]
        printf 'host=/x\nuser=evil\n' >"$SUP_DIR/db.conninfo"
        run "$SBX_STAGE/bin/sbx-supervisord" --check-config --config "$SUP_DIR/bad.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"expected one line"* ]]
        printf '[cluster]\ndatabase = x\nnode = a/b\n' >"$SUP_DIR/bad.conf"
        run "$SBX_STAGE/bin/sbx-supervisord" --check-config --config "$SUP_DIR/bad.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"node: 'a/b'"* ]]
        printf '[cluster]\ndatabase = x\nlease = 2s\nstatement_timeout = 1500ms\n' >"$SUP_DIR/bad.conf"
        run "$SBX_STAGE/bin/sbx-supervisord" --check-config --config "$SUP_DIR/bad.conf"
        [ "$status" -ne 0 ]
        [[ "$output" == *"at most half the lease"* ]]
}
