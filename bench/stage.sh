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
        umount "$stage/work" 2>/dev/null || true
        rm -rf "$stage"
}
