# SPDX-License-Identifier: Apache-2.0
# Cluster mode's tests: a PostgreSQL of the test's own (initdb into the
# stage, pg_ctl on a Unix socket: no system service), and sbx-supervisord
# nodes on it, each with its own state directory, socket, job uids and
# cgroup. Uses sup-unit/daemon.bash (sup_init) for the staged binaries.

# Each test of a cluster file: user namespaces and the database, or a skip.
cluster_setup() {
        require_userns
        [ -n "${PG_CONNINFO:-}" ] || skip "no PostgreSQL here"
}

# The PostgreSQL server's programs, or a skip.
pg_find() {
        PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
        [ -n "$PG_BIN" ] && [ -x "$PG_BIN/initdb" ] || skip "no PostgreSQL server here (Debian: apt-get install postgresql-15)"
        command -v psql >/dev/null || skip "no psql here (Debian: apt-get install postgresql-client-15)"
        # the server refuses to run as root: its own user, or nobody
        PG_USER=postgres
        id -u "$PG_USER" >/dev/null 2>&1 || PG_USER=nobody
        export PG_BIN PG_USER
}

pg_as() {
        setpriv --reuid="$PG_USER" --regid="$(id -g "$PG_USER")" --clear-groups -- "$@"
}

pg_start() {
        export PG_DIR="$SBX_STAGE/pg"
        if [ ! -d "$PG_DIR/data" ]; then
                mkdir -p "$PG_DIR/sock"
                chown -R "$PG_USER" "$PG_DIR"
                chmod 0755 "$PG_DIR" "$PG_DIR/sock"
                pg_as "$PG_BIN/initdb" -D "$PG_DIR/data" --auth=trust -U sbx -E UTF8 >"$PG_DIR/initdb.log" 2>&1 || {
                        cat "$PG_DIR/initdb.log" >&2
                        return 1
                }
        fi
        # and on the loopback, for a node that connects over TCP (libpq
        # then tries GSSAPI first)
        [ -n "${PG_PORT:-}" ] || PG_PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        export PG_PORT
        # fsync stays on: the durability the nodes count on is the server's
        pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w -t 60 \
                -o "-k $PG_DIR/sock -c listen_addresses=127.0.0.1 -p $PG_PORT -c max_connections=50" start >/dev/null
        export PG_CONNINFO="host=$PG_DIR/sock port=$PG_PORT dbname=postgres user=sbx"
}

pg_stop() {
        [ -n "${PG_DIR:-}" ] && [ -f "$PG_DIR/data/postmaster.pid" ] || return 0
        pg_as "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
}

pg_sql() {
        psql -XAtq -v ON_ERROR_STOP=1 "$PG_CONNINFO" -c "$1"
}

# node_config N [LINES...]: node N's configuration; LINES go into
# [cluster] (role, lease, ...), NODE_DAEMON_LINES into [daemon],
# NODE_TENANT_LINES into [tenant.admin].
node_config() {
        local n=$1 cg=none
        shift
        local dir="$SUP_DIR/n$n"
        mkdir -p "$dir"
        chmod 0755 "$dir"
        [ "$SUP_CGROUP" = none ] || cg="$SUP_CGROUP-n$n"
        local base=${SUP_JOB_UIDS%-*}
        # a front without privilege makes its socket in a directory of its own
        local sock="$dir/sock"
        [[ "${NODE_DAEMON_LINES:-}" != *"user = "* ]] || sock="$dir/run/sock"
        echo "$sock" >"$dir/sockpath"
        cat >"$dir/sup.conf" <<EOC
[daemon]
socket = $sock
state_dir = $dir/state
launcher = $SBX_STAGE/bin/sbx-launch
init = $SBX_STAGE/bin/sbx-init
profile_path = $SBX_STAGE/profiles
cgroup = $cg
job_uids = $((base + (n - 1) * 256))-$((base + n * 256 - 1))
kill_grace = 1s
max_jobs = ${NODE_MAX_JOBS:-4}
${NODE_DAEMON_LINES:-}

[cluster]
database = ${NODE_CONNINFO:-$PG_CONNINFO}
node = node$n
lease = ${NODE_LEASE:-3s}
statement_timeout = 1s
$(printf '%s\n' "$@")

[tenant.admin]
uids = root
profiles = default shell
max_jobs = ${TENANT_MAX_JOBS:-32}
max_queue = 4096
${NODE_TENANT_LINES:-}

[tenant.other]
uids = nobody
profiles = default shell
max_jobs = 2
EOC
}

node_start() {
        local n=$1 dir="$SUP_DIR/n$1" i
        [ -f "$dir/sup.conf" ] || node_config "$n"
        "$SBX_STAGE/bin/sbx-supervisord" --config "$dir/sup.conf" >>"$dir/daemon.log" 2>&1 3>&- &
        echo $! >"$dir/daemon.pid"
        local sock
        sock=$(cat "$dir/sockpath")
        for i in $(seq 600); do
                [ -S "$sock" ] && "$SBX_STAGE/bin/sbxctl" --socket "$sock" ping >/dev/null 2>&1 && return 0
                kill -0 "$(cat "$dir/daemon.pid")" 2>/dev/null || break
                sleep 0.05
        done
        echo "node $n did not start:" >&2
        cat "$dir/daemon.log" >&2
        return 1
}

node_pid() {
        cat "$SUP_DIR/n$1/daemon.pid" 2>/dev/null
}

# node_signal N SIG: only our node, never a process that reused its pid
node_signal() {
        local pid
        pid=$(node_pid "$1") || return 0
        [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$SUP_DIR/n$1/sup.conf" || return 0
        kill "-$2" "$pid"
}

node_stop() {
        local pid i
        pid=$(node_pid "$1") || return 0
        node_signal "$1" CONT
        node_signal "$1" TERM
        for i in $(seq 200); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.05
        done
        node_signal "$1" KILL
        wait "$pid" 2>/dev/null || true
        rm -f "$SUP_DIR/n$1/daemon.pid"
}

node_kill() {
        local pid
        pid=$(node_pid "$1") || return 0
        node_signal "$1" KILL
        wait "$pid" 2>/dev/null || true
        rm -f "$SUP_DIR/n$1/daemon.pid"
}

nctl() {
        local n=$1
        shift
        ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$SBX_STAGE/bin/sbxctl" --socket "$(node_sock "$n")" "$@"
}

node_sock() {
        cat "$SUP_DIR/n$1/sockpath"
}

# nctl as nobody (tenant other)
nctl_nobody() {
        local n=$1
        shift
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$(node_sock "$n")" "$@"
}

cluster_fini() {
        local n
        for n in 1 2 3 4 5; do
                node_stop "$n"
                if [ "$SUP_CGROUP" != none ] && [ -d "$SUP_CGROUP-n$n" ]; then
                        for d in "$SUP_CGROUP-n$n"/job-*; do
                                [ -d "$d" ] && echo 1 >"$d/cgroup.kill" 2>/dev/null && rmdir "$d" 2>/dev/null
                        done
                        rmdir "$SUP_CGROUP-n$n" 2>/dev/null || true
                fi
        done
        pg_stop
}

# Jobs of the database in a state (queued, running, done).
jobs_in() {
        pg_sql "SELECT count(*) FROM sbx_jobs WHERE state = '$1'"
}
