# SPDX-License-Identifier: Apache-2.0
# Shared by every bats file: finds the built binaries, stages what the
# unprivileged tests need in a directory that `nobody` can reach (the
# checkout may sit under a directory it cannot traverse), and runs the
# launcher as an unprivileged user even when the suite runs as root.

: "${SBX_BUILDDIR:?run through make check, or set SBX_BUILDDIR}"
: "${SBX_SRCDIR:=$SBX_BUILDDIR}"

# Called from setup_file: one staging dir per bats file.
sbx_stage() {
        SBX_STAGE=$(mktemp -d /tmp/sbx-test.XXXXXX)
        chmod 0755 "$SBX_STAGE"
        mkdir -p "$SBX_STAGE/bin" "$SBX_STAGE/profiles" "$SBX_STAGE/work"
        cp "$SBX_BUILDDIR/launcher/sbx-launch" "$SBX_STAGE/bin/"
        [ -x "$SBX_BUILDDIR/t/helpers/try-syscall" ] && cp "$SBX_BUILDDIR/t/helpers/try-syscall" "$SBX_STAGE/bin/"
        cp "$SBX_SRCDIR"/profiles/*.ini "$SBX_STAGE/profiles/" 2>/dev/null || true
        chmod -R a+rX "$SBX_STAGE"
        if [ "$(id -u)" = 0 ]; then
                chown nobody:nogroup "$SBX_STAGE/work"
        fi
        export SBX_STAGE
        export SBX_LAUNCH="$SBX_STAGE/bin/sbx-launch"
        export SBX_PROFILE_PATH="$SBX_STAGE/profiles"
}

sbx_unstage() {
        [ -n "${SBX_STAGE:-}" ] && rm -rf "$SBX_STAGE"
}

# Default per-file hooks: stage on the way in, clean up on the way out. A
# bats file that needs more (a daemon, say) defines its own after `load`.
setup_file() {
        sbx_stage
}

teardown_file() {
        sbx_unstage
}

# Run a command as the unprivileged test user (nobody when we are root,
# ourselves otherwise). Environment is passed through explicitly.
as_user() {
        if [ "$(id -u)" = 0 ]; then
                setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
        else
                "$@"
        fi
}

# sbx-launch as the unprivileged user: `sbx [OPTIONS] -- CMD...`
sbx() {
        as_user env SBX_PROFILE_PATH="$SBX_PROFILE_PATH" "$SBX_LAUNCH" "$@"
}

# A fresh directory the unprivileged user owns, under the staging dir.
user_dir() {
        local d
        d=$(mktemp -d "$SBX_STAGE/work/d.XXXXXX")
        chmod 0755 "$d"
        [ "$(id -u)" = 0 ] && chown nobody:nogroup "$d"
        echo "$d"
}

# Skip with a reason unless unprivileged user namespaces work here.
require_userns() {
        as_user unshare --user --map-root-user true 2>/dev/null ||
                skip "unprivileged user namespaces are not available on this machine"
}

# wait_until SECONDS COMMAND...: run COMMAND every 50 ms until it succeeds;
# fail, naming it, if it has not within SECONDS. Tests wait on the event
# they depend on (a file, a log line, a process gone), never for a fixed
# time that a loaded machine overruns.
wait_until() {
        local limit=$1 i
        shift
        for i in $(seq $((limit * 20))); do
                "$@" && return 0
                sleep 0.05
        done
        echo "waited ${limit}s in vain for: $*" >&2
        return 1
}

# pid_gone PID: the process has exited (for wait_until).
pid_gone() {
        ! kill -0 "$1" 2>/dev/null
}

# no_process PATTERN: no process's command line matches (pgrep -f).
no_process() {
        ! pgrep -f "$1" >/dev/null
}

# job_state JOB STATE: a supervisor job is in STATE now (in the files
# that load t/sup-unit/daemon.bash, which gives ctl and json_get).
job_state() {
        [ "$(ctl --json status "$1" | json_get job.state)" = "$2" ]
}

# A test host's link forwards already, as a host's uplink may: a daemon of
# another test file started meanwhile would switch it on and off again under
# the file's own daemon (a switch found on is left alone; see
# t/supervisor-forwarding.bats).
test_link_forwards() {
        sysctl -q -w "net.ipv4.conf.$1.forwarding=1" &&
                { [ ! -e "/proc/sys/net/ipv6/conf/$1/force_forwarding" ] ||
                        sysctl -q -w "net.ipv6.conf.$1.force_forwarding=1"; }
}

# kernel_at_least MAJOR MINOR: the running kernel is that version or later.
kernel_at_least() {
        local v maj min
        v=$(uname -r)
        maj=${v%%.*}
        min=${v#*.}
        min=${min%%[!0-9]*}
        [ "$maj" -gt "$1" ] || { [ "$maj" -eq "$1" ] && [ "$min" -ge "$2" ]; }
}
