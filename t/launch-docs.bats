#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The documented examples work as a new user would type them: every
# command of README.md's "Using sbx-launch" and of sbx-launch(1)'s EXAMPLES
# runs, as written, in a directory holding the files they name, and the
# README's sample profile runs /bin/sh.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
        readme="$SBX_SRCDIR/README.md"
        manpage="$SBX_SRCDIR/man/sbx-launch.1.scd"
        [ -f "$readme" ] && [ -f "$manpage" ] || skip "the documentation is not in the source tree"
        # What the examples name: a script, a build script, a profile and
        # an output directory, in a directory the test user owns.
        work=$(user_dir)
        printf 'print("hello from job.py")\n' > "$work/job.py"
        printf '#!/bin/sh\necho built > built.txt\n' > "$work/build.sh"
        printf '[limits]\ntimeout = 5s\n' > "$work/my.ini"
        cp "$work/my.ini" "$work/mine.ini"
        chmod 0755 "$work/build.sh"
        chmod 0644 "$work/job.py" "$work/my.ini" "$work/mine.ini"
        as_user mkdir "$work/out"
}

# The commands of the code blocks between the lines matching START and END
# in FILE, one per line, with continued lines joined and comments left out.
doc_commands() {
        awk -v start="$2" -v end="$3" '
                !on && $0 ~ start { on = 1; next }
                on && $0 ~ end { exit }
                on && /^```/ { block = !block; next }
                on && block {
                        line = $0
                        sub(/^[ \t]+/, "", line)
                        if (cmd == "" && (line == "" || line ~ /^#/))
                                next
                        cmd = cmd line
                        if (cmd ~ /\\$/) {
                                sub(/\\$/, " ", cmd)
                                next
                        }
                        print cmd
                        cmd = ""
                }' "$1"
}

# Run each command with sbx-launch as the test user, in $work.
run_all() {
        local cmd n=0
        cd "$work"
        while IFS= read -r cmd; do
                [[ "$cmd" == sbx-launch* ]] || continue
                n=$((n + 1))
                run eval "sbx${cmd#sbx-launch}" </dev/null
                if [ "$status" -ne 0 ]; then
                        echo "# this documented command failed ($status): $cmd" >&3
                        echo "$output" >&3
                        return 1
                fi
        done
        [ "$n" -gt 0 ]
}

@test "README's 'Using sbx-launch' commands run as written" {
        run_all < <(doc_commands "$readme" '^## Using sbx-launch' '^### ')
        # what they did, beyond exiting 0
        [ "$(cat "$work/built.txt")" = built ]
        [ "$(jq -s '.[1]."exit-code"' "$work/status.json")" = 0 ]
}

@test "sbx-launch(1)'s EXAMPLES run as written" {
        run_all < <(doc_commands "$manpage" '^# EXAMPLES' '^# FOR BWRAP USERS')
        [ "$(jq -s '.[1]."exit-code"' "$work/status.json")" = 0 ]
}

@test "README's sample profile runs /bin/sh (with /bin, /lib and /lib64 in place)" {
        awk '/^### Profiles/ { on = 1 } on && /^```ini/ { block = 1; next } block && /^```/ { exit } block' \
                "$readme" > "$work/job.ini"
        chmod 0644 "$work/job.ini"
        grep -q '^\[fs\]' "$work/job.ini"
        export WORKSPACE="$work"
        run sbx --profile "$work/job.ini" -- /bin/sh -c 'echo "sh ran in $(pwd)"; ls /workspace/job.py'
        [ "$status" -eq 0 ]
        [ "${lines[0]}" = "sh ran in /workspace" ]
        [ "${lines[1]}" = /workspace/job.py ]
        # and the README's way to start it
        cd "$work"
        run eval 'WORKSPACE=$PWD sbx --profile ./job.ini -- /bin/sh -c "echo ok"'
        [ "$status" -eq 0 ]
        [ "$output" = ok ]
}
