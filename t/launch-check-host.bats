#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) --check-host: each requirement probed for real, met or not,
# with the fix.

load helpers/common

@test "--check-host reports every requirement, one line each" {
        run sbx --check-host
        echo "$output"
        # 0 when every required one is met, 1 when one is not
        if [[ "$output" == *MISSING* ]]; then [ "$status" -eq 1 ]; else [ "$status" -eq 0 ]; fi
        for what in kernel namespaces seccomp landlock openat2 "cgroup v2"; do
                [[ "$output" == *"$what: "* ]]
        done
        # every line is a verdict or the fix of the verdict above it
        while IFS= read -r line; do
                [[ "$line" =~ ^(ok|missing|MISSING|info|note)\ +[a-z]|^\ +fix:\  ]]
        done <<<"$output"
}

@test "--check-host says namespaces work exactly when a sandbox starts" {
        run sbx --check-host
        echo "$output"
        if as_user unshare --user --map-root-user true 2>/dev/null; then
                [ "$status" -eq 0 ]
                [[ "$output" == *"ok       namespaces: "* ]]
                run sbx -- true
                [ "$status" -eq 0 ]
        else
                [ "$status" -eq 1 ]
                [[ "$output" == *"MISSING  namespaces: "* ]]
        fi
}

@test "--check-host: no user namespaces left is a missing requirement, with the sysctl that fixes it" {
        require_userns
        # user.max_user_namespaces is per user namespace and its owner may
        # lower it: inside this one, no further namespace can be made.
        run as_user unshare --user --map-root-user sh -c \
                'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" --check-host' "$SBX_LAUNCH"
        echo "$output"
        [ "$status" -eq 1 ]
        [[ "$output" == *"MISSING  namespaces: unshare("*") failed as uid "*": No space left on device"* ]]
        [[ "$output" == *"fix: sysctl -w user.max_user_namespaces="* ]]
        # and the launcher indeed cannot run there
        run as_user unshare --user --map-root-user sh -c \
                'echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" -- true' "$SBX_LAUNCH"
        [ "$status" -eq 125 ]
}

@test "--check-host's cgroup verdict matches the mounted hierarchy" {
        run sbx --check-host
        echo "$output"
        # 0 when every required one is met, 1 when one is not
        if [[ "$output" == *MISSING* ]]; then [ "$status" -eq 1 ]; else [ "$status" -eq 0 ]; fi
        if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
                [[ "$output" != *"/sys/fs/cgroup is not cgroup v2"* ]]
                if grep -qw memory /sys/fs/cgroup/cgroup.controllers && grep -qw pids /sys/fs/cgroup/cgroup.controllers &&
                   grep -qw cpu /sys/fs/cgroup/cgroup.controllers; then
                        [[ "$output" == *"ok       cgroup v2: unified, with the memory, pids and cpu controllers"* ]]
                else
                        [[ "$output" == *"missing  cgroup v2: mounted, but without the "* ]]
                fi
        else
                [[ "$output" == *"missing  cgroup v2: "* ]]
                [[ "$output" == *"fix: boot with systemd.unified_cgroup_hierarchy=1"* ]]
        fi
}

@test "--check-host runs nothing else: no command needed, profiles not read" {
        run sbx --check-host --profile /nonexistent.ini -- sh -c 'echo ran'
        [ "$status" -eq 0 ] || [ "$status" -eq 1 ]
        [[ "$output" != *ran* ]]
        [[ "$output" != *nonexistent* ]]
}
