#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# sbxctl(1) EXIT STATUS: every usage error exits 2 with a message naming
# what was wrong, before any daemon is contacted (the socket given here does
# not exist: a client that tried to connect would exit 125 instead).

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
}

teardown_file() {
        sup_fini
}

# usage_error MESSAGE SBXCTL-ARG...: sbxctl exits 2 and says MESSAGE.
usage_error() {
        local want=$1
        shift
        run --separate-stderr "$SBX_STAGE/bin/sbxctl" --socket "$SUP_DIR/no-daemon.sock" "$@"
        if [ "$status" -ne 2 ] || [[ "$stderr" != *"$want"* ]]; then
                echo "sbxctl $*: exit $status, stderr: $stderr (expected 2 and: $want)" >&2
                return 1
        fi
        [ -z "$output" ]
}

@test "an unknown command, or none, is a usage error" {
        usage_error "sbxctl: unknown command 'frobnicate' (see sbxctl --help)" frobnicate
        usage_error "unknown command 'stat'" stat JOB
        usage_error "Usage: sbxctl"
}

@test "an unknown option is a usage error, before or after the command" {
        usage_error "sbxctl: unknown option '--bogus' (see sbxctl --help)" --bogus ping
        usage_error "unknown option '-x'" -x ping
        usage_error "run: unknown option '--bogus'" run --bogus -- true
        usage_error "submit: unknown option '--follow'" submit --follow -- true
        usage_error "logs: unknown option '--bogus'" logs --bogus JOB
        usage_error "logs: unknown option '-x'" logs -x JOB
        # an option of another command
        usage_error "status takes no option --follow" status --follow JOB
        usage_error "ping takes no option --limit" ping --limit 5
        usage_error "cancel takes no option --json" cancel --json JOB
}

@test "a missing option value, job id or command is a usage error" {
        usage_error "--socket needs a value" --socket
        usage_error "run: --timeout needs a value" run --timeout
        usage_error "ls: --state needs a value" ls --state
        usage_error "logs: --stream needs a value" logs --stream
        for cmd in status wait cancel result logs; do
                usage_error "$cmd: missing job id" "$cmd"
        done
        usage_error "run: no command given" run
        usage_error "submit: no command given" submit --timeout 5s --
}

@test "a bad option value is a usage error" {
        usage_error "--timeout: invalid duration '10x'" run --timeout 10x -- true
        usage_error "--timeout: invalid duration '0'" run --timeout 0 -- true
        usage_error "--memory: invalid size 'lots'" run --memory lots -- true
        usage_error "--output: invalid size '1Q'" submit --output 1Q -- true
        usage_error "--processes: invalid number '-1'" run --processes -1 -- true
        usage_error "--cpu: invalid duration 'x'" run --cpu x -- true
        usage_error "--cpus: invalid number of CPUs '0'" run --cpus 0 -- true
        usage_error "--env: expected NAME=VALUE, got 'NOEQUALS'" run --env NOEQUALS -- true
        usage_error "ls: --limit: expected a positive number, got '0'" ls --limit 0
        usage_error "ls: --limit: expected a positive number, got '5x'" ls --limit 5x
        usage_error "logs: --stream: expected stdout, stderr or both, got 'all'" logs --stream all JOB
}

@test "an extra argument is a usage error" {
        usage_error "status: unexpected argument 'extra'" status JOB extra
        usage_error "cancel: unexpected argument 'b'" cancel a b
        usage_error "wait: unexpected argument '--json'" wait JOB --json
        usage_error "ping: unexpected argument 'extra'" ping extra
        usage_error "ls: unexpected argument 'extra'" ls --limit 3 extra
}

@test "errors that are not usage errors still exit 125" {
        # no daemon on the socket
        run --separate-stderr "$SBX_STAGE/bin/sbxctl" --socket "$SUP_DIR/no-daemon.sock" ping
        [ "$status" -eq 125 ]
        [[ "$stderr" == *"cannot connect to $SUP_DIR/no-daemon.sock"* ]]
        # a file to upload that is not there
        run --separate-stderr "$SBX_STAGE/bin/sbxctl" --socket "$SUP_DIR/no-daemon.sock" run --upload "$SUP_DIR/none" -- true
        [ "$status" -eq 125 ]
        # a well-formed request that the daemon refuses
        sup_config
        sup_start
        run --separate-stderr ctl status no-such-job
        [ "$status" -eq 125 ]
        [[ "$stderr" == *E_* ]]
        run --separate-stderr ctl ls --state nonsense
        [ "$status" -eq 125 ]
        # and the forms the usage allows still work
        run -0 ctl ls --limit 3
        run -0 ctl ping
        sup_stop
}
