#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# README.md's "Using the supervisor" example runs as written against a
# daemon, every command of it, and downloads the artifact it names.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
        sup_config
        # the example runs the python profile
        sed -i 's/^profiles = default shell$/profiles = default shell python/' "$SUP_DIR/sup.conf"
        sup_start
}

teardown_file() {
        sup_fini
}

setup() {
        require_userns
        readme="$SBX_SRCDIR/README.md"
        [ -f "$readme" ] || skip "the documentation is not in the source tree"
        command -v python3 >/dev/null || skip "no python3 for the example's python job"
}

@test "README's 'Using the supervisor' commands run as written" {
        # the first shell block after the heading, as a script
        awk '/^## Using the supervisor/ { on = 1; next }
             on && /^```sh/ { block = 1; next }
             block && /^```/ { exit }
             block { print }' "$readme" > "$BATS_TEST_TMPDIR/example.sh"
        [ -s "$BATS_TEST_TMPDIR/example.sh" ]
        grep -q 'sbxctl download' "$BATS_TEST_TMPDIR/example.sh"
        work="$BATS_TEST_TMPDIR/work"
        mkdir -p "$work"
        printf 'import os\nos.makedirs("out", exist_ok=True)\nopen("out/result.txt", "w").write("ok\\n")\nprint("hello from job.py")\n' > "$work/job.py"
        cd "$work"
        run env PATH="$SBX_STAGE/bin:$PATH" SBX_SOCKET="$SUP_SOCK" bash -e "$BATS_TEST_TMPDIR/example.sh"
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"hello from job.py"* ]]
        [ "$(cat "$work/build.txt")" = built ]
}
