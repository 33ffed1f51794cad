#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# sbx-supervisord fairness: while one tenant ("attacker", root's jobs) runs
# each of the attacks a hostile review used to freeze the daemon, another
# tenant ("victim", nobody) pings it on a connection of its own, one ping
# every 20 ms, and the ping latencies are reported (p50/p99/max, ms). The
# target is p99 < 50 ms for every attack. The daemon's own CPU time during
# each attack is printed as well (utime+stime from /proc), in all and for
# the event loop's thread alone.
#
# Attacks: 40 concurrent `logs` of a 16 MiB capture; a job ending with
# 100,000 empty files matched as artifacts; a job whose workspace holds
# 300,000 files when it ends; a request uploading 1,024 files on deep
# paths; 8 jobs flooding their output; 4,096 connections held open; 200
# clients each sending half of a 2 MB request line; 5,000 refused requests;
# pipelined logs floods (50 connections x 200 requests, and 1,000 x 20,
# each for up to 1 MiB of a 16 MiB capture), with the daemon's peak RSS
# during each flood.
#
# Callbacks (SBX_FAIR_ONLY=callbacks, a daemon of its own): the victim's
# result deliveries, each from its job's end to its arrival (p50/p99/max,
# ms), with and without 30 jobs of the attacker whose receiver accepts
# and never answers (t/helpers/callback-receiver.py, mode hang).
#
# SBX_FAIR_ONLY="N ..." runs only the attacks of those numbers (1-10) or
# names (callbacks).
# SBX_FAIR_BIN=DIR takes sbx-supervisord, sbx-launch and sbxctl from DIR
# (another build, to compare; sup-client is always this tree's).
#
# Usage: bench/fairness.sh [PINGS]     (run as root, after make and
#                                       make t/sup-unit/sup-client)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
pings=${1:-250}

[ "$(id -u)" = 0 ] || { echo "bench: run as root (jobs get uids of their own)" >&2; exit 77; }
for f in launcher/sbx-launch supervisor/sbx-supervisord supervisor/sbxctl t/sup-unit/sup-client; do
        [ -x "$top/$f" ] || { echo "bench: $top/$f not built (make && make t/sup-unit/sup-client)" >&2; exit 1; }
done
bin=${SBX_FAIR_BIN:-}

stage=$(mktemp -d /tmp/sbx-bench-fair.XXXXXX)
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/profiles"
if [ -n "$bin" ]; then
        cp "$bin/sbx-launch" "$bin/sbx-supervisord" "$bin/sbxctl" "$stage/bin/"
else
        cp "$top/launcher/sbx-launch" "$top/supervisor/sbx-supervisord" "$top/supervisor/sbxctl" "$stage/bin/"
fi
cp "$top/t/sup-unit/sup-client" "$stage/bin/"
cp "$top"/profiles/*.ini "$stage/profiles/"
chmod -R a+rX "$stage"

cg=none
mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
if [ -n "$mnt" ] && [ -w "$mnt/cgroup.procs" ]; then
        cg="$mnt/sbx-bench-fair-$$"
fi

cat > "$stage/sup.conf" <<EOC
[daemon]
socket = $stage/sock
socket_mode = 0666
state_dir = $stage/state
launcher = $stage/bin/sbx-launch
profile_path = $stage/profiles
cgroup = $cg
max_jobs = 16
max_connections = 8192
audit_log = $stage/audit.log

[tenant.attacker]
uids = root
max_jobs = 12
max_queue = 1024
max_disk = 2G

[tenant.victim]
uids = $(id -u nobody)
EOC

"$stage/bin/sbx-supervisord" --config "$stage/sup.conf" 2>"$stage/daemon.log" &
daemon=$!
cleanup() {
        kill "$daemon" 2>/dev/null || true
        wait "$daemon" 2>/dev/null || true
        [ "$cg" = none ] || rmdir "$cg" 2>/dev/null || true
        rm -rf "$stage"
}
trap cleanup EXIT INT TERM
for i in $(seq 100); do
        [ -S "$stage/sock" ] && "$stage/bin/sbxctl" --socket "$stage/sock" ping >/dev/null 2>&1 && break
        sleep 0.05
done
ulimit -n 16384

ctl() {
        "$stage/bin/sbxctl" --socket "$stage/sock" "$@"
}
client() {
        "$stage/bin/sup-client" "$stage/sock" "$@"
}
cpu_ticks() {
        awk '{ print $14 + $15 }' "/proc/$daemon/stat"
}
# the event loop's thread alone (the main thread)
loop_ticks() {
        awk '{ print $14 + $15 }' "/proc/$daemon/task/$daemon/stat"
}
hz=$(getconf CLK_TCK)

# measure NAME: the victim's pings while the attack started just before runs.
measure() {
        t0=$(cpu_ticks)
        l0=$(loop_ticks)
        out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$stage/bin/sup-client" "$stage/sock" \
                --pings "$pings" 20)
        t1=$(cpu_ticks)
        l1=$(loop_ticks)
        printf '%-46s %s  daemon CPU %.2f s (event loop %.2f s)\n' "$1" "$out" "$(echo "($t1 - $t0) / $hz" | bc -l)" \
                "$(echo "($l1 - $l0) / $hz" | bc -l)"
}

attack() {
        [ -z "${SBX_FAIR_ONLY:-}" ] && return 0
        case " $SBX_FAIR_ONLY " in *" $1 "*) return 0 ;; esac
        return 1
}

echo "fairness: $(nproc) CPUs, kernel $(uname -r), cgroup $cg, $pings pings every 20 ms per attack"
measure "no attack"

# 1. 40 logs requests at once, over and over, on a 16 MiB capture
if attack 1; then
        big=$(ctl submit --output 16M -- sh -c 'yes sbx-fairness | head -c 16777216')
        ctl wait "$big" >/dev/null || true
        (
                end=$(($(date +%s) + 8))
                while [ "$(date +%s)" -lt "$end" ]; do
                        for i in $(seq 40); do ctl logs "$big" >/dev/null & done
                        wait
                done
        ) &
        att=$!
        sleep 0.5
        measure "40 x logs of a 16 MiB capture"
        wait "$att" || true
fi

# 2. a job ending with 100,000 empty artifact matches
if attack 2; then
        ctl submit --disk 1G --timeout 2m --artifact 'd/*' -- \
                sh -c 'mkdir d && cd d && seq 100000 | xargs touch && sleep 1' >/dev/null
        sleep 1
        measure "100,000 empty artifact matches at a job's end"
fi

# 3. a workspace of 300,000 files deleted at the job's end
if attack 3; then
        ctl submit --disk 2G --timeout 2m -- \
                sh -c 'mkdir d && cd d && seq 300000 | xargs touch && sleep 1' >/dev/null
        sleep 2
        measure "300,000-file workspace deleted at the end"
fi

# 4. 1,024 uploads on deep paths, in a loop
if attack 4; then
        echo x > "$stage/up"
        deep=$(seq 64 | sed 's/.*/d/' | tr '\n' '/')
        args=$(seq 1024 | while read -r n; do printf ' --upload %s:%sf%s' "$stage/up" "$deep" "$n"; done)
        (
                end=$(($(date +%s) + 8))
                while [ "$(date +%s)" -lt "$end" ]; do
                        # shellcheck disable=SC2086
                        ctl submit $args -- true >/dev/null || true
                done
        ) &
        att=$!
        sleep 0.5
        measure "1,024 uploads on deep paths per request"
        wait "$att" || true
fi

# 5. 8 jobs flooding their output
if attack 5; then
        for i in $(seq 8); do ctl submit --timeout 8s -- yes sbx-fairness-flood >/dev/null; done
        sleep 0.5
        measure "8 jobs flooding their output"
        sleep 3
fi

# 6. 4,096 connections held open by the attacker
if attack 6; then
        client --hold 4096 10 >/dev/null &
        att=$!
        sleep 1
        measure "4,096 connections held open"
        wait "$att" || true
fi

# 7. 200 clients each sending half of a 2 MB line
if attack 7; then
        client --halfline 200 2000000 >/dev/null &
        att=$!
        sleep 0.3
        measure "200 half lines of 2 MB"
        wait "$att" || true
fi

# 8. 5,000 refused requests
if attack 8; then
        (yes '{"v":1,"op":"run","command":["true"],"profile":"nope"}' | head -n 5000 | client >/dev/null) &
        att=$!
        measure "5,000 refused requests"
        wait "$att" || true
fi

# 9 and 10. pipelined logs floods: every connection sends all its
# requests at once and reads the replies as fast as they come; the flood is
# stopped once the pings are done. The peak RSS is the daemon's during the
# flood (reset before it, through clear_refs).
peak_rss() {
        awk '/^VmHWM:/ { print $2 " kB" }' "/proc/$daemon/status"
}
flood() {
        [ -n "${flood_job:-}" ] || {
                flood_job=$(ctl submit --output 16M -- sh -c 'yes sbx-fairness | head -c 16777216')
                ctl wait "$flood_job" >/dev/null || true
        }
        echo 5 > "/proc/$daemon/clear_refs"
        client --logs-flood "$1" "$2" "$flood_job" 1048576 seq >"$stage/flood.out" &
        att=$!
        sleep 0.5
        measure "$1 conns x $2 pipelined logs of 1 MiB"
        kill "$att" 2>/dev/null || true
        wait "$att" 2>/dev/null || true
        echo "  daemon peak RSS during the flood: $(peak_rss)"
}
if attack 9; then
        flood 50 200
fi
if attack 10; then
        flood 1000 20
fi

echo "daemon peak RSS: $(awk '/^VmHWM:/ { print $2 " kB" }' "/proc/$daemon/status")"

# ---- callbacks: a receiver that never answers ----
# cb_receiver DIR MODE: a receiver on a free port, its port in DIR/port.
cb_receiver() {
        mkdir -p "$1"
        echo "$2" > "$1/mode"
        /usr/bin/python3 "$top/t/helpers/callback-receiver.py" "$1" "$stage/cb-secret" &
        echo $! > "$1/pid"
        for i in $(seq 200); do
                [ -s "$1/port" ] && return 0
                sleep 0.05
        done
        echo "bench: the callback receiver did not start" >&2
        return 1
}

# cb_delays N: the victim's N jobs one after the other; then, once each is
# delivered, the milliseconds from each job's end to its arrival.
cb_delays() {
        : > "$stage/cb-v/log"
        for i in $(seq "$1"); do
                j=$(setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$stage/bin/sbxctl" --socket "$stage/cb.sock" \
                        submit -- true)
                setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$stage/bin/sbxctl" --socket "$stage/cb.sock" \
                        wait "$j" >/dev/null || true
        done
        for i in $(seq 1200); do
                [ "$(grep -c '"status": 200' "$stage/cb-v/log")" -ge "$1" ] && break
                sleep 0.1
        done
        /usr/bin/python3 - "$stage/cb-v/log" <<'EOP'
import datetime, json, sys
d = []
for line in open(sys.argv[1]):
    l = json.loads(line)
    if l["status"] == 200 and l["event"] == "result":
        ended = datetime.datetime.fromisoformat(l["ended"].replace("Z", "+00:00")).timestamp()
        d.append((l["t"] - ended) * 1000)
d.sort()
pct = lambda p: d[min(len(d) - 1, int(p * len(d)))]
print("%d delivered: p50 %.1f ms, p99 %.1f ms, max %.1f ms" % (len(d), pct(0.5), pct(0.99), d[-1]))
EOP
}

callbacks_bench() {
        head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$stage/cb-secret"
        chmod 0600 "$stage/cb-secret"
        cb_receiver "$stage/cb-v" ok
        cb_receiver "$stage/cb-a" hang
        sed -e "s|^socket = .*|socket = $stage/cb.sock|" -e "s|^state_dir = .*|state_dir = $stage/cb-state|" \
                -e "s|^audit_log = .*|audit_log = $stage/cb-audit.log|" "$stage/sup.conf" > "$stage/cb.conf"
        sed -i -e "/^\[tenant.attacker\]/a callback_url = http://127.0.0.1:$(cat "$stage/cb-a/port")/hook\ncallback_secret_file = $stage/cb-secret" \
                -e "/^\[tenant.victim\]/a callback_url = http://127.0.0.1:$(cat "$stage/cb-v/port")/hook\ncallback_secret_file = $stage/cb-secret" \
                "$stage/cb.conf"
        "$stage/bin/sbx-supervisord" --config "$stage/cb.conf" 2>"$stage/cb-daemon.log" &
        cbd=$!
        for i in $(seq 100); do
                [ -S "$stage/cb.sock" ] && "$stage/bin/sbxctl" --socket "$stage/cb.sock" ping >/dev/null 2>&1 && break
                sleep 0.05
        done
        printf '%-46s %s\n' "callbacks, no attack" "$(cb_delays 40)"
        for i in $(seq 30); do "$stage/bin/sbxctl" --socket "$stage/cb.sock" submit -- true; done > "$stage/cb-a/jobs"
        while read -r j; do "$stage/bin/sbxctl" --socket "$stage/cb.sock" wait "$j" >/dev/null || true; done < "$stage/cb-a/jobs"
        # every slot held by the attacker's posts
        for i in $(seq 600); do
                [ "$(grep -c . "$stage/cb-a/log" 2>/dev/null || echo 0)" -ge 8 ] && break
                sleep 0.05
        done
        printf '%-46s %s\n' "callbacks, 30 jobs to a receiver that hangs" "$(cb_delays 40)"
        kill "$cbd" "$(cat "$stage/cb-v/pid")" "$(cat "$stage/cb-a/pid")" 2>/dev/null || true
        wait "$cbd" 2>/dev/null || true
}

if attack callbacks; then
        callbacks_bench
fi
