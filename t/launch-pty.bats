#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbx-launch(1) Terminal: a pseudo-terminal of the job's own, relayed to the
# caller's terminal, which always gets its modes back. The caller's
# terminal is a real one: t/helpers/tty-caller.py starts sbx-launch the way
# a login shell would, in a session whose controlling terminal is a fresh
# pty, and reports what was shown and what the terminal looks like after.

load helpers/common
bats_require_minimum_version 1.5.0

setup() {
        require_userns
        PY=/usr/bin/python3
        [ -x "$PY" ] || PY=$(command -v python3 || true)
        [ -x "$PY" ] || skip "python3 is needed to play the caller's terminal"
        r="$BATS_TEST_TMPDIR/r.json"
}

# at_terminal [HARNESS OPTION]... -- [SBX-LAUNCH ARG]...: sbx-launch, as
# the unprivileged user, at a terminal; the report lands in $r.
at_terminal() {
        local opts=()
        while [ "$1" != -- ]; do
                opts+=("$1")
                shift
        done
        shift
        [ "$(id -u)" = 0 ] && opts+=(--user nobody)
        "$PY" "$SBX_SRCDIR/t/helpers/tty-caller.py" --timeout 60 "${opts[@]}" -- \
                env SBX_PROFILE_PATH="$SBX_PROFILE_PATH" "$SBX_LAUNCH" "$@" > "$r"
}

field() {
        jq -r ".$1" "$r"
}

@test "at a terminal the job gets one of its own: stdin and stdout, its controlling terminal, named /dev/console" {
        at_terminal -- -- sh -c '
                test -t 0 && test -t 1 && test -t 2 && echo all-three-tty
                [ "$(cut -d" " -f6 /proc/$$/stat)" = $$ ] && echo session-leader
                [ "$(cut -d" " -f7 /proc/$$/stat)" != 0 ] && echo has-ctty
                tty
                echo via-dev-tty > /dev/tty'
        [ "$(field status)" = 0 ]
        out=$(field output)
        [[ "$out" == *all-three-tty* ]]
        [[ "$out" == *session-leader* ]]
        [[ "$out" == *has-ctty* ]]
        [[ "$out" == */dev/console* ]]
        [[ "$out" == *via-dev-tty* ]]
        [ "$(field modes_same)" = true ]
}

@test "--no-pty at a terminal: the caller's descriptors as they are, no controlling terminal" {
        at_terminal -- --no-pty -- sh -c 'test -t 0 && echo fd0-tty; echo ctty=$(cut -d" " -f7 /proc/$$/stat)'
        [ "$(field status)" = 0 ]
        [[ "$(field output)" == *fd0-tty* ]]
        [[ "$(field output)" == *ctty=0* ]]
}

@test "no terminal, no pty (auto); --pty makes one anyway and relays piped input, ending it with EOF" {
        run sbx -- sh -c 'test -t 0 || test -t 1 || echo no-tty'
        [ "$status" -eq 0 ]
        [ "$output" = no-tty ]
        run sbx --pty -- sh -c 'test -t 0 && test -t 1 && echo tty; while read -r x; do echo "got:$x"; done; echo eof' \
                <<<$'hello\nworld'
        [ "$status" -eq 0 ]
        [[ "$output" == *tty* ]]
        [[ "$output" == *got:hello* ]]
        [[ "$output" == *got:world* ]]
        [[ "$output" == *eof* ]]
}

@test "--pty with stderr not a terminal: the command's stderr stays where it was" {
        local o="$BATS_TEST_TMPDIR/out" e="$BATS_TEST_TMPDIR/err"
        sbx --pty -- sh -c 'echo to-stderr >&2; test -t 2 || echo stderr-not-tty' >"$o" 2>"$e" </dev/null
        [[ "$(cat "$o")" == *stderr-not-tty* ]]
        [ "$(cat "$e")" = to-stderr ]
}

@test "stty raw inside leaves the caller's terminal modes as they were: exit, timeout, kill, SIGTERM, setup failure" {
        at_terminal -- -- sh -c 'stty raw -echo -isig; echo raw'
        [ "$(field status)" = 0 ]
        [ "$(field modes_same)" = true ]

        at_terminal -- --timeout 2s -- sh -c 'stty raw -echo; echo raw; sleep 60'
        [ "$(field status)" = 124 ]
        [ "$(field modes_same)" = true ]

        at_terminal -- -- sh -c 'stty raw -echo; echo raw; kill -KILL $$'
        [ "$(field status)" = 137 ]
        [ "$(field modes_same)" = true ]

        # SIGTERM to sbx-launch, as an impatient caller sends it
        at_terminal --signal TERM --signal-after raw -- -- sh -c 'stty raw -echo; echo raw; sleep 60'
        [ "$(field status)" = 143 ]
        [ "$(field modes_same)" = true ]

        at_terminal -- --ro-bind /nonexistent-sbx /x -- true
        [ "$(field status)" = 125 ]
        [ "$(field modes_same)" = true ]

}

# Issue 9: without a pty of its own the job holds the caller's terminal;
# what it sets there is undone when it ends.
@test "--no-pty: stty raw on the caller's own terminal is undone at exit, timeout, kill and SIGTERM" {
        # The harness does see a change when nothing restores the modes.
        "$PY" "$SBX_SRCDIR/t/helpers/tty-caller.py" --timeout 60 -- sh -c 'stty raw -echo' > "$r"
        [ "$(field modes_same)" = false ]

        at_terminal -- --no-pty -- sh -c 'stty raw -echo -isig; echo raw'
        [ "$(field status)" = 0 ]
        [ "$(field modes_same)" = true ]

        at_terminal -- --no-pty --timeout 2s -- sh -c 'stty raw -echo; echo raw; sleep 60'
        [ "$(field status)" = 124 ]
        [ "$(field modes_same)" = true ]

        at_terminal -- --no-pty -- sh -c 'stty raw -echo; echo raw; kill -KILL $$'
        [ "$(field status)" = 137 ]
        [ "$(field modes_same)" = true ]

        at_terminal --signal TERM --signal-after raw -- --no-pty -- sh -c 'stty raw -echo; echo raw; sleep 60'
        [ "$(field status)" = 143 ]
        [ "$(field modes_same)" = true ]

        # output suspended by the job (tcflow TCOOFF) does not hang the restore
        at_terminal -- --no-pty -- python3 -c 'import termios, os; os.system("stty raw"); termios.tcflow(1, termios.TCOOFF)'
        [ "$(field status)" = 0 ]
        [ "$(field modes_same)" = true ]
}

@test "TIOCSTI on the job's terminal cannot push input into the caller's terminal" {
        # No syscall filter, so that the ioctl itself runs: the job pushes a
        # command line into its terminal, as in CVE-2017-5226.
        local push='import fcntl, termios
try:
    for c in b"echo INJECTED\n":
        fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))
    print("pushed")
except OSError as e:
    print("TIOCSTI:", e.strerror)'
        at_terminal -- --profile python --set security.seccomp=none -- python3 -c "$push"
        [ "$(field status)" = 0 ]
        [[ "$(field output)" == *pushed* ]]
        # nothing waits in the caller's terminal for its shell to read
        [ "$(field pending)" = "" ]

        # Against the caller's own terminal (no pty, same session) the same
        # push lands there: what the pty prevents is real on this kernel.
        at_terminal -- --profile python --set security.seccomp=none --no-pty --set sandbox.new-session=no \
                -- python3 -c "$push"
        [[ "$(field output)" == *pushed* ]] || skip "this kernel refuses TIOCSTI outright ($(field output))"
        [[ "$(field pending)" == *"echo INJECTED"* ]]
}

@test "the job's terminal has the caller's window size, and a resize reaches it (SIGWINCH)" {
        at_terminal --resize 33 77 --resize-after READY -- --timeout 20s -- sh -c '
                stty size
                trap "stty size; exit 0" WINCH
                echo READY
                while :; do sleep 0.1; done'
        [ "$(field status)" = 0 ]
        out=$(field output)
        [[ "$out" == *"24 80"* ]]
        [[ "$out" == *"33 77"* ]]
}

@test "sbx-launch(1)'s interactive shell example has job control and exits with the shell's status" {
        at_terminal --input $'echo "answer $((6 * 7))"\nexit 3\n' --input-after '$ ' -- --profile shell -- bash -i
        [ "$(field status)" = 3 ]
        out=$(field output)
        [[ "$out" == *"answer 42"* ]]
        [[ "$out" != *"no job control"* ]]
        [[ "$out" != *"cannot set terminal process group"* ]]
        [ "$(field modes_same)" = true ]
}

@test "sandbox.pty: the key behind --pty and --no-pty, checked against new-session" {
        run -0 sbx --pty --print-profile
        [[ "$output" == *"pty = yes"* ]]
        run -0 sbx --no-pty --print-profile
        [[ "$output" == *"pty = no"* ]]
        run -0 sbx --print-profile
        [[ "$output" == *"pty = auto"* ]]
        run sbx --set sandbox.new-session=no --pty -- true
        [ "$status" -eq 125 ]
        [[ "$output" == *"sandbox.pty: a terminal of the job's own needs a new session"* ]]
        # auto with new-session = no: no pty, even at a terminal
        at_terminal -- --set sandbox.new-session=no -- sh -c 'echo ctty=$(cut -d" " -f7 /proc/$$/stat) sid=$(cut -d" " -f6 /proc/$$/stat) pid=$$'
        [ "$(field status)" = 0 ]
        [[ "$(field output)" =~ ctty=([0-9]+)\ sid=([0-9]+)\ pid=([0-9]+) ]]
        # the caller's terminal and session, not a session of its own
        [ "${BASH_REMATCH[1]}" != 0 ]
        [ "${BASH_REMATCH[2]}" != "${BASH_REMATCH[3]}" ]
}
