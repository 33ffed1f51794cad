#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) ENVIRONMENT: cleared by default; set, keep and unset in
# order; the loader's injection variables from the caller never pass unless
# set explicitly.

load helpers/common

setup() {
        require_userns
}

@test "the environment is cleared: only what the profile sets" {
        SBX_SECRET=hunter2 run sbx -- /usr/bin/env
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | sort | tr '\n' ' ')" = "HOME=/tmp PATH=/usr/local/bin:/usr/bin:/bin " ]
}

@test "--setenv, --unsetenv and --keepenv apply in order" {
        KEEPME=kept DROPME=x run sbx --setenv A 1 --setenv B 'two words' --unsetenv HOME --keepenv KEEPME \
                --setenv A 3 --keepenv NOT_SET_ANYWHERE -- /usr/bin/env
        [ "$status" -eq 0 ]
        [ "$(echo "$output" | sort | tr '\n' '|')" = "A=3|B=two words|KEEPME=kept|PATH=/usr/local/bin:/usr/bin:/bin|" ]
}

@test "env.clear = no passes the caller's environment, minus LD_PRELOAD and kin" {
        # (ASAN_OPTIONS: an AddressSanitizer build refuses to start with a
        # preloaded library ahead of its runtime)
        ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD=libc.so.6 LD_LIBRARY_PATH=/nonexistent-sbx \
                GCONV_PATH=/x VISIBLE=yes run sbx --set env.clear=no -- /usr/bin/env
        [ "$status" -eq 0 ]
        [[ "$output" == *"VISIBLE=yes"* ]]
        [[ "$output" != *LD_PRELOAD* ]]
        [[ "$output" != *LD_LIBRARY_PATH* ]]
        [[ "$output" != *GCONV_PATH* ]]
}

@test "LD_PRELOAD from the caller does not pass with the default profile either" {
        ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD=libc.so.6 LD_AUDIT= run sbx -- /usr/bin/env
        [ "$status" -eq 0 ]
        [[ "$output" != *LD_* ]]
}

@test "LD_PRELOAD set explicitly does reach the job" {
        run sbx --setenv LD_PRELOAD libc.so.6 -- /usr/bin/env
        [ "$status" -eq 0 ]
        [[ "$output" == *"LD_PRELOAD=libc.so.6"* ]]
}

@test "--clearenv after env.clear = no clears again" {
        VISIBLE=yes run sbx --set env.clear=no --clearenv -- /usr/bin/env
        [ "$status" -eq 0 ]
        [[ "$output" != *VISIBLE* ]]
}

@test "PATH inside is the one used to find the command" {
        d=$(user_dir)
        printf '#!/bin/sh\necho found-in-job-path\n' > "$d/mytool"
        chmod 0755 "$d/mytool"
        run sbx --ro-bind "$d" /opt/tools --setenv PATH /opt/tools:/usr/bin -- mytool
        [ "$status" -eq 0 ]
        [ "$output" = found-in-job-path ]
}

@test "a bad variable name is a profile error" {
        run sbx --setenv 'BAD NAME' x -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"bad variable name"* ]]
}
