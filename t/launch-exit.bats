#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) EXIT STATUS: the command's own status, 128+N for signal N,
# 124 timed out, 125 setup failed, 126 not executable, 127 not found.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
}

@test "success is 0" {
        run sbx -- true
        [ "$status" -eq 0 ]
}

@test "the command's own exit status is returned" {
        for code in 1 3 42 123 200 255; do
                run sbx -- sh -c "exit $code"
                [ "$status" -eq "$code" ]
        done
}

@test "death by signal N is 128+N" {
        run sbx -- sh -c 'kill -KILL $$'
        [ "$status" -eq 137 ]
        run sbx -- sh -c 'kill -SEGV $$'
        [ "$status" -eq 139 ]
        run sbx -- sh -c 'kill -TERM $$'
        [ "$status" -eq 143 ]
}

@test "a timed out command is 124" {
        run sbx --timeout 300ms -- sleep 10
        [ "$status" -eq 124 ]
}

@test "a setup failure is 125 and stderr names the step, the path and the cause" {
        run sbx --bind /nonexistent-sbx-source /x -- true
        [ "$status" -eq 125 ]
        [ "$output" = "sbx-launch: bind: /nonexistent-sbx-source: No such file or directory" ]
}

@test "a command that is not executable is 126" {
        d=$(user_dir)
        printf 'echo hi\n' > "$d/script"
        chmod 0644 "$d/script"
        run sbx --ro-bind "$d" /job -- /job/script
        [ "$status" -eq 126 ]
        [[ "$output" == *"sbx-launch: exec: /job/script: Permission denied"* ]]
        run sbx -- /tmp
        [ "$status" -eq 126 ]
}

@test "a command that does not exist is 127" {
        run -127 sbx -- no-such-command-sbx
        [ "$status" -eq 127 ]
        [[ "$output" == *"no-such-command-sbx: No such file or directory"* ]]
        run -127 sbx -- /usr/bin/no-such-command-sbx
        [ "$status" -eq 127 ]
}

@test "a command named like an option after -- runs as a command" {
        run -127 sbx -- --bind
        [ "$status" -eq 127 ]
        [[ "$output" == *"exec: --bind: No such file or directory"* ]]
}

@test "an exit status of 124 or 125 from the command itself is passed through" {
        run sbx -- sh -c 'exit 125'
        [ "$status" -eq 125 ]
        [ -z "$output" ]
        run sbx -- sh -c 'exit 124'
        [ "$status" -eq 124 ]
}

# The command's process runs on a stack of its own until its exec, and
# execvp(3) copies every argument pointer onto the stack when it runs a
# file without "#!" through /bin/sh: 150,000 arguments (1.2 MB of
# pointers) once overflowed a fixed 1 MiB stack and the job died by SIGSEGV.
@test "a script without #! gets 150,000 arguments through execvp's /bin/sh fallback" {
        d=$(user_dir)
        printf 'echo "args: $#"\n' > "$d/script"
        chmod 0755 "$d/script"
        mapfile -t args < <(yes x | head -n 150000)
        run sbx --ro-bind "$d" /job -- /job/script "${args[@]}"
        [ "$status" -eq 0 ]
        [ "$output" = "args: 150000" ]
}
