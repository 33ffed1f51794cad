#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# SECURITY.md items 8, 9, 10, 12, 15: namespaces, id maps and what the job
# can reach outside its own.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
}

@test "creating a nested user namespace fails under the default profile (item 8)" {
        run sbx -- unshare --user true
        [ "$status" -ne 0 ]
}

@test "a nested user namespace stays impossible with seccomp = none: the kernel counter is used up (item 8)" {
        run sbx --set security.seccomp=none -- unshare --user true
        [ "$status" -ne 0 ]
        [[ "$output" == *"No space left on device"* ]]
}

@test "keeping CAP_SYS_ADMIN and CAP_SYS_RESOURCE does not let the job raise the limit and nest (item 8)" {
        run sbx --set security.seccomp=none --set 'security.capabilities=CAP_SYS_ADMIN CAP_SYS_RESOURCE' -- \
                sh -c 'grep CapEff /proc/self/status; echo 1000 > /proc/sys/user/max_user_namespaces; unshare --user true && echo NESTED'
        [ "$status" -ne 0 ]
        [[ "$output" != *NESTED* ]]
        # the capabilities really were kept: the test attacked with them
        [[ "$output" != *"CapEff:	0000000000000000"* ]]
}

@test "sbx-launch run inside a sandbox cannot build a nested sandbox (item 8)" {
        # (125 from a plain build; a sanitizer build may die even earlier)
        run sbx --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/sbx-launch -- echo NESTED
        [ "$status" -ne 0 ]
        [[ "$output" != *NESTED* ]]
        run sbx --set security.seccomp=none --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/sbx-launch -- echo NESTED
        [ "$status" -ne 0 ]
        [[ "$output" != *NESTED* ]]
}

@test "setgroups is deny inside, so groups cannot be dropped to dodge negative permissions (item 9)" {
        run sbx -- cat /proc/self/setgroups
        [ "$status" -eq 0 ]
        [ "$output" = deny ]
        [ -x "$SBX_STAGE/bin/try-syscall" ] || skip "try-syscall was not built"
        run -0 sbx --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/try-syscall setgroups 0 0
        [ "$output" = EPERM ]
}

@test "mounts made for and inside the sandbox never appear in the host's mount table (item 10)" {
        local dir
        dir=$(user_dir)
        # The "host" is a mount namespace of the test's own whose mounts are
        # shared among themselves but with no peer outside: what the sandbox
        # leaked would propagate into it, and no mount made elsewhere on the
        # machine (by other tests running at the same time) appears in it.
        # Unprivileged, the "host" is the real one, as before.
        local run_in=(bash)
        if [ "$(id -u)" = 0 ] && unshare --mount true 2>/dev/null; then
                run_in=(unshare --mount -- bash)
        fi
        run "${run_in[@]}" -c "$(declare -f as_user sbx)"'
                set -e
                if [ "$(id -u)" = 0 ] && [ "$1" != bash ]; then
                        mount --make-rprivate / && mount --make-rshared /
                fi
                before=$(cat /proc/self/mountinfo)
                sbx --bind "$2" /out -- sh -c "touch /out/ready; sleep 2" &
                pid=$!
                for _ in $(seq 100); do [ -e "$2/ready" ] && break; sleep 0.1; done
                [ -e "$2/ready" ] || { echo "the sandbox did not start"; exit 1; }
                after=$(cat /proc/self/mountinfo)
                wait $pid
                # Only what appeared counts: a mount on a directory that
                # another process deletes vanishes from every namespace.
                added=$(comm -13 <(echo "$before" | sort) <(echo "$after" | sort))
                [ -z "$added" ] || { echo "$added"; exit 1; }
                echo same' mounts-check "${run_in[0]}" "$dir"
        echo "$output"
        [ "$status" -eq 0 ]
        [ "$output" = same ]
}

@test "the sandbox's mounts do not propagate back: none is shared with a peer outside (item 10)" {
        run sbx -- cat /proc/self/mountinfo
        [ "$status" -eq 0 ]
        [[ "$output" != *"shared:"* ]]
}

@test "the job sees only its own processes: the launcher and the host are out of sight (item 12)" {
        run sbx -- sh -c 'ls /proc | grep -E "^[0-9]+$" | wc -l'
        [ "$status" -eq 0 ]
        # pid 1 (the sandbox's init), sh, ls, grep, wc: at most a handful
        [ "$output" -le 6 ]
}

@test "the job cannot signal the launcher or ptrace anything outside (item 12)" {
        sleep 30 &
        local victim=$!
        run sbx -- sh -c "kill -9 $victim"
        kill -0 "$victim" # still alive
        kill "$victim"
        [ "$status" -ne 0 ]
        [ -x "$SBX_STAGE/bin/try-syscall" ] || skip "try-syscall was not built"
        run -0 sbx --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/try-syscall ptrace 16 1 0 0 # PTRACE_ATTACH pid 1
        [ "$output" = EPERM ]
        run -0 sbx --ro-bind "$SBX_STAGE/bin" /sbx -- /sbx/try-syscall kill 1 15
        [ "$output" = EPERM ]
}

@test "a spoofed /proc (a tmpfs with fake map files) is refused before writing uid_map (item 15)" {
        local fake
        fake=$(as_user unshare --user --map-root-user --mount sh -c '
                mount -t tmpfs fake /proc && mkdir -p /proc/self &&
                echo untouched > /proc/self/uid_map && echo untouched > /proc/self/gid_map &&
                echo untouched > /proc/self/setgroups &&
                "$0" -- true; echo "rc=$?"; cat /proc/self/uid_map /proc/self/gid_map /proc/self/setgroups' \
                "$SBX_LAUNCH" 2>&1) || true
        echo "$fake"
        # 125 from a plain build; a sanitizer build, which needs the real
        # /proc itself, may stop even earlier. Either way: refused, untouched.
        [[ "$fake" == *"rc="[1-9]* ]]
        [ "$(echo "$fake" | grep -c '^untouched$')" -eq 3 ]
}
