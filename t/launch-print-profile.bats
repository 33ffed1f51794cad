#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) --print-profile: the effective profile (profiles merged,
# then options) as INI that loads back to the same profile.

load helpers/common

setup() {
        d=$(user_dir)
}

@test "the built-in default profile is the shipped default.ini" {
        run sbx --print-profile
        [ "$status" -eq 0 ]
        built_in=$output
        run sbx --profile default --print-profile
        [ "$status" -eq 0 ]
        [ "$output" = "$built_in" ]
        [[ "$output" == *"ro-bind = /usr /usr"* ]]
        [[ "$output" == *"mode = none"* ]]
}

@test "options show up in the printed profile, in order" {
        run sbx --profile python --bind /tmp /work --setenv A 'x y' --timeout 90s --share-net --print-profile
        [ "$status" -eq 0 ]
        [[ "$output" == *"bind = /tmp /work"* ]]
        [[ "$output" == *"timeout = 90s"* || "$output" == *"timeout = 1m30s"* ]]
        [[ "$output" == *"mode = host"* ]]
        [[ "$output" == *'A='* ]]
}

@test "round trip: print, load the printout, print again: identical" {
        for prof in default shell python node; do
                sbx --profile $prof --bind /tmp '/work dir' --setenv A 'x "y" $z' --set limits.cpu=3 \
                        --file 0 /etc/x --dir /d --print-profile < /dev/null > "$d/one.ini"
                sbx --profile "$d/one.ini" --print-profile > "$d/two.ini"
                diff -u "$d/one.ini" "$d/two.ini"
        done
}

@test "the printed profile runs the same sandbox" {
        sbx --profile python --print-profile > "$d/p.ini"
        run sbx --profile "$d/p.ini" -- python3 -c 'import os; print(os.environ["PYTHONUNBUFFERED"])'
        [ "$status" -eq 0 ]
        [ "$output" = 1 ]
}
