#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The part of sbx-supervisord's start-up that grows with kept results:
# loading the index of finished jobs (result_index_load) from a results
# directory of N records shaped like the daemon's, each with its output
# directory. Prints, for each binary given (built from
# bench/results-startup.c against some version of libsup; default this
# tree's), the median, minimum and maximum over ROUNDS of the load's
# wall-clock time and its CPU time (user and system; steadier than the
# wall clock when other work shares the machine):
#   - cold: after `sync; echo 3 > /proc/sys/vm/drop_caches` (root only;
#     skipped otherwise), what a start after a reboot pays;
#   - warm: the page cache holding everything, what a restart pays;
#   - first: cold, without STATE/results/index (the first start after an
#     upgrade, or after the cache was lost): the cost of building it;
# and, for each, "ready": how long of that the daemon waits before it
# serves (with a daemon that reads what the cache lacks while serving,
# see supervisor/front/results-rest.h, much less than the whole; a binary built
# before that prints no such figure, and its whole load is counted); and
# the cost of one lookup by id and by idempotency key. The binaries
# alternate round by round, so that load from other work on the machine
# falls on all of them alike. The records go under SBX_BENCH_DIR (default
# /var/tmp: /tmp may be a tmpfs, where dropping caches means nothing).
#
# Usage: bench/results-startup.sh [N [ROUNDS [BINARY...]]]   (after make check
#        or make bench/results-startup)
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-100000}
rounds=${2:-5}
[ $# -gt 2 ] && shift 2 || set --
[ $# -gt 0 ] || set -- "$top/bench/results-startup"
for b in "$@"; do
        [ -x "$b" ] || { echo "bench: $b not built (make bench/results-startup)" >&2; exit 1; }
done

dir=$(mktemp -d "${SBX_BENCH_DIR:-/var/tmp}/sbx-results-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
out=$dir/out
mkdir "$dir/results" "$out"

cold=yes
if ! { [ "$(id -u)" = 0 ] && sync && echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null; then
        cold=
        echo "bench: cannot drop the page cache here (not root?): warm figures only" >&2
fi
drop() {
        sync
        echo 3 > /proc/sys/vm/drop_caches
}

echo "bench: $n records in $dir ($(df -T "$dir" | awk 'NR == 2 { print $2 }'); Linux $(uname -r))"
t0=$(date +%s)
"$1" create "$dir/results" "$n"
sync
echo "bench: created in $(($(date +%s) - t0)) s; $(du -sh "$dir/results" | cut -f1) on disk"

# load BINARY KIND: one load in a fresh process; its wall-clock and CPU
# times appended to out/ID.KIND and out/ID.KIND-cpu
load() {
        set -- "$1" "$2" "$(echo "$1" | cksum | cut -d' ' -f1)"
        set -- "$@" $("$1" load "$dir/results")
        [ "$6" = "$n" ] || { echo "bench: $1 loaded $6 entries, not $n" >&2; exit 1; }
        echo "$4" >> "$out/$3.$2"
        echo "$5" >> "$out/$3.$2-cpu"
        echo "${7:-$4}" >> "$out/$3.$2-ready"
}

i=0
while [ $i -lt "$rounds" ]; do
        for b in "$@"; do
                if [ -n "$cold" ]; then
                        rm -f "$dir/results/index"
                        drop
                        load "$b" first
                        drop
                        load "$b" cold
                fi
                load "$b" warm
                load "$b" warm
        done
        i=$((i + 1))
done

stats() {
        sort -n "$1" | awk '{ v[NR] = $1 } END {
                printf "median %8.1f ms  (min %.1f, max %.1f, %d runs)\n", v[int((NR + 1) / 2)], v[1], v[NR], NR }'
}
for b in "$@"; do
        k=$(echo "$b" | cksum | cut -d' ' -f1)
        echo "$b:"
        for kind in cold warm first; do
                [ -f "$out/$k.$kind" ] || continue
                printf "  %-6s wall %s\n" "$kind" "$(stats "$out/$k.$kind")"
                printf "  %-6s CPU  %s\n" "" "$(stats "$out/$k.$kind-cpu")"
                printf "  %-6s ready %s\n" "" "$(stats "$out/$k.$kind-ready")"
        done
        printf "  lookup (us): by id, by key: %s\n" "$("$b" lookup "$dir/results" 2000)"
done
