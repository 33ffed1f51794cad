#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The bash completions in contrib/bash-completion, sourced into a fresh bash
# and asked to complete command lines as if TAB was pressed at the end.

load sup-unit/daemon
bats_require_minimum_version 1.5.0

setup_file() {
        sup_init
}

teardown_file() {
        sup_fini
}

# complete_line [--with-bash-completion] COMMAND WORD...: the candidates for the
# last WORD, one per line, sorted. COMMAND is the script's name in
# contrib/bash-completion (and the command typed).
complete_line() {
        local lib=
        if [ "$1" = --with-bash-completion ]; then
                lib=/usr/share/bash-completion/bash_completion
                shift
        fi
        bash --norc --noprofile -c '
                lib=$1 script=$2; shift 2
                if [ -n "$lib" ]; then . "$lib" || exit 1; fi
                . "$script" || exit 1
                fn=$(complete -p "${1##*/}" | sed -n "s/.* -F \([^ ]*\) .*/\1/p")
                [ -n "$fn" ] || { echo "no completion function registered for ${1##*/}" >&2; exit 1; }
                COMP_WORDS=("$@")
                COMP_CWORD=$(($# - 1))
                COMP_LINE="$*"
                COMP_POINT=${#COMP_LINE}
                "$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
                [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}" | sort
        ' _ "$lib" "$SBX_BUILDDIR/contrib/bash-completion/${1##*/}" "$@"
}

# The candidates as one line, for comparisons.
candidates() {
        complete_line "$@" | tr '\n' ' ' | sed 's/ $//'
}

@test "sbx-launch: options by prefix" {
        [ "$(candidates sbx-launch --pro)" = "--proc --profile" ]
        [ "$(candidates sbx-launch --ro)" = "--ro-bind --ro-bind-try" ]
        [ "$(candidates sbx-launch --unshare-c)" = "--unshare-cgroup --unshare-cgroup-try" ]
        # after an option with its arguments, options again
        [ "$(candidates sbx-launch --ro-bind /usr /usr --share-n)" = "--share-net" ]
        [ "$(candidates sbx-launch --timeout 5s --print)" = "--print-profile" ]
}

@test "sbx-launch: profile names from SBX_PROFILE_PATH, and files" {
        dir=$(mktemp -d)
        touch "$dir/pyjob.ini" "$dir/other.ini" "$dir/notes.txt"
        export SBX_PROFILE_PATH="$SBX_SRCDIR/profiles:$dir"
        [ "$(candidates sbx-launch --profile py)" = "pyjob python" ]
        [ "$(candidates sbx-launch --profile s)" = "shell" ]
        [ "$(candidates sbx-launch --profile=sh)" = "--profile=shell" ]
        [ "$(candidates sbx-launch --profile "$dir/n")" = "$dir/notes.txt" ]
        rm -rf "$dir"
}

@test "sbx-launch: files for mount sources, variables for the environment, nothing for numbers" {
        [ "$(candidates sbx-launch --ro-bind /us)" = /usr ]
        [ "$(candidates sbx-launch --ro-bind /usr /us)" = /usr ]
        [ "$(candidates sbx-launch --chdir /tm)" = /tmp ]
        HOMEISH=1 run -0 complete_line sbx-launch --setenv HOMEI
        [ "$output" = HOMEISH ]
        [ -z "$(candidates sbx-launch --timeout 1)" ]
        [ -z "$(candidates sbx-launch --pass-fd 1)" ]
}

@test "sbx-launch: the command after -- or after the options, then its arguments" {
        complete_line sbx-launch -- ech | grep -qx echo
        complete_line sbx-launch --profile shell ech | grep -qx echo
        # the command's arguments are files without bash-completion ...
        [ "$(candidates sbx-launch -- cat /us)" = /usr ]
        # ... and the command's own completion with it
        [ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion is not installed"
        [ "$(candidates --with-bash-completion sbx-launch --profile shell -- sbx-launch --print-p)" = --print-profile ]
}

@test "sbx-launch: every option of the launcher is completed, with its number of arguments" {
        # the launcher's table: { "--name", NARGS, ...
        opts=$(sed -n 's/^ *{ "\(--[a-z0-9-]*\)", \([0-9]\),.*/\1 \2/p' "$SBX_SRCDIR/launcher/cli.c")
        [ "$(wc -l <<<"$opts")" -gt 40 ] || { echo "launcher/cli.c: option table not found" >&2; false; }
        while read -r opt nargs; do
                complete_line sbx-launch "$opt" | grep -qxF -- "$opt" ||
                        { echo "$opt is not completed" >&2; false; }
                got=$(bash -c '. "$1"; _sbx_launch_nargs "$2"' _ \
                        "$SBX_BUILDDIR/contrib/bash-completion/sbx-launch" "$opt")
                [ "$got" = "$nargs" ] || { echo "$opt takes $nargs arguments, the completion thinks $got" >&2; false; }
        done <<<"$opts"
}

@test "sbxctl: commands, global options, command options and their values" {
        [ "$(candidates sbxctl ca)" = "cache callbacks cancel" ]
        [ "$(candidates sbxctl s)" = "secret session status submit" ]
        [ "$(candidates sbxctl p)" = "ping policy" ]
        [ "$(candidates sbxctl m)" = metrics ]
        [ "$(candidates sbxctl callbacks r)" = retry ]
        [ "$(candidates sbxctl session e)" = "exec expose extend" ]
        [ "$(candidates sbxctl session u)" = unexpose ]
        [ "$(candidates sbxctl session f)" = forward ]
        [ "$(candidates sbxctl session forward 0123 80 --l)" = --listen ]
        [ "$(candidates sbxctl session create --t)" = "--timeout --traceparent --ttl" ]
        [ "$(candidates sbxctl callbacks ls --state d)" = "dead dropped" ]
        [ "$(candidates sbxctl callbacks ls --l)" = --limit ]
        [ "$(candidates sbxctl --so)" = --socket ]
        [ "$(candidates sbxctl --socket /tmp/x.sock --json l)" = "logs ls" ]
        [ "$(candidates sbxctl run --pro)" = "--processes --profile --progress" ]
        [ "$(candidates sbxctl submit --progr)" = --progress ]
        [ "$(candidates sbxctl submit --network h)" = host ]
        [ "$(candidates sbxctl logs --str)" = --stream ]
        [ "$(candidates sbxctl logs --stream stde)" = stderr ]
        [ "$(candidates sbxctl ls --state t)" = timed_out ]
        [ "$(candidates sbxctl result --j)" = --json ]
        [ "$(candidates sbxctl download --st)" = --stream ]
        [ "$(candidates sbxctl download --stream std)" = "stderr stdout" ]
        [ "$(candidates sbxctl download -o /us)" = /usr ]
        [ "$(candidates sbxctl run --trace)" = --traceparent ]
        [ "$(candidates sbxctl run --upload /us)" = /usr ]
        complete_line sbxctl run --timeout 5s -- ech | grep -qx echo
}

@test "sbxctl: every run option and command of sbxctl is completed" {
        opts=$(grep -oE '\{ "[a-z-]+", required_argument' <<<"$(sed -n '/^json_t \*sbxctl_build_run(/,/^}/p' "$SBX_SRCDIR/supervisor/ctl/sbxctl-run.c")" |
                cut -d'"' -f2)
        [ "$(wc -l <<<"$opts")" -ge 13 ] || { echo "supervisor/ctl/sbxctl-run.c: run options not found" >&2; false; }
        for o in $opts; do
                complete_line sbxctl run "--$o" | grep -qxF -- "--$o" || { echo "--$o is not completed" >&2; false; }
        done
        for c in run submit status wait logs cancel result ls ping bundle cache download metrics callbacks session; do
                complete_line sbxctl "$c" | grep -qxF "$c" || { echo "$c is not completed" >&2; false; }
        done
}

@test "sbxctl: job ids from the daemon on the socket named on the line" {
        sup_config
        sup_start
        a=$(ctl submit -- sleep 30)
        b=$(ctl submit -- true)
        ctl wait "$b" >/dev/null
        # every job for status, only active ones for cancel, and not twice
        ids=$(complete_line "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" status "")
        grep -qxF "$a" <<<"$ids"
        grep -qxF "$b" <<<"$ids"
        [ "$(complete_line "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" cancel "${a:0:3}")" = "$a" ]
        [ -z "$(complete_line "$SBX_STAGE/bin/sbxctl" --socket "$SUP_SOCK" status "$a" "")" ]
        # no daemon there: no ids, quickly
        start=$SECONDS
        [ -z "$(complete_line "$SBX_STAGE/bin/sbxctl" --socket "$SUP_DIR/none.sock" wait "")" ]
        [ $((SECONDS - start)) -le 3 ]
        ctl cancel "$a" >/dev/null
        sup_stop
}
