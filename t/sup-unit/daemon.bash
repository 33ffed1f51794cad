# SPDX-License-Identifier: Apache-2.0
# Shared by the supervisor bats files: a real sbx-supervisord on a real
# socket in a temporary directory, with a configuration each file writes,
# running real jobs through the real sbx-launch as nobody.

load helpers/common

# sup_init: stage binaries (once per file, from setup_file).
sup_init() {
        sbx_stage
        cp "$SBX_BUILDDIR/supervisor/sbx-supervisord" "$SBX_BUILDDIR/supervisor/sbx-unpack" "$SBX_BUILDDIR/supervisor/sbxctl" \
                "$SBX_BUILDDIR/init/sbx-init" \
                "$SBX_BUILDDIR/t/sup-unit/sup-client" "$SBX_STAGE/bin/"
        chmod -R a+rX "$SBX_STAGE/bin"
        export SUP_DIR="$SBX_STAGE/sup"
        mkdir -p "$SUP_DIR"
        chmod 0755 "$SUP_DIR"
        export SUP_SOCK="$SUP_DIR/sock"
        export SBX_SOCKET="$SUP_SOCK"
        # A cgroup of our own per test file, so that parallel files never
        # reap each other's jobs; none when cgroup2 is not writable here.
        SUP_CGROUP=none
        local mnt
        mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
        if [ -n "$mnt" ] && [ "$(id -u)" = 0 ] && [ -w "$mnt/cgroup.procs" ]; then
                SUP_CGROUP="$mnt/sbx-test-$$-$RANDOM"
        fi
        export SUP_CGROUP
        # A uid range of its own per test file: daemons of files run in
        # parallel must never hand out the same uid (a daemon kills every
        # process of a job's uid before it reuses it). 1024 slots of 1024
        # uids above the default range.
        local slot=$(( ($$ + RANDOM) % 1024 ))
        export SUP_JOB_UIDS="$((1879113728 + slot * 1024))-$((1879113728 + slot * 1024 + 1023))"
}

sup_fini() {
        sup_stop
        if [ "$SUP_CGROUP" != none ] && [ -d "$SUP_CGROUP" ]; then
                for d in "$SUP_CGROUP"/job-*; do
                        [ -d "$d" ] && echo 1 > "$d/cgroup.kill" 2>/dev/null && rmdir "$d" 2>/dev/null
                done
                rmdir "$SUP_CGROUP" 2>/dev/null || true
        fi
        sbx_unstage
}

# sup_config [EXTRA DAEMON LINES] — writes the config with one tenant for
# root (the tests' own uid); append more sections to $SUP_DIR/sup.conf after.
sup_config() {
        cat > "$SUP_DIR/sup.conf" <<EOC
[daemon]
socket = $SUP_SOCK
state_dir = $SUP_DIR/state
launcher = $SBX_STAGE/bin/sbx-launch
init = $SBX_STAGE/bin/sbx-init
profile_path = $SBX_STAGE/profiles
cgroup = $SUP_CGROUP
job_uids = $SUP_JOB_UIDS
audit_log = $SUP_DIR/audit.log
kill_grace = 1s
$*

[tenant.admin]
uids = root
profiles = default shell
max_jobs = 32
max_queue = 1024
EOC
}

# A daemon a test SIGKILLed may still be exiting when the next one starts:
# its threads share its descriptors, so the state lock is held until the
# last of them is gone, even while its leader is already a zombie.
sup_wait_gone() {
        local pid=$1 i st cmd
        for i in $(seq 600); do
                st=$(awk '/^State:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
                [ -z "$st" ] && return 0
                if [ "$st" = Z ]; then
                        [ "$(ls "/proc/$pid/task" 2>/dev/null | wc -l)" -le 1 ] && return 0
                else
                        # An exiting process has no command line any more
                        # (its memory goes before its descriptors): only a
                        # command line of another is another process.
                        cmd=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null || true)
                        [ -n "$cmd" ] && [[ "$cmd" != *"$SUP_DIR/sup.conf"* ]] && return 0
                fi
                sleep 0.05
        done
}

sup_start() {
        [ -f "$SUP_DIR/sup.conf" ] || sup_config
        [ ! -f "$SUP_DIR/daemon.pid" ] || sup_wait_gone "$(cat "$SUP_DIR/daemon.pid")"
        # SUP_NETNS: in that network namespace (/run/netns/NAME), as if it
        # were the host's (nsenter execs the daemon: $! is its pid)
        ${SUP_NETNS:+nsenter --net=/run/netns/$SUP_NETNS --} \
                "$SBX_STAGE/bin/sbx-supervisord" --config "$SUP_DIR/sup.conf" >>"$SUP_DIR/daemon.log" 2>&1 3>&- &
        SUP_PID=$!
        export SUP_PID
        # Tests run in subshells: the pid file lets teardown_file stop a
        # daemon that a test restarted.
        echo "$SUP_PID" > "$SUP_DIR/daemon.pid"
        # up to 30 s: recovery under a sanitizer on a loaded machine is slow
        local i
        for i in $(seq 600); do
                [ -S "$SUP_SOCK" ] && "$SBX_STAGE/bin/sbxctl" ping >/dev/null 2>&1 && return 0
                kill -0 "$SUP_PID" 2>/dev/null || break
                sleep 0.05
        done
        echo "daemon did not start:" >&2
        cat "$SUP_DIR/daemon.log" >&2
        return 1
}

sup_stop() {
        [ -f "$SUP_DIR/daemon.pid" ] && SUP_PID=$(cat "$SUP_DIR/daemon.pid")
        # only our daemon, never a process that reused its pid
        if [ -n "${SUP_PID:-}" ] && tr '\0' ' ' < "/proc/$SUP_PID/cmdline" 2>/dev/null | grep -qF "$SUP_DIR/sup.conf"; then
                kill -TERM "$SUP_PID"
                local i
                for i in $(seq 200); do
                        kill -0 "$SUP_PID" 2>/dev/null || break
                        sleep 0.05
                done
                kill -KILL "$SUP_PID" 2>/dev/null || true
                wait "$SUP_PID" 2>/dev/null || true
        fi
        rm -f "$SUP_DIR/daemon.pid"
        SUP_PID=
}

# A file that runs the client hundreds of times (the stress tests) sets
# SUP_CTL_LEAK_CHECK=0: in a sanitizer build each client's exit then skips
# LeakSanitizer's scan (about 0.1 s a process here), which checks nothing
# new after the first few hundred runs of the same paths. The daemon and
# the launchers it starts keep it, and every other file checks the client.
ctl() {
        if [ "${SUP_CTL_LEAK_CHECK:-1}" = 0 ]; then
                ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" "$@"
        else
                "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" "$@"
        fi
}

# Raw protocol: each argument is one request line; prints every reply.
raw() {
        printf '%s\n' "$@" | "$SBX_STAGE/bin/sup-client" "$SUP_SOCK"
}

# ctl as nobody (not in any tenant unless a test adds it).
ctl_nobody() {
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" "$@"
}

# jq-free field access: json_get FIELD <<< JSON (top level or a.b path)
json_get() {
        "$SBX_STAGE/bin/sup-client" --get "$1"
}

# metric 'NAME{LABELS}' <<< EXPOSITION: the series' value (0 if absent).
metric() {
        awk -v m="$1" '$1 == m { v = $2 } END { print v == "" ? 0 : v }'
}

# net_metrics_check BEFORE AFTER [DNS] < RECORDS: the network counters grew
# by what the jobs' records say (t/helpers/net-metrics-check.py).
net_metrics_check() {
        python3 "$SBX_SRCDIR/t/helpers/net-metrics-check.py" "$@"
}

# sup_user_mode: the daemon lines for a front without privilege ("user =
# sbx", sbx-privd staged as its helper), skipping where that cannot run;
# the socket moves into a directory made for the user (the stage is
# root's). Sets SUP_USER_LINES for sup_config, and SUP_SOCK (call it first).
sup_user_mode() {
        [ "$(id -u)" = 0 ] || skip "sbx-privd must be started as root"
        [ "$SUP_CGROUP" != none ] || skip "no writable cgroup2 here, which sbx-privd makes job cgroups in"
        # The user the packages make (contrib/systemd/sbx.sysusers).
        # Made as they make it where systemd is, else with useradd.
        if ! id -u sbx >/dev/null 2>&1; then
                if command -v systemd-sysusers >/dev/null; then
                        systemd-sysusers "$SBX_SRCDIR/contrib/systemd/sbx.sysusers"
                else
                        getent group sbx >/dev/null || groupadd --system sbx
                        useradd --system -g sbx -d /var/lib/sbx -s /usr/sbin/nologin -c "sbx-supervisord front" sbx
                fi
        fi
        [ -x "$SBX_STAGE/bin/sbx-privd" ] || cp "$SBX_BUILDDIR/supervisor/privd/sbx-privd" "$SBX_STAGE/bin/"
        SUP_SOCK="$SUP_DIR/run/sock"
        SBX_SOCKET=$SUP_SOCK
        SUP_USER_LINES="user = sbx
helper = $SBX_STAGE/bin/sbx-privd"
}

# session_setup: what a test of sessions needs (a daemon as root).
session_setup() {
        require_userns
        [ "$(id -u)" = 0 ] || skip "the daemon must run as root to give sessions uids and workspaces of their own"
}

# session_wait_port SESSION PORT: until something accepts on PORT of the
# session's loopback (tried from inside for up to 10 s).
session_wait_port() {
        ctl session exec "$1" -- python3 -c "
import socket, time
for i in range(200):
    try:
        socket.create_connection(('127.0.0.1', $2)).close()
        break
    except OSError:
        time.sleep(0.05)
"
}

# sessions_close_all: close every live session of tenant admin, and wait
# until they have ended (a test's sessions end with it).
sessions_close_all() {
        local s
        for s in $(ctl --json session list | jq -r '.sessions[].session'); do
                ctl session close "$s" >/dev/null 2>&1 || true
        done
        wait_until 20 sh -c "[ -z \"\$('$SBX_STAGE/bin/sbxctl' --socket '$SUP_SOCK' --json session list | jq -r '.sessions[]')\" ]"
}

# A job's workspace is a tmpfs, mounted noswap on Linux 6.4 and later, as
# the job sees it in its mountinfo and as its record says.
workspace_is_noswap_tmpfs() {
        run -0 ctl --json run -- sh -c 'grep " /workspace " /proc/self/mountinfo'
        job=$(json_get job <<<"${lines[0]}")
        local seen=$output
        run -0 ctl --json result "$job"
        [ "$(json_get result.workspace.storage <<<"$output")" = tmpfs ]
        if kernel_at_least 6 4; then
                [[ "$seen" == *" - tmpfs "*noswap* ]]
                [ "$(json_get result.workspace.noswap <<<"$output")" = true ]
        else
                [ "$(json_get result.workspace.noswap <<<"$output")" = false ]
        fi
}
