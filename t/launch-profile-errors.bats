#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) and sbx-profile(5): a bad profile or option is an error
# that names the file and line (or the option), exit 125, nothing runs.

load helpers/common

setup() {
        require_userns
        d=$(user_dir)
}

profile() {
        printf "$2" > "$d/$1.ini"
        chmod 0644 "$d/$1.ini"
}

@test "an unknown key names file:line" {
        profile bad '[sandbox]\nhostname = x\nfrobnicate = yes\n'
        run sbx --profile "$d/bad.ini" -- sh -c 'echo ran'
        [ "$status" -eq 125 ]
        [[ "$output" == "sbx-launch: profile: $d/bad.ini:3: "*frobnicate* ]]
        [[ "$output" != *ran* ]]
}

@test "an unknown section names file:line" {
        profile bad '[sandbox]\n\n[nonsense]\nx = 1\n'
        run sbx --profile "$d/bad.ini" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == "sbx-launch: profile: $d/bad.ini:3: "*nonsense* ]]
}

@test "a bad value names file:line" {
        profile bad '[limits]\ncpu = 10s\nmemory = lots\n'
        run sbx --profile "$d/bad.ini" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == "sbx-launch: profile: $d/bad.ini:3: "* ]]
}

@test "a relative bind destination names file:line" {
        profile bad '[fs]\nbind = /usr usr\n'
        run sbx --profile "$d/bad.ini" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == "sbx-launch: profile: $d/bad.ini:2: "* ]]
}

@test "a missing profile file or name is an error naming it" {
        run sbx --profile "$d/nope.ini" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"$d/nope.ini"* ]]
        run sbx --profile no-such-profile-name -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *no-such-profile-name* ]]
}

@test "the second of several profiles is reported with its own name" {
        profile good '[limits]\ncpu = 5\n'
        profile bad '\n\n\n[limits]\ncpu = -1\n'
        run sbx --profile "$d/good.ini" --profile "$d/bad.ini" -- true
        [ "$status" -eq 125 ]
        [[ "$output" == "sbx-launch: profile: $d/bad.ini:5: "* ]]
}

@test "bad option values are errors naming the option" {
        run sbx --set nosuch.key=1 -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"nosuch"* ]]
        run sbx --set limits.cpu -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"SECTION.KEY=VALUE"* ]]
        run sbx --timeout soon -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"command line: --timeout"* ]]
        run sbx --tmpfs relative/path -- true
        [ "$status" -eq 125 ]
        run sbx --pass-fd 99 -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"--pass-fd 99: Bad file descriptor"* ]]
}

@test "an unknown option and a missing argument are usage errors" {
        run sbx --frobnicate -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"unknown option '--frobnicate'"* ]]
        run sbx --bind /usr
        [ "$status" -eq 125 ]
        [[ "$output" == *"--bind needs 2 arguments"* ]]
        run sbx
        [ "$status" -eq 125 ]
        [[ "$output" == *"no command given"* ]]
}

@test "whole-profile validation errors are reported (hostname without uts)" {
        run sbx --share-uts --hostname x -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"uts namespace"* ]]
}
