# SPDX-License-Identifier: Apache-2.0
# Shared by the sbx-privd bats files: a helper started by
# t/helpers/privd-client, which drops to nobody (the front's credentials)
# and speaks to it as the front would, hostile or not.

load helpers/common

# privd_init NAME UID_BASE (from setup_file): a cgroup and a uid range of
# the file's own (16 uids in one of 1024 slots above UID_BASE), so that files
# run in parallel never share them.
privd_init() {
        sbx_stage
        PRIVD=$SBX_BUILDDIR/supervisor/privd/sbx-privd
        CLIENT=$SBX_BUILDDIR/t/helpers/privd-client
        PRIVD_CG=none
        local mnt
        mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
        if [ -n "$mnt" ] && [ "$(id -u)" = 0 ] && [ -w "$mnt/cgroup.procs" ]; then
                PRIVD_CG="$mnt/sbx-$1-test-$$-$RANDOM"
        fi
        local slot=$(( ($$ + RANDOM) % 1024 ))
        PRIVD_UIDS="$(($2 + slot * 16))-$(($2 + slot * 16 + 15))"
        PRIVD_WS=$SBX_STAGE/privd-ws
        export PRIVD CLIENT PRIVD_CG PRIVD_UIDS PRIVD_WS
}

# privd_fini (from teardown_file): a test that failed half-way may leave a
# helper's workspace mounted or a job cgroup behind.
privd_fini() {
        local m d
        for m in "$PRIVD_WS"/job-*; do
                [ -d "$m" ] && umount -l "$m" 2>/dev/null
        done
        if [ "${PRIVD_CG:-none}" != none ] && [ -d "$PRIVD_CG" ]; then
                for d in "$PRIVD_CG"/job-*; do
                        [ -d "$d" ] && echo 1 > "$d/cgroup.kill" 2>/dev/null && rmdir "$d" 2>/dev/null
                done
                rmdir "$PRIVD_CG" 2>/dev/null || true
        fi
        sbx_unstage
}

privd_setup() {
        [ "$(id -u)" = 0 ] || skip "sbx-privd runs as root"
        [ "$PRIVD_CG" != none ] || skip "no writable cgroup2 hierarchy here"
        require_userns
        CPID=
}

# The client holding the helper (--hold) is let go; the helper then exits.
privd_teardown() {
        [ -z "$CPID" ] || kill -USR1 "$CPID" 2>/dev/null || true
        [ -z "$CPID" ] || wait "$CPID" 2>/dev/null || true
        [ -z "${HELPER:-}" ] || wait_until 30 gone "$HELPER" || true
}

# privd_client [CLIENT ARGS...] -- [HELPER ARGS...]: exec the client as
# nobody, starting the helper with the file's uids, cgroup and workspaces
# and these arguments besides. exec: $! of a background call is the client.
privd_client() {
        local args=()
        while [ $# -gt 0 ] && [ "$1" != -- ]; do
                args+=("$1")
                shift
        done
        shift
        exec "$CLIENT" --as "$(id -u nobody):$(id -g nobody)" --profile "$SBX_STAGE/profiles/default.ini" "${args[@]}" -- \
                "$PRIVD" --fd 3 --front "$(id -u nobody):$(id -g nobody)" --uids "$PRIVD_UIDS" --cgroup "$PRIVD_CG" \
                --workspace "$PRIVD_WS" --launcher "$SBX_LAUNCH" "$@"
}

# field KEY: the value of the client's line "KEY VALUE".
field() {
        awk -v k="$1" '$0 ~ "^" k " " { sub("^" k " ", ""); print; exit }' "$BATS_TEST_TMPDIR/out"
}

alive() {
        kill -0 "$1" 2>/dev/null
}

gone() {
        ! kill -0 "$1" 2>/dev/null
}

done_or_exited() {
        grep -q '^attacks done' "$BATS_TEST_TMPDIR/out" || gone "$CPID"
}

# attack SCENARIO: start the file's `client` with it and wait until its
# attacks are done (or the client gave up: a helper that accepted what it
# should refuse answers out of step); A_CG, A_WS, A_PID and HELPER say where
# job A and the helper are.
attack() {
        client --hold "$1" > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/log" &
        CPID=$!
        wait_until 90 done_or_exited
        cat "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/log"
        grep -q '^attacks done' "$BATS_TEST_TMPDIR/out"
        HELPER=$(field helper)
        A_CG=$(field "A cgroup")
        A_WS=$(field "A workspace")
        A_PID=$(field "A pid")
        [ -n "$HELPER" ]
        [ -n "$A_PID" ]
}

# refused WHAT REASON: the client saw WHAT refused and the helper logged
# REASON on a line of its own.
refused() {
        grep -qF "refused $1:" "$BATS_TEST_TMPDIR/out" || { echo "not refused: $1"; cat "$BATS_TEST_TMPDIR/out"; return 1; }
        grep -q "^sbx-privd: refused .*$2" "$BATS_TEST_TMPDIR/log" || { echo "not logged: $2"; cat "$BATS_TEST_TMPDIR/log"; return 1; }
}
