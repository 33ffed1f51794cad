#!/usr/bin/env bats
# SPDX-License-Identifier: Apache-2.0
# The systemd units, the default configuration and the man pages are made
# with the paths ./configure was given: each path they print is the one the
# binaries compiled in (read from the binaries themselves).

: "${SBX_BUILDDIR:?run through make check, or set SBX_BUILDDIR}"

setup() {
        command -v strings >/dev/null || skip "strings is not installed (apt-get install binutils)"
}

# The one compiled-in string of binary $1 that matches the whole-line
# regular expression $2.
compiled_in() {
        local hits
        hits=$(strings -n 4 "$SBX_BUILDDIR/$1" | grep -xE "$2" | sort -u)
        [ -n "$hits" ] && [ "$(wc -l <<<"$hits")" -eq 1 ] || {
                echo "$1: expected one string matching $2, found: ${hits:-none}" >&2
                return 1
        }
        echo "$hits"
}

# A man page as text: scdoc's roff with the font changes and the
# zero-width escapes after dots taken out.
man_text() {
        sed -e 's/\\&//g' -e 's/\\f[BIRP]//g' "$SBX_BUILDDIR/man/$1"
}

makevar() {
        sed -n "s/^$1 = //p" "$SBX_BUILDDIR/Makefile"
}

has_line() { # file line
        grep -qxF -- "$2" "$1" || { echo "$1 lacks the line: $2" >&2; return 1; }
}

makes_dir() { # dir mode: a tmpfiles.d line creates dir with that mode
        awk -v d="$1" -v m="$2" '$1 == "d" && $2 == d && $3 == m { found = 1 } END { exit !found }' \
                "$SBX_BUILDDIR/contrib/systemd/sbx.tmpfiles" ||
                { echo "sbx.tmpfiles does not create $1 mode $2" >&2; return 1; }
}

has_text() { # name text (text from stdin)
        grep -qF -- "$2" || { echo "$1 does not mention $2" >&2; return 1; }
}

@test "the socket unit, sbxctl, the daemon and their man pages agree on the socket" {
        sock=$(compiled_in supervisor/sbxctl '/.*/sbx/sbx-supervisord\.sock')
        [ "$(compiled_in supervisor/sbx-supervisord '/.*/sbx/sbx-supervisord\.sock')" = "$sock" ]
        has_line "$SBX_BUILDDIR/contrib/systemd/sbx-supervisord.socket" "ListenStream=$sock"
        makes_dir "${sock%/*}" 0755
        has_line "$SBX_BUILDDIR/contrib/sbx-supervisord.conf" "# socket = $sock"
        man_text sbxctl.1 | has_text sbxctl.1 "$sock"
        man_text sbx-supervisord.8 | has_text sbx-supervisord.8 "$sock"
        man_text sbx-supervisord.conf.5 | has_text sbx-supervisord.conf.5 "$sock. Its directory"
}

@test "the service unit runs the installed daemon with its default configuration" {
        conf=$(compiled_in supervisor/sbx-supervisord '/.*/sbx/sbx-supervisord\.conf')
        # where `make install` puts the daemon
        prefix=$(makevar prefix)
        eval "exec_prefix=$(makevar exec_prefix)"
        eval "sbindir=$(makevar sbindir)"
        [ -n "$sbindir" ]
        has_line "$SBX_BUILDDIR/contrib/systemd/sbx-supervisord.service" \
                "ExecStart=$sbindir/sbx-supervisord --foreground --config $conf"
        man_text sbx-supervisord.8 | has_text sbx-supervisord.8 "default is $conf."
        man_text sbx-supervisord.conf.5 | has_text sbx-supervisord.conf.5 "$conf"
}

@test "tmpfiles.d, the service and the man pages hold the daemon's default state directory" {
        state=$(compiled_in supervisor/sbx-supervisord '/.*/lib/sbx')
        sock=$(compiled_in supervisor/sbx-supervisord '/.*/sbx/sbx-supervisord\.sock')
        log=${state%/lib/sbx}/log/sbx
        makes_dir "$state" 0711
        makes_dir "$state-privd" 0711
        makes_dir "$log" 0750
        makes_dir "${sock%/*}" 0755
        has_line "$SBX_BUILDDIR/contrib/systemd/sbx-supervisord.service" "StateDirectory=sbx"
        has_line "$SBX_BUILDDIR/contrib/systemd/sbx-supervisord.service" "LogsDirectory=sbx"
        has_line "$SBX_BUILDDIR/contrib/systemd/sbx-privd.service" "StateDirectory=sbx-privd"
        has_line "$SBX_BUILDDIR/contrib/sbx-supervisord.conf" "# state_dir = $state"
        has_line "$SBX_BUILDDIR/contrib/sbx-supervisord.conf" "audit_log = $log/audit.log"
        man_text sbx-supervisord.8 | has_text sbx-supervisord.8 "$state/results/ID.json"
        man_text sbx-supervisord.8 | has_text sbx-supervisord.8 "$state/journal"
        man_text sbx-supervisord.conf.5 | has_text sbx-supervisord.conf.5 "Default $state."
}

@test "the man pages name the profile directory and launcher the binaries use" {
        profiles=$(compiled_in launcher/sbx-launch '/[^:]*/sbx/profiles')
        launcher=$(compiled_in supervisor/sbx-supervisord '/.*/sbx-launch')
        # the daemon's default profile_path ends in the launcher's directory
        # (the linker may keep that one string only as this one's tail)
        path=$(compiled_in supervisor/sbx-supervisord '/.*/sbx/profiles:/.*')
        [ "${path#*:}" = "$profiles" ]
        man_text sbx-launch.1 | has_text sbx-launch.1 "$profiles/"
        man_text sbx-profile.5 | has_text sbx-profile.5 "($profiles)"
        man_text sbx-supervisord.conf.5 | has_text sbx-supervisord.conf.5 "Default $launcher."
        man_text sbx-supervisord.conf.5 | has_text sbx-supervisord.conf.5 "${path%%:*} then the shipped profiles,"
}
