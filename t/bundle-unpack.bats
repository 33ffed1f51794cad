#!/usr/bin/env bats
# Bundle archives are unpacked by a sandboxed child, sbx-unpack
# (sbx-supervisord(8), THE UNPACKING CHILD): its own user, mount, pid and
# network namespaces, the staging tree as its whole root, no capability,
# no_new_privs, a seccomp filter, rlimits; killed at
# bundle_extract_timeout. What a libarchive bug could do from inside it is
# tried for real by t/helpers/unpack-escape, which runs the daemon's own
# start-up and confinement code.

load sup-unit/bundle
bats_require_minimum_version 1.5.0

setup_file() {
        bundle_init
        # made once: a GiB of zeros takes a while to compress
        python3 "$SBX_SRCDIR/t/helpers/hostile-archive.py" bomb "$SUP_DIR/bomb.tar.gz.saved"
}

teardown_file() {
        bundle_fini
}

setup() {
        require_userns
        bundle_reset
        reg_serve
        rm -f /tmp/sbx-unpack-escaped
}

teardown() {
        sup_stop
        reg_stop
        rm -f /tmp/sbx-unpack-escaped
        rm -rf "$SUP_DIR/staging"
}

# start TIMEOUT: a daemon whose bounds the 1 GB bomb stays under, so that
# only bundle_extract_timeout (or the test) stops its child.
start() {
        BUNDLE_DAEMON="bundle_max_unpacked = 2G
bundle_extract_timeout = $1" BUNDLE_REGISTRY="index_ttl = 0" bundle_config
        sup_start
}

submit_bomb() {
        cp "$SUP_DIR/bomb.tar.gz.saved" "$SUP_DIR/bomb.tgz"
        publish_raw evil 1.0.0 "$SUP_DIR/bomb.tgz" 1
        ctl submit --bundle "evil@sha256:$(sha256sum "$SUP_DIR/bomb.tgz" | cut -d' ' -f1)"
}

daemon() {
        "$SBX_STAGE/bin/sbx-supervisord" "$@"
}

unpack_child() {
        pgrep -P "$SUP_PID" -x sbx-unpack
}

# escape ATTEMPT: run the attempt inside a confined child; its outcome line.
escape() {
        mkdir -p "$SUP_DIR/staging"
        "$SBX_BUILDDIR/t/helpers/unpack-escape" "$SUP_DIR/staging" "$1"
}

@test "the daemon's unpacking child: no_new_privs, seccomp, no capability, namespaces of its own, the tree as its root" {
        start 60s
        job=$(submit_bomb)
        wait_until 30 unpack_child
        pid=$(unpack_child)
        # looked at once confined: the filter is its last step
        wait_until 10 grep -Eq '^Seccomp:[[:space:]]+2$' "/proc/$pid/status"
        kill -STOP "$pid"
        cat "/proc/$pid/status" >&2
        grep -Eq '^NoNewPrivs:[[:space:]]+1$' "/proc/$pid/status"
        grep -Eq '^Seccomp:[[:space:]]+2$' "/proc/$pid/status"
        grep -Eq '^CapEff:[[:space:]]+0000000000000000$' "/proc/$pid/status"
        grep -Eq '^CapPrm:[[:space:]]+0000000000000000$' "/proc/$pid/status"
        grep -Eq '^CapBnd:[[:space:]]+0000000000000000$' "/proc/$pid/status"
        for ns in user mnt pid net ipc uts; do
                [ "$(readlink "/proc/$pid/ns/$ns")" != "$(readlink "/proc/$SUP_PID/ns/$ns")" ]
        done
        # its root is the staging tree: the bundle's files, nothing of the host
        [ -f "/proc/$pid/root/manifest.ini" ]
        [ ! -e "/proc/$pid/root/etc" ]
        [ ! -e "/proc/$pid/root/proc/self" ]
        kill -KILL "$pid"
        rec=$(job_record "$job")
        echo "$rec" >&2
        [ "$(json_get result.error.code <<<"$rec")" = E_BUNDLE_INVALID ]
        [[ "$(json_get result.error.message <<<"$rec")" == *"the sandboxed child was killed by SIGKILL"* ]]
        [ -z "$(ls -A "$SUP_DIR/state/cache")" ]
}

@test "a child that overruns bundle_extract_timeout is killed mid-way: a clean refusal, no staging left, the daemon goes on" {
        start 100ms
        job=$(submit_bomb)
        rec=$(job_record "$job")
        echo "$rec" >&2
        [ "$(json_get result.state <<<"$rec")" = error ]
        [ "$(json_get result.error.code <<<"$rec")" = E_BUNDLE_INVALID ]
        [[ "$(json_get result.error.message <<<"$rec")" == *"unpacking took longer than bundle_extract_timeout (100 ms)"* ]]
        [ -z "$(ls -A "$SUP_DIR/state/cache")" ]
        run unpack_child
        [ "$status" -ne 0 ]
        # the daemon is still there (a good bundle is not tried: 100 ms is
        # too short for a sanitizer build's child to start)
        run ctl ping
        [ "$status" -eq 0 ]
}

@test "bundle_extract_timeout: below 10ms or not a duration is refused naming the key" {
        BUNDLE_DAEMON="bundle_extract_timeout = 5ms" bundle_config
        run daemon --config "$SUP_DIR/sup.conf" --check-config
        [ "$status" -ne 0 ]
        [[ "$output" == *"bundle_extract_timeout"*"expected a duration from 10 to 86400000 ms"* ]]
        BUNDLE_DAEMON="bundle_extract_timeout = soon" bundle_config
        run daemon --config "$SUP_DIR/sup.conf" --check-config
        [ "$status" -ne 0 ]
        [[ "$output" == *"bundle_extract_timeout"* ]]
}

@test "inside the child, the host's files cannot be read or written, by path, by '..' or through /proc" {
        run escape read-host
        [ "$status" -eq 0 ]
        [ "$output" = "read-host: blocked: open /etc/passwd: No such file or directory" ]
        run escape write-host
        [ "$status" -eq 0 ]
        [ "$output" = "write-host: blocked: create /tmp/sbx-unpack-escaped: No such file or directory" ]
        run escape dotdot
        [ "$status" -eq 0 ]
        [ "$output" = "dotdot: blocked: create ../../../../../../tmp/sbx-unpack-escaped beneath the tree: No such file or directory" ]
        run escape proc
        [ "$status" -eq 0 ]
        [ "$output" = "proc: blocked: open /proc/1/root/etc/passwd: No such file or directory" ]
        run escape archive-dir
        [ "$status" -eq 0 ]
        [ "$output" = "archive-dir: blocked: open .. of the archive's descriptor: Not a directory" ]
        [ ! -e /tmp/sbx-unpack-escaped ]
        [ -z "$(ls -A "$SUP_DIR/staging")" ]
}

@test "inside the child, setuid files, chmod, sockets, mounts, signals, exec and fork are refused or kill it" {
        run escape setuid
        [ "$status" -eq 0 ]
        [ "$output" = "setuid: unpacking: the sandboxed child was killed by SIGSYS (a system call its filter forbids)" ]
        for a in chmod socket mount kill exec fork; do
                run escape "$a"
                [ "$status" -eq 0 ]
                [ "$output" = "$a: unpacking: the sandboxed child was killed by SIGSYS (a system call its filter forbids)" ]
        done
        [ -z "$(ls -A "$SUP_DIR/staging")" ]
}

@test "the confined child's own view: no_new_privs, seccomp, no capability, its own namespaces" {
        run escape status
        [ "$status" -eq 0 ]
        echo "$output" >&2
        [[ "$output" == *"NoNewPrivs:"$'\t'"1"* ]]
        [[ "$output" == *"Seccomp:"$'\t'"2"* ]]
        [[ "$output" == *"CapEff:"$'\t'"0000000000000000"* ]]
        [[ "$output" == *"CapBnd:"$'\t'"0000000000000000"* ]]
        for ns in user mnt pid net ipc uts; do
                [[ "$output" == *"ns $ns: own"* ]]
        done
        [[ "$output" == *"status: blocked: status"* ]]
}

@test "the confinement holds for a daemon that is not root, too" {
        cp "$SBX_BUILDDIR/t/helpers/unpack-escape" "$SBX_STAGE/bin/"
        mkdir -p "$SUP_DIR/staging"
        chown nobody "$SUP_DIR/staging"
        run as_user "$SBX_STAGE/bin/unpack-escape" "$SUP_DIR/staging" status
        [ "$status" -eq 0 ]
        echo "$output" >&2
        [[ "$output" == *"NoNewPrivs:"$'\t'"1"* ]]
        [[ "$output" == *"Seccomp:"$'\t'"2"* ]]
        [[ "$output" == *"CapEff:"$'\t'"0000000000000000"* ]]
        [[ "$output" == *"ns user: own"* ]]
        run as_user "$SBX_STAGE/bin/unpack-escape" "$SUP_DIR/staging" write-host
        [ "$status" -eq 0 ]
        [ "$output" = "write-host: blocked: create /tmp/sbx-unpack-escaped: No such file or directory" ]
        run as_user "$SBX_STAGE/bin/unpack-escape" "$SUP_DIR/staging" kill
        [ "$status" -eq 0 ]
        [ "$output" = "kill: unpacking: the sandboxed child was killed by SIGSYS (a system call its filter forbids)" ]
}

@test "a child taken over that plants a link out or more bytes than the bound, and says all is well, is refused by the daemon's own walk" {
        mkdir -p "$SUP_DIR/staging"
        run "$SBX_BUILDDIR/t/helpers/unpack-escape" "$SUP_DIR/staging" plant-link
        [ "$status" -eq 0 ]
        [ "$output" = "plant-link: the unpacked tree: entry 'evil': a symbolic link whose target leaves the bundle" ]
        rm -rf "$SUP_DIR/staging"
        mkdir -p "$SUP_DIR/staging"
        run "$SBX_BUILDDIR/t/helpers/unpack-escape" "$SUP_DIR/staging" plant-bytes
        [ "$status" -eq 0 ]
        [ "$output" = "plant-bytes: the unpacked tree holds more than 1048576 bytes" ]
}
