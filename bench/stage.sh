# SPDX-License-Identifier: Apache-2.0
# Sourced by the benchmarks that run a daemon with sessions (session.sh,
# warm.sh): $top is the build tree.
#   stage_daemon: a staging directory in $stage with the launcher, daemon,
#     agent and bench/clock-first, the profiles and a "clock" profile that
#     binds clock-first at /clock-first, and a tmpfs for workspaces;
#   start_daemon: the daemon on $stage/sup.conf (written by the caller)
#     in $pid, stopped and the staging removed at exit, its socket ready.

stage_daemon() {
        [ "$(id -u)" = 0 ] || { echo "bench: run as root (jobs run as uids of their own)" >&2; exit 77; }
        for f in launcher/sbx-launch supervisor/sbx-supervisord init/sbx-init bench/clock-first; do
                [ -x "$top/$f" ] || { echo "bench: $top/$f not built (run make)" >&2; exit 1; }
        done
        stage=$(mktemp -d /tmp/sbx-bench.XXXXXX)
        chmod 0755 "$stage"
        mkdir -p "$stage/bin" "$stage/profiles" "$stage/work"
        cp "$top/launcher/sbx-launch" "$top/supervisor/sbx-supervisord" "$top/init/sbx-init" "$top/bench/clock-first" "$stage/bin/"
        cp "$top"/profiles/*.ini "$stage/profiles/"
        { cat "$top/profiles/default.ini"; printf '[fs]\nro-bind = %s /clock-first\n' "$stage/bin/clock-first"; } >"$stage/profiles/clock.ini"
        chmod -R a+rX "$stage"
        mount -t tmpfs -o size=512m,mode=0711 sbx-bench-work "$stage/work"
}

# stage_postgres: a PostgreSQL of its own in $stage/pg (fsync and
# synchronous_commit on, as shipped), on a Unix socket; its libpq
# connection string in $pg_conninfo; stopped by stop_daemon.
stage_postgres() {
        pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
        [ -x "$pg_bin/initdb" ] || { echo "bench: no PostgreSQL server (apt-get install postgresql-15)" >&2; exit 77; }
        mkdir -p "$stage/pg/sock"
        chown -R postgres "$stage/pg"
        setpriv --reuid=postgres --regid="$(id -g postgres)" --clear-groups -- "$pg_bin/initdb" -D "$stage/pg/data" \
                --auth=trust -U sbx -E UTF8 >/dev/null
        setpriv --reuid=postgres --regid="$(id -g postgres)" --clear-groups -- "$pg_bin/pg_ctl" -D "$stage/pg/data" \
                -l "$stage/pg/log" -w -o "-k $stage/pg/sock -c listen_addresses=''" start >/dev/null
        pg_conninfo="host=$stage/pg/sock dbname=postgres user=sbx"
}

start_daemon() {
        "$stage/bin/sbx-supervisord" --config "$stage/sup.conf" 2>"$stage/daemon.log" &
        pid=$!
        trap stop_daemon EXIT INT TERM
        for i in $(seq 200); do [ -S "$stage/sock" ] && break; sleep 0.05; done
        [ -S "$stage/sock" ] || { cat "$stage/daemon.log" >&2; exit 1; }
}

stop_daemon() {
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        if [ -n "${pg_bin:-}" ] && [ -f "$stage/pg/data/postmaster.pid" ]; then
                setpriv --reuid=postgres --regid="$(id -g postgres)" --clear-groups -- "$pg_bin/pg_ctl" -D "$stage/pg/data" \
                        -m fast -w stop >/dev/null 2>&1 || true
        fi
        umount "$stage/work" 2>/dev/null || true
        rm -rf "$stage"
}
