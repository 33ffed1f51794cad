#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The supervisor's one-way rule (HACKING.md): its folders stand in a rank,
# lowest first, and a file includes headers of its own folder and of the
# folders below it, never of one above. So no include cycle can run
# between folders, and a folder can be read, tested and linked without
# those above it. No source file stands directly in supervisor/.
#
#   t/layout-check.sh          self-test on a made-up tree, then supervisor/
#   t/layout-check.sh DIR      check DIR/supervisor only (exit 1 on a finding)
set -u
AWK=${AWK:-awk}
srcdir=${SBX_SRCDIR:-$(dirname "$0")/..}

# Lowest first. privd/ (the privileged helper) stands just above the
# primitives it runs and below everything that reads untrusted input.
RANKS="core model priv privd store cluster bundle net callback job session mcp front ctl tool"

# Includes that still point up, one per line: FILE HEADER -- why. Each is
# a debt (most reach struct daemon or call back into the connection layer
# instead of registering for an event); the check fails when one is no
# longer needed, so the list only shrinks.
EXCEPTIONS='
supervisor/job/bundle-job.c daemon.h -- job code reaches its neighbours through struct daemon
supervisor/job/capture.c daemon.h -- job code reaches its neighbours through struct daemon
supervisor/job/commit.c daemon.h -- job code reaches its neighbours through struct daemon
supervisor/job/jobs.c daemon.h -- job code reaches its neighbours through struct daemon
supervisor/job/prepare.c daemon.h -- job code reaches its neighbours through struct daemon
supervisor/job/recover.c daemon.h -- job code reaches its neighbours through struct daemon
supervisor/job/runner.c daemon.h -- job code reaches its neighbours through struct daemon
supervisor/net/dnsproxy.c daemon.h -- the proxy reads caps and metrics through struct daemon
supervisor/net/dnstcp.c daemon.h -- the proxy reads caps and metrics through struct daemon
supervisor/net/netjob.c daemon.h -- the audit reads its maps through struct daemon
supervisor/net/netveth.c daemon.h -- the veth pool lives in struct daemon
'

# check ROOT EXCEPTIONS: one line per finding, FILE:LINE: what is wrong.
check() {
        root=$1
        find "$root/supervisor" -name '*.[ch]' | LC_ALL=C sort |
        "$AWK" -v root="$root/" -v ranks="$RANKS" -v exceptions="$2" '
BEGIN {
        n = split(ranks, r, " ")
        for (i = 1; i <= n; i++) rank[r[i]] = i
        m = split(exceptions, e, "\n")
        for (i = 1; i <= m; i++) {
                if (e[i] !~ /[^ \t]/) continue
                split(e[i], w, " ")
                allowed[w[1] " " w[2]] = 1
                nallowed++
        }
}
# path relative to the tree: supervisor/FOLDER/.../NAME
{ files[++nf] = substr($0, length(root) + 1) }
END {
        for (i = 1; i <= nf; i++) {
                f = files[i]; k = split(f, p, "/")
                if (k == 2) {
                        print f ": stands directly in supervisor/: put it in the folder of its subsystem (HACKING.md)"
                        continue
                }
                folder[f] = p[2]
                if (!(p[2] in rank)) {
                        print f ": folder supervisor/" p[2] "/ has no rank in t/layout-check.sh (RANKS)"
                        continue
                }
                if (f ~ /\.h$/) {
                        if (p[k] in home && home[p[k]] != p[2])
                                print f ": another " p[k] " stands in supervisor/" home[p[k]] "/: an include of it is ambiguous"
                        home[p[k]] = p[2]
                }
        }
        for (i = 1; i <= nf; i++) {
                f = files[i]
                if (!(f in folder) || !(folder[f] in rank)) continue
                src = root f; line = 0
                while ((getline l < src) > 0) {
                        line++
                        if (l !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
                        h = l; sub(/^[^"]*"/, "", h); sub(/".*$/, "", h)
                        to = ""
                        if (h ~ /\//) {
                                # a path: the folder it names, from this file'"'"'s own
                                d = f; sub(/\/[^\/]*$/, "", d); t = d "/" h
                                while (t ~ /\/[^\/]+\/\.\.\//) sub(/\/[^\/]+\/\.\.\//, "/", t)
                                if (split(t, q, "/") >= 3 && q[1] == "supervisor") to = q[2]
                        } else if (h in home)
                                to = home[h]
                        if (to == "" || to == folder[f] || !(to in rank)) continue
                        if (rank[to] < rank[folder[f]]) continue
                        key = f " " h
                        if (key in allowed) { used[key] = 1; continue }
                        print f ":" line ": includes " h " of supervisor/" to "/, which stands above supervisor/" folder[f] "/ (t/layout-check.sh RANKS)"
                }
                close(src)
        }
        for (key in allowed)
                if (!(key in used))
                        print "t/layout-check.sh: the exception \"" key "\" is not needed any more: remove it"
}'
}

if [ $# -gt 0 ]; then
        out=$(check "$1" "$EXCEPTIONS")
        [ -z "$out" ] && exit 0
        printf '%s\n' "$out" >&2
        exit 1
fi

nexc=$(printf '%s\n' "$EXCEPTIONS" | grep -c '[^[:space:]]')
echo "1..2"

# Self-test: a made-up tree with one include pointing up, one file left in
# supervisor/ and one exception that nothing uses must give exactly those
# three findings.
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/supervisor/core" "$tmp/supervisor/front"
printf '#include "daemon.h"\n#include "util.h"\n' >"$tmp/supervisor/core/util.c"
: >"$tmp/supervisor/core/util.h"
printf '#include "util.h"\n' >"$tmp/supervisor/front/daemon.h"
: >"$tmp/supervisor/stray.c"
got=$(check "$tmp" "supervisor/core/util.c log.h -- not included")
want="supervisor/stray.c: stands directly in supervisor/: put it in the folder of its subsystem (HACKING.md)
supervisor/core/util.c:1: includes daemon.h of supervisor/front/, which stands above supervisor/core/ (t/layout-check.sh RANKS)
t/layout-check.sh: the exception \"supervisor/core/util.c log.h\" is not needed any more: remove it"
if [ "$got" = "$want" ]; then
        echo "ok 1 - self-test: an include pointing up, a file in supervisor/ and an unused exception are found"
else
        echo "not ok 1 - self-test: got:"
        printf '%s\n' "$got" | sed 's/^/# /'
fi

out=$(check "$srcdir" "$EXCEPTIONS")
if [ -z "$out" ]; then
        echo "ok 2 - supervisor/: every include points down ($nexc exceptions listed)"
else
        echo "not ok 2 - supervisor/: includes pointing up"
        printf '%s\n' "$out" | sed 's/^/# /'
fi
