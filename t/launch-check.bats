#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) --check: validate profiles and options without running.

load helpers/common

setup() {
        d=$(user_dir)
}

@test "--check succeeds on every shipped profile and runs nothing" {
        for prof in default shell python node; do
                run sbx --profile $prof --check -- sh -c "touch $d/ran"
                [ "$status" -eq 0 ]
                [ -z "$output" ]
        done
        [ ! -e "$d/ran" ]
}

@test "--check needs no command" {
        run sbx --check
        [ "$status" -eq 0 ]
}

@test "--check fails with 125 and file:line on a bad profile" {
        printf '[limits]\nprocesses = 0\n' > "$d/bad.ini"
        chmod 0644 "$d/bad.ini"
        run sbx --profile "$d/bad.ini" --check
        [ "$status" -eq 125 ]
        [[ "$output" == *"processes"* ]]
        printf '[fs]\nro-bind = /usr\n' > "$d/bad.ini"
        run sbx --profile "$d/bad.ini" --check
        [ "$status" -eq 125 ]
        [[ "$output" == *"$d/bad.ini:2:"* ]]
}

@test "--check validates options too" {
        run sbx --check --set limits.memory=12 --set limits.timeout=1s
        [ "$status" -eq 125 ]
        [[ "$output" == *memory* ]]
}
